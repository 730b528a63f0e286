import numpy as np

from matplotlib import _Anything


def __getattr__(name):
    return _Anything()


def imread(path):
    """A picture's shape (read from its PNG header), filled with fixed numbers in [0, 1]."""
    import struct
    with open(path, 'rb') as f:
        header = f.read(26)
    width, height, _, colour = struct.unpack('>IIBB', header[16:26])
    channels = {0: 0, 2: 3, 4: 2, 6: 4}.get(colour, 0)
    shape = (height, width, channels) if channels else (height, width)
    return np.random.RandomState(width * height).rand(*shape)


def subplots(*args, **kwargs):
    return _Anything(), _Anything()
