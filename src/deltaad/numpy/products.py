"""Products: ``matmul`` and what is built on it (``dot``, ``inner``, ``outer``, ``vdot``,
``tensordot``, ``vecdot``), ``einsum``, whose cotangents are einsums themselves, and the other
bilinear maps: ``convolve``, ``correlate``, ``kron``, ``cross``, ``polyval`` (values numpy's: the
convolutions are primitives whose ``impl`` is numpy's, the others repeat numpy's arithmetic)."""

import string

from deltaad._plainnumpy import np

from . import registry
from .args import (
    as_array, cast, float_dtype, ndim, no_out, np_fn, normalize_axis_index, swap,
)
from .array import Primitive, apply, getitem, operand_or_raise, reshape, shape_of, unbroadcast
from .define import numpy_valued, register
from .elementwise import MUL
from .reductions import sum_
from .shape import ravel, transpose


def _matmul_vjp(out, vals, on):
    a, b = vals
    sa = shape_of(a)
    sb = shape_of(b)
    oa, ob = on
    if not ob:
        a = None
    if not oa:
        b = None

    def rule(ct):
        if len(sa) == 1 and len(sb) == 1:
            return (ct * b if oa else None, ct * a if ob else None)
        sc = shape_of(ct)
        ct2 = ct
        if len(sa) == 1:
            ct2 = reshape(ct2, sc[:-1] + (1,) + sc[-1:])
        if len(sb) == 1:
            ct2 = reshape(ct2, shape_of(ct2) + (1,))
        ga = gb = None
        if oa:
            b2 = reshape(b, (sb[0], 1)) if len(sb) == 1 else b
            bt = swap(b2)
            if type(bt) is np.ndarray and bt.ndim > 2:
                # a stack of transposed matrices: numpy's matmul takes a C-ordered stack
                # about 1.6x faster, and the copy costs a fraction of the product's work
                bt = np.ascontiguousarray(bt)
            ga = np.matmul(ct2, bt)
            ga = reshape(unbroadcast(ga, (1,) + sa), sa) if len(sa) == 1 else unbroadcast(ga, sa)
        if ob:
            a2 = reshape(a, (1, sa[0])) if len(sa) == 1 else a
            gb = np.matmul(swap(a2), ct2)
            gb = reshape(unbroadcast(gb, sb + (1,)), sb) if len(sb) == 1 else unbroadcast(gb, sb)
        return ga, gb

    return rule


def _matmul_jvp(out, vals, tans):
    a, b = vals
    ta, tb = tans
    t = None
    if ta is not None:
        t = np.matmul(ta, b)
    if tb is not None:
        u = np.matmul(a, tb)
        t = u if t is None else t + u
    return t


MATMUL = Primitive("matmul", np.matmul, _matmul_vjp, _matmul_jvp)


def matmul(a, b):
    if ndim(a) == 0 or ndim(b) == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    return apply(MATMUL, (a, b))


registry.register_ufunc(np.matmul, matmul)


@register(np.dot, numpy_value=True)
def dot(a, b, out=None):
    no_out("dot", out)
    a = operand_or_raise(a)
    b = operand_or_raise(b)
    na, nb = ndim(a), ndim(b)
    if na == 0 or nb == 0:
        return apply(MUL, (a, b))
    if na <= 2 and nb <= 2:
        return apply(MATMUL, (a, b))
    return tensordot(a, b, axes=([-1], [0 if nb == 1 else -2]))


@register(np.inner)
def inner(a, b):
    a = operand_or_raise(a)
    b = operand_or_raise(b)
    if ndim(a) == 0 or ndim(b) == 0:
        return apply(MUL, (a, b))
    return tensordot(a, b, axes=([-1], [-1]))


@register(np.outer, np_fn("outer", np.linalg))
def outer(a, b, out=None):
    no_out("outer", out)
    a = ravel(a)
    b = ravel(b)
    return apply(MUL, (reshape(a, (-1, 1)), reshape(b, (1, -1))))


@register(np.vdot)
def vdot(a, b):
    return apply(MATMUL, (ravel(a), ravel(b)))


