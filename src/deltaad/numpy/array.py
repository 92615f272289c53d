"""The array dual and how numpy operations on duals are applied: the array mechanism.

An array dual is ``(ndarray value, Var id)`` on the same tape as the scalar duals (Krawiec et
al., §10.2, "pair of vectors"): its binding holds a linear map -- the parent ids and a vjp
callable, the paper's ``Scale`` by a linear operator -- pushed with ``Tape.push_linear``. On a
forward level it is ``(value, tangent)`` instead, and each operation pushes its tangent forward
at once.

Every array operation is a :class:`Primitive`: an ``impl`` on plain values, a ``vjp`` maker
that returns the binding's linear map (computed in the forward pass, keeping only what the
backward pass needs) and a ``jvp`` rule. :func:`apply` runs one primitive on operands of any
levels: it is recorded on the trace of highest level among its operands; operands of lower
levels are constants there, and the value itself is computed by applying the same primitive
one level down. Rules are written with numpy functions on values and cotangents, so when those
are duals of an outer trace they dispatch to deltaad again and higher derivatives come for free
(HIPS autograd's approach).

numpy reaches this module through the duals' ``__array_ufunc__`` and ``__array_function__``
(:func:`ufunc_dispatch`, :func:`function_dispatch`), which find the rules in
:mod:`deltaad.numpy.registry`. Indexing (``x[i]``, ``x.at[i].set(v)``), reshaping and packing
scalars into arrays are primitives of their own here: the array dual itself needs them.
"""

import numbers
import weakref as _weakref

from deltaad._plainnumpy import np

from .._backend import B
from .._errors import EscapedDualError, complex_error, escaped_error, no_float_error
from .. import trace as _trace
from ..trace import dtype_of, register_dual_type
from ..trace import value as strip
from . import registry

Dual = B.Dual
_new = object.__new__
_UFUNCS = registry.UFUNCS
_FUNCTIONS = registry.FUNCTIONS
_SHORT_PATHS = registry.SHORT_PATHS
_CONSTANT_UFUNCS = registry.CONSTANT_UFUNCS


class Primitive:
    """One differentiable array operation (the paper's Fig. 14 generalised to arrays).

    - ``impl(*values, **params)``: the operation on plain values (ndarrays, floats).
    - ``vjp(out, values, on, **params)``: called once in the forward pass; returns the binding's
      linear map ``rule(ct) -> tuple`` with one cotangent per operand (``None`` for zero). ``on``
      says which operands are duals of the recording trace; the rule need not compute the others.
    - ``jvp(out, values, tangents, **params)``: the output tangent; ``tangents[i]`` is None for
      an operand that is a constant at this level.

    ``values`` are the operands' values relative to the recording trace: plain arrays or duals
    of lower levels. Write ``vjp``/``jvp`` with numpy functions so that they work on both.
    """

    __slots__ = ("name", "impl", "vjp", "jvp")

    def __init__(self, name, impl, vjp, jvp):
        self.name = name
        self.impl = impl
        self.vjp = vjp
        self.jvp = jvp

    def __repr__(self):
        return "<deltaad primitive %s>" % self.name

    def __call__(self, *args, **params):
        return apply(self, args, params)


def shape_of(v):
    """Shape of a value: ndarray, array dual, numpy scalar, float or scalar dual."""
    t = type(v)
    if t is np.ndarray or t is ArrayDual:
        return v.shape
    if t is float or t is Dual or t is int:
        return ()
    return getattr(v, "shape", ())


_EMPTY = {}


def _selects_nothing(shape, idx):
    """Whether ``x[idx]`` of an array of ``shape`` selects no element (an all-False mask)."""
    try:
        return np.broadcast_to(np.empty((), bool), shape)[strip(idx)].size == 0
    except (IndexError, TypeError, ValueError):
        return False


# The short paths of the commonest calls on the reverse trace (one to three operands that are
# duals of the recording tape holding plain values, or constants; basic indexing; x.reshape,
# x.ravel, x.T; np.concatenate; np.maximum with a float bound): each records exactly what the
# general path records. ``set_shortcuts(False)`` takes the general path everywhere, which is how
# the tests compare the two bit for bit.
SHORTCUTS = True


def set_shortcuts(flag):
    """Switch the short paths on or off; returns the previous setting."""
    global SHORTCUTS
    old = SHORTCUTS
    SHORTCUTS = bool(flag)
    return old


def apply(prim, args, params=_EMPTY):
    """Apply ``prim`` to ``args`` (any mix of duals of any levels and constants)."""
    if not SHORTCUTS:
        pass
    elif len(args) == 1 and type(args[0]) is ArrayDual:  # the commonest: one plain array dual
        a = args[0]
        top = a.trace
        v = a.value
        if type(v) is np.ndarray and not top.is_forward and not top.closed and \
                not _trace.lifting:
            return _apply_reverse1(prim, v, top, a.id, params)
    elif len(args) == 2:
        r = _apply_reverse2(prim, args[0], args[1], params)
        if r is not None:
            return r
    elif args:
        r = _apply_reverse_n(prim, args, params)
        if r is not None:
            return r
    top = None
    for a in args:
        ta = type(a)
        if ta is ArrayDual or ta is Dual:
            t = a.trace
            if top is None:
                top = t
            elif t is not top and t.level > top.level:
                top = t
    if top is None:
        if _trace.lifting:
            args = _lift(args)
        out = prim.impl(*args, **params)
        if type(out) is not np.ndarray and type(out) is not float and \
                type(out) not in _trace.recorders:  # (deltaad.compile's recorded float)
            out = _as_ndarray(out)
        return out
    if top.closed:
        raise escaped_error(top.level)
    forward = top.is_forward
    vals = []
    on = []
    ids = []  # reverse: the parents' ids; forward: their tangents
    keep = []
    inner = False
    scalar = None
    k = 0
    for a in args:
        ta = type(a)
        if (ta is ArrayDual or ta is Dual) and a.trace is top:
            v = a.value
            tv = type(v)
            if tv is ArrayDual or tv is Dual:
                inner = True
            if ta is Dual:
                if scalar is None:
                    scalar = []
                scalar.append(len(keep))
            vals.append(v)
            on.append(True)
            ids.append(a.tangent if forward else a.id)
            keep.append(k)
        else:
            if ta is ArrayDual or ta is Dual:
                inner = True
            vals.append(a)
            on.append(False)
        k += 1
    if inner:
        out = apply(prim, vals, params)
    else:
        if _trace.lifting:  # (the rules below see a lifted float as a float: isinstance)
            vals = _lift(vals)
        out = prim.impl(*vals, **params) if params else prim.impl(*vals)
        if type(out) is not np.ndarray and type(out) is not float and \
                type(out) not in _trace.recorders:  # (deltaad.compile's recorded float)
            out = _as_ndarray(out)
    if forward:
        if len(keep) == k:
            tans = ids
        else:
            tans = [None] * k
            for j, t in zip(keep, ids):
                tans[j] = t
        t = prim.jvp(out, vals, tans, **params)
        if (type(out) is np.ndarray or type(out) in _trace.recorded_arrays) and out.dtype.kind == "f" and \
                isinstance(t, (np.ndarray, np.floating)) and t.dtype != out.dtype:
            t = as_ndarray(t, dtype=out.dtype)  # a tangent has its primal's dtype (float32 stays)
        return wrap(out, top, -1, t)
    rule = prim.vjp(out, vals, on, **params) if params else prim.vjp(out, vals, on)
    if scalar is not None or len(keep) != k:
        rule = select(rule, keep, scalar)
    return _reverse_result(out, top, ids, rule)


def _reverse_result(out, top, ids, rule):
    """The result of a primitive recorded on the reverse trace ``top``: ``out`` with the id of
    its binding (parents ``ids``, linear map ``rule``); ``wrap`` inlined for an ndarray, the
    commonest result."""
    if type(out) is np.ndarray:
        r = _new(ArrayDual)
        r.value = out
        r.trace = top
        r.id = top.push_linear(ids, rule)
        r.tangent = None
        return r
    return wrap(out, top, top.push_linear(ids, rule), None)


def _apply_reverse1(prim, v, top, i, params):
    """:func:`apply` of a primitive of one operand, an array dual of the open reverse trace
    ``top`` with id ``i`` and plain value ``v``: the same steps, none of the general case's
    sorting of operands by level."""
    if params:
        out = prim.impl(v, **params)
        if type(out) is not np.ndarray and type(out) is not float and \
                type(out) not in _trace.recorders:
            out = _as_ndarray(out)
        rule = prim.vjp(out, [v], [True], **params)
    else:
        out = prim.impl(v)
        if type(out) is not np.ndarray and type(out) is not float and \
                type(out) not in _trace.recorders:
            out = _as_ndarray(out)
        rule = prim.vjp(out, [v], [True])
    return _reverse_result(out, top, [i], rule)


