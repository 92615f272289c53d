"""The differential operators: vjp, grad, jvp, jacrev, jacfwd, hessian, make_delta.

Each one opens a trace (a tape for reverse mode, a forward level for forward mode) at a level
above every trace already open, dualises the real leaves of the inputs (the paper's
``initVars``/``zip`` of §11), runs the user's function, closes the trace (also on exceptions),
and reads the outputs back (``lookup``/``delta``). Written once against the backend interface.
"""

import functools
import itertools
import numbers
import threading

import numpy as np

from . import delta as _delta
from ._backend import B
from ._errors import escaped_error
from .pytrees import LEAF, all_floats, tree_flatten, tree_unflatten

Dual = B.Dual

_levels = itertools.count(1)  # next() is atomic under the GIL: levels never repeat
_local = threading.local()


def open_traces():
    """The traces open in this thread, outermost first (empty outside any differentiation)."""
    return list(getattr(_local, "stack", ()))


class _Opened:
    """Context manager: open a trace of ``kind`` above all others; always close it."""

    __slots__ = ("trace",)

    def __init__(self, kind):
        self.trace = kind(next(_levels))

    def __enter__(self):
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self.trace)
        return self.trace

    def __exit__(self, *exc):
        self.trace.close()
        stack = _local.stack
        if stack and stack[-1] is self.trace:
            stack.pop()
        else:  # closed out of order (a generator kept alive); still never leak it
            try:
                stack.remove(self.trace)
            except ValueError:
                pass
        return False


# --------------------------------------------------------------------------------------------
# Leaves: which are differentiable, how they become duals and come back


def _array_glue():
    from . import numpy_glue

    return numpy_glue


def is_dual(x):
    """True for any deltaad dual (scalar or array)."""
    return type(x) is Dual or getattr(type(x), "_deltaad_array_dual", False)


def _leaf_kind(x):
    """'scalar', 'array' or None (static: passed through, ``None`` in its gradient slot)."""
    tx = type(x)
    if tx is float or tx is Dual:
        return "scalar"
    if tx is int or tx is bool or tx is str or x is None:
        return None
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "f":
            return "array"
        if x.dtype.kind == "c":
            raise TypeError(
                "deltaad differentiates real functions; got a complex array. Split it into real "
                "and imaginary parts (x.real, x.imag) and differentiate with respect to those."
            )
        return None
    if isinstance(x, (np.floating, float)):
        return "scalar"
    if isinstance(x, (complex, np.complexfloating)):
        raise TypeError(
            "deltaad differentiates real functions; got the complex number %r. Differentiate "
            "with respect to its real and imaginary parts separately." % (x,)
        )
    if is_dual(x):
        return "array"
    return None


def _scalar_value(x):
    return x if type(x) is float or type(x) is Dual else float(x)


def _dualise(trace, leaves, tangents=None, floats=False):
    """Replace each differentiable leaf by a dual on ``trace``; return (new leaves, kinds).

    ``floats`` says the caller has checked that every leaf is a float (the common case)."""
    if floats:
        if tangents is None:
            return trace.inputs(leaves), ["scalar"] * len(leaves)
        if all_floats(tangents):
            return trace.inputs(leaves, tangents), ["scalar"] * len(leaves)
    out = []
    kinds = []
    for k, x in enumerate(leaves):
        kind = _leaf_kind(x)
        kinds.append(kind)
        if kind is None:
            out.append(x)
        elif kind == "scalar":
            if tangents is None:
                out.append(trace.input(_scalar_value(x)))
            else:
                out.append(trace.input(_scalar_value(x), _tangent_value(tangents[k])))
        else:
            glue = _array_glue()
            if tangents is None:
                out.append(glue.array_input(trace, x, None))
            else:
                out.append(glue.array_input(trace, x, tangents[k]))
    return out, kinds


def _tangent_value(t):
    if type(t) is float or type(t) is Dual:
        return t
    if isinstance(t, numbers.Real):
        return float(t)
    return t


