"""Module-level functions for the pickling tests: importable by name in worker processes (a
function defined in a test module is not, under pytest's import mode)."""

import numpy as np


def energy(x):
    """A smooth real function of a vector: a chain of springs with a quartic term."""
    d = np.diff(x)
    return np.sum((d - 1.0) ** 2) + 0.1 * np.sum(x ** 4) + np.sin(x[0])


def scalar(a, b):
    return a * a * b + np.sin(a * b)
