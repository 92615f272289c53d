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

from deltaad._plainnumpy import np

from ._backend import B
from ._errors import escaped_error
from .numpy import array as A
from .numpy.array import ArrayDual, Dual
from .numpy.elementwise import elementwise_primitive
from .pytrees import tree_flatten, tree_unflatten
from .trace import dtype_of, is_dual, leaf_kind, on_trace, recorders, top_trace, traced
from .trace import value as strip

__all__ = ["custom_vjp", "custom_jvp", "primitive"]


# --------------------------------------------------------------------------------------------
# Helpers


def _norm_value(x, kind):
    """A scalar output as a float (a numpy scalar converted); a dual, a float and a number
    ``deltaad.compile`` records stay as they are (``float()`` of a recorded number would make
    its value a guard, and every new input a new recording)."""
    tx = type(x)
    if kind == "scalar" and tx is not Dual and tx is not float and tx not in recorders:
        return float(x)
    return x


def _zero_like(x, kind):
    if kind == "scalar":
        return 0.0
    if kind == "array":
        return np.zeros(A.shape_of(x), dtype=dtype_of(x))
    return None


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class _ArgSpec:
    """What resolving a call's arguments needs from ``fun``'s signature, computed once.

    ``n`` positional parameters, the ``defaults`` of the last of them, ``varargs`` for a
    ``*args``; ``fast`` when a call without keywords can be resolved from these alone (no
    keyword-only parameter lacks a default), without ``Signature.bind``. ``sig`` is None for a
    callable ``inspect`` cannot read, or a numpy ufunc: its arguments are taken as they come
    and keywords are an error. A ``functools.partial`` has its real signature here (JAX treats
    it as opaque, which would let the wrapped function's defaults change ``bwd``'s arity with
    the call again).
    """

    __slots__ = ("sig", "n", "defaults", "varargs", "fast")

    def __init__(self, fun):
        self.sig = None
        self.n = 0
        self.defaults = ()
        self.varargs = False
        self.fast = False
        if isinstance(fun, np.ufunc):  # its signature's ``out=None`` is not an argument
            return
        try:
            sig = inspect.signature(fun)
        except (TypeError, ValueError):
            return
        self.sig = sig
        params = list(sig.parameters.values())
        pos = [q for q in params if q.kind in _POSITIONAL]
        self.n = len(pos)
        defaults = []
        for q in reversed(pos):
            if q.default is q.empty:
                break
            defaults.append(q.default)
        self.defaults = tuple(reversed(defaults))
        self.varargs = any(q.kind is q.VAR_POSITIONAL for q in params)
        self.fast = not any(q.kind is q.KEYWORD_ONLY and q.default is q.empty for q in params)


def _resolve_kwargs(spec, fun, args, kwargs):
    """The call's arguments as a tuple of positional arguments with defaults applied (JAX's
    ``resolve_kwargs``: bind the signature, apply the defaults), so that ``fwd``, ``bwd`` and
    the rule see the same arguments however the call spelled them."""
    if not kwargs and spec.fast:
        na = len(args)
        missing = spec.n - na
        if missing == 0 or missing < 0 and spec.varargs:
            return args
        if 0 < missing <= len(spec.defaults):
            return tuple(args) + spec.defaults[len(spec.defaults) - missing:]
    name = getattr(fun, "__name__", "function")
    if spec.sig is None:
        if kwargs:
            raise TypeError(
                "keyword arguments %s of custom_vjp/custom_jvp function %s could not be resolved "
                "to positions (inspect cannot read its signature); pass them positionally"
                % (sorted(kwargs), name))
        return tuple(args)
    try:
        ba = spec.sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError("%s%s: %s" % (name, spec.sig, exc)) from None
    ba.apply_defaults()
    if ba.kwargs:
        passed = sorted(k for k in ba.kwargs if k in kwargs)
        if passed:
            raise TypeError(
                "keyword arguments %s of custom_vjp/custom_jvp function %s could not be "
                "resolved to positions (keyword-only or **kwargs); pass them positionally"
                % (passed, name))
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
        if is_dual(x) and not x.trace.closed:
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


