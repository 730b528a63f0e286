"""MNIST's shapes without its download: 1000 training and 200 test images of 28x28
pixels, fixed pseudo-random digits (no network here; the gradients are compared, not
what the models learn)."""
import numpy as np


def mnist():
    rs = np.random.RandomState(1234)
    train_images = rs.randint(0, 256, size=(1000, 28, 28)).astype(np.uint8)
    test_images = rs.randint(0, 256, size=(200, 28, 28)).astype(np.uint8)
    return train_images, rs.randint(0, 10, 1000), test_images, rs.randint(0, 10, 200)
