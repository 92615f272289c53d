"""Shape and indexing: reshapes, transposes, joins and splits, flips, rolls, tiles, pads,
diagonals, gathers (``take``, ``sort``) and differences.

All of these are linear and most only move entries: their rules are their own transposes
(a gather's transpose is a scatter-add), built from the array mechanism's indexing primitive.
``sort`` follows the stable sorting permutation; ``partition`` the permutation that puts each
entry where numpy's partition put an equal value. ``gradient`` and ``linspace`` repeat numpy's
own arithmetic, so their values are numpy's to the bit.
"""

from deltaad._plainnumpy import np

from ..trace import dtype_of, is_dual
from ..trace import value as strip
from .args import (
    NoValue, as_array, axes_of, cast, float_dtype, ndim, no_out, np_fn, normalize_axis_index,
    normalize_axis_tuple, unsupported,
)
from .array import as_ndarray
from .array import (
    TRANSPOSE, ArrayDual, Dual, Primitive, has_dual, apply, getitem, operand_or_raise,
    pack_scalars, reshape, shape_of, unbroadcast, update, zeros_of,
)
from . import array as _array
from .define import register
from .elementwise import where




def transpose(x, axes=None):
    x = operand_or_raise(x)
    nd = ndim(x)
    axes = tuple(range(nd - 1, -1, -1)) if axes is None else tuple(normalize_axis_index(int(i), nd) for i in axes)
    if len(axes) != nd or sorted(axes) != list(range(nd)):
        raise ValueError("axes don't match array")
    if axes == tuple(range(nd)):
        return x
    return apply(TRANSPOSE, (x,), {"axes": axes})


@register(np.transpose, np_fn("permute_dims"))
def _np_transpose(a, axes=None):
    return transpose(a, axes)


@register(np.swapaxes)
def swapaxes(a, axis1, axis2):
    x = operand_or_raise(a)
    nd = ndim(x)
    i, j = normalize_axis_index(axis1, nd), normalize_axis_index(axis2, nd)
    perm = list(range(nd))
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(x, perm)


@register(np_fn("matrix_transpose"), np_fn("matrix_transpose", np.linalg))
def matrix_transpose(x):
    if ndim(x) < 2:
        raise ValueError("matrix_transpose: input must have at least 2 dimensions")
    return swapaxes(x, -1, -2)


@register(np.moveaxis)
def moveaxis(a, source, destination):
    x = operand_or_raise(a)
    nd = ndim(x)
    source = normalize_axis_tuple(source, nd, "source")
    destination = normalize_axis_tuple(destination, nd, "destination")
    if len(source) != len(destination):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(nd) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return transpose(x, order)


@register(np.reshape)
def _np_reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    if shape is None:
        shape = newshape
    x = operand_or_raise(a)
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(n) for n in shape)
    if order not in ("C", "F", "A"):
        raise ValueError("reshape: order must be 'C', 'F' or 'A'")
    if _index_order(x, order, "reshape") == "F":
        return transpose(reshape(transpose(x), shape[::-1]))
    return reshape(x, shape)


def _index_order(x, order, name):
    """'C' or 'F': numpy's ``order`` for ``x``'s value. 'A' is F for a Fortran-contiguous
    array (and C otherwise); 'K' (memory order) is C or F for an array contiguous in one of
    them; other memory layouts are an error rather than a silently different order."""
    if order in ("C", "F"):
        return order
    if order is None:
        return "C"
    v = as_ndarray(strip(x))
    f_only = v.flags.f_contiguous and not v.flags.c_contiguous
    if order == "A":
        return "F" if f_only else "C"
    if order == "K":
        if v.flags.c_contiguous or v.ndim <= 1:
            return "C"
        if f_only:
            return "F"
        unsupported(name, "order='K' for an array that is neither C- nor Fortran-contiguous")
    raise ValueError("%s: order must be one of 'C', 'F', 'A' or 'K'" % name)


@register(np.ravel)
def ravel(a, order="C"):
    x = operand_or_raise(a)
    if _index_order(x, order, "ravel") == "F":
        x = transpose(x)
    return reshape(x, (-1,))


@register(np.expand_dims)
def expand_dims(a, axis):
    x = operand_or_raise(a)
    s = shape_of(x)
    if not isinstance(axis, (tuple, list)):
        axis = (axis,)
    nd = len(s) + len(axis)
    axes = normalize_axis_tuple(axis, nd)
    it = iter(s)
    return reshape(x, tuple(1 if i in axes else next(it) for i in range(nd)))