def _not_float_error(who, what, got):
    """The error for a (co)tangent that is not a float: complex, integer or anything else."""
    if got == "complex":
        return TypeError(
            "deltaad differentiates real functions; %s returned a complex %s. Split the "
            "function into real and imaginary parts and differentiate those." % (who, what))
    if got in ("bool", "int", "integer"):
        return TypeError(
            "%s returned a %s of %s type for a float %s; a %s has the float dtype of its "
            "primal (return None for a zero %s)"
            % (who, what, got, "input" if what == "cotangent" else "output", what, what))
    return TypeError("%s returned %s for a %s; expected a float or a float array"
                     % (who, got, what))


_DTYPE_KIND = {"c": "complex", "i": "integer", "u": "integer", "b": "bool"}


def _fit(ct, kind, like, who, what="cotangent"):
    """``ct`` checked and made a (co)tangent for a leaf of ``kind`` shaped like ``like``: a float
    or scalar dual for ``'scalar'``, a float array (dual) of ``like``'s shape for ``'array'``
    (a plain one cast to ``like``'s float dtype). A wrong shape is a ValueError, never a
    broadcast; a complex, integer or non-numeric value a TypeError."""
    if ct is None:
        return None
    t = type(ct)
    if t is float or t is Dual or (t in recorders and kind == "scalar"):
        if kind == "scalar":
            return ct
        ct = A.reshape_scalar(ct) if t is Dual else np.asarray(ct)
    elif t is not ArrayDual:
        if t is bool or isinstance(ct, (np.bool_, numbers.Integral)):
            raise _not_float_error(who, what, "bool" if isinstance(ct, (bool, np.bool_)) else "int")
        if isinstance(ct, (complex, np.complexfloating)) or leaf_kind(ct) == "complex":
            raise _not_float_error(who, what, "complex")
        if not isinstance(ct, (np.ndarray, numbers.Real, np.floating)):
            raise _not_float_error(who, what, "a value of type %s" % t.__name__)
        ct = np.asarray(ct)
        if ct.dtype.kind == "O":  # e.g. np.array([dual, dual]) built by the rule
            ct = A.asarray(ct)
    if type(ct) is ArrayDual:
        dk = dtype_of(ct).kind
    else:
        dk = ct.dtype.kind
    if dk != "f":
        raise _not_float_error(who, what, _DTYPE_KIND.get(dk, "an array of dtype %s" % dtype_of(ct)))
    s = () if kind == "scalar" else A.shape_of(like)
    if ct.shape != s:
        raise ValueError(
            "%s returned a %s of shape %s for %s; it must have exactly the %s's shape (it is "
            "not broadcast)" % (who, what, ct.shape,
                                "a scalar" if kind == "scalar" else "an array of shape %s" % (s,),
                                "input" if what == "cotangent" else "primal output"))
    if kind == "scalar":
        return A.to_scalar(ct)
    if type(ct) is np.ndarray:
        dt = dtype_of(like)
        if ct.dtype != dt:
            ct = ct.astype(dt)
    return ct


def _nonzero(v):
    """True when the plain value under ``v`` has a finite nonzero entry (a linear map applied
    to zeros gives zeros; nan and inf are let pass, as ``0 * inf`` is nan)."""
    v = strip(v)
    if type(v) is float:
        return v != 0.0 and v - v == 0.0
    v = np.asarray(v)
    return bool(np.any((v != 0) & np.isfinite(v)))


