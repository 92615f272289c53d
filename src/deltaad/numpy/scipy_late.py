"""scipy's Python functions on duals, with scipy's own value: the shared part of the late rules
of :mod:`.scipy_linalg`, :mod:`.scipy_fft` and :mod:`.scipy_multivariate`.

A scipy function that converts its input with ``np.asarray`` (most of ``scipy.linalg``,
``scipy.fft``, ``scipy.signal``) never reaches numpy's dispatch. Its rule is a late rule
(:mod:`.registry`): once the user imports the module (deltaad never does), the function is
replaced in it by a version that calls the rule when an argument holds a dual, scipy's own
function otherwise. Each rule here is *scipy-valued*: scipy's function runs first on the plain
values -- its argument checks, its errors and its value, bit for bit what the plain program
gets -- and a composition of deltaad's rules for the same mathematics (``numpy.linalg``,
``numpy.fft`` and the primitives of these modules) runs on the duals; the duals it returns are
given scipy's value at every level, keeping the composition's derivative (any order the
composition supports).
"""

import sys

from deltaad._plainnumpy import np

from ..trace import is_dual, settled_types
from ..trace import value as strip
from . import registry
from .array import ArrayDual, Dual, asarray
from .complex_array import ComplexDual, pack
from .complex_array import asarray as complex_asarray
from .registry import holds_dual


def plain(a):
    """``a`` with every dual (real or complex, at any depth of lists, tuples and object
    arrays) replaced by its plain value: what scipy's own function is given."""
    if is_dual(a):
        return strip(a)
    t = type(a)
    if t is list or t is tuple:
        return t(plain(e) for e in a)
    if isinstance(a, np.ndarray) and a.dtype.kind == "O":  # (a fillable array too)
        if holds_dual(a):
            return np.asarray([strip(e) for e in a.ravel().tolist()]).reshape(a.shape)
        settle = settled_types.get(type(a))
        if settle is not None:  # a fillable of plain numbers: the float array
            return settle(a)
    return a


def plain_of(f, seen):
    """``f`` handing scipy plain values (a solver or integrator calls it with floats; it may
    return duals through what it closes over); ``seen[0]`` becomes True once it returned a
    dual, so that the caller knows scipy's result has a derivative to give."""

    def g(*a, **k):
        y = f(*a, **k)
        if is_dual(y) or holds_dual(y):
            seen[0] = True
            return plain(y)
        return y

    return g


def replace(mod_name, name, factory):
    """Replace the function ``name`` of the imported module ``mod_name`` by ``factory(f)``
    (once: a replacement keeps scipy's function as ``deltaad_original``), with its name and
    docstring: how the solvers and integrators that call the user's function are taken up."""
    mod = sys.modules.get(mod_name)
    f = getattr(mod, name, None) if mod is not None else None
    if f is None or not callable(f) or hasattr(f, "deltaad_original"):
        return
    g = factory(f)
    g.__name__, g.__qualname__, g.__doc__ = f.__name__, f.__qualname__, f.__doc__
    g.__wrapped__ = g.deltaad_original = f
    setattr(mod, name, g)


def revalue(out, ref, name):
    """``out`` (the composition's result: duals in tuples) with scipy's result ``ref`` as its
    value under every level; a non-dual part of the result is scipy's own object."""
    t = type(out)
    if t is np.ndarray and out.dtype.kind == "O" and holds_dual(out):
        out = packed(out)  # numpy's object loops ran on scalar duals
        t = type(out)
    if t is ComplexDual:
        return ComplexDual(revalue(out.packed, pack(ref), name), out.flavour)
    if t is ArrayDual or t is Dual:
        if np.iscomplexobj(ref):
            raise NotImplementedError(
                "deltaad: %s gives a complex result here (the real matrix has no real result: "
                "a negative eigenvalue?); deltaad differentiates its real results only" % name)
        return t(_revalued_value(out.value, ref, name), out.trace, out.id, out.tangent)
    if isinstance(out, (tuple, list)) and isinstance(ref, (tuple, list)) and len(out) == len(ref):
        items = [revalue(o, r, name) for o, r in zip(out, ref)]
        if hasattr(ref, "_fields"):
            return type(ref)(*items)
        return type(ref)(items) if type(ref) in (tuple, list) else items
    if holds_dual(out):  # never drop a derivative silently
        raise NotImplementedError("deltaad: %s on dual numbers returned %s, which deltaad "
                                  "cannot give scipy's value" % (name, type(out).__name__))
    return ref


