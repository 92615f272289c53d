"""Declaring derivatives of numpy and scipy functions: the way deltaad's own rules are written,
and the way to add one.

- :func:`defvjp` and :func:`defjvp`, as in HIPS autograd: one vjp maker (reverse mode) or jvp
  (forward mode) per differentiable argument. Give either or both: a missing one is derived by
  transposing the other (it is linear in its cotangent or tangent), so both modes always work.
- :func:`defconst`: the function's result has derivative zero (``argmax``, ``floor``...).
- :func:`register`: the function is computed on duals by an implementation written with
  differentiable operations (``ptp = max - min``); its derivative is that implementation's.
- :class:`Primitive` with :func:`register`, for a rule that needs more than autograd's form
  (array arguments inside lists, keyword parameters, several outputs).

Rules take effect through numpy's dispatch: for a ufunc (``np.sinc``-like and every
``scipy.special`` ufunc) and for any numpy function that dispatches on ``__array_function__``.
A function that does neither (a plain Python function converting its input with
``np.asarray``) never reaches deltaad; ``defvjp`` returns a differentiable version of it to call
instead.
"""

import inspect

from deltaad._plainnumpy import np

from .. import trace as _trace
from .._backend import B
from ..trace import is_dual, traced
from ..trace import value as strip
from . import registry
from .array import (
    ArrayDual, Dual, Primitive, apply, array_input, as_ndarray, broadcast, operand_or_raise,
    shape_of, unbroadcast,
)
from .registry import holds_dual
from .registry import register as _register

__all__ = ["defvjp", "defjvp", "defconst", "register", "Primitive", "jvp_primitive"]


def register(*funcs, note="", numpy_value=False):
    """Decorator: ``impl`` implements each numpy function in ``funcs`` (a ``None`` is skipped:
    a function this numpy version lacks) on duals, with the function's own signature; its
    derivative is that of ``impl``. ``note`` says what it chooses where the function is not
    differentiable.

    The value of a call must be numpy's, bit for bit: what the plain program computes. An
    ``impl`` that applies one primitive computing with numpy's function itself has it. One that
    is a composition (``norm = sqrt(sum(x * x))``) rounds differently from numpy's own
    algorithm: declare it with ``numpy_value=True``, and the duals it returns carry the value of
    ``func`` on the plain arguments instead (one more call of ``func``; ``impl`` runs once, and
    its derivative is kept). tests/numpy/test_values.py checks every registered function."""
    if not numpy_value:
        return _register(*funcs, note=note)

    def deco(impl):
        for f in funcs:
            if f is not None:
                _register(f, note=note)(numpy_valued(f, impl))
        return impl

    return deco


def numpy_valued(func, impl):
    """``impl`` (a rule for the numpy function ``func``) with ``func``'s own value: the duals
    ``impl`` returns are given the value of ``func`` on the plain arguments."""

    def rule(*args, **kwargs):
        out = impl(*args, **kwargs)
        if not (is_dual(out) or isinstance(out, tuple) and any(is_dual(o) for o in out)):
            return out
        ref = func(*[plain(a) for a in args], **{k: plain(v) for k, v in kwargs.items()})
        return _revalued(out, ref, func)

    rule.__name__ = getattr(impl, "__name__", "rule")
    rule.__doc__ = impl.__doc__
    rule.numpy_valued = func
    return rule


def _revalued(out, ref, func):
    """``out`` (duals, in tuples) with the plain values ``ref`` put under every level."""
    t = type(out)
    if t is ArrayDual or t is Dual:
        return type(out)(_revalued(out.value, ref, func), out.trace, out.id, out.tangent)
    if t is tuple or t is list or isinstance(out, tuple):
        items = [_revalued(o, r, func) for o, r in zip(out, ref)]
        return t(*items) if hasattr(out, "_fields") else t(items)
    if t is float:
        return float(ref)
    if t is np.ndarray or t in _trace.recorded_arrays and type(ref) is t:
        # (deltaad.compile's recording: its record of func's own call, so that the replay
        # computes numpy's value as the call without compile does)
        r = as_ndarray(ref)  # (numpy's scalar as the 0-d array the dual holds)
        if r.shape != out.shape:
            raise AssertionError("deltaad: the rule for %s gives shape %s where numpy gives %s"
                                 % (registry.qualified_name(func), out.shape, r.shape))
        return r
    return out