@register(np.squeeze)
def squeeze(a, axis=None):
    x = operand_or_raise(a)
    s = shape_of(x)
    if axis is None:
        axes = tuple(i for i, n in enumerate(s) if n == 1)
    else:
        axes = normalize_axis_tuple(axis, len(s))
        for i in axes:
            if s[i] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return reshape(x, tuple(n for i, n in enumerate(s) if i not in axes))


def _atleast(x, n):
    x = as_array(x)
    s = shape_of(x)
    if len(s) >= n:
        return x
    if n == 1:
        return reshape(x, (1,))
    if n == 2:
        return reshape(x, (1,) + s if len(s) == 1 else (1, 1))
    if len(s) == 0:
        return reshape(x, (1, 1, 1))
    if len(s) == 1:
        return reshape(x, (1,) + s + (1,))
    return reshape(x, s + (1,))


def _atleast_fn(n):
    def f(*arys):
        r = [_atleast(a, n) for a in arys]
        return r[0] if len(r) == 1 else tuple(r)

    return f


register(np.atleast_1d)(_atleast_fn(1))
register(np.atleast_2d)(_atleast_fn(2))
register(np.atleast_3d)(_atleast_fn(3))


def _broadcast_impl(v, shape):
    return np.broadcast_to(v, shape)


def _broadcast_vjp(out, vals, on, shape):
    s = shape_of(vals[0])

    def rule(ct):
        return (unbroadcast(ct, s),)

    return rule


BROADCAST = Primitive("broadcast_to", _broadcast_impl, _broadcast_vjp, lambda out, vals, tans, shape: np.broadcast_to(tans[0], shape))


@register(np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    x = operand_or_raise(array)
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(n) for n in shape)
    if shape_of(x) == shape:
        return x
    return apply(BROADCAST, (x,), {"shape": shape})


