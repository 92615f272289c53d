"""Differentiating does not change the value: under ``vjp``, ``jvp`` and nested, every numpy
function deltaad dispatches gives exactly -- bit for bit -- what the plain program computes.

The programs are those of the rule families' tests (tests/numpy/test_<family>.py, each
function with hypothesis-drawn shapes, axes and values), and a call of every registered rule
on random arguments of a few shapes: a rule added without a call here fails too.
"""

import importlib.util
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import deltaad as d
from deltaad import elementwise as table
from deltaad.numpy import registry
from helpers import tree_bits
from numpy_checks import random_like, seeds

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILIES = ("elementwise", "shape", "reductions", "products", "linalg")


def _family(name):
    spec = importlib.util.spec_from_file_location("_values_" + name, os.path.join(HERE, "test_%s.py" % name))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.family


OPS = [(fam, name, strat) for fam in FAMILIES for name, strat in _family(fam).ops.items()]
EXAMPLES = settings(max_examples=max(4, settings().max_examples // 10), deadline=None,
                    suppress_health_check=list(HealthCheck))


def _plain_values(out):
    """Bits of every leaf; numpy scalars, 0-d arrays and floats alike (as numpy arrays)."""
    return tree_bits(out)


def _like(rng, a):
    if isinstance(a, (list, tuple)):
        return type(a)(_like(rng, e) for e in a)
    return random_like(rng, a)


def _values_under_differentiation(f, args, rng):
    """The output of ``f`` at ``args`` under reverse mode, forward mode, and forward over
    reverse (values two levels down)."""
    tangents = tuple(_like(rng, a) for a in args)
    rev = d.vjp(f, *args)[0]
    fwd = d.jvp(f, args, tangents)[0]
    nested = d.jvp(lambda *a: d.vjp(f, *a)[0], args, tangents)[0]
    return {"vjp": rev, "jvp": fwd, "jvp of vjp": nested}


@pytest.mark.parametrize("fam,name", [(f, n) for f, n, _s in OPS])
def test_value_is_the_plain_programs(fam, name):
    strat = dict(((f, n), s) for f, n, s in OPS)[fam, name]

    @EXAMPLES
    @given(strat(), seeds)
    def run(fa, seed):
        f, args = fa
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plain = _plain_values(f(*args))
            got = _values_under_differentiation(f, args, np.random.default_rng(seed))
        for how, out in got.items():
            assert _plain_values(out) == plain, "%s changes the value of %s" % (how, name)

    run()


# --------------------------------------------------------------------------------------------
# Every registered rule, called on random arguments of a few shapes (deterministic: a seeded
# generator), plain and under differentiation


def _in(rng, interval, shape):
    """Values inside ``interval`` (an elementwise table entry's domain), clear of its ends."""
    lo = max(interval.lo, -3.0)
    hi = min(interval.hi, 3.0)
    pad = 0.05 * (hi - lo)
    return rng.uniform(lo + pad, hi - pad, shape)


def _calls(rng):
    """``{rule key: [(f, args), ...]}`` for every rule of the registry worth checking."""
    u = lambda *s: rng.uniform(-2.0, 2.0, s)  # noqa: E731
    pos = lambda *s: rng.uniform(0.2, 2.0, s)  # noqa: E731
    wc = lambda n, *b: rng.uniform(-0.5, 0.5, b + (n, n)) + (n + 1) * np.eye(n)  # noqa: E731
    spd = lambda n: (lambda m: m @ m.T + n * np.eye(n))(rng.standard_normal((n, n)))  # noqa: E731
    C = {}

    def add(key, *cases):
        C.setdefault(key, []).extend(cases)

    for e in table.TABLE:
        for uf in e.ufuncs:
            if isinstance(uf, str):  # scipy.special's: checked when scipy is installed
                uf = _scipy(uf)
                if uf is None:
                    continue
            if e.orders:  # each order (all of them, if several) in the order's domain
                picks = (0, 1, 2) if e.order.integer else (0.5, 1.0, 2.5)
                for n in [n for n in picks if n in e.order.domain]:
                    ns = (n,) * e.orders
                    add(uf, (lambda x, uf=uf, ns=ns: uf(*ns, x), [_in(rng, e.domain, (3, 2))]),
                        (lambda x, uf=uf, ns=ns: uf(*ns, x), [float(_in(rng, e.domain, ()))]))
            elif e.arity == 1:
                add(uf, (uf, [_in(rng, e.domain, (3, 2))]), (uf, [float(_in(rng, e.domain, ()))]))
            else:
                add(uf, (uf, [u(3, 1), u(2)]), (uf, [float(u()), float(u())]))
    for uf in (np.add, np.subtract, np.multiply, np.maximum, np.minimum, np.fmax, np.fmin):
        add(uf, (uf, [u(2, 3), u(3)]), (uf, [float(u()), float(u())]))
    for uf in (np.divide, np.remainder, np.fmod, np.divmod):
        add(uf, (uf, [u(2, 3), pos(3)]), (uf, [float(u()), float(pos())]))
    for uf in (np.power, np.float_power):
        add(uf, (uf, [pos(2, 3), u(3)]), (uf, [float(pos()), float(u())]))
    for uf in (np.negative, np.positive, np.conjugate):
        add(uf, (uf, [u(3)]), (uf, [float(u())]))
    add(np.matmul, (np.matmul, [u(2, 3), u(3, 4)]), (np.matmul, [u(2, 2, 3), u(3)]))
    add(np.linalg.matmul, (np.linalg.matmul, [u(2, 3), u(3)]))
    if hasattr(np, "vecdot"):
        add(np.vecdot, (np.vecdot, [u(2, 3), u(3)]))
        add(np.linalg.vecdot, (np.linalg.vecdot, [u(2, 3), u(3)]))
    # ufunc methods
    for uf in (np.add, np.multiply, np.maximum, np.minimum, np.logaddexp):
        add((uf, "reduce"), (lambda x, uf=uf: uf.reduce(x, axis=1), [u(3, 4)]),
            (lambda x, uf=uf: uf.reduce(x), [u(5)]))
    for uf in (np.add, np.multiply):
        add((uf, "accumulate"), (lambda x, uf=uf: uf.accumulate(x, axis=0), [u(3, 4)]))
    for uf in (np.add, np.subtract, np.multiply, np.maximum, np.minimum, np.arctan2, np.hypot,
               np.logaddexp, np.power):
        add((uf, "outer"), (uf.outer, [pos(3), u(2)]))
    add((np.divide, "outer"), (np.divide.outer, [u(3), pos(2)]))
    # reductions
    for f in (np.sum, np.mean, np.prod, np.max, np.amax, np.min, np.amin, np.ptp, np.var, np.std,
              np.cumsum, np.cumprod):
        add(f, (lambda x, f=f: f(x, axis=0), [u(4, 3)]), (f, [u(7)]))
    for name in ("cumulative_sum", "cumulative_prod"):
        f = getattr(np, name, None)
        if f is not None:
            add(f, (lambda x, f=f: f(x, axis=1), [u(2, 3)]))
    add(np.trace, (np.trace, [u(3, 3)]), (lambda x: np.trace(x, 1), [u(3, 4)]))
    add(np.linalg.trace, (np.linalg.trace, [u(2, 3, 3)]))
    add(np.diff, (np.diff, [u(5)]), (lambda x: np.diff(x, 2, axis=0), [u(4, 2)]))
    # products
    add(np.dot, (np.dot, [u(3), u(3)]), (np.dot, [u(2, 3), u(3, 2)]), (np.dot, [u(2, 2, 3), u(4, 3, 2)]),
        (np.dot, [float(u()), u(3)]))
    add(np.inner, (np.inner, [u(2, 3), u(4, 3)]), (np.inner, [u(3), u(3)]))
    add(np.outer, (np.outer, [u(3), u(2, 2)]))
    add(np.linalg.outer, (np.linalg.outer, [u(3), u(2)]))
    add(np.vdot, (np.vdot, [u(2, 3), u(3, 2)]))
    add(np.tensordot, (np.tensordot, [u(2, 3, 4), u(3, 4, 2)]), (lambda a, b: np.tensordot(a, b, ([0], [1])), [u(3, 2), u(2, 3)]))
    add(np.linalg.tensordot, (np.linalg.tensordot, [u(2, 3), u(2, 3)]))
    add(np.einsum, (lambda a, b: np.einsum("ij,jk->ik", a, b), [u(2, 3), u(3, 4)]),
        (lambda a: np.einsum("ii", a), [u(3, 3)]), (lambda a, b: np.einsum("...i,i", a, b, optimize=True), [u(2, 3), u(3)]))
    # linear algebra
    add(np.linalg.solve, (np.linalg.solve, [wc(3), u(3)]), (np.linalg.solve, [wc(2, 2), u(2, 2, 1)]))
    add(np.linalg.inv, (np.linalg.inv, [wc(3)]))
    add(np.linalg.det, (np.linalg.det, [wc(3)]), (np.linalg.det, [wc(2, 3)]))
    add(np.linalg.slogdet, (np.linalg.slogdet, [-wc(3)]))
    add(np.linalg.cholesky, (np.linalg.cholesky, [spd(3)]), (lambda a: np.linalg.cholesky(a, upper=True), [spd(4)]))
    add(np.linalg.norm, (np.linalg.norm, [u(4, 3)]), (np.linalg.norm, [u(5)]), (lambda x: np.linalg.norm(x, axis=1), [u(3, 4)]),
        (lambda x: np.linalg.norm(x, 3), [u(5)]), (lambda x: np.linalg.norm(x, "fro"), [u(3, 3)]),
        (lambda x: np.linalg.norm(x, 1), [u(3, 3)]), (lambda x: np.linalg.norm(x, np.inf), [u(4)]))
    add(np.linalg.vector_norm, (np.linalg.vector_norm, [u(3, 4)]), (lambda x: np.linalg.vector_norm(x, ord=1, axis=0), [u(3, 4)]))
    add(np.linalg.matrix_norm, (np.linalg.matrix_norm, [u(2, 3, 3)]))
    add(np.linalg.multi_dot, (np.linalg.multi_dot, [[u(3, 4), u(4, 2), u(2, 5)]]))
    # shapes, selection and assembly
    add(np.reshape, (lambda x: np.reshape(x, (3, 2)), [u(6)]))
    add(np.ravel, (np.ravel, [u(2, 3)]))
    add(np.transpose, (np.transpose, [u(2, 3)]))
    add(np.swapaxes, (lambda x: np.swapaxes(x, 0, 2), [u(2, 3, 1)]))
    add(np.moveaxis, (lambda x: np.moveaxis(x, 0, -1), [u(2, 3, 4)]))
    add(np.matrix_transpose, (np.matrix_transpose, [u(2, 3, 4)]))
    add(np.linalg.matrix_transpose, (np.linalg.matrix_transpose, [u(3, 4)]))
    add(np.squeeze, (np.squeeze, [u(1, 3, 1)]))
    add(np.expand_dims, (lambda x: np.expand_dims(x, 1), [u(3)]))
    for f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
        add(f, (f, [u(3)]), (f, [float(u())]))
    add(np.broadcast_to, (lambda x: np.broadcast_to(x, (2, 3)), [u(3)]))
    add(np.broadcast_arrays, (lambda a, b: np.broadcast_arrays(a, b), [u(3), u(2, 1)]))
    for f in (np.concatenate, np.stack, np.vstack, np.hstack, np.dstack, np.column_stack):
        add(f, (lambda a, b, f=f: f([a, b]), [u(2, 3), u(2, 3)]))
    if hasattr(np, "row_stack"):
        add(np.row_stack, (lambda a, b: np.row_stack([a, b]), [u(3), u(3)]))
    add(np.append, (np.append, [u(3), u(2)]))
    for f, k in ((np.split, 2), (np.array_split, 3), (np.hsplit, 2), (np.vsplit, 2), (np.dsplit, 2)):
        add(f, (lambda x, f=f, k=k: f(x, k), [u(4, 4, 2)]))
    if hasattr(np, "unstack"):
        add(np.unstack, (np.unstack, [u(3, 2)]))
    add(np.flip, (np.flip, [u(2, 3)]))
    add(np.fliplr, (np.fliplr, [u(2, 3)]))
    add(np.flipud, (np.flipud, [u(2, 3)]))
    add(np.roll, (lambda x: np.roll(x, 2, axis=1), [u(2, 4)]))
    add(np.tile, (lambda x: np.tile(x, (2, 1)), [u(2, 3)]))
    add(np.repeat, (lambda x: np.repeat(x, 2, axis=0), [u(2, 3)]))
    add(np.pad, (lambda x: np.pad(x, 1), [u(2, 3)]), (lambda x: np.pad(x, (1, 2), mode="edge"), [u(3)]))
    add(np.diag, (np.diag, [u(3)]), (np.diag, [u(3, 3)]))
    add(np.diagonal, (np.diagonal, [u(3, 4)]))
    add(np.linalg.diagonal, (np.linalg.diagonal, [u(2, 3, 3)]))
    add(np.tril, (np.tril, [u(3, 3)]))
    add(np.triu, (lambda x: np.triu(x, 1), [u(3, 4)]))
    add(np.take, (lambda x: np.take(x, [0, 2, 2]), [u(4)]))
    add(np.compress, (lambda x: np.compress([1, 0, 1], x, axis=1), [u(2, 3)]))
    add(np.extract, (lambda x: np.extract(x > 0, x), [u(2, 3)]))
    add(np.choose, (lambda x: np.choose([[0, 1, 1], [1, 0, 2]], [x, x * x, x + 1]), [u(2, 3)]))
    add(np.resize, (lambda x: np.resize(x, (3, 4)), [u(2, 3)]))
    add(np.trim_zeros, (lambda x: np.trim_zeros(x * (np.arange(5) % 4 != 0)), [u(5)]))
    add(np.unwrap, (lambda x: np.unwrap(x * 5.0), [u(6)]))
    add(np.take_along_axis, (lambda x: np.take_along_axis(x, np.array([[0], [1]]), 1), [u(2, 3)]))
    add(np.sort, (lambda x: np.sort(x, axis=0), [u(4, 3)]))
    add(np.where, (lambda a, b: np.where(a > 0, a, b), [u(3, 2), u(2)]))
    add(np.select, (lambda a, b: np.select([a > 0, b > 0], [a, b], 0.5), [u(4), u(4)]))
    add(np.clip, (lambda x: np.clip(x, -1.0, 1.0), [u(5)]), (lambda x, lo: np.clip(x, lo, 1.5), [u(5), u(5)]))
    add(np.astype, (lambda x: np.astype(x, np.float32), [u(3)]))
    add(np.copy, (np.copy, [u(3)]))
    add(np.real, (np.real, [u(3)]))
    add(np.imag, (np.imag, [u(3)]))
    add(np.full_like, (lambda x: np.full_like(x, 2.0) * x, [u(3)]))
    # functions that are not ufuncs, added with the table's extensions
    add(np.sinc, (np.sinc, [u(3, 2)]), (np.sinc, [float(u())]))
    add(np.modf, (np.modf, [u(4)]), (np.modf, [float(u())]))
    add(np.frexp, (lambda x: np.frexp(x)[0], [u(4)]))
    add(np.ldexp, (lambda x: np.ldexp(x, np.array([1, -2, 3, 0])), [u(4)]))
    add(np.interp, (lambda x, fp: np.interp(x, np.linspace(-2, 2, 5), fp), [u(4), u(5)]))
    add(np.nan_to_num, (np.nan_to_num, [np.where(u(5) > 1.5, np.nan, u(5))]))
    add(np.piecewise, (lambda x: np.piecewise(x, [x < 0, x >= 0], [lambda v: v * v, lambda v: np.sin(v)]), [u(5)]))
    # reductions that ignore nans, averages and order statistics
    withnan = lambda *s: np.where(rng.uniform(size=s) < 0.2, np.nan, u(*s))  # noqa: E731
    for f in (np.nansum, np.nanmean, np.nanmax, np.nanmin, np.nanprod, np.nanvar, np.nanstd,
              np.nanmedian, np.nancumsum, np.nancumprod):
        add(f, (lambda x, f=f: f(x, axis=0), [withnan(4, 3)]), (f, [withnan(6)]))
    for f in (np.nanquantile, np.quantile):
        add(f, (lambda x, f=f: f(x, [0.25, 0.6], axis=1), [withnan(3, 5) if f is np.nanquantile else u(3, 5)]),
            (lambda x, f=f: f(x, 0.3, method="nearest"), [u(7)]))
    for f in (np.nanpercentile, np.percentile):
        add(f, (lambda x, f=f: f(x, 40.0, axis=0), [u(5, 2)]))
    add(np.median, (np.median, [u(6)]), (lambda x: np.median(x, axis=1), [u(3, 4)]))
    add(np.average, (lambda x, w: np.average(x, axis=0, weights=w), [u(3, 2), pos(3)]),
        (np.average, [u(4)]))
    add(np.trapezoid, (np.trapezoid, [u(5)]), (lambda y, x: np.trapezoid(y, x), [u(4), np.sort(u(4))]))
    # shapes and products
    add(np.rot90, (np.rot90, [u(2, 3)]))
    add(np.rollaxis, (lambda x: np.rollaxis(x, 2), [u(2, 3, 4)]))
    add(np.meshgrid, (lambda a, b: np.meshgrid(a, b), [u(3), u(2)]))
    add(np.insert, (lambda x, v: np.insert(x, 1, v), [u(4), float(u())]))
    add(np.delete, (lambda x: np.delete(x, [0, 2]), [u(5)]))
    add(np.block, (lambda a, b: np.block([[a, b], [b, a]]), [u(2, 2), u(2, 2)]))
    add(np.partition, (lambda x: np.partition(x, 2), [u(6)]))
    add(np.linspace, (lambda a, b: np.linspace(a, b, 5), [float(u()), float(u())]))
    add(np.diagflat, (np.diagflat, [u(2, 2)]))
    add(np.ediff1d, (np.ediff1d, [u(5)]))
    add(np.gradient, (np.gradient, [u(6)]), (lambda x: np.gradient(x, axis=1), [u(3, 4)]))
    add(np.convolve, (np.convolve, [u(5), u(3)]))
    add(np.correlate, (lambda a, b: np.correlate(a, b, "full"), [u(5), u(3)]))
    add(np.polyval, (np.polyval, [u(4), u(5)]))
    add(np.kron, (np.kron, [u(2, 2), u(3, 2)]))
    add(np.cross, (np.cross, [u(4, 3), u(3)]))
    add(np.linalg.cross, (np.linalg.cross, [u(2, 3), u(2, 3)]))
    # decompositions (sign-free outputs: a composition's rounding is numpy's own here)
    add(np.linalg.svd, (lambda a: np.linalg.svd(a, compute_uv=False), [u(4, 3)]),
        (lambda a: np.linalg.svd(a)[1], [u(3, 3)]))
    add(np.linalg.svdvals, (np.linalg.svdvals, [u(3, 4)]))
    add(np.linalg.eigh, (lambda a: np.linalg.eigh(a)[0], [spd(3)]))
    add(np.linalg.eigvalsh, (np.linalg.eigvalsh, [spd(4)]))
    add(np.linalg.qr, (lambda a: np.abs(np.linalg.qr(a)[1]), [u(4, 3)]))
    add(np.linalg.pinv, (np.linalg.pinv, [u(3, 4)]))
    add(np.linalg.lstsq, (lambda a, b: np.linalg.lstsq(a, b)[0], [u(5, 3), u(5)]))
    add(np.linalg.cond, (np.linalg.cond, [wc(3)]))
    add(np.linalg.matrix_power, (lambda a: np.linalg.matrix_power(a, 3), [u(3, 3)]),
        (lambda a: np.linalg.matrix_power(a, -2), [wc(2)]))
    # numpy.fft (real inputs, complex outputs: their values too) and the general eigenproblem
    for name in ("fft", "ifft", "rfft", "hfft", "ihfft", "irfft", "fftshift", "ifftshift"):
        f = getattr(np.fft, name)
        kw = "axes" if name.endswith("shift") else "axis"
        add(f, (f, [u(6)]), (lambda x, f=f, kw=kw: f(x, **{kw: 0}), [u(4, 3)]))
    for name in ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "rfftn", "irfft2", "irfftn"):
        f = getattr(np.fft, name)
        add(f, (f, [u(3, 4)]), (lambda x, f=f: f(x, norm="ortho"), [u(2, 3, 4)]))
    add(np.linalg.eig, (lambda a: np.linalg.eig(a)[0], [wc(3)]),
        (lambda a: np.linalg.eig(a)[1], [u(3, 3)]))
    add(np.linalg.eigvals, (np.linalg.eigvals, [u(3, 3)]), (np.linalg.eigvals, [wc(2, 2)]))
    # complex matrices: the complex decompositions, and numpy's complex gradient, interp and
    # linspace (whose rounding differs from the real functions on the parts)
    cu = lambda *s: u(*s) + 1j * u(*s)  # noqa: E731
    cwc = lambda n: cu(n, n) + (n + 1) * np.eye(n)  # noqa: E731
    herm = lambda n: (lambda m: m @ m.conj().T + n * np.eye(n))(cu(n, n))  # noqa: E731
    add(np.linalg.svd, (lambda a: np.linalg.svd(a, compute_uv=False), [cu(4, 3)]),
        (lambda a: np.linalg.svd(a)[1], [cu(2, 3, 3)]))
    add(np.linalg.svdvals, (np.linalg.svdvals, [cu(3, 4)]))
    add(np.linalg.eigh, (lambda a: np.linalg.eigh(a, "U")[0], [herm(3)]))
    add(np.linalg.eigvalsh, (np.linalg.eigvalsh, [herm(4)]))
    add(np.linalg.qr, (lambda a: np.abs(np.linalg.qr(a)[1]), [cu(4, 3)]),
        (lambda a: np.linalg.qr(a, "r").real, [cu(2, 3)]))
    add(np.linalg.pinv, (np.linalg.pinv, [cu(3, 4)]))
    add(np.linalg.lstsq, (lambda a, b: np.linalg.lstsq(a, b)[0], [cu(5, 3), cu(5)]),
        (lambda a, b: np.linalg.lstsq(a, b)[1], [cu(5, 3), u(5, 2)]))
    add(np.linalg.slogdet, (np.linalg.slogdet, [cwc(3)]))
    add(np.linalg.norm, (lambda x: np.linalg.norm(x, 2), [cu(3, 4)]),
        (lambda x: np.linalg.norm(x, "nuc", axis=(0, 2)), [cu(3, 2, 4)]))
    add(np.linalg.matrix_norm, (lambda x: np.linalg.matrix_norm(x, ord=-2), [cu(2, 3, 3)]))
    add(np.linalg.cond, (np.linalg.cond, [cwc(3)]), (lambda a: np.linalg.cond(a, 1), [cwc(3)]))
    spacing = np.cumsum(pos(3))
    add(np.gradient, (np.gradient, [cu(6)]),
        (lambda f: np.gradient(f, spacing, axis=0), [cu(3, 4)]))
    add(np.interp, (lambda x, fp: np.interp(x, np.linspace(-2, 2, 5), fp), [u(4), cu(5)]))
    add(np.linspace, (lambda a, b: np.linspace(a, b, 5), [complex(cu()), complex(cu())]),
        (lambda a, b: np.linspace(a, b, 4, retstep=True), [cu(2), u(2)]))
    # numpy's library functions (deltaad.numpy.library)
    for f in (np.polyder, np.polyint, np.vander):
        add(f, (f, [u(4)]))
    for f in (np.polymul, np.polyadd, np.polysub):
        add(f, (f, [u(4), u(2)]))
    add(np.polyfit, (lambda x, y: np.polyfit(x, y, 2), [np.sort(u(6)) + np.arange(6), u(6)]),
        (lambda y, w: np.polyfit(np.arange(5.0), y, 1, w=w), [u(5, 2), pos(5)]))
    add(np.poly, (np.poly, [u(4)]), (np.poly, [cu(3)]), (np.poly, [wc(3)]))
    add(np.roots, (np.roots, [np.poly(np.array([-1.5, 0.3, 1.2])) * u()]), (np.roots, [cu(4)]))
    add(np.cov, (np.cov, [u(3, 5)]), (lambda m, w: np.cov(m, aweights=w), [u(2, 4), pos(4)]),
        (np.cov, [cu(2, 4)]))
    add(np.corrcoef, (np.corrcoef, [u(3, 5)]), (lambda x, y: np.corrcoef(x, y), [u(5), u(5)]))
    add(np.histogram, (lambda a, w: np.histogram(a, 4, weights=w), [u(7), pos(7)]),
        (lambda a: np.histogram(a, 3, density=True), [u(6)]))
    add(np.i0, (np.i0, [u(3, 2)]), (np.i0, [float(u())]))
    add(np.geomspace, (lambda a, b: np.geomspace(a, b, 5), [float(pos()), float(pos())]),
        (lambda a, b: np.geomspace(-a, -b, 4, endpoint=False), [pos(2), pos(2)]))
    add(np.logspace, (lambda a, b: np.logspace(a, b, 5), [float(u()), float(u())]),
        (lambda a, b: np.logspace(a, b, 3, base=2.0, axis=1), [u(2), u(2)]))
    add(np.linalg.tensorinv, (lambda a: np.linalg.tensorinv(a, 1), [wc(6).reshape(6, 2, 3)]))
    add(np.linalg.tensorsolve, (np.linalg.tensorsolve, [wc(6).reshape(6, 3, 2), u(6)]),
        (np.linalg.tensorsolve, [cwc(4).reshape(4, 2, 2), u(4)]))
    if hasattr(np, "matvec"):
        add(np.matvec, (np.matvec, [u(2, 3, 4), u(4)]))
        add(np.vecmat, (np.vecmat, [u(3), u(2, 3, 4)]))
    # scipy.special's functions that are not ufuncs
    for name in ("logsumexp", "softmax", "log_softmax"):
        f = _scipy("scipy.special." + name)
        if f is not None:
            add(f, (lambda x, f=f: f(x, axis=1), [u(3, 4)]), (f, [u(5)]))
    _scipy_calls(add, rng, u, pos, wc, spd)
    return C


