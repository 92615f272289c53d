"""User-defined derivative rules: ``custom_vjp``, ``custom_jvp`` (JAX's API) and ``primitive``.

- ``custom_vjp(f)`` with ``f.defvjp(fwd, bwd)``: reverse mode records one binding whose linear
  map is ``bwd`` (the paper's ``Scale`` by a linear operator, §10.2); ``fwd`` computes the
  output and the residuals ``bwd`` needs. Forward mode (where JAX raises) transposes ``bwd``.
- ``custom_jvp(f)`` with ``f.defjvp(rule)``: forward mode calls ``rule(primals, tangents)``;
  reverse mode transposes it, as JAX does: the rule runs once with its tangents being inputs
  of a fresh inner tape, and the binding's linear map is that tape's backward sweep.
- ``primitive(f, *partials)``: the paper's Fig. 14 for a function of n reals given its partial
  derivatives; on arrays it applies elementwise with broadcasting.

Rules receive values relative to the differentiation they are recorded on; those values can be
duals of an outer differentiation, so rules written with deltaad-aware operations (deltaad's
functions, numpy on arrays, operators) are themselves differentiated (a custom rule inside
``hessian`` works). The numpy support is built on the same mechanism
(:class:`deltaad.arrays.Primitive`, :func:`deltaad.array_rules.elementwise_primitive`).
"""

import functools
import inspect
import numbers

import numpy as np

from ._backend import B
from ._errors import escaped_error
from . import arrays as A
from . import array_rules as R
from .arrays import ArrayDual, Dual
from .pytrees import tree_flatten, tree_unflatten

__all__ = ["custom_vjp", "custom_jvp", "primitive"]


# --------------------------------------------------------------------------------------------
# Helpers


def _is_dual(x):
    t = type(x)
    return t is Dual or t is ArrayDual


def _top(leaves):
    top = None
    for x in leaves:
        if _is_dual(x):
            t = x.trace
            if top is None or t.level > top.level:
                top = t
    return top


def _kind(x):
    """'scalar', 'array' or None (not differentiable) for a value leaf."""
    t = type(x)
    if t is float or t is Dual:
        return "scalar"
    if t is ArrayDual:
        return "array"
    if t is bool or t is int or x is None:
        return None
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "f":
            return "array"
        if x.dtype.kind == "c":
            raise A._complex_error()
        return None
    if isinstance(x, (float, np.floating)):
        return "scalar"
    if isinstance(x, (complex, np.complexfloating)):
        raise A._complex_error()
    return None


def _norm_value(x, kind):
    if kind == "scalar" and type(x) is not Dual and type(x) is not float:
        return float(x)
    return x


def _zero_like(x, kind):
    if kind == "scalar":
        return 0.0
    if kind == "array":
        return np.zeros(A.shape_of(x), dtype=A.dtype_of(x))
    return None


def _resolve_kwargs(fun, args, kwargs):
    if not kwargs:
        return args
    try:
        ba = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        raise TypeError("%s: %s" % (getattr(fun, "__name__", "function"), exc)) from None
    ba.apply_defaults()
    if ba.kwargs:
        raise TypeError(
            "keyword arguments %s of a custom_vjp/custom_jvp function could not be resolved to "
            "positions; pass them positionally" % sorted(ba.kwargs)
        )
    return ba.args


def _nondiff(nondiff_argnums, nargs):
    out = set()
    for i in nondiff_argnums:
        if not -nargs <= i < nargs:
            raise ValueError("nondiff_argnums=%r for a call with %d argument(s)" % (nondiff_argnums, nargs))
        out.add(i % nargs)
    return out


def _check_nondiff(args, nd, kind, name):
    for x in tree_flatten(tuple(args[i] for i in sorted(nd)))[0]:
        if _is_dual(x) and not x.trace.closed:
            raise TypeError(
                "%s function %s: an argument in nondiff_argnums is a dual number being "
                "differentiated; make it a differentiable argument" % (kind, name)
            )


class _Cotangents:
    """The adjoint of a binding with several outputs: a sparse tuple, summed entrywise."""

    __slots__ = ("d",)

    def __init__(self, d):
        self.d = d

    def __add__(self, other):
        d = dict(self.d)
        for k, v in other.d.items():
            old = d.get(k)
            d[k] = v if old is None else old + v
        return _Cotangents(d)

    __radd__ = __add__