@register(np.tensordot, np_fn("tensordot", np.linalg))
def tensordot(a, b, axes=2):
    a = as_array(a)
    b = as_array(b)
    sa, sb = shape_of(a), shape_of(b)
    na, nb = len(sa), len(sb)
    if isinstance(axes, (int, np.integer)):
        axes = int(axes)
        axes_a = list(range(na - axes, na))
        axes_b = list(range(axes))
    else:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError("shape-mismatch for sum")
    axes_a = [normalize_axis_index(int(i), na) for i in axes_a]
    axes_b = [normalize_axis_index(int(i), nb) for i in axes_b]
    for i, j in zip(axes_a, axes_b):
        if sa[i] != sb[j]:
            raise ValueError("shape-mismatch for sum")
    free_a = [i for i in range(na) if i not in axes_a]
    free_b = [i for i in range(nb) if i not in axes_b]
    k = int(np.prod([sa[i] for i in axes_a], dtype=np.int64))
    m = int(np.prod([sa[i] for i in free_a], dtype=np.int64))
    n = int(np.prod([sb[i] for i in free_b], dtype=np.int64))
    at = reshape(transpose(a, free_a + axes_a), (m, k))
    bt = reshape(transpose(b, axes_b + free_b), (k, n))
    return reshape(apply(MATMUL, (at, bt)), tuple(sa[i] for i in free_a) + tuple(sb[i] for i in free_b))


def _vecdot(x1, x2, axis=-1):
    return sum_(apply(MUL, (x1, x2)), axis=axis)


if hasattr(np, "vecdot"):
    # the value numpy's: its dot kernel sums in another order than multiply-then-sum (on a
    # machine with AVX-512 the two differ in the last bit)
    registry.register_ufunc(np.vecdot, numpy_valued(np.vecdot, _vecdot))
    if hasattr(np.linalg, "vecdot"):
        register(np.linalg.vecdot, numpy_value=True)(
            lambda x1, x2, /, *, axis=-1: _vecdot(x1, x2, axis))


# ============================================================================================
# einsum


_LETTERS = string.ascii_letters


def _parse_einsum(operands):
    """``(input terms, output term, arrays)`` with every ellipsis spelled out as letters."""
    if isinstance(operands[0], str):
        subs = operands[0].replace(" ", "")
        arrays = list(operands[1:])
    else:  # interleaved form: a, [0, 1], b, [1, 2], [0, 2]
        ops = list(operands)
        arrays = ops[0::2]
        sublists = ops[1::2]
        out_list = None
        if len(arrays) > len(sublists):
            out_list = arrays.pop()  # the trailing output sublist

        def conv(lst):
            return "".join("..." if s is Ellipsis else _LETTERS[s] for s in lst)

        subs = ",".join(conv(s) for s in sublists)
        if out_list is not None:
            subs += "->" + conv(out_list)
    arrays = [operand_or_raise(a) for a in arrays]
    if "->" in subs:
        ins, out = subs.split("->")
        explicit = True
    else:
        ins, out = subs, None
        explicit = False
    terms = ins.split(",")
    if len(terms) != len(arrays):
        raise ValueError("einsum: %d operands for %d subscripts" % (len(arrays), len(terms)))
    used = set(subs) - set(".,->")
    free = [c for c in _LETTERS if c not in used]
    nell = 0
    for t, x in zip(terms, arrays):
        if "..." in t:
            nell = max(nell, ndim(x) - (len(t) - 3))
    ell = "".join(free[:nell])
    new_terms = []
    for t, x in zip(terms, arrays):
        if "..." in t:
            k = ndim(x) - (len(t) - 3)
            t = t.replace("...", ell[nell - k :] if k else "")
        new_terms.append(t)
    if not explicit:
        counts = {}
        for t in new_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    return new_terms, out, arrays


def _einsum_impl(*vals, spec, optimize):
    return np.einsum(spec, *vals, optimize=optimize)