def _check_free(leaves, top, who, what, fix, inner=True):
    """No leaf may be a dual of ``top`` (nor, with ``inner``, of an open trace nested inside
    it), nor a dual whose value is one: a rule's output, residual or cotangent that is one was
    captured from an enclosing scope, not computed from the rule's arguments, and the rule does
    not account for it."""
    level = top.level
    for x in leaves:
        while is_dual(x):
            t = x.trace
            if t is top or inner and t.level > level and not t.closed:
                raise TypeError(
                    "%s returned %s holding a value being differentiated (captured from an "
                    "enclosing scope, not computed from the rule's arguments), so its "
                    "derivative would be wrong; %s" % (who, what, fix))
            if t.level < level:
                break
            x = x.value


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
        spec = self._spec
        if spec is None:
            spec = self._spec = _ArgSpec(self.fun)
        args = _resolve_kwargs(spec, self.fun, args, kwargs)
        nd = _nondiff(self.nondiff_argnums, len(args))
        diff_idx = [i for i in range(len(args)) if i not in nd]
        leaves, tdef = tree_flatten(tuple(args[i] for i in diff_idx))
        _check_nondiff(args, nd, "custom_" + kind, name)
        top = top_trace(leaves)
        if top is None:
            return name, args, nd, diff_idx, leaves, tdef, None, None, None
        if top.closed:
            raise escaped_error(top.level)
        on = [is_dual(x) and x.trace is top for x in leaves]
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
    structure, shapes and float dtype of that argument (``None`` for a zero cotangent); anything
    else is an error (a cotangent is never broadcast; a complex or integer one is a TypeError).
    Arguments are resolved against ``f``'s signature with its defaults applied, as in JAX:
    ``fwd`` and ``bwd`` see every parameter however the call is spelled. With
    ``nondiff_argnums`` (indices into that resolved list) those arguments are passed to ``bwd``
    first and get no cotangent.
    Forward mode (``jvp``/``jacfwd``/``hessian``), where JAX raises, uses the rule too: the
    tangent ``J v`` is computed as the gradient of ``<bwd(res, u), v>`` with respect to ``u``
    (one ``bwd`` call and one small backward sweep; ``bwd`` must be linear in ``g``, checked
    there as ``bwd(res, 0) == 0``). Higher derivatives work when ``fwd`` and ``bwd`` are written
    with deltaad-aware operations. ``fwd``'s output and residuals may not hold duals of the
    differentiation in progress captured from an enclosing scope (pass such values as
    arguments).
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self._spec = None
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
        kinds = [leaf_kind(x) for x in out_leaves]
        fix = ("compute it from fwd's arguments, or pass the captured value to %s as an "
               "argument" % name)
        _check_free(out_leaves, top, "custom_vjp fwd of %s" % name, "an output", fix)
        if residuals is not None:
            _check_free(tree_flatten(residuals)[0], top, "custom_vjp fwd of %s" % name, "residuals", fix)
        outs = [_norm_value(x, k) for x, k in zip(out_leaves, kinds)]
        nondiff_vals = [args[i] for i in sorted(nd)]
        bwd = self.bwd
        in_kinds = [leaf_kind(x) for x in vals]
        keep = [k for k, o in enumerate(on) if o]
        who = "custom_vjp bwd of %s" % name

        def rule_multi(cts):
            try:
                return checked_bwd(cts)
            except (TypeError, ValueError) as e:
                # bwd got cotangents shaped like fwd's output: if that differs from f's own,
                # the mistake is fwd's (checked here only, where running f costs nothing).
                _blame_fwd(self.fun, new_args, out_leaves, out_def, name, e)
                raise

        def checked_bwd(cts):
            ct_leaves = [c if c is not None else _zero_like(x, k) for c, x, k in zip(cts, outs, kinds)]
            g = bwd(*nondiff_vals, residuals, tree_unflatten(out_def, ct_leaves))
            if not isinstance(g, (tuple, list)) or len(g) != len(diff_idx):
                raise TypeError(
                    "%s must return a tuple with one cotangent per differentiable argument "
                    "(%d); got %s" % (who, len(diff_idx), _describe(g))
                )
            g_leaves = _leaves_like(tuple(g), tdef, who)
            # Every float leaf's cotangent is checked, kept or not (a wrong one is a bug in bwd
            # whichever arguments are being differentiated); only the kept ones are returned.
            fitted = [_fit(c, k, v, who) if k is not None else None
                      for c, k, v in zip(g_leaves, in_kinds, vals)]
            result = tuple(fitted[k] for k in keep)
            _check_free(result, top, who, "a cotangent",
                        "compute it from the residuals and the output cotangent, or pass the "
                        "captured value to %s as an argument" % name, inner=False)
            return result

        if top.is_forward:
            tans = [leaves[k].tangent for k in keep]
            return tree_unflatten(out_def, _forward_by_transpose(top, outs, kinds, out_def, tans, keep, rule_multi, who))
        ids = [leaves[k].id for k in keep]
        return tree_unflatten(out_def, _record(top, ids, outs, kinds, rule_multi))