def _on_trace(x, trace):
    """If leaf ``x`` is a dual of ``trace`` return it; None if it is a constant there."""
    if is_dual(x):
        t = x.trace
        if t is trace:
            return x
        if t.level > trace.level:  # a dual of an inner trace that has finished
            raise escaped_error(t.level)
    return None


def _primal(x, trace):
    d = _on_trace(x, trace)
    return x if d is None else d.value


def _restore_type(g, like):
    """Give a gradient the type of its input leaf (np.float32 in, np.float32 out)."""
    if type(g) is Dual or is_dual(g) or type(like) is float:
        return g
    if isinstance(like, np.floating):
        return type(like)(g)
    if isinstance(like, np.ndarray):
        if not isinstance(g, np.ndarray):  # a numpy scalar for a 0-d input
            return np.array(g, dtype=like.dtype).reshape(like.shape)
        if g.dtype != like.dtype:
            return g.astype(like.dtype)
        if not g.flags.writeable:  # a broadcast view: give the caller an array of its own
            return g.copy()
    return g


def _zero_like(x):
    if isinstance(x, np.ndarray):
        return np.zeros_like(x)
    if is_dual(x) and type(x) is not Dual:
        return np.zeros_like(x.value)
    return 0.0


def _argnums_tuple(argnums, nargs, who):
    if type(argnums) is int and 0 <= argnums < nargs:  # the common case, checked at once
        return True, (argnums,)
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise ValueError("%s: argnums must name at least one argument" % who)
    for n in nums:
        if not isinstance(n, int) or not -nargs <= n < nargs:
            raise ValueError(
                "%s: argnums=%r, but the function was called with %d positional argument(s)"
                % (who, argnums, nargs)
            )
    return single, tuple(n % nargs for n in nums)


def _check_has_float(kinds, who, argnums=None):
    """Raise unless some leaf is differentiable (the message names ``argnums`` if given)."""
    if not any(k is not None for k in kinds):
        what = "primals" if argnums is None else "argument(s) %s" % (argnums,)
        raise TypeError(
            "%s: %s has no float leaf to differentiate with respect to. Differentiable inputs are "
            "floats, numpy float scalars and float arrays (in tuples, lists, dicts, ...); ints, "
            "bools and strings are constants. Pass e.g. 3.0 instead of 3." % (who, what)
        )


# --------------------------------------------------------------------------------------------
# Reverse mode


class _Pullback:
    """``vjp_fn``: maps an output cotangent to input cotangents; callable any number of times.

    It keeps the (closed) tape alive; the tape goes when this object does.
    """

    __slots__ = ("tape", "out_def", "out_ids", "in_def", "in_ids", "in_leaves", "wanted", "all_float", "__weakref__")

    def __call__(self, cotangent):
        ct_leaves, ct_def = tree_flatten(cotangent)
        if ct_def is not self.out_def and ct_def != self.out_def:
            ct_leaves = _align_none(ct_def, self.out_def, iter(ct_leaves))
        if ct_leaves is None:
            raise TypeError(
                "vjp: the cotangent must have the structure of the function's output, %r; got %r"
                % (self.out_def, ct_def)
            )
        seeds = []
        for i, ct in zip(self.out_ids, ct_leaves):
            if i is None or ct is None:
                continue
            if type(ct) is not float and type(ct) is not Dual and isinstance(ct, numbers.Real):
                ct = float(ct)
            seeds.append((i, ct))
        wanted = self.wanted
        adj = self.tape.eval(seeds, wanted) if seeds else [None] * len(wanted)
        if self.all_float and all_floats(adj):  # float inputs, float adjoints
            return tuple(tree_unflatten(self.in_def, adj))
        it = iter(adj)
        grads = []
        for i, x in zip(self.in_ids, self.in_leaves):
            if i is None:
                grads.append(None)
            else:
                g = next(it)
                if type(x) is float and type(g) is float:
                    grads.append(g)
                else:
                    grads.append(_zero_like(x) if g is None else _restore_type(g, x))
        return tuple(tree_unflatten(self.in_def, grads))