def _einsum_grad(k, ct, terms, out, vals, optimize):
    """The cotangent of operand ``k``: an einsum of the output cotangent with the others."""
    tk = terms[k]
    sk = shape_of(vals[k])
    others = [(t, v) for i, (t, v) in enumerate(zip(terms, vals)) if i != k]
    present = set(out).union(*[set(t) for t, _ in others]) if others else set(out)
    used = set(out).union(*[set(t) for t in terms])
    free = [c for c in _LETTERS if c not in used]
    extra_terms = []
    extra_vals = []
    target = []
    seen = set()
    for c, n in zip(tk, sk):
        if c in seen:  # a repeated letter: the cotangent lives on a diagonal
            f = free.pop(0)
            extra_terms.append(c + f)
            extra_vals.append(np.eye(n))
            target.append(f)
            continue
        seen.add(c)
        target.append(c)
        if c not in present:
            extra_terms.append(c)
            extra_vals.append(np.ones(n))
            present.add(c)
    spec = ",".join([out] + [t for t, _ in others] + extra_terms) + "->" + "".join(target)
    g = np.einsum(spec, ct, *[v for _, v in others], *extra_vals, optimize=optimize)
    if shape_of(g) != sk:  # operand dimensions of size 1 that were broadcast
        axes = tuple(i for i, (a, b) in enumerate(zip(shape_of(g), sk)) if a != b)
        g = np.sum(g, axis=axes, keepdims=True)
    return g


def _einsum_vjp(out, vals, on, spec, optimize):
    ins, o = spec.split("->")
    terms = ins.split(",")

    if not isinstance(optimize, (bool, str)):
        optimize = True  # an explicit path fits the forward contraction only, not the gradients'

    def rule(ct):
        return tuple(_einsum_grad(k, ct, terms, o, vals, optimize) if use else None for k, use in enumerate(on))

    return rule


def _einsum_jvp(out, vals, tans, spec, optimize):
    t = None
    for k, tk in enumerate(tans):
        if tk is None:
            continue
        ops = list(vals)
        ops[k] = tk
        u = np.einsum(spec, *ops, optimize=optimize)
        t = u if t is None else t + u
    return t


EINSUM = Primitive("einsum", _einsum_impl, _einsum_vjp, _einsum_jvp)


@register(np.einsum)
def einsum(*operands, out=None, optimize=False, **kwargs):
    no_out("einsum", out)
    if kwargs.get("dtype") is not None:
        float_dtype("einsum", kwargs["dtype"])
    terms, o, arrays = _parse_einsum(operands)
    arrays = [as_array(a) for a in arrays]
    r = apply(EINSUM, arrays, {"spec": ",".join(terms) + "->" + o, "optimize": optimize})
    return cast(r, kwargs.get("dtype"))


#


# ============================================================================================
# convolve, correlate: bilinear primitives (numpy's values); a cotangent is the correlation
# of the output's cotangent, padded to the full length, with the other operand


def _conv_window(n, m, mode, correlate):
    """``(offset, length)`` of ``mode``'s output inside the full convolution (correlation)."""
    big, small = max(n, m), min(n, m)
    if mode == "full":
        return 0, n + m - 1
    if mode == "valid":
        return small - 1, big - small + 1
    if mode == "same":
        if correlate and n < m:
            return n - 1 - (n - 1) // 2, big
        return (small - 1) // 2, big
    raise ValueError("mode must be one of 'valid', 'same', or 'full' (got %r)" % (mode,))


def _conv_vjp(out, vals, on, mode, correlate):
    a, v = vals
    n, m = shape_of(a)[0], shape_of(v)[0]
    off, length = _conv_window(n, m, mode, correlate)
    total = n + m - 1

    def rule(ct):
        full = np.concatenate([np.zeros(off), ct, np.zeros(total - off - length)])
        kernel = v[::-1] if correlate else v
        ga = np.correlate(full, kernel, "valid") if on[0] else None
        gv = None
        if on[1]:
            gv = np.correlate(full, a, "valid")
            if correlate:
                gv = gv[::-1]
        return ga, gv

    return rule


