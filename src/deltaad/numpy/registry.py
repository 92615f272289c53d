"""Where the derivative rules for numpy (and scipy) functions are kept and found.

numpy hands every function call on a dual to deltaad through its dispatch protocols
(``__array_ufunc__`` for ufuncs, ``__array_function__`` for functions); deltaad looks the
function up here. The rules themselves are declared by the rule families of this package
(``elementwise``, ``reductions``, ``shape``, ``products``, ``linalg``, ``constant``) and by users,
with :mod:`deltaad.numpy.define`. A function nobody declared raises an error naming it -- never a
silently wrong (derivative-free) result.

- ``UFUNCS[ufunc]``: the rule for a ufunc call, ``rule(*operands) -> result``;
- ``SCALAR_UFUNCS[ufunc]``: the rule when every operand is a scalar (a scalar result, as numpy
  gives for scalars); without one, the array rule's 0-d result is turned back into a scalar;
- ``CONSTANT_UFUNCS``: ufuncs whose result has derivative zero (comparisons, ``floor``...):
  they are computed on plain values;
- ``METHODS[(ufunc, method)]``: ``ufunc.reduce``, ``ufunc.accumulate``, ``ufunc.outer``;
- ``FUNCTIONS[func]``: an implementation with ``func``'s signature, for ``__array_function__``;
- ``NOTES[f]``: the value a rule chooses where ``f`` is not differentiable (shown in the
  documentation's table of supported functions, which is generated from this registry);
- ``ELEMENTARY[name]``: the elementwise table's function ``name`` on arrays (what
  ``deltaad.sin(array)`` calls);
- ``LATE``: rules for ufuncs of optional modules (``"scipy.special.erf"``), registered when that
  module has been imported by the user -- deltaad never imports scipy to find out;
- ``COMPLEX``: the complex rule family's dispatch (:mod:`deltaad.numpy.complex_array`), to which
  the real dispatch hands a call with a complex operand; it keeps its own rule tables.
"""

import sys

import numpy as np

UFUNCS = {}
SCALAR_UFUNCS = {}
CONSTANT_UFUNCS = set()
METHODS = {}
FUNCTIONS = {}
NOTES = {}
ELEMENTARY = {}
LATE = {}  # "module.name" -> (array rule, scalar rule or None, note)
COMPLEX = None  # set when deltaad.numpy.complex_array is imported


def register(*funcs, note=""):
    """Decorator: ``impl`` implements each numpy function in ``funcs`` (a ``None`` is skipped:
    a function this numpy version lacks) on duals, with the function's own signature; ``note``
    says what it chooses where the function is not differentiable."""

    def deco(impl):
        for f in funcs:
            if f is not None:
                FUNCTIONS[f] = impl
                if note:
                    NOTES[f] = note
        return impl

    return deco


def register_ufunc(ufunc, rule, scalar_rule=None, note=""):
    """``rule`` (and ``scalar_rule`` for scalar operands) answer calls of ``ufunc``; ``ufunc``
    may be the name ``"module.name"`` of a ufunc of an optional module."""
    if isinstance(ufunc, str):
        LATE[ufunc] = (rule, scalar_rule, note)
        return
    UFUNCS[ufunc] = rule
    if scalar_rule is not None:
        SCALAR_UFUNCS[ufunc] = scalar_rule
    if note:
        NOTES[ufunc] = note


def ufunc_rule(ufunc):
    """The rule for ``ufunc``, registering a late one if its module has been imported."""
    rule = UFUNCS.get(ufunc)
    if rule is None:
        name = qualified_name(ufunc)
        late = LATE.get(name)
        if late is None:
            return None
        register_ufunc(ufunc, *late)
        rule = late[0]
    return rule


def qualified_name(f):
    """``module.name`` of a numpy or scipy function, as the user would write it: a ufunc is
    looked up in numpy and in the already imported ``scipy.special``."""
    name = getattr(f, "__name__", None) or repr(f)
    if isinstance(f, np.ufunc):
        if getattr(np, name, None) is f:
            return "numpy." + name
        special = sys.modules.get("scipy.special")
        if special is not None and getattr(special, name, None) is f:
            return "scipy.special." + name
        return "ufunc " + name
    mod = getattr(f, "__module__", None) or "numpy"
    if mod.startswith("numpy"):  # numpy.linalg._linalg.norm is numpy.linalg.norm to a user
        for public in ("numpy.linalg", "numpy.fft", "numpy"):
            parent = sys.modules.get(public)
            if parent is not None and getattr(parent, name, None) is f:
                mod = public
                break
    return "%s.%s" % (mod, name)


def not_implemented(f, method=None):
    """The error for a function (or ufunc method) without a rule."""
    name = qualified_name(f)
    if method is not None:
        name = "%s.%s" % (name, method)
    return NotImplementedError(
        "deltaad has no derivative rule for %s on dual numbers. Use a supported function, or "
        "give it one with deltaad.defvjp / deltaad.defjvp (or deltaad.custom_vjp for your own "
        "function); the supported list is in deltaad's documentation." % name
    )