def _align_none(ct_def, out_def, ct_iter, acc=None):
    """The cotangent's leaves in the output's leaf slots, where ``None`` may stand for the
    cotangent of any output leaf (a zero: what a static leaf's slot holds in gradients and
    tangents); None if the structures differ otherwise."""
    top = acc is None
    if top:
        acc = []
    if out_def.kind == "leaf":
        if ct_def.kind == "none":
            acc.append(None)
        elif ct_def.kind == "leaf":
            acc.append(next(ct_iter))
        else:
            return None
    elif (ct_def.kind != out_def.kind or ct_def.meta != out_def.meta
          or len(ct_def.children) != len(out_def.children)):
        return None
    else:
        for c, o in zip(ct_def.children, out_def.children):
            if _align_none(c, o, ct_iter, acc) is None:
                return None
    return acc


def _vjp(fun, args, kwargs, argnums, has_aux, who):
    """Run ``fun`` on a fresh tape, differentiating the arguments in ``argnums``."""
    leaves, in_def = tree_flatten(tuple([args[n] for n in argnums]))
    floats = all_floats(leaves)
    with _Opened(B.Tape) as tape:
        duals, kinds = _dualise(tape, leaves, floats=floats)
        _check_has_float(kinds, who, argnums)
        new_args = list(args)
        for n, a in zip(argnums, tree_unflatten(in_def, duals)):
            new_args[n] = a
        out = fun(*new_args, **kwargs)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("%s(has_aux=True): the function must return a pair (output, aux); got %r" % (who, type(out)))
            out, aux = out
    pb = _Pullback()
    pb.tape = tape
    pb.in_def = in_def
    pb.in_leaves = leaves
    pb.all_float = floats
    if pb.all_float:  # Tape.inputs gave consecutive ids: a range, read without an int per id
        first = duals[0].id if duals else 0
        pb.in_ids = pb.wanted = range(first, first + len(duals))
    else:
        pb.in_ids = [d.id if k is not None else None for d, k in zip(duals, kinds)]
        pb.wanted = [i for i in pb.in_ids if i is not None]
    if has_aux:
        aux = _strip_tree(aux, tape)
    if type(out) is Dual and out.trace is tape:  # one real output, the commonest
        pb.out_def = LEAF
        pb.out_ids = [out.id]
        return out.value, pb, aux
    out_leaves, pb.out_def = tree_flatten(out)
    pb.out_ids = []
    primals = []
    for x in out_leaves:
        d = _on_trace(x, tape)
        pb.out_ids.append(None if d is None else d.id)
        primals.append(x if d is None else d.value)
    return tree_unflatten(pb.out_def, primals), pb, aux


def _strip_tree(tree, trace):
    leaves, d = tree_flatten(tree)
    return tree_unflatten(d, [_primal(x, trace) for x in leaves])


def vjp(fun, *primals, has_aux=False):
    """``(out, vjp_fn)`` (plus ``aux`` when ``has_aux``): JAX's ``vjp``.

    ``vjp_fn(cotangent)`` takes a cotangent with the output's structure and returns a tuple with
    one cotangent per primal. It can be called any number of times.
    """
    out, pb, aux = _vjp(fun, primals, {}, tuple(range(len(primals))), has_aux, "vjp")
    if has_aux:
        return out, pb, aux
    return out, pb


def _is_scalar_output(x):
    if type(x) is float or type(x) is Dual:
        return True
    if isinstance(x, (numbers.Real, np.floating)) and not isinstance(x, bool):
        return True
    if isinstance(x, np.ndarray) or (is_dual(x) and type(x) is not Dual):
        return np.shape(x) == ()
    return False