@register(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    xs = [operand_or_raise(a) for a in args]
    shape = np.broadcast_shapes(*[shape_of(x) for x in xs])
    return tuple(broadcast_to(x, shape) for x in xs)


def _concat_impl(*vals, axis):
    return np.concatenate(vals, axis=axis)


def _concat_vjp(out, vals, on, axis):
    sizes = [shape_of(v)[axis] for v in vals]
    pre = (slice(None),) * axis

    def rule(ct):
        cts = []
        o = 0
        for n, use in zip(sizes, on):
            cts.append(getitem(ct, pre + (slice(o, o + n),), True) if use else None)
            o += n
        return tuple(cts)

    return rule


def _concat_jvp(out, vals, tans, axis):
    ts = [zeros_of(v) if t is None else t for v, t in zip(vals, tans)]
    return apply(CONCAT, ts, {"axis": axis})


CONCAT = Primitive("concatenate", _concat_impl, _concat_vjp, _concat_jvp)


@register(np.concatenate, np_fn("concat"))
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    if out is None and dtype is None and type(axis) is int and type(arrays) in (list, tuple) \
            and _array.SHORTCUTS:
        r = _concat_reverse(arrays, axis)  # the commonest call, without the checks below
        if r is not None:
            return r
    no_out("concatenate", out)
    float_dtype("concatenate", dtype)
    xs = [operand_or_raise(a) for a in arrays]
    if not xs:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        xs = [ravel(x) for x in xs]
        axis = 0
    for x in xs:
        if ndim(x) == 0:
            raise ValueError("zero-dimensional arrays cannot be concatenated")
    nd = ndim(xs[0])
    return cast(apply(CONCAT, xs, {"axis": normalize_axis_index(axis, nd)}), dtype)


def _concat_reverse(arrays, axis):
    """``np.concatenate(arrays, axis)`` when ``arrays`` are real ndarrays and array duals of one
    open reverse trace holding plain values, all of one number of dimensions (at least 1) and
    ``axis`` one of them; None otherwise (the general path). It records what ``apply(CONCAT)``
    records, with a rule giving the dual operands' cotangents only (the general path selects
    them from the rule's one per operand)."""
    top = None
    vals = []
    ids = []
    cut = []  # the dual operands' positions in the output along axis
    nd = -1
    o = 0
    for x in arrays:
        tx = type(x)
        if tx is ArrayDual:
            t = x.trace
            if top is None:
                top = t
            elif t is not top:
                return None
            v = x.value
            if type(v) is not np.ndarray:
                return None
        elif tx is np.ndarray and x.dtype.kind in "fiub":
            v = x
        else:
            return None
        if nd < 0:
            nd = v.ndim
            if nd == 0 or not -nd <= axis < nd:
                return None
            axis %= nd
            pre = (slice(None),) * axis
        elif v.ndim != nd:
            return None
        n = v.shape[axis]
        if tx is ArrayDual:
            ids.append(x.id)
            cut.append(pre + (slice(o, o + n),))
        vals.append(v)
        o += n
    if top is None or top.is_forward or top.closed or _array._trace.lifting:
        return None
    out = _concat_impl(*vals, axis=axis)
    if len(cut) == 1:
        k0 = cut[0]

        def rule(ct):
            return (getitem(ct, k0, True),)
    else:
        def rule(ct):
            return tuple([getitem(ct, k, True) for k in cut])

    return ArrayDual(out, top, top.push_linear(ids, rule), None)


def _is_scalar_item(e):
    t = type(e)
    return t is Dual or t is float or t is int or isinstance(e, np.generic)


@register(np.stack)
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    no_out("stack", out)
    float_dtype("stack", dtype)
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to stack")
    if all(_is_scalar_item(e) for e in arrays):
        normalize_axis_index(axis, 1)
        return cast(pack_scalars(arrays), dtype)
    xs = [operand_or_raise(a) for a in arrays]
    shapes = {shape_of(x) for x in xs}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    s = shapes.pop()
    ax = normalize_axis_index(axis, len(s) + 1)
    es = s[:ax] + (1,) + s[ax:]
    return cast(apply(CONCAT, [reshape(x, es) for x in xs], {"axis": ax}), dtype)


@register(np.vstack, np_fn("row_stack"))
def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([_atleast(a, 2) for a in tup], axis=0, dtype=dtype)


@register(np.hstack)
def hstack(tup, *, dtype=None, casting="same_kind"):
    xs = [_atleast(a, 1) for a in tup]
    return concatenate(xs, axis=0 if xs and ndim(xs[0]) == 1 else 1, dtype=dtype)


@register(np.dstack)
def dstack(tup):
    return concatenate([_atleast(a, 3) for a in tup], axis=2)


@register(np.column_stack)
def column_stack(tup):
    xs = []
    for a in tup:
        x = as_array(a)
        xs.append(reshape(x, (-1, 1)) if ndim(x) < 2 else x)
    return concatenate(xs, axis=1)


@register(np.append)
def append(arr, values, axis=None):
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


def _split(ary, indices_or_sections, axis, even):
    x = as_array(ary)
    s = shape_of(x)
    ax = normalize_axis_index(axis, len(s))
    n = s[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("number sections must be larger than 0.")
        if even and n % k:
            raise ValueError("array split does not result in an equal division")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        bounds = [0]
        for z in sizes:
            bounds.append(bounds[-1] + z)
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    pre = (slice(None),) * ax
    return [getitem(x, pre + (slice(lo, hi),), True) for lo, hi in zip(bounds[:-1], bounds[1:])]


@register(np.split)
def split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, True)


@register(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, False)


@register(np.hsplit)
def hsplit(ary, indices_or_sections):
    return _split(ary, indices_or_sections, 1 if ndim(ary) > 1 else 0, True)


@register(np.vsplit)
def vsplit(ary, indices_or_sections):
    return _split(ary, indices_or_sections, 0, True)


@register(np.dsplit)
def dsplit(ary, indices_or_sections):
    return _split(ary, indices_or_sections, 2, True)


@register(np_fn("unstack"))
def unstack(x, /, *, axis=0):
    x = as_array(x)
    ax = normalize_axis_index(axis, ndim(x))
    return tuple(getitem(x, (slice(None),) * ax + (i,), True) for i in range(shape_of(x)[ax]))


@register(np.flip)
def flip(m, axis=None):
    x = as_array(m)
    nd = ndim(x)
    axes = axes_of(axis, nd)
    return getitem(x, tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(nd)), True)


@register(np.fliplr)
def fliplr(m):
    if ndim(m) < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


@register(np.flipud)
def flipud(m):
    if ndim(m) < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


