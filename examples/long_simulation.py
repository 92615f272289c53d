"""The gradient of a long simulation in the memory of a few of its states.

A damped pendulum, integrated by explicit Euler for many small steps, written as a
``fori_loop``. The loss is its final energy; we want its gradient with respect to the
damping, the gravity term and the initial state. Plain reverse mode keeps every step's
operations until the backward sweep; with ``checkpoints="auto"`` the loop keeps about
log2(n) states and recomputes the rest by the optimal binomial schedule (revolve), so its
memory does not grow with n. The gradient is checked against central finite differences of
the float program, against forward mode, and against the plain loop's, which it equals to
the last bit; tracemalloc shows the memory saved and a counter the recomputation paid.
"""

import math
import tracemalloc

import deltaad as ad

N = 5_000         # steps
H = 1e-3          # step size


def final_energy(params, state0, checkpoints, calls=None):
    damping, g = params

    def step(i, s):
        if calls is not None:
            calls[0] += 1
        theta, omega = s
        return (theta + H * omega,
                omega - H * (g * ad.sin(theta) + damping * omega))

    theta, omega = ad.fori_loop(0, N, step, state0, checkpoints=checkpoints)
    return 0.5 * omega ** 2 + g * (1.0 - ad.cos(theta))


def float_energy(params, state0):
    """The same simulation on plain floats, for finite differences."""
    damping, g = params
    theta, omega = state0
    for _ in range(N):
        theta, omega = theta + H * omega, omega - H * (g * math.sin(theta) + damping * omega)
    return 0.5 * omega ** 2 + g * (1.0 - math.cos(theta))


def peak_bytes(f):
    tracemalloc.start()
    try:
        out = f()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main():
    params, state0 = (0.3, 9.81), (1.2, 0.0)
    grad = ad.grad(final_energy, argnums=(0, 1))

    plain, plain_peak = peak_bytes(lambda: grad(params, state0, None))
    calls = [0]
    ckpt, ckpt_peak = peak_bytes(lambda: grad(params, state0, "auto", calls))

    # the same bits as the plain loop
    assert ckpt == plain, (ckpt, plain)

    # against central finite differences of the float program
    flat = list(params) + list(state0)
    fd = []
    for k in range(4):
        eps = 1e-6 * max(1.0, abs(flat[k]))
        up, down = list(flat), list(flat)
        up[k] += eps
        down[k] -= eps
        fd.append((float_energy(up[:2], up[2:]) - float_energy(down[:2], down[2:])) / (2 * eps))
    got = list(ckpt[0]) + list(ckpt[1])
    for a, b in zip(got, fd):
        assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (got, fd)

    # against forward mode in one direction (a checkpointed loop under jvp is the plain loop)
    u = (0.5, -1.0, 2.0, 0.25)
    _, d = ad.jvp(lambda p, s: final_energy(p, s, "auto"), (params, state0), (u[:2], u[2:]))
    along = sum(a * b for a, b in zip(got, u))
    assert abs(d - along) <= 1e-9 * max(1.0, abs(d)), (d, along)

    # the price: body calls without recording (the run included) are revolve's optimum
    # r*N - C(c + r, c + 1) for c = ceil(log2 N) snapshots; N more calls are recorded
    c = max(2, (N - 1).bit_length())
    r = 0
    while math.comb(c + r, c) < N:
        r += 1
    optimum = r * N - math.comb(c + r, c + 1)
    assert calls[0] == optimum + N, (calls[0], N, optimum)
    assert ckpt_peak < plain_peak / 5, (ckpt_peak, plain_peak)  # one batch of steps vs all

    print("d energy / d (damping, g, theta0, omega0) = %s" % ["%.6f" % v for v in got])
    print("peak traced memory: plain %.1f MB, checkpoints=\"auto\" (c=%d) %.2f MB"
          % (plain_peak / 1e6, c, ckpt_peak / 1e6))
    print("body calls: %d = %d unrecorded (revolve's optimum, the run included) + %d recorded; "
          "the plain loop: %d" % (calls[0], optimum, N, N))


if __name__ == "__main__":
    main()