def value_and_grad(fun, argnums=0, has_aux=False):
    """``f(*args) -> (value, gradient)``; gradient has the structure of the argument(s)."""

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        single, nums = _argnums_tuple(argnums, len(args), "grad")
        out, pb, aux = _vjp(fun, args, kwargs, nums, has_aux, "grad")
        if not _is_scalar_output(out):
            raise TypeError(
                "grad requires a function returning one real number; got %s. Use "
                "deltaad.jacrev/jacobian or deltaad.vjp for other outputs, or has_aux=True to "
                "return extra data beside the number." % (_describe(out),)
            )
        g = pb(1.0 if type(out) is Dual or not isinstance(out, np.ndarray) and not is_dual(out) else np.ones(()))
        g = g[0] if single else g
        return ((out, aux), g) if has_aux else (out, g)

    return value_and_grad_f


def _describe(x):
    if isinstance(x, (tuple, list, dict)):
        return "a %s of %d item(s)" % (type(x).__name__, len(x))
    if isinstance(x, np.ndarray):
        return "an array of shape %s" % (x.shape,)
    return "a value of type %s" % type(x).__name__


def grad(fun, argnums=0, has_aux=False):
    """The gradient of a real-valued ``fun`` with respect to the argument(s) ``argnums``."""
    vg = value_and_grad(fun, argnums, has_aux)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        (out, g) = vg(*args, **kwargs)
        if has_aux:
            return g, out[1]
        return g

    return grad_f


# --------------------------------------------------------------------------------------------
# Forward mode