@register(np.roll)
def roll(a, shift, axis=None):
    x = as_array(a)
    if axis is None:
        s = shape_of(x)
        return reshape(roll(ravel(x), shift, 0), s)
    nd = ndim(x)
    shifts, axes = np.broadcast_arrays(as_ndarray(shift), as_ndarray(axis))
    total = {}
    for sh, ax in zip(shifts.ravel().tolist(), axes.ravel().tolist()):
        ax = normalize_axis_index(ax, nd)
        total[ax] = total.get(ax, 0) + sh
    for ax, sh in total.items():
        n = shape_of(x)[ax]
        if n == 0:
            continue
        k = sh % n
        if k:
            pre = (slice(None),) * ax
            x = apply(CONCAT, [getitem(x, pre + (slice(n - k, None),), True), getitem(x, pre + (slice(0, n - k),), True)], {"axis": ax})
    return x


@register(np.tile)
def tile(A_, reps):
    x = as_array(A_)
    reps = tuple(int(r) for r in reps) if isinstance(reps, (tuple, list, np.ndarray)) else (int(reps),)
    s = shape_of(x)
    d = max(len(s), len(reps))
    s = (1,) * (d - len(s)) + s
    reps = (1,) * (d - len(reps)) + reps
    x = reshape(x, sum(((1, n) for n in s), ()))
    x = broadcast_to(x, sum(((r, n) for r, n in zip(reps, s)), ()))
    return reshape(x, tuple(r * n for r, n in zip(reps, s)))


@register(np.repeat)
def repeat(a, repeats, axis=None):
    x = as_array(a)
    if axis is None:
        x = ravel(x)
        axis = 0
    s = shape_of(x)
    ax = normalize_axis_index(axis, len(s))
    n = s[ax]
    r = as_ndarray(repeats)
    if r.ndim == 0 or r.size == 1:
        k = int(r.reshape(-1)[0]) if r.ndim else int(r)
        x = reshape(x, s[: ax + 1] + (1,) + s[ax + 1 :])
        x = broadcast_to(x, s[: ax + 1] + (k,) + s[ax + 1 :])
        return reshape(x, s[:ax] + (n * k,) + s[ax + 1 :])
    idx = np.repeat(np.arange(n), r)
    return getitem(x, (slice(None),) * ax + (idx,), False)


def _as_pairs(x, ndim):
    x = np.array(x)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            return ((int(x[0]), int(x[0])),) * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            return ((int(x[0]), int(x[1])),) * ndim
    return tuple((int(a), int(b)) for a, b in np.broadcast_to(x, (ndim, 2)).tolist())


def _pad_impl(v, pw, cval):
    return np.pad(v, pw, mode="constant", constant_values=cval)


def _pad_vjp(out, vals, on, pw, cval):
    s = shape_of(vals[0])
    idx = tuple(slice(lo, lo + n) for (lo, _), n in zip(pw, s))

    def rule(ct):
        return (getitem(ct, idx, True),)

    return rule


PAD = Primitive("pad", _pad_impl, _pad_vjp, lambda out, vals, tans, pw, cval: apply(PAD, (tans[0],), {"pw": pw, "cval": 0}))


@register(np.pad, note="not reflect_type='odd'")
def pad(array, pad_width, mode="constant", **kwargs):
    x = as_array(array)
    s = shape_of(x)
    pw = _as_pairs(pad_width, len(s))
    if mode == "constant":
        c = kwargs.pop("constant_values", 0)
        if kwargs:
            unsupported("pad", ", ".join(kwargs))
        if is_dual(c) or (isinstance(c, (list, tuple)) and has_dual(c)):
            unsupported("pad", "constant_values=<dual>")
        return apply(PAD, (x,), {"pw": pw, "cval": c})
    if mode in ("edge", "reflect", "symmetric", "wrap"):
        # These modes copy entries: pad an array of indices the same way and gather. An odd
        # reflection (2 * edge - x) computes new values, which this cannot express.
        if kwargs.get("reflect_type", "even") != "even":
            unsupported("pad", "reflect_type=%r" % (kwargs["reflect_type"],))
        kwargs.pop("reflect_type", None)
        if kwargs:
            unsupported("pad", ", ".join(kwargs))
        idx = np.pad(np.arange(int(np.prod(s, dtype=np.int64))).reshape(s), pw, mode=mode)
        return getitem(ravel(x), idx, False)
    raise NotImplementedError("deltaad: numpy.pad(..., mode=%r) on dual numbers is not supported" % (mode,))