def _record(top, parent_ids, outs, kinds, rule_multi):
    """Put the output leaves ``outs`` on tape ``top``; ``rule_multi(cts)`` maps the list of
    output cotangents (None for zero) to the parents' cotangents. Returns the new leaves."""
    n = len(outs)
    diff = [k for k in range(n) if kinds[k] is not None]
    result = list(outs)
    if not diff:
        return result
    if len(diff) == 1:
        k0 = diff[0]

        def rule(ct):
            cts = [None] * n
            cts[k0] = ct
            return rule_multi(cts)

        i = top.push_linear(parent_ids, rule)
        result[k0] = A.wrap(outs[k0], top, i, None)
        return result

    def node_rule(pack):
        return rule_multi([pack.d.get(k) for k in range(n)])

    node = top.push_linear(parent_ids, node_rule)
    for k in diff:
        i = top.push_linear((node,), lambda ct, k=k: (_Cotangents({k: ct}),))
        result[k] = A.wrap(outs[k], top, i, None)
    return result


def _fit(ct, kind, like, who):
    """A cotangent (or tangent) for a leaf of ``kind``: float/scalar dual or array (dual)."""
    if ct is None:
        return None
    if kind == "scalar":
        if type(ct) is ArrayDual or isinstance(ct, np.ndarray):
            if A.shape_of(ct) != ():
                raise ValueError("%s: got shape %s for a scalar" % (who, A.shape_of(ct)))
        elif not (type(ct) is Dual or isinstance(ct, numbers.Real)):
            raise TypeError("%s: got %s for a scalar" % (who, type(ct).__name__))
        return A.to_scalar(ct)
    s = A.shape_of(like)
    t = type(ct)
    if t is Dual:
        ct = A.reshape_scalar(ct)
    elif t is not ArrayDual:
        if not isinstance(ct, (np.ndarray, numbers.Real, np.generic)):
            raise TypeError("%s: got %s for an array" % (who, type(ct).__name__))
        if type(ct) is not ArrayDual:
            ct = np.asarray(ct)
    if A.shape_of(ct) != s:
        raise ValueError("%s: got shape %s for an array of shape %s" % (who, A.shape_of(ct), s))
    return ct


def _leaves_like(tree, treedef, who):
    """The leaves of ``tree`` laid out as ``treedef``'s leaves; ``None`` anywhere is zero."""
    out = []

    def walk(x, d):
        if d.kind == "leaf":
            if x is not None and tree_flatten(x)[1].kind != "leaf":
                raise TypeError(
                    "%s has the wrong structure: expected %r (the structure of the primal "
                    "inputs), got %r" % (who, treedef, tree_flatten(tree)[1])
                )
            out.append(x)
            return
        if x is None:
            out.extend([None] * d.nleaves)
            return
        leaves, xd = tree_flatten(x)
        if xd.kind != d.kind or xd.meta != d.meta or len(xd.children) != len(d.children):
            raise TypeError(
                "%s has the wrong structure: expected %r (the structure of the primal inputs), "
                "got %r" % (who, d, xd)
            )
        kids = _children(x, d)
        for c, cd in zip(kids, d.children):
            walk(c, cd)

    walk(tree, treedef)
    return out


def _children(x, d):
    k = d.kind
    if k in ("tuple", "list", "namedtuple"):
        return list(x)
    if k == "dict":
        return [x[key] for key in d.meta]
    if k == "dataclass":
        return [getattr(x, n) for n in d.meta[1]]
    return []


# --------------------------------------------------------------------------------------------
# custom_vjp


class _CustomRule:
    """What custom_vjp and custom_jvp share: binding as a method, and sorting a call's
    arguments into the trace of highest level, its duals and their values."""

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def _split_call(self, args, kwargs, rule, kind):
        """``(name, args, nd, diff_idx, leaves, tdef, top, on, vals)``; ``top`` is None when
        no argument is a dual (then the caller just runs ``fun``)."""
        name = getattr(self.fun, "__name__", "function")
        if rule is None:
            raise AttributeError(
                "no %s defined for %s function %s; use def%s"
                % (kind.upper(), "custom_" + kind, name, kind)
            )
        args = _resolve_kwargs(self.fun, args, kwargs)
        nd = _nondiff(self.nondiff_argnums, len(args))
        diff_idx = [i for i in range(len(args)) if i not in nd]
        leaves, tdef = tree_flatten(tuple(args[i] for i in diff_idx))
        _check_nondiff(args, nd, "custom_" + kind, name)
        top = _top(leaves)
        if top is None:
            return name, args, nd, diff_idx, leaves, tdef, None, None, None
        if top.closed:
            raise escaped_error(top.level)
        on = [_is_dual(x) and x.trace is top for x in leaves]
        vals = [x.value if o else x for x, o in zip(leaves, on)]
        return name, args, nd, diff_idx, leaves, tdef, top, on, vals