def jvp(fun, primals, tangents):
    """``(out, tangent_out)``: JAX's ``jvp``; ``tangents`` has the structure of ``primals``."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (one entry per argument)")
    leaves, in_def = tree_flatten(tuple(primals))
    t_leaves, t_def = tree_flatten(tuple(tangents))
    if t_def is not in_def and t_def != in_def:
        raise TypeError("jvp: tangents must have the structure of primals, %r; got %r" % (in_def, t_def))
    with _Opened(B.ForwardLevel) as level:
        duals, kinds = _dualise(level, leaves, t_leaves, floats=all_floats(leaves))
        _check_has_float(kinds, "jvp")
        out = fun(*tree_unflatten(in_def, duals))
    if type(out) is Dual and out.trace is level:  # one real output, the commonest
        return out.value, out.tangent
    out_leaves, out_def = tree_flatten(out)
    ps = []
    ts = []
    for x in out_leaves:
        d = _on_trace(x, level)
        if d is None:
            ps.append(x)
            ts.append(_zero_like(x) if _leaf_kind(x) is not None else None)
        else:
            ps.append(d.value)
            ts.append(d.tangent)
    return tree_unflatten(out_def, ps), tree_unflatten(out_def, ts)


# --------------------------------------------------------------------------------------------
# Jacobians


def _components(leaves):
    """(leaf index, flat index, shape) for each real component of the differentiable leaves."""
    comps = []
    for k, x in enumerate(leaves):
        kind = _leaf_kind(x)
        if kind is None:
            continue
        shape = np.shape(x.value if is_dual(x) and type(x) is not Dual else x) if kind == "array" else ()
        size = int(np.prod(shape)) if shape else 1
        for j in range(size):
            comps.append((k, j, shape))
    return comps


def _one_hot(leaves, k, j):
    out = []
    for i, x in enumerate(leaves):
        kind = _leaf_kind(x)
        if kind is None:
            out.append(None)
            continue
        if kind == "array":
            z = np.zeros(np.shape(x.value if is_dual(x) else x), dtype=float)
            if i == k:
                z.reshape(-1)[j] = 1.0
            out.append(z)
        else:
            out.append(1.0 if i == k else 0.0)
    return out


def _entry(x, j):
    """Component ``j`` of a leaf value (scalar or array, maybe None for zero)."""
    if x is None:
        return 0.0
    if isinstance(x, np.ndarray):
        return x.reshape(-1)[j]
    if is_dual(x) and type(x) is not Dual:
        return x.reshape(-1)[j]
    return x


def _vector_like(tree):
    """Shape of ``tree`` as one vector, or None: an array, or a flat list/tuple of scalars."""
    if isinstance(tree, np.ndarray) or (is_dual(tree) and type(tree) is not Dual):
        return np.shape(tree)
    if type(tree) in (list, tuple) and all(_leaf_kind(x) == "scalar" for x in tree):
        return (len(tree),)
    return None


def _matrix(rows):
    """``np.array(rows)``; an array dual when entries are duals (Jacobians inside a
    differentiation, e.g. the inner jacrev of hessian), never an object array."""
    if any(is_dual(e) for row in rows for e in row):
        return _array_glue().asarray(rows)
    return np.array(rows, dtype=float) if rows and rows[0] else np.zeros((len(rows), 0))


def _assemble(J, out_leaves, out_def, out_tree, in_leaves, in_def, in_tree, single):
    """Lay the Jacobian rows ``J[i][j]`` out as JAX does: the output's structure with each
    leaf replaced by the input's structure; a vector-to-vector Jacobian is an m x n array."""
    out_comps = _components(out_leaves)
    in_comps = _components(in_leaves)
    if single:
        vo = _vector_like(out_tree)
        vi = _vector_like(in_tree[0])
        if vo is not None and vi is not None and vo != ():
            arr = _matrix([[J[i][j] for j in range(len(in_comps))] for i in range(len(out_comps))])
            return arr.reshape(tuple(vo) + tuple(vi))
    # general layout
    out_index = {}
    for i, (k, j, shape) in enumerate(out_comps):
        out_index.setdefault(k, []).append(i)
    in_index = {}
    for j, (k, jj, shape) in enumerate(in_comps):
        in_index.setdefault(k, []).append(j)
    result_leaves = []
    for ko, xo in enumerate(out_leaves):
        rows = out_index.get(ko)
        if rows is None:
            result_leaves.append(None)
            continue
        shape_o = out_comps[rows[0]][2]
        per_in = []
        for ki, xi in enumerate(in_leaves):
            cols = in_index.get(ki)
            if cols is None:
                per_in.append(None)
                continue
            shape_i = in_comps[cols[0]][2]
            if not shape_o and not shape_i:
                per_in.append(J[rows[0]][cols[0]])
            else:
                block = _matrix([[J[r][c] for c in cols] for r in rows])
                per_in.append(block.reshape(tuple(shape_o) + tuple(shape_i)))
        sub = tree_unflatten(in_def, per_in)
        result_leaves.append(sub[0] if single else sub)
    return tree_unflatten(out_def, result_leaves)


def jacrev(fun, argnums=0):
    """The Jacobian by reverse mode: one tape, one backward sweep per output component."""

    @functools.wraps(fun)
    def jacrev_f(*args, **kwargs):
        single, nums = _argnums_tuple(argnums, len(args), "jacrev")
        out, pb, _ = _vjp(fun, args, kwargs, nums, False, "jacrev")
        out_leaves, out_def = tree_flatten(out)
        in_leaves = pb.in_leaves
        J = []
        for k, j, shape in _components(out_leaves):
            ct = tree_unflatten(out_def, _one_hot(out_leaves, k, j))
            g_leaves, _ = tree_flatten(pb(ct))
            g_by_leaf = [g for g, x in zip(g_leaves, in_leaves)]
            J.append([_entry(g_by_leaf[ki], jj) for ki, jj, _s in _components(in_leaves)])
        in_tree = tuple(args[n] for n in nums)
        return _assemble(J, out_leaves, out_def, out, in_leaves, pb.in_def, in_tree, single)

    return jacrev_f


jacobian = jacrev