def _apply_reverse2(prim, a, b, params):
    """:func:`apply` of a primitive of two operands when every dual among them is of one open
    reverse trace and holds a plain value (None otherwise: the general case): the same steps,
    without the general case's loops over operands."""
    ta = type(a)
    tb = type(b)
    da = ta is ArrayDual or ta is Dual
    db = tb is ArrayDual or tb is Dual
    if da:
        top = a.trace
        if db and b.trace is not top:
            return None
    elif db:
        top = b.trace
    else:
        return None
    if top.is_forward or top.closed or _trace.lifting:
        return None
    if da:
        va = a.value
        tv = type(va)
        if tv is ArrayDual or tv is Dual:
            return None
    else:
        va = a
    if db:
        vb = b.value
        tv = type(vb)
        if tv is ArrayDual or tv is Dual:
            return None
    else:
        vb = b
    vals = [va, vb]
    out = prim.impl(va, vb, **params) if params else prim.impl(va, vb)
    if type(out) is not np.ndarray and type(out) is not float and \
            type(out) not in _trace.recorders:
        out = _as_ndarray(out)
    on = [da, db]
    rule = prim.vjp(out, vals, on, **params) if params else prim.vjp(out, vals, on)
    if da and db:
        ids = [a.id, b.id]
        if ta is Dual:
            rule = select(rule, [0, 1], [0, 1] if tb is Dual else [0])
        elif tb is Dual:
            rule = select(rule, [0, 1], [1])
    elif da:
        ids = [a.id]
        rule = select(rule, [0], [0] if ta is Dual else None)
    else:
        ids = [b.id]
        rule = select(rule, [1], [0] if tb is Dual else None)
    return _reverse_result(out, top, ids, rule)


def _apply_reverse_n(prim, args, params):
    """:func:`_apply_reverse2` for any number of operands (``np.concatenate``'s, ``np.where``'s):
    None unless every dual among them is of one open reverse trace and holds a plain value."""
    top = None
    vals = []
    on = []
    ids = []
    keep = []
    scalar = None
    k = 0
    for a in args:
        ta = type(a)
        if ta is ArrayDual or ta is Dual:
            t = a.trace
            if top is None:
                top = t
            elif t is not top:
                return None
            v = a.value
            tv = type(v)
            if tv is ArrayDual or tv is Dual:
                return None
            if ta is Dual:
                if scalar is None:
                    scalar = []
                scalar.append(len(keep))
            vals.append(v)
            on.append(True)
            ids.append(a.id)
            keep.append(k)
        else:
            vals.append(a)
            on.append(False)
        k += 1
    if top is None or top.is_forward or top.closed or _trace.lifting:
        return None
    out = prim.impl(*vals, **params) if params else prim.impl(*vals)
    if type(out) is not np.ndarray and type(out) is not float and \
            type(out) not in _trace.recorders:
        out = _as_ndarray(out)
    rule = prim.vjp(out, vals, on, **params) if params else prim.vjp(out, vals, on)
    if scalar is not None or len(keep) != k:
        rule = select(rule, keep, scalar)
    return _reverse_result(out, top, ids, rule)


def as_ndarray(x, dtype=None):
    """``np.asarray(x, dtype)`` of a plain value; one that ``deltaad.compile`` records stays
    recorded (numpy cannot convert it without losing it)."""
    tx = type(x)
    if tx in _trace.recorded_arrays:
        return x.as_ndarray(dtype)
    if tx in _trace.recorders and _trace.lifting:
        return _trace.recorded_lift(x).as_ndarray(dtype)
    return np.asarray(x, dtype=dtype)


_as_ndarray = as_ndarray


def to_float(r):
    """``float(r)`` of a plain size-1 value; one that ``deltaad.compile`` records gives a
    recorded number."""
    f = _trace.recorded_arrays.get(type(r))
    if f is not None:
        return f(r)
    return float(r)


def _lift(vals):
    """``vals`` with deltaad.compile's recorded floats made recorded arrays (holding the
    float) where one meets an array: numpy would ask the float first, which cannot record a
    numpy call; the array step computes what numpy computes with the float."""
    ra = False
    rs = False
    for v in vals:
        tv = type(v)
        if tv in _trace.recorders:
            rs = True
        elif tv is np.ndarray or tv in _trace.recorded_arrays:
            ra = True
    if not (ra and rs):
        return vals
    return [_trace.recorded_lift(v) if type(v) in _trace.recorders else v for v in vals]


def select(rule, keep, scalar):
    """Adapt a rule giving one cotangent per operand to the parents actually recorded (and
    give scalar parents float / scalar-dual cotangents)."""
    if scalar is None:
        if len(keep) == 1:
            k0 = keep[0]

            def selected1(ct):
                return (rule(ct)[k0],)

            return selected1

        def selected(ct):
            cts = rule(ct)
            return tuple([cts[k] for k in keep])

        return selected

    def selected_scalar(ct):
        cts = rule(ct)
        out = [cts[k] for k in keep]
        for j in scalar:
            out[j] = to_scalar(out[j])
        return tuple(out)

    return selected_scalar


def to_scalar(c):
    """A cotangent or tangent for a scalar dual: a float or a scalar dual of a lower level."""
    if c is None:
        return None
    t = type(c)
    if t is float or t is Dual:
        return c
    if t is np.ndarray:  # (np.sum's own reduction, by the method: the same bits)
        return float(c.sum()) if c.ndim else float(c)
    if t is ArrayDual:
        if c.ndim != 0:
            c = np.sum(c)
        return getitem(c, ())
    return to_float(np.sum(c)) if np.ndim(c) else to_float(c)


def wrap(out, trace, i, t):
    """The dual of ``trace`` holding ``out`` (scalar or array) with id ``i`` / tangent ``t``."""
    to = type(out)
    if to is float or to is Dual or to in _trace.recorders:  # (a number deltaad.compile records)
        tt = type(t)
        if t is not None and tt is not float and tt is not Dual and tt not in _trace.recorders:
            t = to_scalar(t)
        return Dual(out, trace, i, t)
    if t is not None:
        tt = type(t)
        if tt is Dual:
            t = reshape_scalar(t)
        elif tt is not np.ndarray and tt is not ArrayDual:
            t = as_ndarray(t)
    return ArrayDual(out, trace, i, t)


def array_input(trace, value, tangent):
    """An array leaf as an input of ``trace`` (``value`` an ndarray or an outer array dual)."""
    if trace.closed:
        raise escaped_error(trace.level)
    settle = _trace.settled_types.get(type(value))
    if settle is not None:  # a fillable array: the float array or outer array dual it holds
        value = settle(value)
    settle = _trace.settled_types.get(type(tangent))
    if settle is not None:
        tangent = settle(tangent)
    if trace.is_forward:
        v = strip(value)
        if tangent is None:
            t = np.zeros_like(v)
        elif type(tangent) is ArrayDual:
            t = tangent
            if t.shape != v.shape:
                raise ValueError("jvp: tangent of shape %s for a primal of shape %s" % (t.shape, v.shape))
        elif type(tangent) is Dual:
            if v.shape != ():
                raise ValueError("jvp: a scalar tangent for a primal of shape %s" % (v.shape,))
            t = reshape_scalar(tangent)
        else:
            t = as_ndarray(tangent)
            if t.dtype.kind == "c":
                raise TypeError(
                    "jvp: got a complex tangent for a real primal array; a real primal's "
                    "tangents are real (the imaginary part would be dropped). Make the primal "
                    "complex (x + 0j) to push a complex tangent")
            if t.shape != v.shape:
                raise ValueError(
                    "jvp: tangent of shape %s for a primal of shape %s; tangents must have the "
                    "primal's shape" % (t.shape, v.shape)
                )
            if t.dtype != v.dtype:
                t = t.astype(v.dtype)
        return ArrayDual(value, trace, -1, t)
    i = trace.push_linear((), ())
    return ArrayDual(value, trace, i, None)


# --------------------------------------------------------------------------------------------
# Operands: what numpy would turn into an array, turned into an array or an array dual


def operand(x):
    """``x`` as an operand of an array primitive, or None when it is not a number/array."""
    tx = type(x)
    if tx is ArrayDual or tx is Dual or tx is float or tx is int or tx is bool or tx is np.ndarray and x.dtype.kind in "fiub":
        return x
    if isinstance(x, np.ndarray):
        k = x.dtype.kind
        if k == "O":
            return asarray(x)
        if k == "c":
            raise complex_error(x)
        if k in "fiub":
            return x
        return None
    if isinstance(x, np.generic):
        if x.dtype.kind == "c":
            raise complex_error(x)
        return x
    if tx is list or tx is tuple:
        return asarray(x)
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, numbers.Complex):
        raise complex_error(x)
    if tx in _trace.recorders:  # deltaad.compile's recorded float
        return x
    return None


def operand_or_raise(x, what="argument"):
    o = operand(x)
    if o is None:
        raise TypeError("deltaad: unsupported %s of type %s" % (what, type(x).__name__))
    return o