def _scipy_calls(add, rng, u, pos, wc, spd):
    """scipy's Python functions with scipy-valued rules (scipy.linalg, scipy.fft,
    scipy.signal, scipy.special.multigammaln): checked when scipy is installed."""
    try:
        import scipy.fft as sf
        import scipy.linalg as sl
        import scipy.signal as ss
        import scipy.special as sp
    except ImportError:
        return
    add(sl.solve, (sl.solve, [wc(3), u(3)]), (lambda a, b: sl.solve(a, b, assume_a="pos"), [spd(3), u(3, 2)]))
    add(sl.solve_triangular, (lambda a, b: sl.solve_triangular(a, b, lower=True), [wc(3), u(3)]),
        (lambda a, b: sl.solve_triangular(a, b, trans=1, unit_diagonal=True), [wc(3), u(3, 2)]))
    add(sl.inv, (sl.inv, [wc(3)]))
    add(sl.det, (sl.det, [wc(3)]))
    add(sl.cholesky, (sl.cholesky, [spd(3)]), (lambda a: sl.cholesky(a, lower=True), [spd(2)]))
    add(sl.cho_factor, (lambda a: sl.cho_factor(a)[0], [spd(3)]))
    add(sl.cho_solve, (lambda c, b: sl.cho_solve((c, True), b), [np.linalg.cholesky(spd(3)), u(3)]))
    add(sl.lu_factor, (lambda a: sl.lu_factor(a)[0], [wc(3)]))
    add(sl.lu_solve, (lambda lu, b: sl.lu_solve((lu, np.array([2, 1, 2], dtype=np.int32)), b), [wc(3), u(3)]))
    add(sl.lu, (lambda a: sl.lu(a)[1:], [u(3, 3)]))
    add(sl.qr, (sl.qr, [u(4, 3)]), (lambda a: sl.qr(a, mode="economic"), [u(3, 3)]))
    add(sl.svd, (sl.svd, [u(3, 4)]), (lambda a: sl.svd(a, compute_uv=False), [u(3, 3)]))
    add(sl.eigh, (sl.eigh, [spd(3)]), (lambda a: sl.eigh(a, eigvals_only=True), [spd(3)]))
    add(sl.solve_sylvester, (sl.solve_sylvester, [wc(3), wc(3), u(3, 3)]))
    add(sl.sqrtm, (sl.sqrtm, [spd(3)]))
    add(sl.expm, (sl.expm, [u(3, 3)]))
    add(sl.logm, (sl.logm, [spd(3)]))
    add(sl.eigvalsh, (sl.eigvalsh, [spd(3)]))
    add(sl.svdvals, (sl.svdvals, [u(4, 3)]))
    add(sl.pinv, (sl.pinv, [u(4, 3)]))
    add(sl.solve_continuous_lyapunov, (sl.solve_continuous_lyapunov, [wc(3), u(3, 3)]))
    band = np.vstack([u(1, 4), u(1, 4) + 4.0, u(1, 4)])
    add(sl.solve_banded, (lambda ab, b: sl.solve_banded((1, 1), ab, b), [band, u(4)]))
    add(sl.solveh_banded, (lambda ab, b: sl.solveh_banded(ab, b, lower=True), [band[1:], u(4)]))
    for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftshift", "ifftshift"):
        f = getattr(sf, name)
        add(f, (f, [u(6)]))
    for name in ("fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"):
        f = getattr(sf, name)
        add(f, (f, [u(3, 4)]))
    for f in (ss.fftconvolve, ss.oaconvolve):
        add(f, (f, [u(7), u(3)]), (lambda a, b, f=f: f(a, b, "same"), [u(4, 3), u(2, 2)]))
    add(sp.multigammaln, (lambda a: sp.multigammaln(a, 3), [u(4) + 3.0]))
    b2, a2 = ss.butter(2, 0.3)
    add(ss.lfilter, (lambda x: ss.lfilter(b2, a2, x), [u(9)]),
        (lambda b, a, x: ss.lfilter(b, a, x), [b2, a2, u(9)]))
    sos = ss.butter(4, 0.3, output="sos")
    add(ss.sosfilt, (lambda x: ss.sosfilt(sos, x), [u(9)]))
    add(ss.savgol_filter, (lambda x: ss.savgol_filter(x, 5, 2), [u(11)]))
    add(ss.detrend, (ss.detrend, [u(11)]))
    add(ss.medfilt, (ss.medfilt, [u(9)]))
    for f in (ss.convolve2d, ss.correlate2d):
        add(f, (f, [u(4, 5), u(2, 3)]), (lambda a, b, f=f: f(a, b, "same"), [u(4, 5), u(3, 2)]))
    import scipy.spatial.distance as sd

    for metric in ("euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine",
                   "correlation", "seuclidean"):
        add(sd.cdist, (lambda a, b, m=metric: sd.cdist(a, b, m), [u(3, 2), u(4, 2)]))
        add(sd.pdist, (lambda a, m=metric: sd.pdist(a, m), [u(4, 3)]))
    add(sd.cdist, (lambda a, b: sd.cdist(a, b, "minkowski", p=3.0, w=np.array([0.5, 2.0])),
                   [u(3, 2), u(2, 2)]))
    add(sd.squareform, (lambda a: sd.squareform(sd.pdist(a)), [u(4, 2)]),
        (sd.squareform, [u(6)]))
    # scipy's private distribution ufuncs (scipy.stats calls them), in their differentiable
    # arguments; the binomial counts are plain
    su = sp._ufuncs
    p01 = lambda *s: rng.uniform(0.1, 0.9, s)  # noqa: E731
    k = np.array([0.0, 2.0, 3.0])
    add(su._beta_pdf, (su._beta_pdf, [p01(3), pos(3) + 1.0, pos(3) + 1.0]),
        (su._beta_pdf, [float(p01()), 2.5, 3.5]))
    add(su._beta_ppf, (lambda q: su._beta_ppf(q, 2.5, 3.5), [p01(3)]))
    for f in (su._binom_pmf, su._binom_cdf, su._binom_sf):
        add(f, (lambda q, f=f: f(k, 10.0, q), [p01(3)]), (lambda q, f=f: f(3.0, 10.0, q), [float(p01())]))
    for f in (su._nbinom_cdf, su._nbinom_sf):
        add(f, (lambda q, f=f: f(k, 5.0, q), [p01(3)]))
    add(su._nbinom_pmf, (lambda n, q: su._nbinom_pmf(k, n, q), [pos(3) + 1.0, p01(3)]))
    for f in (su._skewnorm_cdf, su._skewnorm_ppf, su._skewnorm_isf):
        add(f, (f, [p01(3), u(3), pos(3), u(3)]), (f, [float(p01()), 0.2, 1.3, 1.5]))
    for f in (su._cauchy_ppf, su._cauchy_isf):
        add(f, (f, [p01(3), u(3), pos(3)]))
    for f in (su._invgauss_ppf, su._invgauss_isf):
        add(f, (f, [p01(3), pos(3), pos(3)]))
    # numpy.place and numpy.putmask with a mask selecting nothing (a no-op on duals)
    none = np.zeros(3, dtype=bool)
    add(np.putmask, (lambda a: (np.putmask(a, none, 0.0), a)[1], [u(3)]))
    add(np.place, (lambda a: (np.place(a, none, [0.0]), a)[1], [u(3)]))


