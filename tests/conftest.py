"""pytest configuration shared by the whole suite.

- A hypothesis profile ``deltaad``: no deadline (the pure backend and a loaded CI box are slow
  and timing is not what we test), a modest number of examples so that the suite stays fast on
  two cores. ``DELTAAD_HYPOTHESIS_EXAMPLES=500 make test`` runs a more thorough pass.
  ``HYPOTHESIS_PROFILE=<name>`` selects another registered profile.
- The suite runs once per backend (``DELTAAD_BACKEND=c`` / ``python``); the header says which.
- After every test no differentiation may be left open in the main thread (a leaked trace is a
  bug whatever the test was about).
"""

import os

import pytest
from hypothesis import HealthCheck, settings

import deltaad

settings.register_profile(
    "deltaad",
    deadline=None,
    max_examples=int(os.environ.get("DELTAAD_HYPOTHESIS_EXAMPLES", "50")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    print_blob=True,
)
# CI draws the same examples on every run (hypothesis's advice for CI): a red CI then means a
# change broke something, not that a new random draw met a flaky check. Local runs keep drawing
# new examples, which is how flaky checks are found and fixed.
settings.register_profile(
    "ci",
    parent=settings.get_profile("deltaad"),
    derandomize=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deltaad"))


def pytest_report_header(config):
    return "deltaad backend: %s (DELTAAD_BACKEND=%r), module %s" % (
        deltaad.backend, os.environ.get("DELTAAD_BACKEND"), deltaad.__file__)


@pytest.fixture
def backend():
    """The backend in use: ``"c"`` or ``"python"``."""
    return deltaad.backend


@pytest.fixture
def fast():
    """True on the compiled core, where big sizes are cheap."""
    return deltaad.backend == "c"


@pytest.fixture(autouse=True)
def _no_trace_left_open():
    yield
    left = deltaad.open_traces()
    assert left == [], "the test left traces open: %r" % (left,)


@pytest.fixture
def restore_registry():
    """Let a test declare numpy rules (deltaad.defvjp ...) without leaking them into others."""
    from deltaad.numpy import registry

    saved = {k: dict(getattr(registry, k)) for k in
             ("UFUNCS", "SCALAR_UFUNCS", "FUNCTIONS", "METHODS", "NOTES", "ELEMENTARY", "LATE")}
    const = set(registry.CONSTANT_UFUNCS)
    yield
    for k, v in saved.items():
        table = getattr(registry, k)
        table.clear()
        table.update(v)
    registry.CONSTANT_UFUNCS.clear()
    registry.CONSTANT_UFUNCS.update(const)