def _blame_fwd(fun, args, out_leaves, out_def, name, err):
    """Raise an error naming ``fwd`` if its output differs in structure or shape from what
    ``fun`` returns on the same (plain) arguments; return if it does not."""
    leaves, d = tree_flatten(tuple(args))
    try:
        ref = fun(*tree_unflatten(d, [strip(x) for x in leaves]))
    except Exception:  # noqa: BLE001 - f fails on its own: nothing to compare with
        return
    ref_leaves, ref_def = tree_flatten(ref)
    if ref_def != out_def:
        raise TypeError(
            "custom_vjp fwd of %s returned an output with the structure %r, but %s returns %r: "
            "fwd must return (output, residuals) with output what %s itself returns"
            % (name, out_def, name, ref_def, name)) from err
    for k, (o, r) in enumerate(zip(out_leaves, ref_leaves)):
        so, sr = np.shape(strip(o)), np.shape(strip(r))
        if so != sr:
            where = "" if len(out_leaves) == 1 else " (leaf %d)" % k
            raise ValueError(
                "custom_vjp fwd of %s returned an output of shape %s%s, but %s returns shape %s "
                "for these arguments: fwd must return (output, residuals) with output what %s itself returns"
                % (name, so, where, name, sr, name)) from err


def _transpose_bwd(tp, outs, kinds, tans, rule_multi, who):
    """``(us, s)``: fresh inputs ``us`` of ``tp`` for the output cotangents, and
    ``s = <bwd(us), tangents>``, whose gradient is the tangent output."""
    us = []
    for x, k in zip(outs, kinds):
        if k == "scalar":
            us.append(tp.input(0.0))
        elif k == "array":
            us.append(A.array_input(tp, np.zeros(A.shape_of(x), dtype=dtype_of(x)), None))
        else:
            us.append(None)
    cts = rule_multi(us)
    s = None
    lost = 0.0
    for c, t in zip(cts, tans):
        if c is None or t is None:
            continue
        if _nonzero(c):
            # bwd(0) must be 0: transposing bwd relies on its being linear in g.
            raise ValueError(
                "%s is not linear in the output cotangent: it returned a nonzero cotangent "
                "for a zero one (forward mode transposes bwd, which needs bwd(res, g) "
                "linear in g)" % who)
        if on_trace(c, tp) is None:
            lost = lost + _nonfinite_part(c, t)
        term = c * t if type(c) is Dual or type(c) is float else np.sum(c * t)
        s = term if s is None else s + term
    return us, (s, lost)


def _nonfinite_part(c, t):
    """``<c, t>`` over the entries where the tangent ``t`` is nonzero, for a cotangent ``c``
    that does not depend on the output cotangent: nonzero only where ``c`` is nan or infinite
    (a finite nonzero one was refused as not linear). Its gradient is lost in the transpose;
    reverse mode gives it (``grad`` of a bwd returning nan is nan), so forward mode adds it
    to every output tangent (0 when all is finite)."""
    cv = np.asarray(strip(c), dtype=float)
    tv = np.asarray(strip(t), dtype=float)
    if np.all(np.isfinite(cv)):
        return 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        return float(np.sum(np.where(tv != 0.0, cv * tv, 0.0)))


