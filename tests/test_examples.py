"""Every program in examples/ runs and passes its own assertions, on the backend under test.

The examples are what a new user copies first; each checks its result against something
independent of deltaad (closed forms, scipy's solvers, finite differences), so running them
here keeps them true.
"""

import glob
import os
import runpy

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "*.py")))


def test_there_are_examples():
    assert len(EXAMPLES) >= 6, EXAMPLES


@pytest.mark.parametrize("path", EXAMPLES, ids=[os.path.basename(p)[:-3] for p in EXAMPLES])
def test_example_runs(path, capsys):
    runpy.run_path(path, run_name="__main__")
    assert capsys.readouterr().out.strip(), "an example says what it found"