class custom_vjp(_CustomRule):
    """A function with a user-defined reverse-mode rule (JAX's ``jax.custom_vjp``)::

        @deltaad.custom_vjp
        def f(x, y):
            return np.sin(x) * y

        def f_fwd(x, y):                  # same arguments as f
            return f(x, y), (np.cos(x), np.sin(x), y)    # (output, residuals)

        def f_bwd(res, g):                # residuals, output cotangent
            cos_x, sin_x, y = res
            return (cos_x * g * y, sin_x * g)            # one cotangent per argument

        f.defvjp(f_fwd, f_bwd)

    ``bwd`` returns a tuple with one entry per (differentiable) argument, each with the
    structure of that argument (``None`` for a zero cotangent); anything else is an error.
    With ``nondiff_argnums`` those arguments are passed to ``bwd`` first and get no cotangent.
    Forward mode (``jvp``/``jacfwd``/``hessian``), where JAX raises, uses the rule too: the
    tangent ``J v`` is computed as the gradient of ``<bwd(res, u), v>`` with respect to ``u``
    (one ``bwd`` call and one small backward sweep). Higher derivatives work when ``fwd`` and
    ``bwd`` are written with deltaad-aware operations.
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = None
        self.bwd = None

    def defvjp(self, fwd, bwd, symbolic_zeros=False):
        """Define the rule: ``fwd(*args) -> (out, residuals)``, ``bwd(res, g) -> cotangents``."""
        if symbolic_zeros:
            raise NotImplementedError("custom_vjp.defvjp(symbolic_zeros=True) is not supported")
        self.fwd = fwd
        self.bwd = bwd

    def __call__(self, *args, **kwargs):
        name, args, nd, diff_idx, leaves, tdef, top, on, vals = self._split_call(args, kwargs, self.fwd, "vjp")
        if top is None:
            return self.fun(*args)
        new_args = list(args)
        for i, v in zip(diff_idx, tree_unflatten(tdef, vals)):
            new_args[i] = v
        res = self.fwd(*new_args)
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(
                "custom_vjp fwd of %s must return a pair (output, residuals); got %s"
                % (name, type(res).__name__)
            )
        out, residuals = res
        out_leaves, out_def = tree_flatten(out)
        kinds = [_kind(x) for x in out_leaves]
        for x in out_leaves:
            if _is_dual(x) and x.trace is top:
                raise TypeError(
                    "custom_vjp fwd of %s returned a value of the differentiation it is being "
                    "recorded on; compute the output from fwd's arguments" % name
                )
        outs = [_norm_value(x, k) for x, k in zip(out_leaves, kinds)]
        nondiff_vals = [args[i] for i in sorted(nd)]
        bwd = self.bwd
        in_kinds = [_kind(x) for x in vals]
        keep = [k for k, o in enumerate(on) if o]

        def rule_multi(cts):
            ct_leaves = [c if c is not None else _zero_like(x, k) for c, x, k in zip(cts, outs, kinds)]
            g = bwd(*nondiff_vals, residuals, tree_unflatten(out_def, ct_leaves))
            who = "custom_vjp bwd of %s" % name
            if not isinstance(g, (tuple, list)) or len(g) != len(diff_idx):
                raise TypeError(
                    "%s must return a tuple with one cotangent per differentiable argument "
                    "(%d); got %s" % (who, len(diff_idx), _describe(g))
                )
            g_leaves = _leaves_like(tuple(g), tdef, who)
            return tuple(_fit(g_leaves[k], in_kinds[k], vals[k], who) for k in keep)

        if top.is_forward:
            tans = [leaves[k].tangent for k in keep]
            return tree_unflatten(out_def, _forward_by_transpose(top, outs, kinds, out_def, tans, keep, rule_multi))
        ids = [leaves[k].id for k in keep]
        return tree_unflatten(out_def, _record(top, ids, outs, kinds, rule_multi))


def _forward_by_transpose(top, outs, kinds, out_def, tans, keep, rule_multi):
    """Forward mode from a reverse rule: the tangent ``J v`` is the gradient with respect to
    ``u`` of ``<bwd(u), v>`` (``bwd`` is linear in ``u``), taken on a small inner tape."""
    from .transforms import _Opened

    with _Opened(B.Tape) as tp:
        us = []
        for x, k in zip(outs, kinds):
            if k == "scalar":
                us.append(tp.input(0.0))
            elif k == "array":
                us.append(A.array_input(tp, np.zeros(A.shape_of(x), dtype=A.dtype_of(x)), None))
            else:
                us.append(None)
        cts = rule_multi(us)
        s = None
        for c, t in zip(cts, tans):
            if c is None or t is None:
                continue
            term = c * t if type(c) is Dual or type(c) is float else np.sum(c * t)
            s = term if s is None else s + term
    wanted = [u.id for u in us if u is not None]
    if s is not None and _is_dual(s) and s.trace is tp:
        adj = tp.eval([(s.id, 1.0 if type(s) is Dual else np.ones(()))], wanted)
    else:
        adj = [None] * len(wanted)
    it = iter(adj)
    result = []
    for x, k in zip(outs, kinds):
        if k is None:
            result.append(x)
            continue
        t = next(it)
        result.append(A.wrap(x, top, -1, _zero_like(x, k) if t is None else _fit(t, k, x, "custom_vjp")))
    return result


def _describe(g):
    if isinstance(g, (tuple, list)):
        return "a %s of length %d" % (type(g).__name__, len(g))
    return "a value of type %s" % type(g).__name__


# --------------------------------------------------------------------------------------------
# custom_jvp


class custom_jvp(_CustomRule):
    """A function with a user-defined forward-mode rule (JAX's ``jax.custom_jvp``)::

        @deltaad.custom_jvp
        def f(x):
            return np.log1p(np.exp(x))

        @f.defjvp
        def f_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return f(x), deltaad.sigmoid(x) * t

    The rule must be linear in the tangents. Reverse mode transposes it (as JAX does), so
    ``grad`` uses the rule too; the rule is differentiated again under ``hessian`` when written
    with deltaad-aware operations (calling ``f`` itself inside the rule is fine).
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None

    def defjvp(self, jvp, symbolic_zeros=False):
        """Define the rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``."""
        if symbolic_zeros:
            raise NotImplementedError("custom_jvp.defjvp(symbolic_zeros=True) is not supported")
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps):
        """One rule per argument: ``jvps[i](t_i, out, *primals)`` (None: no dependence)."""
        fun = self.fun

        def rule(primals, tangents):
            out = fun(*primals)
            t = None
            for f, ti in zip(jvps, tangents):
                if f is None:
                    continue
                u = f(ti, out, *primals)
                t = u if t is None else t + u
            return out, (0.0 * out if t is None else t)

        self.defjvp(rule)

    def __call__(self, *args, **kwargs):
        name, args, nd, diff_idx, leaves, tdef, top, on, vals = self._split_call(args, kwargs, self.jvp, "jvp")
        if top is None:
            return self.fun(*args)
        kinds = [_kind(v) for v in vals]
        nondiff_vals = [args[i] for i in sorted(nd)]
        who = "custom_jvp rule of %s" % name
        if top.is_forward:
            tans = [x.tangent if o else _zero_like(v, k) for x, v, o, k in zip(leaves, vals, on, kinds)]
            pout, tout = self._run(nondiff_vals, tdef, vals, tans, who)
            p_leaves, p_def = tree_flatten(pout)
            t_leaves = _leaves_like(tout, p_def, who)
            result = []
            for p, t in zip(p_leaves, t_leaves):
                k = _kind(p)
                if k is None:
                    result.append(p)
                    continue
                p = _norm_value(p, k)
                t = _fit(t, k, p, who + " (tangent output)")
                result.append(A.wrap(p, top, -1, _zero_like(p, k) if t is None else t))
            return tree_unflatten(p_def, result)
        return self._reverse(top, leaves, on, vals, kinds, nondiff_vals, tdef, who)

    def _run(self, nondiff_vals, tdef, vals, tans, who):
        r = self.jvp(*nondiff_vals, tree_unflatten(tdef, vals), tree_unflatten(tdef, tans))
        if not (isinstance(r, (tuple, list)) and len(r) == 2):
            raise TypeError("%s must return a pair (primal_out, tangent_out); got %s" % (who, _describe(r)))
        return r

    def _reverse(self, top, leaves, on, vals, kinds, nondiff_vals, tdef, who):
        from .transforms import _Opened

        with _Opened(B.Tape) as tp:
            tans = []
            for v, o, k in zip(vals, on, kinds):
                if not o:
                    tans.append(_zero_like(v, k))
                elif k == "scalar":
                    tans.append(tp.input(0.0))
                else:
                    tans.append(A.array_input(tp, np.zeros(A.shape_of(v), dtype=A.dtype_of(v)), None))
            pout, tout = self._run(nondiff_vals, tdef, vals, tans, who)
        t_ids = [t.id for t, o in zip(tans, on) if o]
        p_leaves, p_def = tree_flatten(pout)
        t_leaves = _leaves_like(tout, p_def, who)
        out_kinds = []
        outs = []
        seeds_of = []
        for p, t in zip(p_leaves, t_leaves):
            if _is_dual(p) and p.trace is tp:
                raise TypeError("%s: the primal output depends on the tangents" % who)
            k = _kind(p)
            out_kinds.append(k)
            outs.append(_norm_value(p, k) if k is not None else p)
            seeds_of.append(t.id if _is_dual(t) and t.trace is tp else None)
        keep = [k for k, o in enumerate(on) if o]

        def rule_multi(cts):
            seeds = [(i, c) for i, c in zip(seeds_of, cts) if i is not None and c is not None]
            if not seeds:
                return (None,) * len(keep)
            adj = tp.eval(seeds, t_ids)
            return tuple(_fit(a, kinds[k], vals[k], who) if a is not None else None for a, k in zip(adj, keep))

        ids = [leaves[k].id for k in keep]
        return tree_unflatten(p_def, _record(top, ids, outs, out_kinds, rule_multi))