def _scipy(name):
    """``scipy.special.<name>`` (importing scipy, which registers deltaad's rules for it), or
    None without scipy (it is optional)."""
    try:
        from scipy import special
    except ImportError:
        return None
    return getattr(special, name.rsplit(".", 1)[1])


ROUNDS = 6  # argument draws per call (numpy's rounding differs from a composition's on some)
DRAWS = [_calls(np.random.default_rng(r)) for r in range(ROUNDS)]
CALLS = DRAWS[0]


def _key_name(k):
    if isinstance(k, tuple):
        return "%s.%s" % (registry.qualified_name(k[0]), k[1])
    return registry.qualified_name(k)


@pytest.mark.parametrize("key", list(CALLS), ids=_key_name)
def test_every_rule_keeps_the_value(key):
    rng = np.random.default_rng(1)
    calls = [c for draw in DRAWS for c in draw[key]]
    for f, args in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plain = _plain_values(f(*args))
            got = _values_under_differentiation(f, args, rng)
        for how, out in got.items():
            assert _plain_values(out) == plain, "%s changes the value of %s" % (how, _key_name(key))


def test_every_registered_rule_is_checked():
    """A rule added to the registry needs its calls above: the value of a new rule is checked
    like the others'. (Constant rules compute on plain values, refusing ones raise: nothing to
    check.)"""
    rules = set(registry.FUNCTIONS) | set(registry.UFUNCS) | set(registry.METHODS)
    missed = sorted(_key_name(k) for k in rules - set(CALLS)
                    if not getattr(registry.FUNCTIONS.get(k), "constant", False)
                    and not getattr(registry.FUNCTIONS.get(k), "refused", False))
    assert not missed, "rules with no calls in tests/numpy/test_values.py: %s" % ", ".join(missed)
