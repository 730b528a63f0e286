"""A projectile with air drag: find the launch angle that throws it farthest.

`distance` integrates the flight with a `while` loop that runs until the
projectile falls below the ground, so the number of steps depends on the
angle. The generated gradient records the trip count in the forward sweep and
runs the reverse sweep that many times. Gradient ascent on the angle finds the
best one; a grid search confirms it.

Run:  python examples/projectile.py
"""
import numpy as np

import tapeflow

GRAVITY = 9.81


def distance(angle, speed, drag, dt):
    """Horizontal distance travelled before landing (explicit Euler steps)."""
    x = 0.0
    y = 0.0
    vx = speed * np.cos(angle)
    vy = speed * np.sin(angle)
    x_before = 0.0
    y_before = 0.0
    while y >= 0.0:
        v = np.sqrt(vx * vx + vy * vy)
        x_before = x
        y_before = y
        x = x + vx * dt
        y = y + vy * dt
        vx = vx - drag * v * vx * dt
        vy = vy - (GRAVITY + drag * v * vy) * dt
    # Land between the last two positions, where the straight line crosses y = 0.
    fraction = y_before / (y_before - y)
    return x_before + fraction * (x - x_before)


SPEED, DRAG, DT = 40.0, 0.01, 0.02


def best_angle_by_gradient(start_degrees=20.0, steps=30, learning_rate=2e-3):
    ddistance = tapeflow.value_and_grad(distance)
    angle = np.radians(start_degrees)
    for step in range(steps + 1):
        value, slope = ddistance(angle, SPEED, DRAG, DT)
        if step % 5 == 0:
            print(f'step {step:2d}   angle {np.degrees(angle):6.2f} deg   distance {value:7.3f} m'
                  f'   d(distance)/d(angle) {slope:8.3f} m/rad')
        angle = angle + learning_rate * slope
    return float(np.degrees(angle))


def best_angle_by_grid(resolution=0.1):
    angles = np.arange(35.0, 45.0, resolution)
    distances = [distance(np.radians(a), SPEED, DRAG, DT) for a in angles]
    return float(angles[int(np.argmax(distances))])


def main():
    by_gradient = best_angle_by_gradient()
    by_grid = best_angle_by_grid()
    print(f'best angle: {by_gradient:.2f} deg by gradient ascent, {by_grid:.1f} deg by grid search '
          f'(45 deg without drag)')
    return by_gradient, by_grid


if __name__ == '__main__':
    main()
