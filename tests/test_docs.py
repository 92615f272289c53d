"""The documentation tells the truth: its code runs, its generated table is the registry.

- Every ```python block of README.md and docs/*.md runs (blocks are self-contained and assert
  what they claim); a block that includes a file (``--8<--``) is an example, run by
  tests/test_examples.py.
- ``deltaad.support_table()`` lists what the rule registries hold, so a rule added or removed
  shows up on the support page without anyone editing it.
"""

import glob
import linecache
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import deltaad
from deltaad import support
from deltaad.numpy import registry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks():
    for page in PAGES:
        with open(page, encoding="utf-8") as fh:
            text = fh.read()
        for k, m in enumerate(FENCE.finditer(text)):
            if "--8<--" not in m.group(1):
                yield pytest.param(m.group(1), id="%s-%d" % (os.path.basename(page)[:-3], k))


@pytest.mark.parametrize("code", list(_blocks()))
def test_code_block_runs(code, capsys, restore_registry):
    # a block that starts with ``# needs: module`` runs only where that optional module is
    for module in re.findall(r"^# needs: ([\w.]+)", code, re.M):
        pytest.importorskip(module, reason="the block needs the optional %s" % module)
    # the source is registered as a file's would be (tracebacks and deltaad's messages quote it)
    name = "<docs-%d>" % (hash(code) & 0xFFFFFFFF)
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    exec(compile(code, name, "exec"), {"__name__": "__docs__"})


def test_readme_keeps_the_two_commands_on_its_first_screen():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        first_screen = "".join(fh.readlines()[:30])
    assert "make test" in first_screen and "make bench" in first_screen


def test_support_table_lists_every_registered_rule():
    table = deltaad.support_table()
    for u in list(registry.UFUNCS) + list(registry.CONSTANT_UFUNCS):
        assert "`%s`" % support._name(u) in table, u
    for f in registry.FUNCTIONS:
        assert "`%s`" % support._name(f) in table, f
    for (u, method) in registry.METHODS:
        assert "`%s.%s`" % (support._name(u), method) in table
    for name in ("sin", "hypot", "clip", "sigmoid"):
        assert "| `%s` |" % name in table
    assert "1/2 to each argument at a tie" in table  # a chosen value, on maximum's row
    for e in deltaad.elementwise.TABLE:  # every entry of the elementwise table, with its choice
        assert "| `%s` |" % e.name in table and e.chosen in table


def test_support_table_follows_the_registry(monkeypatch):
    """A rule registered (or removed) changes the table: it is generated, not written."""
    fake = np.nextafter  # no rule today
    assert fake not in registry.UFUNCS and "`nextafter`" not in deltaad.support_table()
    monkeypatch.setitem(registry.UFUNCS, fake, lambda x: x)
    assert "`nextafter`" in deltaad.support_table()

    def ufunc_rows():
        return deltaad.support_table().split("## numpy ufuncs")[1].split("## numpy functions")[0]

    assert "| `tan` |" in ufunc_rows()
    monkeypatch.delitem(registry.UFUNCS, np.tan)
    assert "| `tan` |" not in ufunc_rows()


def test_docs_hook_fills_the_support_page():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", os.path.join(ROOT, "docs", "hooks.py"))
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    with open(os.path.join(ROOT, "docs", "support.md"), encoding="utf-8") as fh:
        page = fh.read()
    assert hooks.MARKER in page
    out = hooks.on_page_markdown(page, None, None, None)
    assert hooks.MARKER not in out and "## numpy ufuncs" in out


def test_support_table_is_the_same_on_the_first_call_of_a_process():
    """The table lists late constants (scipy's ``gammasgn``) without any earlier call having
    met them: its content depends on the rules, not on what the process ran before."""
    pytest.importorskip("scipy.special")
    code = ("import deltaad, scipy.special; t = deltaad.support_table(); "
            "assert '`gammasgn`' in t.split('## numpy functions')[0], 'first'; "
            "assert deltaad.support_table() == t, 'second'")
    subprocess.run([sys.executable, "-c", code], check=True)