def has_dual(seq):
    for e in seq:
        te = type(e)
        if te is Dual or te is ArrayDual:
            return True
        if (te is list or te is tuple) and has_dual(e):
            return True
        if isinstance(e, np.ndarray) and e.dtype.kind == "O" and has_dual(e.ravel()):
            return True
    return False


def asarray(x):
    """An array dual for anything holding duals (lists, tuples, object arrays, scalar duals);
    a plain float ndarray otherwise. ``deltaad.asarray``."""
    tx = type(x)
    if tx is ArrayDual:
        return x
    if tx is Dual:
        return reshape_scalar(x)
    if tx is not np.ndarray and isinstance(x, np.ndarray) and x.dtype.kind == "O":
        x, tx = x.view(np.ndarray), np.ndarray  # a fillable array (deltaad.numpy.fillable)
    if tx is np.ndarray:
        if x.dtype.kind != "O":
            return x
        flat = x.ravel().tolist()
        if not has_dual(flat):
            return np.asarray(x.tolist(), dtype=float) if x.size else x.astype(float)
        if all(type(e) is not ArrayDual and not isinstance(e, (list, tuple, np.ndarray)) for e in flat):
            return reshape(pack_scalars(flat), x.shape)
        return asarray(x.tolist())
    if tx is list or tx is tuple:
        if registry.COMPLEX is not None and registry.COMPLEX.involved(x):
            return registry.COMPLEX.asarray(x)
        if not has_dual(x):
            if _trace.lifting:  # deltaad.compile's recorded floats: packed by a recorded step
                for e in x:
                    if type(e) in _trace.recorders:
                        return _trace.recorded_call(e, np.asarray, (x,))
            return np.asarray(x)
        if all(type(e) is Dual or type(e) is float or isinstance(e, (numbers.Real, np.generic)) and not isinstance(e, np.ndarray) for e in x):
            return pack_scalars(list(x))
        return stack([asarray(e) for e in x])
    if isinstance(x, numbers.Real) or isinstance(x, np.generic):
        return as_ndarray(x)
    return as_ndarray(x)


def _pack_impl(*vals):
    if _trace.lifting:  # deltaad.compile's recorded floats: packed by a recorded step
        for v in vals:
            if type(v) in _trace.recorders:
                return _trace.recorded_call(v, _pack_impl, vals)
    return np.array(vals, dtype=float)


def _pack_vjp(out, vals, on):
    n = len(vals)

    def rule(ct):
        if type(ct) is np.ndarray:
            return tuple(ct.tolist())
        return tuple(getitem(ct, k) for k in range(n))

    return rule


def _pack_jvp(out, vals, tans):
    return asarray([0.0 if t is None else t for t in tans])


PACK = Primitive("pack", _pack_impl, _pack_vjp, _pack_jvp)


def pack_scalars(items):
    """A 1-d array (dual) of scalars (floats and scalar duals of any levels)."""
    return apply(PACK, items)


def stack(arrays, axis=0):
    """``deltaad.stack``: like ``np.stack``, also for scalar duals and lists holding duals."""
    return registry.FUNCTIONS[np.stack](arrays, axis=axis)


# --------------------------------------------------------------------------------------------
# Unpacking: an array dual as the numpy object array of its scalar duals (what np.asarray of
# an array dual gives, so that library code which converts its input keeps its derivative)
#
# Reverse mode records, for array dual ``x`` of n elements: a linear binding L (parent: x),
# then the n element duals as fresh inputs with consecutive ids (one C loop), then a *node*
# G. Every use of an element comes later, so when the sweep reaches G the elements' adjoints
# are complete and not yet passed (the placement of a checkpoint's outputs and node). G
# gathers them into one dense cotangent and seeds L, which the sweep reaches next and pulls
# back into x. Time and memory are linear in the number of elements, and the sweep does
# nothing per element but read its adjoint once, where n ``x[k]`` bindings would each
# scatter a dense cotangent.


class _Gather:
    """The node of an unpacked array dual of ``n`` elements: at the sweep, their adjoints as
    the dense cotangent of the array, handed to the linear binding ``link`` below them (see
    above; the elements are ``link + 1 ..``, the node ``link + n + 1``). It holds its tape
    weakly (``link``'s rule holds the node: no cycle through the tape)."""

    __slots__ = ("tape", "link", "n", "shape", "dtype", "dense")

    def __init__(self, tape, n, shape, dtype):
        self.tape = _weakref.ref(tape)
        self.link = None
        self.n = n
        self.shape = shape
        self.dtype = dtype
        self.dense = None

    def __call__(self, *args):
        raise TypeError("an unpacked array's node is run by the backward sweep, not called")

    def __repr__(self):
        return "<elements of an array of shape %s>" % (self.shape,)

    def run(self, sweep, i):
        first = self.link + 1
        cts = [sweep.adjoint(k) for k in range(first, first + self.n)]
        cts = [0.0 if c is None else c for c in cts]  # (untouched in an object sweep)
        if all(type(c) is float for c in cts):
            if not any(cts):  # no adjoint reaches an element
                return
            dense = np.array(cts, dtype=np.float64)
            if dense.dtype != self.dtype:
                dense = dense.astype(self.dtype)
            self.dense = dense.reshape(self.shape)
        else:  # adjoints that are duals of an outer differentiation (nesting): recorded
            dense = scatter(pack_scalars(cts), (self.n,), self.dtype, (slice(None),), True)
            self.dense = reshape(dense, self.shape)
        sweep.sweep(self.tape().nbindings, [(self.link, 1.0)], ())  # (no segment: a seed)

    def pull(self, ct):
        """``link``'s linear map: the dense cotangent ``run`` made (``ct`` is its seed)."""
        dense = self.dense
        self.dense = None
        return (dense,)


def unpack(x):
    """The scalar duals of array dual ``x`` (same trace), flat in C order, as a list."""
    return _unpack(x)[0]


def _unpack(x):
    """``(unpack(x), its gather node)``; the node is None on a forward level or for no
    elements."""
    t = x.trace
    if t.closed:
        raise escaped_error(t.level)
    v = x.value
    vals = unpack(v) if type(v) is ArrayDual else v.ravel().tolist()
    if t.is_forward:
        tan = x.tangent
        if type(tan) is ArrayDual:
            tans = unpack(tan)
        else:
            tans = np.broadcast_to(tan, v.shape).ravel().tolist()
        return t.inputs(vals, tans), None
    if not vals:
        return [], None
    gather = _Gather(t, len(vals), v.shape, dtype_of(v))
    gather.link = t.push_linear((x.id,), gather.pull)
    out = t.inputs(vals)
    t.push_node((gather.link,), gather)
    return out, gather


def object_array(x):
    """``x`` (an array dual) as a numpy object array of its scalar duals."""
    a = np.empty(x.shape, dtype=object)
    a.reshape(-1)[:] = unpack(x) if a.size else []
    return a


# --------------------------------------------------------------------------------------------
# Indexing: x[i] and x.at[i].set(v) / .add(v)


def normalize_index(idx):
    """``(index tuple, unique)``: ``unique`` when no integer array can repeat a position."""
    if type(idx) is not tuple:
        idx = (idx,)
    out = []
    unique = True
    for k in idx:
        tk = type(k)
        if tk is int or tk is slice or k is None or k is Ellipsis:
            out.append(k)
            continue
        if tk is Dual or tk is ArrayDual:
            raise TypeError(
                "deltaad: an index must be an integer, a slice or an integer/bool array, not a "
                "dual number (indices have no derivative; use deltaad.value(i) or an int)"
            )
        if tk is bool or isinstance(k, np.bool_):
            out.append(k)
            continue
        if isinstance(k, np.integer):
            out.append(int(k))
            continue
        if isinstance(k, (np.ndarray, list, tuple)):
            a = as_ndarray(k)
            if a.dtype.kind in "iu":
                unique = False
            elif a.dtype.kind == "b":
                pass
            elif a.size == 0:
                a = a.astype(np.intp)
            else:
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                    "integer or boolean arrays are valid indices"
                )
            out.append(a)
            continue
        if hasattr(k, "__index__"):
            out.append(k.__index__())
            continue
        out.append(k)  # let numpy raise its own error
    return tuple(out), unique


def _recorded_among(values):
    """The first of ``values`` that deltaad.compile records (an array or a float), or None."""
    for v in values:
        if type(v) in _trace.recorded_arrays or type(v) in _trace.recorders:
            return v
    return None


def _getitem_impl(v, idx, unique):
    if type(v) is np.ndarray and _trace.lifting:
        k = _recorded_among(idx)
        if k is not None:  # deltaad.compile's recorded index into a plain array: one step
            return _trace.recorded_call(k, _getitem_impl, (v, idx, unique))
    r = v[idx]
    if type(r) is not np.ndarray:
        if type(r) in _trace.recorded_arrays and isinstance(r, np.ndarray):
            return r  # (deltaad.compile's recorded array)
        return to_float(r)
    return r