def _diag_indices(m, n, k):
    if k >= 0:
        c = max(0, min(m, n - k))
        rows = np.arange(c)
        return rows, rows + k
    c = max(0, min(m + k, n))
    rows = np.arange(c)
    return rows - k, rows


@register(np.diag)
def diag(v, k=0):
    x = as_array(v)
    s = shape_of(x)
    if len(s) == 1:
        n = s[0] + abs(k)
        rows, cols = _diag_indices(n, n, k)
        return update(np.zeros((n, n), dtype=dtype_of(x)), x, (rows, cols), "add", True)
    if len(s) == 2:
        rows, cols = _diag_indices(s[0], s[1], k)
        return getitem(x, (rows, cols), True)
    raise ValueError("Input must be 1- or 2-d.")


@register(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    x = as_array(a)
    nd = ndim(x)
    if nd < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    i, j = normalize_axis_index(axis1, nd), normalize_axis_index(axis2, nd)
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    x = moveaxis(x, (i, j), (-2, -1))
    s = shape_of(x)
    rows, cols = _diag_indices(s[-2], s[-1], offset)
    return getitem(x, (Ellipsis, rows, cols), True)


if hasattr(np.linalg, "diagonal"):
    register(np.linalg.diagonal)(lambda x, /, *, offset=0: diagonal(x, offset, -2, -1))


def _tri_mask(x, k, lower):
    s = shape_of(x)
    n, m = (s[-2], s[-1]) if len(s) >= 2 else (s[-1], s[-1])
    t = np.tri(n, m, k=k if lower else k - 1, dtype=bool)
    return t if lower else ~t


@register(np.tril)
def tril(m, k=0):
    x = as_array(m)
    return where(_tri_mask(x, k, True), x, 0.0)


@register(np.triu)
def triu(m, k=0):
    x = as_array(m)
    return where(_tri_mask(x, k, False), x, 0.0)


@register(np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    no_out("take", out)
    x = as_array(a)
    if axis is None:
        x = ravel(x)
        axis = 0
    s = shape_of(x)
    ax = normalize_axis_index(axis, len(s))
    idx = as_ndarray(indices)
    n = s[ax]
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    if idx.ndim == 0:
        return getitem(x, (slice(None),) * ax + (int(idx),), True)
    return getitem(x, (slice(None),) * ax + (idx,), False)


@register(np.compress)
def compress(condition, a, axis=None, out=None):
    """The entries along ``axis`` where the (plain) ``condition`` is true: a selection."""
    no_out("compress", out)
    return take(a, np.nonzero(np.ravel(as_ndarray(strip(condition))))[0], axis)


@register(np.extract)
def extract(condition, arr):
    return take(arr, np.nonzero(np.ravel(as_ndarray(strip(condition))))[0])


@register(np.choose, note="a selection: each entry's derivative goes to the choice it took")
def choose(a, choices, out=None, mode="raise"):
    no_out("choose", out)
    if is_dual(a):
        raise TypeError("numpy.choose: the index array a has no derivative; pass plain "
                        "integers (deltaad.value(a))")
    idx = as_ndarray(a)
    n = len(choices)
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    elif idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError("invalid entry in choice array")
    cs = [as_array(c) for c in choices]
    shape = np.broadcast_shapes(idx.shape, *[shape_of(c) for c in cs])
    r = None
    for k in range(n - 1, -1, -1):  # numpy's value: one choice's entry per position
        c = cs[k]
        r = c if r is None else where(idx == k, c, r)
    return np.broadcast_to(r, shape) if shape_of(r) != shape else r


@register(np.resize)
def resize(a, new_shape):
    """``a``'s entries repeated (row-major) to fill ``new_shape``: a selection."""
    x = ravel(as_array(a))
    shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    total = int(np.prod(shape, dtype=np.int64))
    n = shape_of(x)[0]
    if total == 0 or n == 0:
        return np.zeros(shape, dtype=as_ndarray(strip(x)).dtype)
    return reshape(take(x, np.arange(total) % n), shape)


@register(np.trim_zeros, note="a slice: the zeros' positions are taken from the values")
def trim_zeros(filt, trim="fb", axis=None):
    x = as_array(filt)
    v = as_ndarray(strip(x))
    if axis is not None or v.ndim != 1:
        return getitem(x, tuple(_trim_slices(v, trim, axis)), False)
    return getitem(x, _trim_slices(v, trim, None)[0], False)


def _trim_slices(v, trim, axis):
    """The slices ``np.trim_zeros(v, trim, axis)`` keeps, from numpy's own result's extent."""
    nz = np.nonzero(v)
    axes = range(v.ndim) if axis is None else [normalize_axis_index(a, v.ndim)
                                              for a in np.atleast_1d(axis)]
    out = [slice(None)] * v.ndim
    for ax in axes:
        if nz[ax].size == 0:
            out[ax] = slice(0, 0)
            continue
        lo = int(nz[ax].min()) if "f" in trim.lower() else 0
        hi = int(nz[ax].max()) + 1 if "b" in trim.lower() else v.shape[ax]
        out[ax] = slice(lo, hi)
    return out


def _along_axis_index(indices, axis, shape):
    nd = len(shape)
    idx = []
    for i in range(nd):
        if i == axis:
            idx.append(indices)
        else:
            sh = [1] * nd
            sh[i] = shape[i]
            idx.append(np.arange(shape[i]).reshape(sh))
    return tuple(idx)


@register(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    x = as_array(arr)
    if axis is None:
        x = ravel(x)
        axis = 0
    ax = normalize_axis_index(axis, ndim(x))
    return getitem(x, _along_axis_index(as_ndarray(indices), ax, shape_of(x)), False)


@register(np.sort, note="follows the stable sorting permutation")
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        unsupported("sort", "order=")
    x = as_array(a)
    if axis is None:
        x = ravel(x)
        axis = -1
    if ndim(x) == 0:
        raise getattr(np, "exceptions", np).AxisError("axis -1 is out of bounds for array of dimension 0")
    ax = normalize_axis_index(axis, ndim(x))
    perm = np.argsort(as_ndarray(strip(x)), axis=ax, kind="stable")
    return getitem(x, _along_axis_index(perm, ax, shape_of(x)), True)


@register(np.diff)
def diff(a, n=1, axis=-1, prepend=NoValue, append=NoValue):
    x = as_array(a)
    ax = normalize_axis_index(axis, ndim(x))
    parts = []
    if prepend is not NoValue:
        p = as_array(prepend)
        if ndim(p) == 0:
            s = list(shape_of(x))
            s[ax] = 1
            p = broadcast_to(p, tuple(s))
        parts.append(p)
    parts.append(x)
    if append is not NoValue:
        p = as_array(append)
        if ndim(p) == 0:
            s = list(shape_of(x))
            s[ax] = 1
            p = broadcast_to(p, tuple(s))
        parts.append(p)
    if len(parts) > 1:
        x = concatenate(parts, axis=ax)
    pre = (slice(None),) * ax
    for _ in range(n):
        x = getitem(x, pre + (slice(1, None),), True) - getitem(x, pre + (slice(None, -1),), True)
    return x


#


@register(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kw):
    s = shape_of(a) if shape is None else shape
    if is_dual(fill_value):
        return broadcast_to(as_array(fill_value), s) * 1.0
    return np.full(s, fill_value, dtype=dtype or dtype_of(a))


#


# ============================================================================================
# Rearrangements built from the above: rot90, rollaxis, meshgrid, insert, delete, block,
# partition


@register(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    """numpy's own composition of flips and a transpose."""
    x = as_array(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    nd = ndim(x)
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == nd:
        raise ValueError("Axes must be different.")
    if axes[0] >= nd or axes[0] < -nd or axes[1] >= nd or axes[1] < -nd:
        raise ValueError("Axes={} out of range for array of ndim={}.".format(axes, nd))
    k %= 4
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, axes[0]), axes[1])
    perm = list(range(nd))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return transpose(flip(x, axes[1]), perm)
    return flip(transpose(x, perm), axes[1])


@register(np.rollaxis)
def rollaxis(a, axis, start=0):
    x = as_array(a)
    n = ndim(x)
    axis = normalize_axis_index(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise getattr(np, "exceptions", np).AxisError(
            "'start' arg requires %d <= start < %d, but %d was passed in" % (-n, n + 1, start))
    if axis < start:
        start -= 1
    if axis == start:
        return x
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return transpose(x, axes)


@register(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    nd = len(xi)
    s0 = (1,) * nd
    out = [reshape(as_array(x), s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and nd > 1:
        out[0] = reshape(out[0], (1, -1) + s0[2:])
        out[1] = reshape(out[1], (-1, 1) + s0[2:])
    if not sparse:
        out = list(broadcast_arrays(*out))
    return tuple(out)


def _gather_flat(x, src):
    """The entries of ``x`` (flattened) at the integer array ``src``."""
    return getitem(ravel(x), as_ndarray(src), False)


@register(np.delete)
def delete(arr, obj, axis=None):
    x = as_array(arr)
    if axis is None:
        x = ravel(x)
        axis = 0
    ax = normalize_axis_index(axis, ndim(x))
    n = shape_of(x)[ax]
    keep = np.delete(np.arange(n), as_ndarray(strip(obj)) if is_dual(obj) else obj)
    return getitem(x, (slice(None),) * ax + (keep,), True)


@register(np.insert)
def insert(arr, obj, values, axis=None):
    """numpy's insert applied to the positions of the entries: it says which entry of ``arr``
    or of ``values`` lands where, and the result gathers them."""
    x = as_array(arr)
    v = as_array(values)
    xs, vs = shape_of(x), shape_of(v)
    pos = np.arange(int(np.prod(xs, dtype=np.int64))).reshape(xs)
    vpos = -1 - np.arange(int(np.prod(vs, dtype=np.int64))).reshape(vs)
    where_ = np.insert(pos, obj, vpos, axis=axis)
    fromx = where_ >= 0
    gx = _gather_flat(x, np.where(fromx, where_, 0))
    gv = _gather_flat(v, np.where(fromx, 0, -1 - where_)) if np.size(vpos) else 0.0
    return where(fromx, gx, gv)


@register(np.block)
def block(arrays):
    """numpy's rules: a nested list of depth d joins its innermost lists along the last axis,
    the next along the one before, ...; every array is first made at least as many-dimensional
    as the result."""

    def depth(a):
        if type(a) is tuple:
            raise TypeError("arrays is a tuple. Only lists can be used to arrange blocks, and "
                            "np.block does not allow implicit conversion from tuple to ndarray.")
        if type(a) is list:
            if not a:
                raise ValueError("List at arrays cannot be empty")
            ds = {depth(e) for e in a}
            if len(ds) != 1:
                raise ValueError("List depths are mismatched.")
            return 1 + ds.pop()
        return 0

    d = depth(arrays)

    def leaves(a):
        return [y for e in a for y in leaves(e)] if type(a) is list else [a]

    nd = max([d] + [ndim(as_array(e)) for e in leaves(arrays)])

    def build(a, level):
        if type(a) is list:
            return concatenate([build(e, level + 1) for e in a], axis=-(d - level))
        x = as_array(a)
        return reshape(x, (1,) * (nd - ndim(x)) + shape_of(x))

    return build(arrays, 0)


@register(np.partition, note="follows the permutation to numpy's partitioned order")
def partition(a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        unsupported("partition", "order=")
    x = as_array(a)
    if axis is None:
        x = ravel(x)
        axis = -1
    ax = normalize_axis_index(axis, ndim(x))
    xv = as_ndarray(strip(x))
    out = np.partition(xv, kth, axis=ax, kind=kind)
    # where numpy put each value: the stable order of the output matches that of the input
    src = np.argsort(xv, axis=ax, kind="stable")
    dst = np.argsort(out, axis=ax, kind="stable")
    idx = np.empty_like(src)
    np.put_along_axis(idx, dst, src, axis=ax)
    return getitem(x, _along_axis_index(idx, ax, shape_of(x)), True)


# ============================================================================================
# linspace (dual endpoints) and gradient: numpy's own arithmetic


@register(np.linspace, note="numpy's arithmetic: linear in start and stop")
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    num = int(as_ndarray(num).__index__()) if not isinstance(num, int) else num
    if num < 0:
        raise ValueError("Number of samples, %s, must be non-negative." % num)
    div = (num - 1) if endpoint else num
    a = as_array(start)
    b = as_array(stop)
    dt = np.result_type(dtype_of(a), dtype_of(b), float)
    if dtype is not None:
        float_dtype("linspace", dtype)
    delta = b - a
    y = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * ndim(delta))
    if div > 0:
        step = delta / div
        if np.any(as_ndarray(strip(step)) == 0):
            y = (y / div) * delta
        else:
            y = y * step
    else:
        step = np.nan
        y = y * delta
    y = y + a
    if endpoint and num > 1:
        y = update(y, b, (-1, Ellipsis), "set", True)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        y = cast(y, dtype)
    return (y, step) if retstep else y


@register(np.gradient, note="linear in f; the spacings are constants")
def gradient(f, *varargs, axis=None, edge_order=1):
    x = as_array(f)
    for v in varargs:
        if is_dual(v) or isinstance(v, (list, tuple)) and has_dual(v):
            raise TypeError("numpy.gradient: a spacing is a dual number; deltaad differentiates "
                            "gradient in f only (pass deltaad.value(...))")
    n_dims = ndim(x)
    axes = tuple(range(n_dims)) if axis is None else normalize_axis_tuple(axis, n_dims)
    n = len(varargs)
    if n == 0:
        dx = [1.0] * len(axes)
    elif n == 1 and np.ndim(varargs[0]) == 0:
        dx = list(varargs) * len(axes)
    elif n == len(axes):
        dx = list(varargs)
        for i, dist in enumerate(dx):
            dist = np.asanyarray(dist)
            if dist.ndim == 0:
                continue
            if dist.ndim != 1:
                raise ValueError("distances must be either scalars or 1d")
            if len(dist) != shape_of(x)[axes[i]]:
                raise ValueError("when 1d, distances must match the length of the "
                                 "corresponding dimension")
            if np.issubdtype(dist.dtype, np.integer):
                dist = dist.astype(np.float64)
            diffx = np.diff(dist)
            if (diffx == diffx[0]).all():
                diffx = diffx[0]
            dx[i] = diffx
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    if dtype_of(x).kind != "f":
        x = cast(x, np.float64)
    outs = []
    for ax, h in zip(axes, dx):
        if shape_of(x)[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        pre = (slice(None),) * ax

        def at(lo, hi):
            return getitem(x, pre + (slice(lo, hi),), True)

        uniform = np.ndim(h) == 0
        shape = [1] * n_dims
        shape[ax] = -1
        if uniform:
            mid = (at(2, None) - at(None, -2)) / (2.0 * h)
        else:
            dx1, dx2 = h[0:-1], h[1:]
            ca = (-(dx2) / (dx1 * (dx1 + dx2))).reshape(shape)
            cb = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
            cc = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
            mid = ca * at(None, -2) + cb * at(1, -1) + cc * at(2, None)
        last = shape_of(x)[ax]
        if edge_order == 1:
            first = (at(1, 2) - at(0, 1)) / (h if uniform else h[0])
            end = (at(last - 1, last) - at(last - 2, last - 1)) / (h if uniform else h[-1])
        else:
            if uniform:
                a0, b0, c0 = -1.5 / h, 2. / h, -0.5 / h
                a1, b1, c1 = 0.5 / h, -2. / h, 1.5 / h
            else:
                d1, d2 = h[0], h[1]
                a0 = -(2. * d1 + d2) / (d1 * (d1 + d2))
                b0 = (d1 + d2) / (d1 * d2)
                c0 = - d1 / (d2 * (d1 + d2))
                d1, d2 = h[-2], h[-1]
                a1 = (d2) / (d1 * (d1 + d2))
                b1 = - (d2 + d1) / (d1 * d2)
                c1 = (2. * d2 + d1) / (d2 * (d1 + d2))
            first = a0 * at(0, 1) + b0 * at(1, 2) + c0 * at(2, 3)
            end = a1 * at(last - 3, last - 2) + b1 * at(last - 2, last - 1) + c1 * at(last - 1, last)
        outs.append(concatenate([first, mid, end], axis=ax) if last > 2 else
                    concatenate([first, end], axis=ax))
    return outs[0] if len(axes) == 1 else tuple(outs)


@register(np.diagflat)
def diagflat(v, k=0):
    return diag(ravel(v), k)


@register(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    x = ravel(ary)
    parts = []
    if to_begin is not None:
        parts.append(ravel(to_begin))
    parts.append(getitem(x, (slice(1, None),), True) - getitem(x, (slice(None, -1),), True))
    if to_end is not None:
        parts.append(ravel(to_end))
    return concatenate(parts) if len(parts) > 1 else parts[0]
