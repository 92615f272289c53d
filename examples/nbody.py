"""Gravitational forces as the negative gradient of the potential energy, then a simulation.

Write the energy once; ``-grad`` of it is every body's force. The pairwise force law checks
the result, Newton's third law must hold (forces sum to zero), and a leapfrog integration
driven by these forces must conserve the total energy.
"""

import numpy as np

import deltaad as ad

G = 1.0


def potential(pos, masses):
    """-G Σ_{i<j} m_i m_j / |r_i - r_j| over all pairs, with numpy."""
    i, j = np.triu_indices(len(masses), k=1)
    d = pos[i] - pos[j]                                  # (pairs, 3)
    r = np.sqrt(np.sum(d * d, axis=1))
    return -G * np.sum(masses[i] * masses[j] / r)


force = ad.grad(lambda pos, masses: -potential(pos, masses))


def pairwise_forces(pos, masses):
    """Newton's law summed pair by pair: the check."""
    f = np.zeros_like(pos)
    for a in range(len(masses)):
        for b in range(len(masses)):
            if a != b:
                d = pos[b] - pos[a]
                f[a] += G * masses[a] * masses[b] * d / np.linalg.norm(d) ** 3
    return f


def energy(pos, vel, masses):
    return 0.5 * np.sum(masses[:, None] * vel * vel) + potential(pos, masses)


def main():
    rng = np.random.default_rng(3)
    n = 12
    masses = rng.uniform(0.5, 1.5, n)
    pos = rng.normal(0.0, 3.0, (n, 3))
    vel = rng.normal(0.0, 0.3, (n, 3))
    vel -= np.sum(masses[:, None] * vel, axis=0) / np.sum(masses)   # centre-of-mass frame

    f = force(pos, masses)
    assert np.allclose(f, pairwise_forces(pos, masses), rtol=1e-12, atol=1e-14)
    assert np.allclose(np.sum(f, axis=0), 0.0, atol=1e-12)           # third law

    # leapfrog (kick-drift-kick), forces from deltaad at every step
    e0, dt = energy(pos, vel, masses), 1e-3
    acc = f / masses[:, None]
    for _ in range(300):
        vel = vel + 0.5 * dt * acc
        pos = pos + dt * vel
        acc = force(pos, masses) / masses[:, None]
        vel = vel + 0.5 * dt * acc
    drift = abs(energy(pos, vel, masses) - e0) / abs(e0)
    assert drift < 1e-5, drift
    print("%d bodies, 300 leapfrog steps: relative energy drift %.1e" % (n, drift))


if __name__ == "__main__":
    main()
