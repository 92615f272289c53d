"""scipy.optimize's bracketing root finders (``brentq``, ``brenth``, ``ridder``, ``bisect``) met
by duals: a clear error naming the solver, instead of the interpreter's ``SystemError``.

These solvers are C code that converts the value of ``f`` with ``PyFloat_AsDouble`` and does not
check for an error: when ``f`` returns a dual (its float conversion raises, so as not to drop a
derivative silently) the C loop goes on calling ``f`` with that exception still set, and the
interpreter later reports ``SystemError: ... returned a result with an exception set`` at some
unrelated call (scipy.stats's numerical ``ppf`` of ``exponnorm`` reached it). deltaad does not
differentiate through these solvers (the root's derivative is the implicit function theorem's,
which ``deltaad.custom_vjp`` expresses); so, when the user imports ``scipy.optimize`` (deltaad
never does), each solver is replaced in its modules by one that raises an error naming it when
an argument holds a dual, and -- while a differentiation is open -- checks ``f``'s result inside
the callback, where an exception propagates cleanly. Outside differentiation scipy's own
solver runs, unchanged.
"""

import sys

from ..trace import is_dual, open_traces
from . import registry
from .registry import holds_dual

SOLVERS = ("brentq", "brenth", "ridder", "bisect")
MODULES = ("scipy.optimize", "scipy.optimize._zeros_py")

_FIX = ("scipy's root finder works on floats and deltaad does not differentiate through it. "
        "Find the root on plain values and give its derivative by the implicit function "
        "theorem (d root = -(df/dtheta) / (df/dx) at the root), e.g. with deltaad.custom_vjp")


def _error(name, what):
    return NotImplementedError("deltaad: scipy.optimize.%s on dual numbers is not supported: %s. "
                               "%s." % (name, what, _FIX))


def _checked(f, name):
    """``f``, raising the solver's error from inside the callback when it returns a dual."""

    def g(x, *args):
        y = f(x, *args)
        if is_dual(y) or holds_dual(y):
            raise _error(name, "the function returned a dual number (it depends on a variable "
                               "being differentiated)")
        return y

    return g


def guarded(original, name):
    def solver(f, a, b, *rest, **kwargs):
        if holds_dual([a, b]) or holds_dual(list(rest)) or holds_dual(list(kwargs.values())):
            raise _error(name, "an argument (the bracket or args=) holds a dual number")
        if open_traces():
            f = _checked(f, name)
        return original(f, a, b, *rest, **kwargs)

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
