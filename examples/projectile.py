"""The best launch angle of a projectile, with and without air drag.

The model is written with the ``math`` module -- ``math.sin``, ``math.cos``, ``math.hypot``
on floats, a ``while`` loop that stops when the projectile lands -- and it differentiates
unchanged: while deltaad differentiates, ``math``'s functions are ``deltaad.math``'s (on
floats ``math``'s own results; on duals differentiated). Without drag the range has a closed
form whose best angle is 45°;
Newton's method on its derivative finds it (second derivatives by nesting ``grad``). With
drag there is no closed form: the range comes from a simulation, its derivative with respect
to the angle from reverse mode through every step, and a root finder on that derivative
gives the best angle, below 45°.
"""

import math

from scipy import optimize

import deltaad as ad

G = 9.81
SPEED = 40.0


def range_vacuum(angle):
    return SPEED ** 2 * math.sin(2.0 * angle) / G


def range_drag(angle, drag=0.01, dt=2e-3):
    """Semi-implicit Euler with quadratic drag until the projectile falls below the ground;
    the landing point is interpolated linearly between the last two steps."""
    x, y = 0.0, 0.0
    vx, vy = SPEED * math.cos(angle), SPEED * math.sin(angle)
    while True:
        speed = math.hypot(vx, vy)
        vx = vx - dt * drag * speed * vx
        vy = vy - dt * (G + drag * speed * vy)
        x_new, y_new = x + dt * vx, y + dt * vy
        if y_new < 0.0:                      # branch on the value: the step that lands
            return x + (x_new - x) * y / (y - y_new)
        x, y = x_new, y_new


def newton(f_prime, f_second, x, steps=20):
    for _ in range(steps):
        step = f_prime(x) / f_second(x)
        x -= step
        if abs(step) < 1e-14:
            break
    return x


def main():
    d_vacuum = ad.grad(range_vacuum)
    best = newton(d_vacuum, ad.grad(d_vacuum), 0.5)
    assert abs(best - math.pi / 4) < 1e-12, best

    d_drag = ad.grad(range_drag)
    # the simulated derivative agrees with a central difference of the simulation
    a, h = 0.6, 1e-6
    fd = (range_drag(a + h) - range_drag(a - h)) / (2 * h)
    assert math.isclose(d_drag(a), fd, rel_tol=1e-5), (d_drag(a), fd)

    best_drag = optimize.brentq(d_drag, 0.3, math.pi / 4, xtol=1e-10)
    assert 0.3 < best_drag < math.pi / 4 - 0.05                  # drag lowers the best angle
    assert range_drag(best_drag) > max(range_drag(best_drag - 0.02), range_drag(best_drag + 0.02))
    print("best angle: %.4f° in vacuum (range %.1f m), %.2f° with drag (range %.1f m)"
          % (math.degrees(best), range_vacuum(best), math.degrees(best_drag), range_drag(best_drag)))


if __name__ == "__main__":
    main()