class _Declared:
    """A numpy function with rules declared by ``defvjp``/``defjvp``: what dispatch calls."""

    def __init__(self, func):
        self.func = func
        self.name = registry.qualified_name(func)
        self.vjps = {}
        self.jvps = {}
        try:
            self.sig = None if isinstance(func, np.ufunc) else inspect.signature(func)
        except (TypeError, ValueError):
            self.sig = None
        self.prim = Primitive(self.name, self._impl, self._vjp, self._jvp)
        self.__name__ = getattr(func, "__name__", self.name)
        self.__doc__ = getattr(func, "__doc__", None)

    def __call__(self, *args, **kwargs):
        if self.sig is not None and kwargs:
            ba = self.sig.bind(*args, **kwargs)
            args, kwargs = ba.args, ba.kwargs
        nums = sorted(set(self.vjps) | set(self.jvps))
        nums = [n for n in nums if n < len(args)]
        for k, a in enumerate(args):
            if k not in nums and holds_dual(a):
                raise TypeError(
                    "%s: argument %d is a dual number, but derivative rules were declared only "
                    "for argument(s) %s; declare one for it (deltaad.defvjp / defjvp), or pass "
                    "deltaad.value(...) if it is a constant" % (self.name, k, tuple(nums)))
        for k, a in kwargs.items():
            if holds_dual(a):
                raise TypeError("%s: the keyword argument %s= is a dual number; differentiable "
                                "arguments must be positional" % (self.name, k))
        if not any(holds_dual(args[n]) for n in nums):
            return self.func(*args, **kwargs)
        ops = [operand_or_raise(args[n]) for n in nums]
        return apply(self.prim, ops, {"call": (tuple(nums), args, kwargs)})

    def _full(self, vals, call):
        nums, args, kwargs = call
        full = list(args)
        for n, v in zip(nums, vals):
            full[n] = v
        return full, kwargs

    def _impl(self, *vals, call):
        full, kwargs = self._full(vals, call)
        return self.func(*full, **kwargs)

    def _vjp(self, out, vals, on, call):
        full, kwargs = self._full(vals, call)
        makers = []
        for n, v, o in zip(call[0], vals, on):
            if not o:
                makers.append(None)
            elif n in self.vjps:
                makers.append(self.vjps[n](out, *full, **kwargs))
            else:
                jvp = self.jvps[n]
                makers.append(_transpose_jvp(lambda t, jvp=jvp: jvp(t, out, *full, **kwargs), v, out))
        shapes = [shape_of(v) for v in vals]

        def rule(ct):
            return tuple(None if m is None else _fit(m(ct), s) for m, s in zip(makers, shapes))

        return rule

    def _jvp(self, out, vals, tans, call):
        full, kwargs = self._full(vals, call)
        t = None
        for n, v, tn in zip(call[0], vals, tans):
            if tn is None:
                continue
            if n in self.jvps:
                u = self.jvps[n](tn, out, *full, **kwargs)
            else:
                u = _transpose_vjp(self.vjps[n](out, *full, **kwargs), tn, v, out)
            t = u if t is None else t + u
        return broadcast(t, shape_of(out))


def _fit(g, shape):
    """A declared vjp's cotangent for an argument of ``shape``: summed down where the
    argument was broadcast."""
    if g is None:
        return None
    if shape_of(g) != shape:
        g = unbroadcast(g, shape)
    return g


def _declared(func):
    d = registry.FUNCTIONS.get(func) if not isinstance(func, np.ufunc) else registry.UFUNCS.get(func)
    if not isinstance(d, _Declared) or d.func is not func:
        d = _Declared(func)
        if isinstance(func, np.ufunc):
            registry.register_ufunc(func, d)
        else:
            registry.FUNCTIONS[func] = d
    return d


def _argnums(fns, argnums):
    if argnums is None:
        return tuple(range(len(fns)))
    argnums = tuple(argnums)
    if len(argnums) != len(fns):
        raise ValueError("%d rules for argnums %s: give one rule per argument" % (len(fns), argnums))
    return argnums


def defvjp(func, *vjpmakers, argnums=None):
    """Declare reverse-mode rules for ``func`` (a numpy or scipy function or ufunc), one per
    differentiable argument (arguments 0, 1, ... unless ``argnums`` says which)::

        deltaad.defvjp(np.sinc, lambda ans, x: lambda g: g * dsinc(x))

    ``vjpmaker(ans, *args, **kwargs)`` is called once in the forward pass with the result and
    the call's arguments (plain values, or duals of an outer differentiation when nesting) and
    returns the linear map ``g -> cotangent of that argument``. Write it with numpy functions so
    that it differentiates again. A cotangent of a broadcast argument is summed back to its
    shape. Returns the differentiable function (``func`` itself when numpy dispatches it)."""
    d = _declared(func)
    for n, m in zip(_argnums(vjpmakers, argnums), vjpmakers):
        if m is not None:
            d.vjps[n] = m
    return func if _dispatches(func) else d