def _getitem_vjp(out, vals, on, idx, unique):
    x = vals[0]
    shape = shape_of(x)
    dt = dtype_of(x)

    def rule(ct):
        return (scatter(ct, shape, dt, idx, unique),)

    return rule


def _getitem_jvp(out, vals, tans, idx, unique):
    return getitem(tans[0], idx, unique)


GETITEM = Primitive("getitem", _getitem_impl, _getitem_vjp, _getitem_jvp)


# ``x[i]`` element by element (``for i in range(n): ... x[i] ...``, as scalar code handed an
# ndarray reads it, ``scipy.optimize``'s objective the commonest): each read is a binding whose
# cotangent is a dense one-hot array, about 4 us plus O(n) at the sweep, O(n^2) for the loop.
# Unpacking the vector once (``unpack``: its element duals in one C loop, one gather at the
# sweep) costs about two such reads plus 60 ns an element; its later reads return the element
# duals (float duals: the fast arithmetic). So a vector is unpacked at the read where the
# dense reads would have cost about as much (``_unpack_at``: the second read of a short one,
# up to about the 20th of a long one), and the loop stays within twice the better of the two,
# whatever n and however many elements are read. A fresh array read once (stencil code reads
# u[0] of a new array every step) keeps its one dense read.


_node_drops = B.node_drops
_rerun_count = _trace.rerun_count