def packed(a):
    """The array dual (real or complex) of an object array of scalar duals."""
    items = a.ravel().tolist()
    if any(type(e) is ComplexDual or isinstance(e, complex) for e in items):
        return complex_asarray(a.tolist())
    return asarray(a)


def operand(x):
    """An array dual (real or complex) for an argument holding duals -- an object array of
    scalar duals (what ``np.asarray`` of an array dual is, inside scipy) is packed back, so is a
    list -- and the plain array of any other."""
    t = type(x)
    if t is ArrayDual or t is ComplexDual or t is Dual:
        return x
    if t is list or t is tuple:
        x = np.asarray(x, dtype=object)
    if type(x) is np.ndarray and x.dtype.kind == "O":
        return packed(x)
    return asarray(x)


def _revalued_value(v, ref, name):
    t = type(v)
    if t is ArrayDual or t is Dual:
        return t(_revalued_value(v.value, ref, name), v.trace, v.id, v.tangent)
    if t is float:
        return float(ref)
    r = np.asarray(ref)
    if r.shape != np.shape(v):
        raise NotImplementedError(
            "deltaad: %s on dual numbers gives shape %s where scipy gives %s: these argument "
            "shapes are not supported" % (name, np.shape(v), r.shape))
    return r


def scipy_valued(name, original, impl):
    """The rule for ``original`` (the scipy function ``name``): scipy's function on the plain
    arguments (its checks, its errors, its value ``ref``), then ``impl(ref, *args, **kwargs)``
    on the duals (``ref`` tells it the choices scipy made: pivots, signs), revalued."""

    def rule(*args, **kwargs):
        ref = original(*plain(args), **{k: plain(v) for k, v in kwargs.items()})
        return revalue(impl(ref, *args, **kwargs), ref, name)

    rule.__name__ = name.rpartition(".")[2]
    rule.__doc__ = impl.__doc__
    return rule


def late(name, impl, note=""):
    """Register ``impl(original)`` -> the implementation on duals ``f(ref, *args, **kwargs)``
    (whose value will be scipy's ``ref``) as the late rule of the scipy function ``name`` (``"scipy.linalg.expm"``)."""

    def factory(original):
        return scipy_valued(name, original, impl(original))

    registry.register_late(name, factory, note)


def refuse(name, what, fix=""):
    """The error for a call deltaad does not differentiate, naming the scipy function."""
    raise NotImplementedError("deltaad: %s(..., %s) on dual numbers is not supported%s"
                              % (name, what, "; " + fix if fix else ""))


def install(module_name):
    """Install the late rules of ``module_name`` when the user imports it (now, if done)."""
    registry.watch(module_name, lambda module: registry.install_late(module_name))


def refused(name, why="deltaad has no derivative rule for it"):
    """A late rule that refuses duals with an error naming the scipy function ``name`` (rather
    than the message of whatever conversion inside scipy would fail first)."""

    def factory(original):
        def impl(*args, **kwargs):
            raise NotImplementedError(
                "deltaad: %s on dual numbers is not supported (%s). Differentiate the numpy "
                "code around it, or give it a rule with deltaad.defvjp / deltaad.custom_vjp."
                % (name, why))

        impl.refused = True
        return impl

    factory.refused = True
    registry.register_late(name, factory, "raises: " + why)