def _forward_by_transpose(top, outs, kinds, out_def, tans, keep, rule_multi, who):
    """Forward mode from a reverse rule: the tangent ``J v`` is the gradient with respect to
    ``u`` of ``<bwd(u), v>`` (``bwd`` is linear in ``u``), taken on a small inner tape."""
    tp, (us, (s, lost)) = traced(B.Tape, _transpose_bwd, outs, kinds, tans, rule_multi, who)
    wanted = [u.id for u in us if u is not None]
    if s is not None and is_dual(s) and s.trace is tp:
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
        t = _zero_like(x, k) if t is None else _fit(t, k, x, who, "tangent")
        if lost != 0.0:  # nan or inf (see _nonfinite_part)
            t = t + lost
        result.append(A.wrap(x, top, -1, t))
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

    The rule must be linear in the tangents and return a tangent output with the structure,
    shapes and float dtype of the primal output (checked in both modes). Reverse mode transposes
    it (as JAX does), so ``grad`` uses the rule too, and checks that zero tangents give a zero
    tangent output; the rule is differentiated again under ``hessian`` when written
    with deltaad-aware operations (calling ``f`` itself inside the rule is fine).
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self._spec = None
        self.jvp = None

    def defjvp(self, jvp, symbolic_zeros=False):
        """Define the rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``."""
        if symbolic_zeros:
            raise NotImplementedError("custom_jvp.defjvp(symbolic_zeros=True) is not supported")
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps):
        """One rule per argument: ``jvps[i](t_i, out, *primals)`` (None: no dependence); the
        tangent output is their sum, leaf by leaf (JAX's ``defjvps``). ``out`` is computed by
        calling this function, so that nested differentiation uses the rule as well."""
        name = getattr(self.fun, "__name__", "function")

        def rule(primals, tangents):
            out = self(*primals)
            o_def = tree_flatten(out)[1]
            acc = None
            for f, ti in zip(jvps, tangents):
                if f is None or ti is None:
                    continue
                u = _leaves_like(f(ti, out, *primals), o_def, "custom_jvp defjvps rule of %s" % name)
                if acc is None:
                    acc = u
                else:
                    acc = [b if a is None else a if b is None else a + b for a, b in zip(acc, u)]
            return out, tree_unflatten(o_def, [None] * o_def.nleaves if acc is None else acc)

        self.defjvp(rule)

    def __call__(self, *args, **kwargs):
        name, args, nd, diff_idx, leaves, tdef, top, on, vals = self._split_call(args, kwargs, self.jvp, "jvp")
        if top is None:
            return self.fun(*args)
        kinds = [leaf_kind(v) for v in vals]
        nondiff_vals = [args[i] for i in sorted(nd)]
        who = "custom_jvp rule of %s" % name
        if top.is_forward:
            tans = [x.tangent if o else _zero_like(v, k) for x, v, o, k in zip(leaves, vals, on, kinds)]
            pout, tout = self._run(nondiff_vals, tdef, vals, tans, who)
            p_leaves, p_def = tree_flatten(pout)
            t_leaves = _leaves_like(tout, p_def, who + " (tangent output)")
            _check_free(p_leaves, top, who, "a primal output", _JVP_FIX % name)
            result = []
            for p, t in zip(p_leaves, t_leaves):
                k = leaf_kind(p)
                if k is None:
                    result.append(p)
                    continue
                p = _norm_value(p, k)
                t = _fit(t, k, p, who, "tangent")
                if t is None:
                    t = _zero_like(p, k)
                else:
                    _check_free((t,), top, who, "a tangent output", _JVP_FIX % name)
                result.append(A.wrap(p, top, -1, t))
            return tree_unflatten(p_def, result)
        return self._reverse(top, leaves, on, vals, kinds, nondiff_vals, tdef, who, name)

    def _run(self, nondiff_vals, tdef, vals, tans, who):
        r = self.jvp(*nondiff_vals, tree_unflatten(tdef, vals), tree_unflatten(tdef, tans))
        if not (isinstance(r, (tuple, list)) and len(r) == 2):
            raise TypeError("%s must return a pair (primal_out, tangent_out); got %s" % (who, _describe(r)))
        return r

    def _transposed(self, tp, vals, on, kinds, nondiff_vals, tdef, who):
        """The rule run with ``tp`` open, its tangents zero inputs of ``tp``: the outputs and
        the ids on ``tp`` of the tangent outputs (the seeds of ``_reverse``'s sweep)."""
        tans = []
        for v, o, k in zip(vals, on, kinds):
            if not o:
                tans.append(_zero_like(v, k))
            elif k == "scalar":
                tans.append(tp.input(0.0))
            else:
                tans.append(A.array_input(tp, np.zeros(A.shape_of(v), dtype=dtype_of(v)), None))
        pout, tout = self._run(nondiff_vals, tdef, vals, tans, who)
        p_leaves, p_def = tree_flatten(pout)
        t_leaves = _leaves_like(tout, p_def, who + " (tangent output)")
        out_kinds = []
        outs = []
        seeds_of = []
        for p, t in zip(p_leaves, t_leaves):
            if is_dual(p) and p.trace is tp:
                raise TypeError("%s: the primal output depends on the tangents" % who)
            k = leaf_kind(p)
            out_kinds.append(k)
            if k is None:
                outs.append(p)
                seeds_of.append(None)
                continue
            p = _norm_value(p, k)
            outs.append(p)
            # While tp is open: fitting a tangent may record on it (a 0-d array <-> scalar).
            t = _fit(t, k, p, who, "tangent")
            if t is not None and _nonzero(t):
                raise ValueError(
                    "%s is not linear in the tangents: it returned a nonzero tangent output "
                    "for zero input tangents (reverse mode transposes the rule, which needs "
                    "the tangent output linear in the tangents)" % who)
            seeds_of.append(t.id if is_dual(t) and t.trace is tp else None)
        return tans, p_leaves, p_def, t_leaves, out_kinds, outs, seeds_of

    def _reverse(self, top, leaves, on, vals, kinds, nondiff_vals, tdef, who, name):
        """Reverse mode by transposing the rule: it runs once with its tangents being zero
        inputs of a fresh tape ``tp``; the binding's linear map is ``tp``'s backward sweep from
        the tangent outputs. The tangent outputs are checked as in forward mode (structure,
        shape, dtype) and must be linear in the tangents: zero for zero tangents."""
        tp, (tans, p_leaves, p_def, t_leaves, out_kinds, outs, seeds_of) = traced(
            B.Tape, self._transposed, vals, on, kinds, nondiff_vals, tdef, who)
        _check_free(p_leaves, top, who, "a primal output", _JVP_FIX % name)
        _check_free(t_leaves, top, who, "a tangent output", _JVP_FIX % name)
        t_ids = [t.id for t, o in zip(tans, on) if o]
        keep = [k for k, o in enumerate(on) if o]

        def rule_multi(cts):
            seeds = [(i, c) for i, c in zip(seeds_of, cts) if i is not None and c is not None]
            if not seeds:
                return (None,) * len(keep)
            adj = tp.eval(seeds, t_ids)
            return tuple(_fit(a, kinds[k], vals[k], who) if a is not None else None for a, k in zip(adj, keep))

        ids = [leaves[k].id for k in keep]
        return tree_unflatten(p_def, _record(top, ids, outs, out_kinds, rule_multi))


