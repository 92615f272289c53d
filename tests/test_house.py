"""The house keeps its shape: no import loop in the package (also through imports inside
functions), and the repository stands alone (no citation of files outside it, nor of issue
numbers: papers are cited by author and title)."""

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "src", "deltaad")


def _modules():
    """``{module name: path}`` for every module of the package, and the compiled core."""
    mods = {}
    for d, _dirs, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, f), os.path.join(ROOT, "src"))
                name = rel[:-3].replace(os.sep, ".")
                if name.endswith(".__init__"):
                    name = name[: -len(".__init__")]
                mods[name] = os.path.join(d, f)
    mods["deltaad._core"] = os.path.join(ROOT, "cext", "_core.pyx")
    return mods


def _imports(name, path, mods):
    """The package modules ``name`` imports anywhere in its text (module level or not)."""
    text = open(path, encoding="utf-8").read()
    is_pkg = path.endswith("__init__.py")
    base = name if is_pkg else name.rpartition(".")[0]
    found = set()
    if path.endswith(".pyx"):  # Cython: read its Python-level imports by their spelling
        for m in re.findall(r"^\s*from (deltaad[\w.]*) import ([\w, ]+)", text, re.M):
            found.add(m[0])
            found.update(m[0] + "." + n.strip() for n in m[1].split(","))
        return {m for m in found if m in mods}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                mod = parent + ("." + node.module if node.module else "")
            else:
                mod = node.module or ""
            found.add(mod)
            found.update(mod + "." + a.name for a in node.names)
    return {m for m in found if m in mods and m != name}


def test_no_import_loop():
    mods = _modules()
    graph = {n: _imports(n, p, mods) for n, p in mods.items()}
    # A package's __init__ may import its children (that is how a package presents itself);
    # a child importing its own package's __init__ back would be the loop.
    for n in graph:
        graph[n] = {m for m in graph[n] if not (n != "deltaad" and m == "deltaad")}
        if mods[n].endswith("__init__.py"):
            graph[n] = {m for m in graph[n] if not m.startswith(n + ".")}
    seen, stack = {}, []

    def visit(n):
        seen[n] = "open"
        stack.append(n)
        for m in sorted(graph[n]):
            if seen.get(m) == "open":
                cycle = stack[stack.index(m):] + [m]
                pytest.fail("import loop: %s" % " -> ".join(cycle))
            if m not in seen:
                visit(m)
        stack.pop()
        seen[n] = "done"

    for n in sorted(graph):
        if n not in seen:
            visit(n)


# The places a reader of the repository reads; generated and vendored files are not.
READ = ["src", "cext", "tests", "bench", "docs", "examples", "README.md", "Makefile",
        "pyproject.toml", "setup.py", ".ci"]
OUTSIDE = re.compile(r"DESIGN\.md|\.\./shared|papers/\d|papers/README|\b[Ii]ssues? \d+|"
                     r"issue #\d+")


def _text_files():
    for entry in READ:
        path = os.path.join(ROOT, entry)
        if os.path.isfile(path):
            yield path
        for d, dirs, files in os.walk(path):
            dirs[:] = [x for x in dirs if not x.startswith(".") and x not in ("__pycache__", "results")]
            for f in files:
                if f.endswith((".py", ".pyx", ".pxd", ".md", ".toml", ".yml", ".yaml", ".cfg",
                               ".txt", ".sh")) or f in ("run", "Makefile"):
                    yield os.path.join(d, f)


def test_the_repository_stands_alone():
    me = os.path.abspath(__file__)
    bad = []
    for path in _text_files():
        if os.path.abspath(path) == me:
            continue
        for i, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
            if OUTSIDE.search(line):
                bad.append("%s:%d: %s" % (os.path.relpath(path, ROOT), i, line.strip()))
    assert not bad, "cite papers by author and title, not files outside the repository:\n" + \
        "\n".join(bad)
