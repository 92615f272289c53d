"""scipy.optimize's bracketing root finders (``brentq``, ``brenth``, ``ridder``, ``bisect``, and
``root_scalar`` with a bracket, which calls them) on duals: the root's derivative by the implicit
function theorem.

These solvers are C code that converts the value of ``f`` with ``PyFloat_AsDouble`` and does not
check for an error: a dual reaching them would leave an exception set, and the interpreter would
later report ``SystemError: ... returned a result with an exception set`` at some unrelated call.
So when the user imports ``scipy.optimize`` (deltaad never does), each solver is replaced in its
modules by one that, when an argument (``args=``, the bracket) holds a dual or ``f`` returns one
(it closes over a variable being differentiated):

1. finds the root ``r`` of ``f(x, theta) = 0`` with scipy's own solver on plain values (the
   result's value is scipy's, to the bit; the bracket's derivative is irrelevant: the root does
   not move with it);
2. evaluates ``f`` once on duals at ``r`` and once more in forward mode for ``c = df/dx`` at
   ``r`` (plain), and returns ``r - (f(r, theta) - f(r, theta0)) / c``: its value is ``r``, its
   derivative ``-f_theta / f_x`` -- the implicit function theorem's, in reverse and forward mode.

First order only: a second derivative through the root would need ``f_xx`` and ``f_x theta``
terms that this construction leaves out, so an ``f`` whose value at the root is a dual of two
nested differentiations raises an error naming the solver (never a silently wrong second
derivative). Outside differentiation scipy's own solver runs, unchanged.
"""

import sys

from .._backend import B
from ..trace import is_dual, on_trace, open_traces, traced
from ..trace import value as strip
from . import registry
from .registry import holds_dual

SOLVERS = ("brentq", "brenth", "ridder", "bisect")
MODULES = ("scipy.optimize", "scipy.optimize._zeros_py")

_FIX = ("deltaad differentiates the root of f(x, theta) = 0 to first order (the implicit "
        "function theorem); for higher orders give the root's derivative yourself, e.g. "
        "with deltaad.custom_jvp")


def _error(name, what):
    return NotImplementedError("deltaad: scipy.optimize.%s on dual numbers is not supported: %s. "
                               "%s." % (name, what, _FIX))


def _plain(a):
    """``a`` with every dual replaced by its plain value (in tuples and lists too)."""
    t = type(a)
    if t is tuple or t is list:
        return t(_plain(e) for e in a)
    return strip(a)


def _split_args(rest, kwargs):
    """``(args, rest, kwargs)`` with the solver's ``args=`` taken out (positional after the
    bracket, or a keyword), a tuple as scipy makes it."""
    if rest:
        args, rest = rest[0], rest[1:]
    else:
        args = kwargs.pop("args", ())
    return (args if isinstance(args, tuple) else (args,)), rest, kwargs


def _slope(f, r, args):
    """``df/dx`` at the plain ``r`` (forward mode; plain: the derivative's own dependence on a
    variable being differentiated is second order, which this rule does not give)."""

    def body(level, x):
        (d,) = level.inputs([x], [1.0])
        out = f(d, *args)
        on = on_trace(out, level)
        return 0.0 if on is None else strip(on.tangent)

    return traced(B.ForwardLevel, body, r)[1]


def _implicit(original, name, f, a, b, args, rest, kwargs):
    pargs = _plain(args)
    res = original(lambda x, *p: strip(f(x, *p)), strip(a), strip(b), pargs, *rest, **kwargs)
    full = type(res) is tuple
    r = res[0] if full else res
    y = f(r, *args)  # on duals: its derivative is f_theta
    if not is_dual(y):
        return res
    if is_dual(y.value):
        raise _error(name, "a second derivative through the root needs terms this rule does not "
                           "give")
    c = _slope(f, r, args)
    root = r - (y - strip(y)) / c
    if not full:
        return root
    if hasattr(res[1], "root"):  # root_scalar returns the RootResults: its root is the dual
        res[1].root = root
    return (root,) + tuple(res[1:])


def guarded(original, name):
    def solver(f, a, b, *rest, **kwargs):
        if not open_traces():
            return original(f, a, b, *rest, **kwargs)
        args, rest, kwargs = _split_args(rest, dict(kwargs))
        if holds_dual(list(rest)) or holds_dual(list(kwargs.values())):
            raise _error(name, "a tolerance or option holds a dual number")
        return _implicit(original, name, f, a, b, args, rest, kwargs)

    solver.__name__ = original.__name__
    solver.__qualname__ = getattr(original, "__qualname__", name)
    solver.__doc__ = original.__doc__
    solver.__wrapped__ = original
    solver.deltaad_original = original
    return solver


def install(module):
    zeros = sys.modules.get("scipy.optimize._zeros_py")
    for name in SOLVERS:
        for mod in (module, zeros):
            f = getattr(mod, name, None) if mod is not None else None
            if f is None or hasattr(f, "deltaad_original"):
                continue
            setattr(mod, name, guarded(f, name))


registry.watch("scipy.optimize", install)