_JVP_FIX = ("compute it from the rule's primals and tangents, or pass the captured value to %s "
            "as an argument")


# --------------------------------------------------------------------------------------------
# primitive (paper Fig. 14)


class _MultiOutput(Exception):
    pass


def _check_partial(c, name, j):
    """A partial derivative's value must be real: a complex one would be silently dropped."""
    if isinstance(c, (complex, np.complexfloating)) or isinstance(c, np.ndarray) and c.dtype.kind == "c":
        raise TypeError(
            "deltaad differentiates real functions; partial derivative %d of primitive %s "
            "returned a complex value" % (j, name))


def _multi_partial(c, nout, name, j):
    """Partial ``j`` of a primitive of ``nout`` outputs: a tuple of ``nout`` real values."""
    if not isinstance(c, (tuple, list)) or len(c) != nout:
        raise TypeError(
            "primitive %s returns %d values, so partial derivative %d must return a tuple of "
            "%d partials (one per output); got %s" % (name, nout, j, nout, _describe(c)))
    for x in c:
        if type(x) is not float and type(x) is not Dual:
            _check_partial(x, name, j)
    return c


def _array_partial(p, name, j, m=None, nout=None):
    """Partial ``p`` (of output ``m`` of ``nout``, when given) checked, for arrays."""
    if m is None:
        def partial(*xs):
            c = p(*xs)
            if type(c) is not float and not is_dual(c):
                _check_partial(c, name, j)
            return c
    else:
        def partial(*xs):
            return _multi_partial(p(*xs), nout, name, j)[m]
    return partial