def defjvp(func, *jvps, argnums=None):
    """Declare forward-mode rules for ``func``, one per differentiable argument::

        deltaad.defjvp(np.sinc, lambda g, ans, x: g * dsinc(x))

    ``jvp(g, ans, *args, **kwargs)`` is that argument's contribution to the output tangent for
    its tangent ``g``; contributions are added."""
    d = _declared(func)
    for n, j in zip(_argnums(jvps, argnums), jvps):
        if j is not None:
            d.jvps[n] = j
    return func if _dispatches(func) else d


def defconst(*funcs):
    """Declare that the results of ``funcs`` have derivative zero: on duals they are computed
    on the plain values (``np.argmax``, ``np.floor``, ``np.isnan``...)."""
    for f in funcs:
        if f is None:
            continue
        if isinstance(f, np.ufunc):
            registry.CONSTANT_UFUNCS.add(f)
        else:
            registry.FUNCTIONS[f] = _constant(f)


def _constant(func):
    def impl(*args, **kwargs):
        return func(*[plain(a) for a in args], **{k: plain(v) for k, v in kwargs.items()})

    impl.__name__ = getattr(func, "__name__", "constant")
    impl.constant = True  # (the documentation's table lists these apart)
    return impl


def plain(a):
    """``a`` with every dual replaced by its plain value (also inside lists and object
    arrays): an argument of a function whose result has derivative zero."""
    t = type(a)
    if t is ArrayDual or t is Dual:
        return strip(a)
    if t is list or t is tuple:
        return t(plain(e) for e in a)
    if isinstance(a, np.ndarray) and a.dtype.kind == "O":  # (a fillable array too)
        return np.asarray([strip(e) for e in a.ravel().tolist()]).reshape(a.shape)
    return a


def _dispatches(func):
    return isinstance(func, np.ufunc) or hasattr(func, "_implementation") or \
        getattr(func, "__module__", "").startswith("numpy")


# --------------------------------------------------------------------------------------------
# One side of a linear map from the other: its transpose, taken on a small inner tape


def _input_like(tp, v):
    """A fresh input of tape ``tp`` shaped like the value ``v`` (0 everywhere)."""
    s = strip(v)
    if type(s) is float or np.ndim(s) == 0 and not isinstance(s, np.ndarray):
        return tp.input(0.0)
    return array_input(tp, np.zeros(np.shape(s), dtype=s.dtype if s.dtype.kind == "f" else float), None)


def _gradient(tp, s, u):
    """d s / d u for the scalar ``s`` and input ``u`` of the (closed) tape ``tp``."""
    if not is_dual(s) or s.trace is not tp:
        return None
    seed = 1.0 if type(s) is Dual else np.ones(())
    return tp.eval([(s.id, seed)], [u.id])[0]


def _inner(a, b):
    p = a * b
    return p if type(p) is Dual or type(p) is float else np.sum(p)


def _transposed(tp, linear, like, w):
    """``(u, <linear(u), w>)`` for a fresh input ``u`` of ``tp`` shaped like ``like``."""
    u = _input_like(tp, like)
    return u, _inner(linear(u), w)


def _transpose_jvp(jvp, v, out):
    """A vjp maker from a jvp: the cotangent ``J^T c`` is the gradient of ``<jvp(u), c>`` with
    respect to ``u``."""

    def vjp(ct):
        tp, (u, s) = traced(B.Tape, _transposed, lambda u: jvp(u), v, ct)
        g = _gradient(tp, s, u)
        return np.zeros(shape_of(v)) if g is None else g

    return vjp


def _transpose_vjp(vjp, t, v, out):
    """A jvp from a vjp map: the tangent ``J t`` is the gradient of ``<vjp(c), t>`` with respect
    to the cotangent ``c``."""
    tp, (c, s) = traced(B.Tape, _transposed, lambda c: _fit(vjp(c), shape_of(v)), out, t)
    g = _gradient(tp, s, c)
    return np.zeros(shape_of(out)) if g is None else g


def jvp_primitive(name, impl, jvp):
    """A primitive given by its ``impl`` and its ``jvp`` alone: the vjp of each operand is the
    transpose of the jvp in that operand (linear in its tangent), taken on an inner tape. The
    jvp must not apply the primitive itself to a tangent (its transpose would recurse)."""

    def vjp(out, vals, on, **params):
        maps = []
        for k, (v, o) in enumerate(zip(vals, on)):
            if not o:
                maps.append(None)
                continue

            def jk(t, k=k):
                tans = [None] * len(vals)
                tans[k] = t
                return jvp(out, vals, tans, **params)

            maps.append(_transpose_jvp(jk, v, out))

        def rule(ct):
            return tuple(None if m is None else m(ct) for m in maps)

        return rule

    return Primitive(name, impl, vjp, jvp)