def _conv_jvp(out, vals, tans, mode, correlate):
    f = np.correlate if correlate else np.convolve
    a, v = vals
    ta, tv = tans
    t = None
    if ta is not None:
        t = f(ta, v, mode)
    if tv is not None:
        u = f(a, tv, mode)
        t = u if t is None else t + u
    return t


CONVOLVE = Primitive("convolve", lambda a, v, mode, correlate: (
    np.correlate if correlate else np.convolve)(a, v, mode), _conv_vjp, _conv_jvp)


def _conv(a, v, mode, correlate):
    a = as_array(a)
    v = as_array(v)
    if ndim(a) == 0:
        a = reshape(a, (1,))
    if ndim(v) == 0:
        v = reshape(v, (1,))
    if ndim(a) != 1 or ndim(v) != 1:
        raise ValueError("object too deep for desired array")
    if shape_of(a)[0] == 0 or shape_of(v)[0] == 0:
        raise ValueError("%s cannot be empty" % ("a" if shape_of(a)[0] == 0 else "v"))
    return apply(CONVOLVE, (a, v), {"mode": mode, "correlate": correlate})


@register(np.convolve)
def convolve(a, v, mode="full"):
    return _conv(a, v, mode, False)


@register(np.correlate)
def correlate(a, v, mode="valid"):
    return _conv(a, v, mode, True)


# ============================================================================================
# polyval, kron, cross: numpy's own arithmetic on duals


@register(np.polyval)
def polyval(p, x):
    """Horner's scheme, as numpy: ``y = y * x + p[i]`` from ``y = 0``."""
    p = as_array(p)
    x = operand_or_raise(x)
    y = np.zeros(shape_of(x))
    for i in range(shape_of(p)[0] if ndim(p) else 1):
        y = y * x + (getitem(p, i, True) if ndim(p) else p)
    return y


@register(np.kron)
def kron(a, b):
    """numpy's kron: the outer product with the axes interleaved, reshaped."""
    a = as_array(a)
    b = as_array(b)
    nda, ndb = ndim(a), ndim(b)
    if nda < ndb:
        a = reshape(a, (1,) * (ndb - nda) + shape_of(a))
        nda = ndb
    nd = max(nda, ndb)
    if ndim(a) == 0 or ndb == 0:
        return apply(MUL, (a, b))
    as_ = shape_of(a)
    bs = (1,) * max(0, nda - ndb) + shape_of(b)
    b = reshape(b, bs)
    a2 = reshape(a, sum(((k, 1) for k in as_), ()))
    b2 = reshape(b, sum(((1, k) for k in bs), ()))
    r = apply(MUL, (a2, b2))
    return reshape(r, tuple(i * j for i, j in zip(as_, bs)))


if hasattr(np.linalg, "cross"):
    register(np.linalg.cross)(lambda x1, x2, /, *, axis=-1: cross(x1, x2, axis=axis))


@register(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """numpy's products and differences (``a1 b2 - a2 b1``, ...)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a = as_array(a)
    b = as_array(b)
    a = np.moveaxis(a, normalize_axis_index(axisa, ndim(a)), -1)
    b = np.moveaxis(b, normalize_axis_index(axisb, ndim(b)), -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")

    def c(x, i):
        return getitem(x, (Ellipsis, i), True)

    a0, a1 = c(a, 0), c(a, 1)
    b0, b1 = c(b, 0), c(b, 1)
    if na == 2 and nb == 2:
        return a0 * b1 - a1 * b0
    if na == 2:
        b2 = c(b, 2)
        cp = [a1 * b2, -(a0 * b2), a0 * b1 - a1 * b0]
    elif nb == 2:
        a2 = c(a, 2)
        cp = [-(a2 * b1), a2 * b0, a0 * b1 - a1 * b0]
    else:
        a2, b2 = c(a, 2), c(b, 2)
        cp = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0]
    shape = np.broadcast_shapes(*[shape_of(t) for t in cp])
    r = np.stack([np.broadcast_to(t, shape) for t in cp], axis=-1)
    return np.moveaxis(r, -1, normalize_axis_index(axisc, ndim(r)))