class primitive:
    """``deltaad.primitive(f, *partials)``: the paper's Fig. 14 for a function of n reals.

    ``f(x1, ..., xn)`` computes the value on plain numbers and ``partials[i](x1, ..., xn)`` the
    partial derivative with respect to ``xi`` (for ``f`` returning a tuple of m values, a tuple
    of m partials). The partials are evaluated in the forward pass on values that may be duals
    of an outer differentiation, so write them with deltaad's (or numpy's) functions for higher
    derivatives to be right. A partial must be real (a complex one is a TypeError) and, for
    ``f`` of m values, a tuple of exactly m. Works in reverse and forward mode and nests. Called
    with arrays, ``f`` and the partials must work elementwise on arrays (numpy functions) and
    the primitive applies elementwise with broadcasting (a tuple of arrays for m values)::

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
        cs = tuple(p(*xs) for p in self.partials)
        for j, c in enumerate(cs):
            if type(c) is not float and type(c) is not Dual:
                _check_partial(c, self.name, j)
        return cs

    def _lift_multi(self, args):
        top = top_trace(args)
        if top is None:
            return tuple(self.f(*args))
        if top.closed:
            raise escaped_error(top.level)
        on = [type(x) is Dual and x.trace is top for x in args]
        vals = [x.value if o else x for x, o in zip(args, on)]
        ys = self._lift_multi(vals)
        cs = [_multi_partial(p(*vals), len(ys), self.name, j) if o else None
              for j, (p, o) in enumerate(zip(self.partials, on))]
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
        ops = [A.operand_or_raise(a) for a in args]
        if self._array_prim is None:
            # One elementwise primitive per output: find out once, on plain values, whether
            # f returns a tuple (as the scalar path does on its first call).
            probe = self.f(*[strip(o) for o in ops])
            if isinstance(probe, (tuple, list)):
                nout = len(probe)
                self._array_prim = tuple(
                    elementwise_primitive(
                        "%s[%d]" % (self.name, m), lambda *xs, m=m: self.f(*xs)[m],
                        [_array_partial(p, self.name, j, m, nout) for j, p in enumerate(self.partials)])
                    for m in range(nout))
            else:
                self._array_prim = elementwise_primitive(
                    self.name, self.f,
                    [_array_partial(p, self.name, j) for j, p in enumerate(self.partials)])
        if type(self._array_prim) is tuple:
            return tuple(A.apply(p, ops) for p in self._array_prim)
        return A.apply(self._array_prim, ops)