def jacfwd(fun, argnums=0):
    """The Jacobian by forward mode: one ``jvp`` per input component."""

    @functools.wraps(fun)
    def jacfwd_f(*args, **kwargs):
        single, nums = _argnums_tuple(argnums, len(args), "jacfwd")
        in_tree = tuple(args[n] for n in nums)
        in_leaves, in_def = tree_flatten(in_tree)
        in_comps = _components(in_leaves)
        kinds = [_leaf_kind(x) for x in in_leaves]
        _check_has_float(kinds, "jacfwd", nums)

        def partial(*sel):
            new_args = list(args)
            for n, a in zip(nums, sel):
                new_args[n] = a
            return fun(*new_args, **kwargs)

        cols = []
        out = out_leaves = out_def = None
        for k, j, shape in in_comps:
            t_leaves = _one_hot(in_leaves, k, j)
            t_leaves = [t if kinds[i] is not None else None for i, t in enumerate(t_leaves)]
            out, t_out = _jvp_static(partial, in_leaves, in_def, t_leaves)
            out_leaves, out_def = tree_flatten(out)
            t_out_leaves = tree_flatten(t_out)[0] if t_out is not None else []
            cols.append((t_out_leaves, out_leaves))
        out_comps = _components(out_leaves)
        J = [[None] * len(in_comps) for _ in out_comps]
        for c, (t_out_leaves, _) in enumerate(cols):
            for r, (ko, jo, s) in enumerate(out_comps):
                J[r][c] = _entry(t_out_leaves[ko], jo)
        return _assemble(J, out_leaves, out_def, out, in_leaves, in_def, in_tree, single)

    return jacfwd_f


def _jvp_static(f, in_leaves, in_def, t_leaves):
    """``jvp`` where static leaves carry ``None`` tangents (they are not dualised)."""
    with _Opened(B.ForwardLevel) as level:
        duals, kinds = _dualise(level, in_leaves, t_leaves)
        out = f(*tree_unflatten(in_def, duals))
    out_leaves, out_def = tree_flatten(out)
    ps, ts = [], []
    for x in out_leaves:
        d = _on_trace(x, level)
        if d is None:
            ps.append(x)
            ts.append(_zero_like(x) if _leaf_kind(x) is not None else None)
        else:
            ps.append(d.value)
            ts.append(d.tangent)
    return tree_unflatten(out_def, ps), tree_unflatten(out_def, ts)


def hessian(fun, argnums=0):
    """Second derivatives: forward over reverse (``jacfwd(jacrev(fun))``), as JAX does."""
    return jacfwd(jacrev(fun, argnums), argnums)


# --------------------------------------------------------------------------------------------
# The Delta, first-class


def make_delta(fun, *primals):
    """Run ``fun`` once and return ``(value, delta)``: the ``Let``-nested Delta term that the
    paper's ``runDelta`` builds (Fig. 11), over ``Var`` ids 0, 1, ... for the real inputs in
    left-to-right order. ``str(delta)`` prints it in the style of Fig. 12 and
    ``deltaad.delta.eval(1.0, delta, {})`` evaluates it to ``{input id: partial derivative}``.
    """
    leaves, in_def = tree_flatten(tuple(primals))
    with _Opened(B.Tape) as tape:
        duals, kinds = _dualise(tape, leaves)
        _check_has_float(kinds, "make_delta")
        if any(k == "array" for k in kinds):
            raise TypeError("make_delta shows the Delta of scalar programs; pass floats, not arrays")
        out = fun(*tree_unflatten(in_def, duals))
    d = _on_trace(out, tape)
    if d is None and not _is_scalar_output(out):
        raise TypeError("make_delta needs a function returning one real number; got %s" % _describe(out))
    body = _delta.Zero if d is None else _delta.Var(d.id)
    term = body
    for i in range(tape.nbindings - 1, -1, -1):
        parents, rule = tape.binding(i)
        if not parents:
            continue
        if callable(rule):
            raise TypeError("make_delta: binding %d is a linear map (an array operation); only scalar programs can be shown" % i)
        term = _delta.Let(i, _delta.term(parents, rule), term)
    return (out if d is None else d.value), term