# --------------------------------------------------------------------------------------------
# primitive (paper Fig. 14)


class _MultiOutput(Exception):
    pass


class primitive:
    """``deltaad.primitive(f, *partials)``: the paper's Fig. 14 for a function of n reals.

    ``f(x1, ..., xn)`` computes the value on plain numbers and ``partials[i](x1, ..., xn)`` the
    partial derivative with respect to ``xi`` (for ``f`` returning a tuple of m values, a tuple
    of m partials). The partials are evaluated in the forward pass on values that may be duals
    of an outer differentiation, so write them with deltaad's (or numpy's) functions for higher
    derivatives to be right. Works in reverse and forward mode and nests. Called with arrays,
    ``f`` and the partials must work elementwise on arrays (numpy functions) and the primitive
    applies elementwise with broadcasting::

        softclip = deltaad.primitive(lambda x: math.tanh(x),
                                     lambda x: 1.0 - deltaad.tanh(x) ** 2)
    """

    def __init__(self, f, *partials, name=None):
        if not partials:
            raise TypeError("deltaad.primitive(f, *partials): give one partial derivative per argument of f")
        functools.update_wrapper(self, f)
        self.f = f
        self.partials = partials
        self.name = name or getattr(f, "__name__", "primitive")
        self._multi = False
        self._array_prim = None

    def __call__(self, *args):
        n = len(self.partials)
        if len(args) != n:
            raise TypeError(
                "%s takes %d argument(s) (one per partial derivative), got %d" % (self.name, n, len(args))
            )
        if all(type(a) is Dual or type(a) is float or isinstance(a, numbers.Real) for a in args):
            args = [a if type(a) is Dual or type(a) is float else float(a) for a in args]
            if not self._multi:
                try:
                    return B.lift(args, self._single, self._coefs)
                except _MultiOutput:
                    self._multi = True
            return self._lift_multi(args)
        return self._array(args)

    def _single(self, *xs):
        y = self.f(*xs)
        if isinstance(y, (tuple, list)):
            raise _MultiOutput()
        return y

    def _coefs(self, *xs):
        return tuple(p(*xs) for p in self.partials)

    def _lift_multi(self, args):
        top = _top(args)
        if top is None:
            return tuple(self.f(*args))
        if top.closed:
            raise escaped_error(top.level)
        on = [type(x) is Dual and x.trace is top for x in args]
        vals = [x.value if o else x for x, o in zip(args, on)]
        ys = self._lift_multi(vals)
        cs = [p(*vals) for p, o in zip(self.partials, on)]
        duals = [x for x, o in zip(args, on) if o]
        out = []
        for m, y in enumerate(ys):
            coefs = tuple(c[m] for c, o in zip(cs, on) if o)
            if top.is_forward:
                out.append(top.emit(y, duals, coefs))
            else:
                out.append(Dual(y, top, top.push_linear([x.id for x in duals], coefs), None))
        return tuple(out)

    def _array(self, args):
        if self._array_prim is None:
            self._array_prim = R.elementwise_primitive(self.name, self.f, self.partials)
        return A.apply(self._array_prim, [A.operand_or_raise(a) for a in args])