def _unpack_at(n):
    """The read of a vector of ``n`` elements that unpacks it: ``r`` dense reads cost about
    ``r * (4 us + 3 ns * n)``, unpacking ``8 us + 60 ns * n``."""
    return min(2 + n // 64, 20)


def _fresh(cache):
    """Whether the element cache ``cache`` (see ``_element``) stands as last checked: no node
    dropped and no re-run begun or ended since."""
    return cache[3] == _node_drops() and cache[4] == _rerun_count[0]


def _element(x, v, top, k):
    """``x[k]`` of the 1-d array dual ``x`` (plain value ``v``) on the open reverse trace.

    ``x._reads`` counts the reads (an int) until the vector is unpacked, then holds ``(element
    duals, the gather node, the count, B.node_drops(), trace.rerun_count[0])``; a cache that
    is ``_fresh`` is read by ``ArrayDual.__getitem__`` (in C on the compiled core). A
    checkpoint drops what its function recorded, an unpacking included, and a later binding
    may take the node's id; its re-run at sweep time may read only what lies below its node
    (``trace.rerun_floor``). So a cache no longer fresh is used only while its node is on the
    tape and below that floor, else the vector is unpacked again (at the read its first
    unpacking was)."""
    reads = getattr(x, "_reads", 0)
    n = v.shape[0]
    if type(reads) is tuple:
        els, node, reads = reads[:3]
        g = node.link + node.n + 1
        floor = _trace.rerun_floor(top)
        if (g < top.nbindings and top.binding(g)[1] is node
                and (floor is None or g < floor)):
            x._reads = (els, node, reads, _node_drops(), _rerun_count[0])
            if -n <= k < n:
                return els[k]
            return _getitem_reverse(v, top, x.id, (k,))  # (numpy's IndexError)
        reads -= 1  # dropped: counted again from before that read
    reads += 1
    if reads < _unpack_at(n) or not -n <= k < n:
        x._reads = reads
        return _getitem_reverse(v, top, x.id, (k,))  # (numpy's IndexError)
    els, node = _unpack(x)
    x._reads = (els, node, reads, _node_drops(), _rerun_count[0])
    return els[k]


def _getitem_reverse(v, top, i, idx):
    """``x[idx]`` for basic indices ``idx`` (ints, slices, ``None``, ``...``) of an array dual
    of the open reverse trace ``top`` (id ``i``, plain value ``v``): what ``apply(GETITEM)``
    records, its steps inlined (these are the commonest operations of stencil code)."""
    out = v[idx]
    shape = v.shape
    dt = v.dtype

    def rule(ct):
        if type(ct) is np.ndarray:
            z = np.zeros(shape, dtype=dt)
            z[idx] = ct
            return (z,)
        return (scatter(ct, shape, dt, idx, True),)

    if type(out) is np.ndarray:
        r = _new(ArrayDual)
        r.value = out
        r.trace = top
        r.id = top.push_linear([i], rule)
        r.tangent = None
        r._sliced = True
        return r
    return Dual(float(out), top, top.push_linear([i], rule), None)


def getitem(x, idx, unique=None):
    """``x[idx]`` for a plain array or a dual; ``idx`` normalised unless ``unique`` is given."""
    if unique is None:
        idx, unique = normalize_index(idx)
    tx = type(x)
    if tx is ArrayDual:
        return apply(GETITEM, (x,), {"idx": idx, "unique": unique})
    if tx is Dual:
        if idx == ():
            return x
        return apply(GETITEM, (reshape_scalar(x),), {"idx": idx, "unique": unique})
    return _getitem_impl(as_ndarray(x), idx, unique)


def _update_impl(xv, vv, idx, mode, unique):
    if _trace.lifting:
        r = _recorded_among((xv, vv) + idx)
        if r is not None:  # deltaad.compile: one recorded step
            return _trace.recorded_call(r, _update_impl, (xv, vv, idx, mode, unique))
    dt = xv.dtype if xv.dtype.kind == "f" else np.result_type(xv.dtype, as_ndarray(vv).dtype, float)
    out = np.array(xv, dtype=dt, copy=True)
    if mode == "set":
        out[idx] = vv
    elif unique:
        out[idx] += vv
    else:
        np.add.at(out, idx, vv)
    return out


def _update_vjp(out, vals, on, idx, mode, unique):
    vshape = shape_of(vals[1])
    won = None
    if mode == "set" and not unique and on[1]:
        # A repeated index keeps one of the writes to it: only that element of v reaches the
        # output. Number the selected slots and write the numbers through the same index, so
        # numpy itself says which write survived.
        xshape = shape_of(vals[0])
        sel_shape = np.empty(xshape, dtype=np.int8)[idx].shape
        order = np.arange(int(np.prod(sel_shape))).reshape(sel_shape)
        survivor = np.full(xshape, -1, dtype=np.intp)
        survivor[idx] = order
        won = (survivor[idx] == order).astype(dtype_of(out))

    def rule(ct):
        gx = gv = None
        if on[0]:
            gx = ct if mode == "add" else update(ct, 0.0, idx, "set", unique)
        if on[1]:
            sel = getitem(ct, idx, unique)
            gv = unbroadcast(sel if won is None else sel * won, vshape)
        return gx, gv

    return rule


def _update_jvp(out, vals, tans, idx, mode, unique):
    tx, tv = tans
    if tx is None:
        tx = np.zeros(shape_of(vals[0]), dtype=dtype_of(out))
    if tv is None:
        tv = 0.0
    return update(tx, tv, idx, mode, unique)


UPDATE = Primitive("at[].set/add", _update_impl, _update_vjp, _update_jvp)


def update(x, v, idx, mode, unique=None):
    """``x.at[idx].set(v)`` (``mode='set'``) or ``.add(v)`` as a new array (or array dual)."""
    if unique is None:
        idx, unique = normalize_index(idx)
    x = operand_or_raise(x)
    v = operand_or_raise(v, "update value")
    if type(x) is Dual:
        x = reshape_scalar(x)
    elif type(x) is not ArrayDual:
        x = as_ndarray(x)
    return apply(UPDATE, (x, v), {"idx": idx, "mode": mode, "unique": unique})


def scatter(ct, shape, dtype, idx, unique):
    """The zero array of ``shape`` with ``ct`` added at ``idx`` (the transpose of indexing)."""
    tc = type(ct)
    if tc is ArrayDual or tc is Dual:
        return apply(UPDATE, (np.zeros(shape, dtype=dtype), ct), {"idx": idx, "mode": "add", "unique": unique})
    if tc in _trace.recorded_arrays or tc in _trace.recorders:  # deltaad.compile: one step
        return _trace.recorded_call(ct, scatter, (ct, shape, dtype, idx, unique))
    z = np.zeros(shape, dtype=dtype)
    if unique:
        z[idx] = ct
    else:
        np.add.at(z, idx, ct)
    return z


class _At:
    """``x.at[idx]``: JAX's spelling of a functional update."""

    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        return _AtIndex(self.x, idx)


class _AtIndex:
    __slots__ = ("x", "idx")

    def __init__(self, x, idx):
        self.x = x
        self.idx = idx

    def get(self):
        """``x[idx]``."""
        return getitem(self.x, self.idx)

    def set(self, v):
        """A copy of ``x`` with ``x[idx] = v``; differentiable in ``x`` and ``v``."""
        return update(self.x, v, self.idx, "set")

    def add(self, v):
        """A copy of ``x`` with ``v`` added at ``idx`` (repeated indices accumulate)."""
        return update(self.x, v, self.idx, "add")


def at(x):
    """``deltaad.at(x)[idx].set(v)``: the functional update for plain arrays and duals alike."""
    return _At(x)


# --------------------------------------------------------------------------------------------
# Shape helpers used by many rules


def _reshape_impl(v, shape):
    if type(v) is np.ndarray:  # (what np.reshape calls)
        return v.reshape(shape)
    return np.reshape(v, shape)


def _reshape_vjp(out, vals, on, shape):
    s = shape_of(vals[0])

    def rule(ct):
        return (reshape(ct, s),)

    return rule


def _reshape_jvp(out, vals, tans, shape):
    return reshape(tans[0], shape_of(out))


RESHAPE = Primitive("reshape", _reshape_impl, _reshape_vjp, _reshape_jvp)


def _transpose_impl(v, axes):
    if type(v) is np.ndarray:  # (what np.transpose calls)
        return v.transpose(axes)
    return np.transpose(v, axes)


def _transpose_vjp(out, vals, on, axes):
    inv = [0] * len(axes)  # the inverse permutation (np.argsort's, without a numpy call)
    for j, a in enumerate(axes):
        inv[a] = j
    inv = tuple(inv)

    def rule(ct):
        return (ct.transpose(inv) if type(ct) is np.ndarray else np.transpose(ct, inv),)

    return rule


TRANSPOSE = Primitive("transpose", _transpose_impl, _transpose_vjp, lambda out, vals, tans, axes: np.transpose(tans[0], axes))


def reshape(x, shape):
    """``np.reshape`` (C order) on plain values and duals; a scalar dual becomes an array."""
    tx = type(x)
    if tx is ArrayDual or tx is Dual:
        return apply(RESHAPE, (x,), {"shape": shape})
    if tx is np.ndarray:  # (what np.reshape calls)
        return x.reshape(shape)
    return np.reshape(x, shape)


def reshape_scalar(x):
    """A scalar (dual) as a 0-d array (dual)."""
    return reshape(x, ())


_UNBROADCAST = {}  # (g's shape, shape) -> the axes unbroadcast sums over


def unbroadcast(g, shape):
    """Sum ``g`` down to ``shape`` (the transpose of broadcasting ``shape`` to ``g``'s shape)."""
    gs = g.shape if type(g) is np.ndarray else shape_of(g)
    if gs == shape:
        return g
    shape = tuple(shape)
    key = (gs, shape)
    axes = _UNBROADCAST.get(key)
    if axes is None:
        nd = len(gs) - len(shape)
        if nd < 0:
            return broadcast_to(g, shape)
        axes = tuple(range(nd)) + tuple(nd + i for i, s in enumerate(shape)
                                        if s == 1 and gs[nd + i] != 1)
        if len(_UNBROADCAST) > 4096:
            _UNBROADCAST.clear()
        _UNBROADCAST[key] = axes
    if axes:
        g = _sum_axes(g, axes)
    if type(g) is np.ndarray:
        return g if g.shape == shape else g.reshape(shape)  # (np.reshape's call)
    if shape_of(g) != shape:
        g = reshape(g, shape)
    return g


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


# The compiled backend's twin of einsum's sum over one axis (``deltaad._arrays.sum_axis``, the
# same bits; installed by ``fast``), or None.
SUM_AXIS = None


def _sum_axes(g, axes):
    """``np.sum(g, axis=axes)``, by ``einsum`` where that is much faster and adds in the same
    order: a float array summed over leading axes only, its short last axis kept (numpy's sum
    then adds rows one after another, as einsum does, but pays its loop setup per row: 4x
    slower for a (25, 1000, 10) array summed over axis 1). Summing the last axis keeps
    np.sum, whose pairwise summation along it is more accurate."""
    nd = g.ndim if type(g) is np.ndarray or type(g) in _trace.recorded_arrays else 0
    if (1 <= nd <= len(_LETTERS) and nd - 1 not in axes and g.dtype.kind == "f"
            and 0 < g.shape[-1] <= 32):
        if SUM_AXIS is not None and len(axes) == 1:
            r = SUM_AXIS(g, axes[0])
            if r is not None:
                return r
        key = (nd, axes)
        spec = _EINSUM_SPECS.get(key)
        if spec is None:
            idx = _LETTERS[:nd]
            spec = _EINSUM_SPECS[key] = \
                idx + "->" + "".join(c for i, c in enumerate(idx) if i not in axes)
        return np.einsum(spec, g)
    if type(g) is np.ndarray:
        return add_reduce(g, axes)
    return np.sum(g, axis=axes)


_EINSUM_SPECS = {}  # (ndim, axes) -> the einsum subscripts of that sum
_ADD_REDUCE = np.add.reduce

# The compiled backend's sum over the last axis (``deltaad._arrays.sum_rows``: numpy's
# pairwise sums in one loop, where numpy calls its loop once per row; installed by ``fast``),
# or None.
SUM_ROWS = None


def add_reduce(g, axes, keepdims=False):
    """``np.sum(g, axis=axes, keepdims=keepdims)`` of an ndarray ``g`` (what np.sum calls for
    one, without its wrapper), by ``SUM_ROWS`` where it takes the sum."""
    if SUM_ROWS is not None:
        r = SUM_ROWS(g, axes, keepdims)
        if r is not None:
            return r
    return _ADD_REDUCE(g, axes, None, None, keepdims)


def broadcast(t, shape):
    """``t`` broadcast to ``shape`` (a tangent with the output's shape)."""
    if shape_of(t) == shape:
        return t
    return broadcast_to(t, shape)


def broadcast_to(g, shape):
    """``np.broadcast_to(g, shape)``. For a C-contiguous, non-empty ndarray ``g`` the same
    read-only view -- stride 0 along every axis where ``g`` has length 1 or none, ``g``'s stride
    elsewhere, as numpy's nditer makes it -- built by ``np.ndarray`` directly: numpy's function
    costs ~2.4 us, three times this, and reductions' backward rules call it once per binding."""
    if type(g) is np.ndarray and g.size and g.flags.c_contiguous:
        key = (g.shape, g.strides, shape)
        strides = _BROADCAST_STRIDES.get(key)
        if strides is None:
            strides = _broadcast_strides(g.shape, g.strides, shape)
            if strides is None:
                return np.broadcast_to(g, shape)  # (numpy's error)
            if len(_BROADCAST_STRIDES) > 4096:
                _BROADCAST_STRIDES.clear()
            _BROADCAST_STRIDES[key] = strides
        if BROADCAST_VIEW is not None:
            return BROADCAST_VIEW(g, shape, strides)
        r = np.ndarray(shape, g.dtype, g, 0, strides)
        r.flags.writeable = False
        return r
    return np.broadcast_to(g, shape)


# The compiled backend's twin of the view ``broadcast_to`` builds (``deltaad._arrays.
# broadcast_view``, the same view by numpy's C constructor; installed by ``fast``), or None.
BROADCAST_VIEW = None


_BROADCAST_STRIDES = {}  # (shape, strides, target shape) -> the broadcast view's strides


def _broadcast_strides(gs, st, shape):
    k = len(shape) - len(gs)
    if k < 0:
        return None
    strides = [0] * k
    for i in range(len(gs)):
        n = gs[i]
        if n == 1:
            strides.append(0)
        elif n == shape[k + i]:
            strides.append(st[i])
        else:
            return None
    return tuple(strides)


def zeros_of(v):
    """Plain zeros with the shape and dtype of value ``v`` (a zero tangent)."""
    s = strip(v)
    if type(s) is float or type(s) in _trace.recorders:
        return 0.0
    return np.zeros(np.shape(s), dtype=s.dtype if hasattr(s, "dtype") and s.dtype.kind == "f" else float)


# --------------------------------------------------------------------------------------------
# The array dual


_BASIC = (int, np.integer, slice, type(None), type(Ellipsis))


def _basic(idx):
    """Whether numpy's ``x[idx]`` is a view of ``x``: basic indexing (ints, slices, ``...``,
    ``None``), where an in-place operator on the result writes into ``x``."""
    if type(idx) is tuple:
        return all(isinstance(i, _BASIC) and not isinstance(i, bool) for i in idx)
    return isinstance(idx, _BASIC) and not isinstance(idx, bool)


def _ints(shape):
    """Whether ``shape`` holds only Python ints (what np.reshape's rule makes of a shape)."""
    for n in shape:
        if type(n) is not int:
            return False
    return True


def _plain_basic(idx):
    """Whether the tuple ``idx`` holds only ints, slices, ``None`` and ``...`` (the Python
    types themselves): what :func:`normalize_index` leaves as it is, a view in numpy."""
    for k in idx:
        tk = type(k)
        if tk is not int and tk is not slice and k is not None and k is not Ellipsis:
            return False
    return True


def _inplace(op):
    """``x op= y``: on an array dual, the name is bound to a new array dual (``x = x op y``);
    on a slice of one (``v = a[1:3]``, a row of a loop over ``a``) a TypeError, because numpy
    would also change ``a`` and deltaad's ``a`` would silently keep its old values."""

    def method(self, other):
        if getattr(self, "_sliced", False):
            raise TypeError(
                "v %s= ... on a slice of a deltaad array dual (v = a[...] or a row of a loop "
                "over a): numpy would also write the result into a, but deltaad's arrays are "
                "immutable under differentiation, so a would silently keep its old values. "
                "Update a itself with a = a.at[index].set(v %s ...) (a = a.at[index].add(...) "
                "for +=: JAX's functional update), or write v = v %s ... if a need not change."
                % (op, op, op))
        return NotImplemented

    method.__name__ = "__i%s__" % {"+": "add", "-": "sub", "*": "mul", "/": "truediv",
                                   "//": "floordiv", "%": "mod", "**": "pow", "@": "matmul"}[op]
    return method


@register_dual_type
class ArrayDual:
    """An array dual number: a numpy array ``value`` with ``Var id`` on ``trace`` (a tape) or
    with ``tangent`` (a forward level). ``value`` is a float ndarray or an array dual of a lower
    level. numpy functions and operators on it are differentiated (see deltaad's docs for the
    supported set); anything else raises ``NotImplementedError`` naming the function.

    Array duals are immutable: ``x[i] = v`` raises; write ``x = x.at[i].set(v)``.
    """

    __slots__ = ("value", "trace", "id", "tangent", "_sliced", "_reads", "__weakref__")
    __array_priority__ = 1000.0
    __hash__ = None

    def __init__(self, value, trace, id, tangent):
        self.value = value
        self.trace = trace
        self.id = id
        self.tangent = tangent

    # -- numpy protocols --
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:  # ufunc_dispatch's fast path, inlined
            rule = _UFUNCS.get(ufunc)
            if rule is not None and ufunc not in _CONSTANT_UFUNCS:
                if len(inputs) == 1:
                    return rule(self)
                if len(inputs) == 2:
                    # (a float ndarray is an operand as it is: what ufunc_dispatch finds too)
                    a, b = inputs
                    ta = type(a)
                    tb = type(b)
                    if (ta is ArrayDual or ta is float or ta is np.ndarray and a.dtype.kind == "f") \
                            and (tb is ArrayDual or tb is float or
                                 tb is np.ndarray and b.dtype.kind == "f"):
                        return rule(a, b)
        return ufunc_dispatch(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return function_dispatch(func, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(x)``: the object array of ``x``'s scalar duals, on the same trace, so
        code that converts its input keeps the derivative through numpy's object arithmetic
        (it re-enters deltaad as an array dual where it meets one). An integer or bool ``dtype``
        gives the plain values (piecewise constant, as with ``astype``); a float ``dtype`` would
        drop the derivative: an error naming the conversion."""
        if dtype is not None:
            kind = np.dtype(dtype).kind
            if kind in "iub":  # integers and truth values are piecewise constant: plain
                return np.asarray(strip(self), dtype=dtype)
            if kind != "O":
                raise no_float_error("array", dtype)
        return object_array(self)

    # -- attributes --
    @property
    def shape(self):
        return strip(self.value).shape

    @property
    def ndim(self):
        return strip(self.value).ndim

    @property
    def size(self):
        return strip(self.value).size

    @property
    def dtype(self):
        return strip(self.value).dtype

    @property
    def nbytes(self):
        return strip(self.value).nbytes

    @property
    def itemsize(self):
        return strip(self.value).itemsize

    @property
    def flat(self):
        """The elements in C order, as a 1-d array dual (iterate it, index it, take ``len``);
        numpy's flat iterator, but read-only, as the array dual is."""
        return registry.FUNCTIONS[np.ravel](self)

    @property
    def T(self):
        v = self.value
        if SHORTCUTS and type(v) is np.ndarray and v.ndim == 2:  # a matrix: np.transpose's rule, short
            return apply(TRANSPOSE, (self,), {"axes": (1, 0)})
        return registry.FUNCTIONS[np.transpose](self)

    @property
    def mT(self):
        return registry.FUNCTIONS[np.swapaxes](self, -1, -2)

    @property
    def real(self):
        return self

    @property
    def imag(self):
        return np.zeros(self.shape, dtype=self.dtype)

    @property
    def at(self):
        return _At(self)

    def __len__(self):
        s = self.shape
        if not s:
            raise TypeError("len() of unsized object")
        return s[0]

    def __iter__(self):
        s = self.shape
        if not s:
            raise TypeError("iteration over a 0-d array")
        if len(s) == 1:  # the scalars, by one gather: n getitems would cost n bindings each
            yield from unpack(self)  # with its own cotangent, several times the time
            return
        for i in range(s[0]):
            r = getitem(self, i, True)
            if type(r) is ArrayDual:
                r._sliced = True  # a row: numpy's is a view
            yield r

    def __getitem__(self, idx):
        ti = type(idx)
        if ti is int:  # an element of an unpacked vector, its cache as last checked (_element)
            r = getattr(self, "_reads", None)
            if type(r) is tuple and _fresh(r) and not _trace.lifting:
                els = r[0]
                if -len(els) <= idx < len(els) and not self.trace.closed:
                    return els[idx]
        if SHORTCUTS and (ti is int or ti is slice or ti is tuple and _plain_basic(idx)):
            # basic indices are their own normal form (no normalize_index) and give a view
            t = self.trace
            v = self.value
            if type(v) is np.ndarray and not t.is_forward and not t.closed and \
                    not _trace.lifting:
                if ti is int and v.ndim == 1:
                    return _element(self, v, t, idx)
                return _getitem_reverse(v, t, self.id, idx if ti is tuple else (idx,))
            r = apply(GETITEM, (self,), {"idx": idx if ti is tuple else (idx,), "unique": True})
            if type(r) is ArrayDual:
                r._sliced = True
            return r
        r = getitem(self, idx)
        if type(r) is ArrayDual and _basic(idx):
            r._sliced = True
        return r

    def __setitem__(self, idx, v):
        if _selects_nothing(shape_of(self), idx):  # x[empty mask] = v stores nothing (scipy
            return                                  # guards a correction so): no derivative lost
        raise TypeError(
            "deltaad array duals are immutable under differentiation: instead of x[i] = v write "
            "x = x.at[i].set(v) (or x.at[i].add(v)), JAX's functional update, which is "
            "differentiable in both x and v"
        )

    # -- in-place arithmetic: a new array dual bound to the name (as JAX's), except on a slice,
    # where numpy would also write into the array it was sliced from (see _inplace)
    __iadd__ = _inplace("+")
    __isub__ = _inplace("-")
    __imul__ = _inplace("*")
    __itruediv__ = _inplace("/")
    __ifloordiv__ = _inplace("//")
    __imod__ = _inplace("%")
    __ipow__ = _inplace("**")
    __imatmul__ = _inplace("@")

    # -- divmod: numpy's floor quotient (a constant) and remainder --
    def __divmod__(self, other):
        return np.divmod(self, other)

    def __rdivmod__(self, other):
        return np.divmod(other, self)

    # -- arithmetic --
    def __add__(self, other):
        to = type(other)
        if to is ArrayDual or to is float or to is Dual:
            return _UFUNCS[np.add](self, other)
        return _binop(np.add, self, other)

    def __radd__(self, other):
        to = type(other)
        if to is float or to is Dual:
            return _UFUNCS[np.add](other, self)
        return _binop(np.add, other, self)

    def __sub__(self, other):
        to = type(other)
        if to is ArrayDual or to is float or to is Dual:
            return _UFUNCS[np.subtract](self, other)
        return _binop(np.subtract, self, other)

    def __rsub__(self, other):
        to = type(other)
        if to is float or to is Dual:
            return _UFUNCS[np.subtract](other, self)
        return _binop(np.subtract, other, self)

    def __mul__(self, other):
        to = type(other)
        if to is ArrayDual or to is float or to is Dual:
            return _UFUNCS[np.multiply](self, other)
        return _binop(np.multiply, self, other)

    def __rmul__(self, other):
        to = type(other)
        if to is float or to is Dual:
            return _UFUNCS[np.multiply](other, self)
        return _binop(np.multiply, other, self)

    def __truediv__(self, other):
        to = type(other)
        if to is ArrayDual or to is float or to is Dual:
            return _UFUNCS[np.true_divide](self, other)
        return _binop(np.true_divide, self, other)

    def __rtruediv__(self, other):
        to = type(other)
        if to is float or to is Dual:
            return _UFUNCS[np.true_divide](other, self)
        return _binop(np.true_divide, other, self)

    def __floordiv__(self, other):
        return _binop(np.floor_divide, self, other)

    def __rfloordiv__(self, other):
        return _binop(np.floor_divide, other, self)

    def __mod__(self, other):
        return _binop(np.remainder, self, other)

    def __rmod__(self, other):
        return _binop(np.remainder, other, self)

    def __pow__(self, other, modulo=None):
        if modulo is not None:
            return NotImplemented
        return _binop(np.power, self, other)

    def __rpow__(self, other):
        return _binop(np.power, other, self)

    def __matmul__(self, other):
        return _binop(np.matmul, self, other)

    def __rmatmul__(self, other):
        return _binop(np.matmul, other, self)

    def __neg__(self):
        return registry.UFUNCS[np.negative](self)

    def __pos__(self):
        if self.trace.closed:
            raise escaped_error(self.trace.level)
        return self

    def __abs__(self):
        return registry.UFUNCS[np.absolute](self)

    # -- comparisons: on values, plain bool arrays --
    def __eq__(self, other):
        return strip(self) == strip(other)

    def __ne__(self, other):
        return strip(self) != strip(other)

    def __lt__(self, other):
        return strip(self) < strip(other)

    def __le__(self, other):
        return strip(self) <= strip(other)

    def __gt__(self, other):
        return strip(self) > strip(other)

    def __ge__(self, other):
        return strip(self) >= strip(other)

    def __bool__(self):
        return bool(strip(self))

    # -- conversions that would drop the derivative --
    def __float__(self):
        raise no_float_error("float", array=True)

    def __complex__(self):
        raise no_float_error("complex", array=True)

    def __int__(self):
        # piecewise constant, like floor: derivative 0, nothing to drop (numpy's rules for size)
        return int(strip(self))

    def __round__(self, ndigits=None):
        return np.round(strip(self), ndigits or 0)

    def __index__(self):
        raise TypeError("a deltaad array dual cannot be used as an index")

    def __repr__(self):
        kind = "tangent" if self.trace.is_forward else "Var %d" % self.id
        return "ArrayDual(%r, %s, level=%d)" % (self.value, kind, self.trace.level)

    def __format__(self, spec):
        return format(strip(self), spec)

    # -- ndarray methods --
    def item(self, *args):
        if not args:
            if self.size != 1:
                raise ValueError("can only convert an array of size 1 to a Python scalar")
            return getitem(reshape(self, (-1,)), 0, True)
        if len(args) == 1 and isinstance(args[0], int):
            return getitem(reshape(self, (-1,)), args[0], True)
        return getitem(self, tuple(args[0]) if len(args) == 1 else args)

    def tolist(self):
        if self.ndim == 0:
            return getitem(self, (), True)
        flat = unpack(self)  # (one gather for all the scalars)
        for n in reversed(self.shape[1:]):
            flat = [flat[i:i + n] for i in range(0, len(flat), n)]
        return flat

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        if SHORTCUTS and order == "C" and type(shape) is tuple and _ints(shape):  # np.reshape's rule, short
            return apply(RESHAPE, (self,), {"shape": shape})
        return registry.FUNCTIONS[np.reshape](self, shape, order=order)

    def ravel(self, order="C"):
        if SHORTCUTS and order == "C":  # np.ravel's rule, short
            return apply(RESHAPE, (self,), {"shape": (-1,)})
        return registry.FUNCTIONS[np.ravel](self, order)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
            axes = axes[0]
        return registry.FUNCTIONS[np.transpose](self, axes if axes else None)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return registry.FUNCTIONS[np.astype](self, dtype)

    def copy(self, order="C"):
        return self

    def flatten(self, order="C"):
        return registry.FUNCTIONS[np.ravel](self, order)

    def sort(self, axis=-1, kind=None, order=None):
        """Sorted copy (JAX's semantics: array duals are immutable, there is no in-place sort)."""
        return registry.FUNCTIONS[np.sort](self, axis)

    def conj(self):
        return self

    conjugate = conj

    def fill(self, value):
        raise TypeError("deltaad array duals are immutable; use np.full_like or x.at[...].set(v)")

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


_METHODS = {
    "sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min, "var": np.var,
    "std": np.std, "cumsum": np.cumsum, "cumprod": np.cumprod, "swapaxes": np.swapaxes,
    "squeeze": np.squeeze, "dot": np.dot, "clip": np.clip, "repeat": np.repeat,
    "take": np.take, "diagonal": np.diagonal, "argmax": np.argmax,
    "argmin": np.argmin, "argsort": np.argsort, "nonzero": np.nonzero, "all": np.all,
    "any": np.any, "round": np.round, "ptp": np.ptp,
}


def _make_method(func):
    def method(self, *args, **kwargs):
        r = short_path(func, (self,) + args, kwargs)
        if r is not None:
            return r
        impl = registry.FUNCTIONS.get(func)
        if impl is None:
            raise registry.not_implemented(func)
        return impl(self, *args, **kwargs)

    method.__name__ = func.__name__
    method.__doc__ = "``numpy.%s`` on an array dual." % func.__name__
    return method


for _name, _func in _METHODS.items():
    setattr(ArrayDual, _name, _make_method(_func))
del _name, _func


def _binop(ufunc, a, b):
    ta = type(a)
    tb = type(b)
    if ((ta is ArrayDual or ta is float or ta is np.ndarray and a.dtype.kind == "f")
            and (tb is ArrayDual or tb is float or tb is np.ndarray and b.dtype.kind == "f")):
        # real operands (a float array: a constant such as a weight matrix): the steps below
        # would find them real and call the same rule
        rule = registry.UFUNCS.get(ufunc)  # (None for // : piecewise constant, below)
        if rule is not None and ufunc not in registry.CONSTANT_UFUNCS:
            return rule(a, b)
    if registry.COMPLEX is not None and registry.COMPLEX.involved((a, b)):
        return registry.COMPLEX.ufunc(ufunc, "__call__", (a, b), {})
    oa = operand(a)
    ob = operand(b)
    if oa is None or ob is None:
        return NotImplemented
    if ufunc in registry.CONSTANT_UFUNCS:  # // : piecewise constant, a plain result (derivative 0)
        return ufunc(strip(oa), strip(ob))
    return registry.UFUNCS[ufunc](oa, ob)


# --------------------------------------------------------------------------------------------
# numpy dispatch


_NOOP_UFUNC_KW = {"casting": "same_kind", "order": "K", "subok": True, "signature": None}


def _check_ufunc_kwargs(ufunc, kwargs):
    for k, v in kwargs.items():
        if k == "out":
            if v is not None and any(o is not None for o in (v if isinstance(v, tuple) else (v,))):
                raise TypeError(
                    "numpy.%s(..., out=...) would write a dual into an array in place; deltaad "
                    "arrays are immutable under differentiation: use the returned value" % ufunc.__name__
                )
        elif k == "where":
            if v is not True:
                raise NotImplementedError("deltaad: numpy.%s(..., where=...) on dual numbers; use np.where" % ufunc.__name__)
        elif k == "dtype":
            if v is not None and np.dtype(v).kind != "f":
                raise TypeError("deltaad: numpy.%s(..., dtype=%s) would drop the derivative" % (ufunc.__name__, v))
        elif k in _NOOP_UFUNC_KW:
            pass
        else:
            raise NotImplementedError("deltaad: numpy.%s(..., %s=...) on dual numbers" % (ufunc.__name__, k))


def _obj0(x):
    a = np.empty((), dtype=object)
    a[()] = x
    return a


def ufunc_dispatch(ufunc, method, inputs, kwargs):
    """numpy's ``__array_ufunc__`` for array duals and for scalar duals meeting arrays."""
    if method == "__call__" and not kwargs:  # the commonest calls, straight to the rule
        rule = registry.UFUNCS.get(ufunc)
        if rule is not None and ufunc not in registry.CONSTANT_UFUNCS:
            if len(inputs) == 1:
                if type(inputs[0]) is ArrayDual:
                    return rule(inputs[0])
            elif len(inputs) == 2:
                a, b = inputs
                ta = type(a)
                tb = type(b)
                if (ta is ArrayDual and (tb is ArrayDual or tb is float)) or \
                        (tb is ArrayDual and ta is float):
                    return rule(a, b)
    if _trace.settled_types:  # (deltaad.numpy.fillable's arrays, once imported)
        for x in inputs + tuple(kwargs.get("out") or ()):
            if type(x) in _trace.settled_types:  # numpy asked the dual first: the fillable's
                return x.__array_ufunc__(ufunc, method, *inputs, **kwargs)
    extra = {}
    if kwargs:
        if method == "__call__" and "axis" in kwargs and ufunc is getattr(np, "vecdot", None):
            extra["axis"] = kwargs.pop("axis")
        if method == "__call__":
            _check_ufunc_kwargs(ufunc, kwargs)
        dtype = kwargs.get("dtype")
    else:
        dtype = None
    if method == "__call__":
        has_array = False
        has_obj = False
        cplx = has_list = False
        for x in inputs:
            tx = type(x)
            if tx is ArrayDual:
                has_array = True
            elif isinstance(x, np.ndarray):
                if x.dtype.kind == "O":
                    has_obj = True
                elif x.dtype.kind == "c":
                    cplx = True
                elif x.ndim:
                    has_array = True
            elif tx is list or tx is tuple:
                has_array = has_list = True
            elif tx is not Dual and tx is not float and (tx is complex or isinstance(
                    x, np.complexfloating) or (registry.COMPLEX and tx in registry.COMPLEX.types)):
                cplx = True
        if cplx or (dtype is not None and np.dtype(dtype).kind == "c") or (
                has_list and registry.COMPLEX is not None and registry.COMPLEX.involved(inputs)):
            return registry.COMPLEX.ufunc(ufunc, method, inputs, dict(kwargs, **extra))
        if ufunc in registry.CONSTANT_UFUNCS or registry.late_constant(ufunc):
            if has_obj and not has_array:
                return ufunc(*[_obj0(x) if type(x) is Dual else x for x in inputs])
            return ufunc(*[strip(x) if type(x) is not np.ndarray or x.dtype.kind != "O" else asarray_plain(x) for x in inputs])
        rule = registry.ufunc_rule(ufunc)
        if rule is None:
            return _object_loop(ufunc, method, inputs, kwargs)
        if not has_array:
            if has_obj:  # numpy's object semantics: elementwise through the scalar duals' methods
                return ufunc(*[_obj0(x) if type(x) is Dual else x for x in inputs])
            return _scalar_ufunc(ufunc, rule, inputs)
        ops = [operand_or_raise(x) for x in inputs]
        r = rule(*ops, **extra)
        if dtype is not None:
            r = registry.FUNCTIONS[np.astype](r, dtype)
        return r
    if registry.COMPLEX is not None and registry.COMPLEX.involved(inputs):
        return registry.COMPLEX.ufunc(ufunc, method, inputs, kwargs)
    rule = registry.METHODS.get((ufunc, method))
    if rule is None:
        return _object_loop(ufunc, method, inputs, kwargs)
    kw = dict(kwargs)
    # out= and a non-float dtype= raise as for a call; a float dtype= casts the result
    _check_ufunc_kwargs(ufunc, {k: kw.pop(k) for k in ("out", "dtype") if k in kw})
    r = rule(*[operand_or_raise(x) for x in inputs], **kw)
    if dtype is not None:
        r = registry.FUNCTIONS[np.astype](r, dtype)
    return r


def _object_loop(ufunc, method, inputs, kwargs):
    """A ufunc call or method without a rule, where numpy has an object loop for it (a user's
    ``np.frompyfunc`` ufunc, ``np.maximum.accumulate``): that loop on the object arrays of the
    scalar duals -- each element through the duals' own arithmetic, so the derivative is
    recorded operation by operation -- packed back into an array dual, as numpy's own code is
    for functions without a rule. ``at`` writes into its operand in place: no object loop."""
    if method == "at" or "out" in kwargs or not any(
            set(t.replace("->", "")) == {"O"} for t in ufunc.types):
        raise registry.not_implemented(ufunc, None if method == "__call__" else method)
    objs = [object_array(x) if type(x) is ArrayDual else _obj0(x) if type(x) is Dual else x
            for x in inputs]
    try:
        r = getattr(ufunc, method)(*objs, **kwargs)
    except EscapedDualError:
        raise
    except Exception as exc:
        raise registry.not_implemented(ufunc, None if method == "__call__" else method,
                                       cause=exc) from exc
    return repack(r)


def _scalar(x):
    """A scalar operand of a ufunc as a float or a scalar dual; None if it is not one."""
    if type(x) is Dual or type(x) is float:
        return x
    if isinstance(x, (np.floating, np.integer)):  # computed with as numpy does (np.float32 stays)
        return x
    if isinstance(x, (numbers.Real, np.bool_)):  # np.bool_ is not a numbers.Real
        return float(x)
    if isinstance(x, np.ndarray) and x.shape == () and x.dtype.kind in "fiub":
        return float(x)
    if isinstance(x, (complex, np.complexfloating)) or isinstance(x, np.ndarray) and x.dtype.kind == "c":
        raise complex_error(x)
    return None


def _scalar_ufunc(ufunc, rule, inputs):
    """A ufunc whose inputs are all scalars (at least one a scalar dual): a scalar result, as
    numpy gives for scalars."""
    args = [_scalar(x) for x in inputs]
    if any(a is None for a in args):
        return NotImplemented
    f = registry.SCALAR_UFUNCS.get(ufunc)
    if f is not None:
        return f(*args)
    r = rule(*args)  # e.g. a user's rule: the array rule on 0-d operands, back to a scalar
    return getitem(r, (), True) if type(r) is ArrayDual else r


def asarray_plain(x):
    """Plain values of an object array (for functions whose derivative is zero)."""
    return np.asarray([strip(e) for e in x.ravel().tolist()]).reshape(x.shape)


def _fillable_in(args):
    for a in args:
        if type(a) in _trace.settled_types:
            return a
        if type(a) is list or type(a) is tuple:
            f = _fillable_in(a)
            if f is not None:
                return f
    return None


def short_path(func, args, kwargs):
    """``func(*args, **kwargs)`` by its short path (``registry.SHORT_PATHS``), or None where
    there is none or it does not take these arguments."""
    s = _SHORT_PATHS.get(func)
    if s is not None and SHORTCUTS and _FUNCTIONS.get(func) is s[0]:
        return s[1](args, kwargs)
    return None


def function_dispatch(func, args, kwargs):
    """numpy's ``__array_function__`` for array duals (and scalar duals, where installed)."""
    r = short_path(func, args, kwargs)
    if r is not None:
        return r
    if _trace.settled_types:
        f = _fillable_in(args)
        if f is None:
            f = _fillable_in(kwargs.values())
        if f is not None:  # numpy asked the dual first: the fillable's way
            return f.__array_function__(func, None, args, kwargs)
    c = registry.COMPLEX
    if c is not None:
        for x in args:  # (inline: real array duals, the common arguments, cost no call)
            tx = type(x)
            if tx is not ArrayDual and tx is not float and tx is not Dual:
                if c.involved(args):
                    return c.function(func, args, kwargs)  # a complex rule, or numpy's code
                break
        if kwargs and c.involved(kwargs.values()):
            return c.function(func, args, kwargs)
    impl = registry.FUNCTIONS.get(func)
    if impl is None:
        return object_fallback(func, args, kwargs)
    return impl(*args, **kwargs)


def object_fallback(func, args, kwargs):
    """A numpy function without a rule: numpy's own Python code, run on the duals as they are.
    It converts them with ``np.asarray`` -- the object arrays of their scalar duals -- so where
    its arithmetic stays in numpy's object loops the derivative is recorded operation by
    operation (correct, and as slow as Python arithmetic on each element); object arrays of
    duals in its result become array duals again. Where numpy's code cannot run on objects,
    the error says that the function has no rule."""
    impl = getattr(func, "_implementation", None)
    if impl is None:
        raise registry.not_implemented(func)
    try:
        r = impl(*args, **kwargs)
    except EscapedDualError:
        raise
    except Exception as exc:
        raise registry.not_implemented(func, cause=exc) from exc
    return repack(r)


def repack(r):
    """``r`` with object arrays of duals (numpy's object arithmetic) turned into array duals:
    where the result of numpy's own code re-enters deltaad."""
    tr = type(r)
    if tr is np.ndarray:
        if r.dtype.kind == "O" and r.size:
            flat = r.ravel().tolist()
            if has_dual(flat) and all(type(e) is Dual or type(e) is ArrayDual
                                      or isinstance(e, (numbers.Real, np.generic)) for e in flat):
                return asarray(r)
        return r
    if tr is tuple or tr is list:
        return tr(repack(e) for e in r)
    return r


# --------------------------------------------------------------------------------------------
# Scalar duals meeting numpy: the hooks the backend's Dual calls


def scalar_array_ufunc(ufunc, method, inputs, kwargs):
    """``Dual.__array_ufunc__``: a scalar dual in a numpy ufunc."""
    return ufunc_dispatch(ufunc, method, inputs, dict(kwargs))


def scalar_array_function(self, func, types, args, kwargs):
    """``Dual.__array_function__``: numpy functions on scalar duals, e.g. ``np.stack([x, y])``
    gives an array dual; a 0-d result of scalars is a scalar, as numpy gives."""
    r = function_dispatch(func, args, kwargs)
    if type(r) is ArrayDual and r.ndim == 0 and not _mentions_array_dual(args, kwargs):
        return getitem(r, (), True)
    return r


def _mentions_array_dual(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if type(a) is ArrayDual:
            return True
        if type(a) in (list, tuple) and any(type(e) is ArrayDual for e in a):
            return True
    return False


def scalar_fallback(name, *args):
    """A deltaad function (``deltaad.sin``...) called on something that is not a scalar: the
    table's function on arrays, registered under its name."""
    for a in args:
        rec = _trace.recorders.get(type(a))
        if rec is not None:  # a recorded number (deltaad.compile)
            return rec(name, *args)
    fn = registry.ELEMENTARY.get(name)
    if fn is not None:
        ops = [operand(a) for a in args]
        if all(o is not None for o in ops):
            return fn(*ops)
    f = getattr(np, name, None)
    if f is None:
        raise TypeError("deltaad.%s: unsupported argument types %s" % (name, [type(a).__name__ for a in args]))
    return f(*args)
