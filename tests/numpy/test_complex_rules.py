"""Complex rules (deltaad.numpy.complex_rules): every complex ufunc of numpy, Python's operators
on complex values, sums, products and the functions that move elements, each checked against
finite differences in the real and imaginary directions, forward and reverse, to second order,
with numpy's values to the bit."""

import cmath
import math
import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import deltaad as d
from deltaad.numpy import complex_array as C
from deltaad.numpy import complex_rules as R
from complex_checks import check, crandom, same_value
from helpers import scaled

seeds = st.integers(0, 2**31 - 1)


def small_shapes(max_dims=2):
    return hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=1, max_side=3)


# --------------------------------------------------------------------------------------------
# Every complex ufunc numpy defines has a rule or is declared constant


def _complex_ufuncs():
    us = {getattr(np, n) for n in dir(np) if isinstance(getattr(np, n), np.ufunc)}
    return sorted((u for u in us if any("D" in t.split("->")[0] for t in u.types)),
                  key=lambda u: u.__name__)


def test_every_complex_ufunc_has_a_rule_or_is_constant():
    missing = [u.__name__ for u in _complex_ufuncs()
               if u not in C.UFUNCS and u not in C.CONSTANT_UFUNCS]
    assert missing == []


# --------------------------------------------------------------------------------------------
# Holomorphic functions of the table


def _domain(name, rng, shape):
    z = crandom(rng, shape)
    if name in ("arcsin", "arccos", "arctanh", "arccosh", "arcsinh", "arctan", "log1p"):
        z = z * 0.5 + (0.2 + 0.3j)  # away from +-1, +-i and -1 (branch points)
    if name in ("tan", "tanh"):
        z = z * 0.5
    return z


@pytest.mark.parametrize("h", R.HOLOMORPHIC, ids=lambda h: h.name)
@given(seed=seeds, shape=small_shapes())
@scaled(0.2)
def test_holomorphic_ufunc(h, seed, shape):
    rng = np.random.default_rng(seed)
    z = np.asarray(_domain(h.name, rng, shape))
    check(h.ufunc, [z], seed, second=True)


@pytest.mark.parametrize("h", R.HOLOMORPHIC, ids=lambda h: h.name)
def test_holomorphic_derivative_is_the_complex_derivative(h):
    # f'(z) by the complex-step-free difference (f(z + e) - f(z - e)) / 2e along the real and
    # the imaginary axis (holomorphic: both give f'(z))
    z = _domain(h.name, np.random.default_rng(1), ())
    e = 1e-6
    ref_re = (h.ufunc(z + e) - h.ufunc(z - e)) / (2 * e)
    ref_im = (h.ufunc(z + 1j * e) - h.ufunc(z - 1j * e)) / (2j * e)
    got = d.grad(h.ufunc, holomorphic=True)(complex(z))
    assert abs(got - ref_re) < 1e-6 * max(1, abs(got))
    assert abs(got - ref_im) < 1e-6 * max(1, abs(got))
    got_fwd = d.jacfwd(h.ufunc, holomorphic=True)(complex(z))
    assert abs(got_fwd - got) < 1e-12 * max(1, abs(got))


@pytest.mark.parametrize("h", R.HOLOMORPHIC, ids=lambda h: h.name)
def test_holomorphic_ufunc_on_a_real_dual(h):
    # real -> complex: np.sqrt(-x + 0j), np.exp(1j * x)... a real operand gets the real part
    rng = np.random.default_rng(3)
    x = np.abs(rng.uniform(0.2, 0.6, (3,)))
    check(lambda x: h.ufunc(x * (0.6 + 0.8j)), [x], 3)


# --------------------------------------------------------------------------------------------
# Non-holomorphic functions and choices


@given(seed=seeds, shape=small_shapes())
@scaled(0.3)
def test_abs_conj_sign_angle_real_imag(seed, shape):
    rng = np.random.default_rng(seed)
    z = np.asarray(crandom(rng, shape))
    check(np.abs, [z], seed)
    check(np.conj, [z], seed)
    check(np.sign, [z], seed)
    check(np.angle, [z], seed)
    check(lambda z: np.angle(z, deg=True), [z], seed)
    check(np.real, [z], seed)
    check(np.imag, [z], seed)
    check(lambda z: z.real * z.imag + z.conj() * z, [z], seed)


def test_abs_sign_at_zero_are_zero_and_angle_is_nan():
    assert d.grad(lambda z: abs(z))(0j) == 0
    assert d.grad(lambda z: np.abs(z))(np.complex128(0)) == 0
    assert d.jvp(lambda z: np.abs(z), (np.zeros(2, complex),), (np.ones(2, complex),))[1].tolist() == [0, 0]
    g = d.grad(lambda z: np.real(np.sign(z)))(0j)
    assert g == 0
    assert cmath.isnan(d.grad(np.angle)(0j))


@pytest.mark.parametrize("uf", [np.maximum, np.minimum, np.fmax, np.fmin])
def test_choices_follow_numpys_lexicographic_order(uf):
    a = np.array([1 + 2j, 1 + 5j, 3 - 1j, 2 + 2j])
    b = np.array([1 + 3j, 1 + 5j, 2 + 9j, 2 + 2j])
    (ga, gb) = d.grad(lambda a, b: np.sum(np.real(uf(a, b) * np.array([1, 2, 3, 4]))),
                      argnums=(0, 1))(a, b)
    pick_a = {np.maximum: [0, .5, 1, .5], np.fmax: [0, .5, 1, .5],
              np.minimum: [1, .5, 0, .5], np.fmin: [1, .5, 0, .5]}[uf]
    np.testing.assert_array_equal(ga, np.array(pick_a) * [1, 2, 3, 4])
    np.testing.assert_array_equal(gb, (1 - np.array(pick_a)) * [1, 2, 3, 4])
    check(uf, [a, b + 0.01], 0, second=False)


@pytest.mark.parametrize("uf", sorted(C.CONSTANT_UFUNCS, key=lambda u: u.__name__),
                         ids=lambda u: u.__name__)
def test_constant_ufuncs_give_numpys_plain_result(uf):
    z = np.array([1 + 2j, np.nan + 0j, 3 - 1j])
    w = np.array([1 + 3j, 1j, 3 - 1j])
    args = (z, w)[:uf.nin]

    def f(*zs):
        r = uf(*zs)
        assert not d.numpy.ComplexDual is type(r) and not isinstance(r, d.ArrayDual)
        np.testing.assert_array_equal(r, uf(*args))
        return np.sum(np.abs(zs[0]))

    d.grad(f, argnums=tuple(range(uf.nin)))(*args)


# --------------------------------------------------------------------------------------------
# Arithmetic: numpy's ufuncs and Python's operators, complex with complex, real and constants


_BINARY = [np.add, np.subtract, np.multiply, np.divide, np.power, np.float_power]
_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]


@pytest.mark.parametrize("f", _BINARY + _OPS, ids=lambda f: f.__name__)
@given(seed=seeds, shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
@scaled(0.3)
def test_binary_complex_complex(f, seed, shapes):
    rng = np.random.default_rng(seed)
    a = np.asarray(crandom(rng, shapes.input_shapes[0]))
    b = np.asarray(crandom(rng, shapes.input_shapes[1]) * 0.5)
    check(f, [a, b], seed)


@pytest.mark.parametrize("f", _BINARY + _OPS, ids=lambda f: f.__name__)
@given(seed=seeds)
@scaled(0.2)
def test_binary_mixed_real_and_complex(f, seed):
    rng = np.random.default_rng(seed)
    z = np.asarray(crandom(rng, (3,)))
    x = rng.uniform(0.5, 1.5, (3,))
    check(f, [z, x], seed)
    check(f, [x, z], seed)
    check(lambda x: f(x, 1.5 - 0.5j), [x], seed)
    check(lambda z: f(z, 2.0), [z], seed)


@pytest.mark.parametrize("f", _OPS, ids=lambda f: f.__name__)
def test_python_scalars_keep_pythons_arithmetic(f):
    # Python's complex arithmetic on Python complex numbers (cmath's type), numpy's on numpy's:
    # the same bits as the plain program, and the same types
    z, w, x = 0.3 + 1.7j, -1.1 + 0.4j, 0.7
    for a, b in [(z, w), (z, x), (x, z), (np.complex128(z), w), (z, np.complex128(w))]:
        out, _ = d.vjp(f, a, b)
        same_value(out, f(a, b))
        check(f, [a, b], 1, second=False)


def test_integer_powers_and_zero_base():
    check(lambda z: z ** 2, [0.3 + 1.7j], 0)
    check(lambda z: z ** 3 + z ** -2, [np.array([0.3 + 1.7j, -1 + 0.5j])], 0)
    # d/dz z**w at z = 0 with w = 2: 0; d/dw: chosen 0 (log 0 is -inf)
    ga, gb = d.grad(lambda a, b: np.real(a ** b), argnums=(0, 1))(0j, 2 + 0j)
    assert ga == 0 and gb == 0
    # z ** 0 is 1 everywhere: derivative 0 in z, also at z = 0
    assert d.grad(lambda z: np.real(z ** 0))(0j) == 0


def test_floor_division_and_modulo_refuse_complex_as_python_does():
    for f in (operator.floordiv, operator.mod):
        with pytest.raises(TypeError):
            d.grad(lambda x: f(x * 1j, 2.0).real)(1.0)


def test_matmul_operator_and_ufunc():
    rng = np.random.default_rng(0)
    a = crandom(rng, (2, 3))
    b = crandom(rng, (3, 2))
    check(operator.matmul, [a, b], 0)
    check(np.matmul, [a, b[:, 0]], 0)
    check(np.matmul, [a[0], b], 0)
    check(np.matmul, [np.stack([a, a * 1j]), b], 0)
    check(np.matmul, [a, rng.standard_normal((3, 2))], 0)


# --------------------------------------------------------------------------------------------
# Products


@given(seed=seeds)
@scaled(0.2)
def test_products(seed):
    rng = np.random.default_rng(seed)
    a, b, c = crandom(rng, (2, 3)), crandom(rng, (3, 4)), crandom(rng, (3,))
    x = rng.standard_normal((3,))
    check(np.dot, [a, b], seed)
    check(np.dot, [a, c], seed)
    check(np.dot, [c, b], seed)
    check(np.dot, [c, x], seed)
    check(np.dot, [a, 2.0 - 1j], seed)
    check(np.vdot, [c, c * 1j + x], seed)
    check(np.vdot, [x, c], seed)
    check(np.inner, [a, crandom(rng, (4, 3))], seed)
    check(np.outer, [c, x], seed)
    check(lambda a, b: np.tensordot(a, b, 1), [a, b], seed)
    check(lambda a, b: np.tensordot(a, b, ([1, 0], [0, 1])), [a, crandom(rng, (3, 2))], seed)
    check(lambda a, b: np.einsum("ij,jk->ik", a, b), [a, b], seed)
    check(lambda a, b: np.einsum("ij,j", a, b), [a, x], seed)
    check(lambda a: np.einsum("ii", a), [crandom(rng, (3, 3))], seed)
    check(lambda a, b: np.einsum(a, [0, 1], b, [1]), [a, c], seed)
    check(lambda a, b: np.vecdot(a, b), [a, crandom(rng, (2, 3))], seed)
    check(lambda a, b: np.matvec(a, b), [a, c], seed)
    check(lambda a, b: np.vecmat(a, b), [crandom(rng, (2,)), a], seed)


# --------------------------------------------------------------------------------------------
# Sums and functions that move elements


@given(seed=seeds, shape=small_shapes(3), data=st.data())
@scaled(0.3)
def test_sums(seed, shape, data):
    rng = np.random.default_rng(seed)
    z = np.asarray(crandom(rng, shape))
    nd = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1)) if nd else st.none())
    keep = data.draw(st.booleans())
    check(lambda z: np.sum(z, axis=axis, keepdims=keep), [z], seed)
    check(lambda z: np.mean(z, axis=axis, keepdims=keep), [z], seed)
    check(lambda z: np.cumsum(z, axis=axis), [z], seed)


_MOVES = [
    ("transpose", lambda z: np.transpose(z)),
    ("reshape", lambda z: np.reshape(z, (-1,))),
    ("reshape F", lambda z: np.reshape(z, (3, 2), order="F")),
    ("ravel", lambda z: z.ravel()),
    ("swapaxes", lambda z: np.swapaxes(z, 0, 1)),
    ("moveaxis", lambda z: np.moveaxis(z, 0, -1)),
    ("expand_dims", lambda z: np.expand_dims(z, 1)),
    ("squeeze", lambda z: np.squeeze(z[:1])),
    ("broadcast_to", lambda z: np.broadcast_to(z, (4, 2, 3))),
    ("concatenate", lambda z: np.concatenate([z, z * 1j, np.ones((1, 3))], axis=0)),
    ("stack", lambda z: np.stack([z, z.conj()], axis=1)),
    ("vstack", lambda z: np.vstack([z, z[0]])),
    ("hstack", lambda z: np.hstack([z, np.zeros((2, 1))])),
    ("split", lambda z: np.split(z, 3, axis=1)),
    ("flip", lambda z: np.flip(z, 1)),
    ("roll", lambda z: np.roll(z, 2)),
    ("tile", lambda z: np.tile(z, (1, 2))),
    ("repeat", lambda z: np.repeat(z, 2, axis=0)),
    ("diagonal", lambda z: np.diagonal(z)),
    ("tril", lambda z: np.tril(z)),
    ("take", lambda z: np.take(z, [0, 2, 2], axis=1)),
    ("diff", lambda z: np.diff(z, axis=1)),
    ("where", lambda z: np.where(np.array([[True, False, True]]), z, 2.5)),
    ("pad", lambda z: np.pad(z, 1, constant_values=1.5 - 2j)),
    ("pad edge", lambda z: np.pad(z, ((0, 1), (2, 0)), mode="edge")),
    ("getitem", lambda z: z[1, ::-1]),
    ("getitem ellipsis", lambda z: z[..., 1]),
    ("getitem mask", lambda z: z[np.array([[True, False, True], [False, True, True]])]),
    ("getitem fancy", lambda z: z[[1, 1, 0], [2, 0, 0]]),
    ("T", lambda z: z.T),
    ("trace", lambda z: np.trace(z)),
    ("full_like", lambda z: np.full_like(z, 2 + 1j) * z),
    ("astype", lambda z: z.astype(np.complex128) + np.real(z).astype(complex)),
]


@pytest.mark.parametrize("name,f", _MOVES, ids=[m[0] for m in _MOVES])
def test_functions_that_move_elements(name, f):
    rng = np.random.default_rng(7)
    z = crandom(rng, (2, 3))
    check(f, [z], 7)


def test_indexing_one_element_is_a_numpy_scalar():
    z = np.array([1 + 2j, 3 - 4j])
    out, _ = d.vjp(lambda z: z[1], z)
    assert type(out) is np.complex128 and out == 3 - 4j
    # f = Re(z1) Im(z0): df/dy0 = Re(z1) = 3, df/dx1 = Im(z0) = 2; the gradient is d/dx - i d/dy
    assert d.grad(lambda z: z[1].real * z[0].imag)(z).tolist() == [-3j, 2]


def test_casts_between_complex_precisions_keep_the_gradient_dtype():
    z = np.array([1 + 2j, 3 - 4j], dtype=np.complex64)
    g = d.grad(lambda z: np.sum(np.abs(z.astype(np.complex128)) ** 2))(z)
    assert g.dtype == np.complex64
    np.testing.assert_allclose(g, 2 * np.conj(z), rtol=1e-6)
    g = d.grad(lambda z: np.sum(z.astype(np.float64)))(z)  # numpy keeps the real part
    np.testing.assert_array_equal(g, [1, 1])


def test_real_if_close_takes_the_branch_numpy_takes():
    z = np.array([1 + 1e-17j, 2 - 1e-17j])
    out, pb = d.vjp(np.real_if_close, z)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, np.real_if_close(z))
    np.testing.assert_array_equal(pb(np.ones(2))[0], np.ones(2, complex))
    z2 = z + 1j
    assert d.vjp(np.real_if_close, z2)[0].dtype == np.complex128


def test_complex_dual_holds_numpys_attributes():
    def f(z):
        assert z.shape == (2, 3) and z.ndim == 2 and z.size == 6 and z.dtype == np.complex128
        assert np.iscomplexobj(z) and not np.isrealobj(z) and np.shape(z) == (2, 3)
        assert len(z) == 2 and [w.shape for w in z] == [(3,), (3,)]
        assert "ComplexDual" in repr(z)
        return np.sum(np.abs(z))

    d.grad(f)(np.ones((2, 3), complex))


def test_converting_a_complex_dual_drops_nothing_silently():
    for conv in (complex, float, int, lambda z: np.array(z, dtype=float)):
        with pytest.raises(TypeError):
            d.grad(lambda z: conv(z) and 0.0)(1j)


def test_unsupported_function_names_itself():
    with pytest.raises(NotImplementedError, match=r"numpy\.linalg\.cholesky .*complex"):
        d.grad(lambda z: np.sum(np.abs(np.linalg.cholesky(z))))(np.eye(2) * (1 + 1j))
    with pytest.raises(NotImplementedError, match=r"numpy\.polydiv .*complex"):
        d.grad(lambda z: np.sum(np.abs(np.polydiv(z, z[:2])[0])))(np.ones(3) + 1j)


# --------------------------------------------------------------------------------------------
# real -> complex -> real programs


def test_abs_exp_ix_has_derivative_zero_and_numpys_value():
    for x in (0.3, -2.0, 7.5):
        f = lambda x: abs(np.exp(1j * x))  # noqa: E731
        v, g = d.value_and_grad(f)(x)
        assert v == f(x)
        assert abs(g) < 1e-15


def test_conjugate_of_a_constructed_complex_number():
    f = lambda x, y: ((x + 1j * y).conjugate() * (x + 1j * y)).real  # noqa: E731
    assert d.grad(f, argnums=(0, 1))(3.0, 4.0) == (6.0, 8.0)
    g = lambda x, y: (x + 1j * y).conjugate().imag  # noqa: E731
    assert d.grad(g, argnums=(0, 1))(3.0, 4.0) == (0.0, -1.0)


@given(seed=seeds)
@scaled(0.3)
def test_real_programs_through_complex_values(seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (4,))

    def f(x):  # (|x| <= 1 keeps every branch cut and the jump of angle away)
        z = np.exp(1j * x) * (1.0 + x * 2j)
        w = z / (z.conj() + 3.0) + np.sqrt(z + 3.0) * np.log(z * z + 6.0)
        return np.sum(np.abs(w) ** 2) + np.sum(np.angle(w + 20.0)) + np.real(np.vdot(w, z))

    check(f, [x], seed)


def test_scalar_program_with_math_style_code():
    def f(x):
        z = x * 1j + 0.5
        for _ in range(3):
            z = z * z + (0.25 - 0.1j)
        return abs(z) + z.real

    check(f, [0.3], 0)
    v, g = d.value_and_grad(f)(0.3)
    assert v == f(0.3)


def test_ufunc_methods():
    rng = np.random.default_rng(4)
    z, w = crandom(rng, (2, 3)), crandom(rng, (2,))
    check(lambda z: np.add.reduce(z, axis=1), [z], 4)
    check(lambda z: np.add.accumulate(z), [z], 4)
    for uf in (np.add, np.subtract, np.multiply, np.divide, np.power, np.maximum, np.minimum):
        check(lambda z, w: uf.outer(z, w), [z, w], 4, second=False)


def test_support_table_lists_every_complex_rule_with_its_choice():
    from deltaad import support

    table = d.support_table()
    section = table[table.index("## Complex numbers"):]
    for f in list(C.UFUNCS) + list(C.FUNCTIONS) + list(C.CONSTANT_UFUNCS):
        assert "`%s`" % support._name(f) in section, f
    for (u, m) in C.METHODS:
        assert "`%s.%s`" % (support._name(u), m) in section
    for f, note in C.NOTES.items():
        assert note.replace("|", "\\|") in section, f


@given(seed=seeds, shape=small_shapes(3), data=st.data())
@scaled(0.3)
def test_var_and_std(seed, shape, data):
    rng = np.random.default_rng(seed)
    z = np.asarray(crandom(rng, shape))
    nd = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1)) if nd else st.none())
    ddof = data.draw(st.sampled_from([0, 1])) if z.size > 1 else 0
    keep = data.draw(st.booleans())
    with np.errstate(divide="ignore", invalid="ignore"):
        if np.all(np.asarray(np.var(z, axis=axis, ddof=ddof)) > 1e-3):
            check(lambda z: np.var(z, axis=axis, ddof=ddof, keepdims=keep), [z], seed)
            check(lambda z: np.std(z, axis=axis, ddof=ddof, keepdims=keep), [z], seed)


def test_std_of_no_spread_has_gradient_zero():
    g = d.grad(lambda z: np.std(z))(np.array([1 + 1j, 1 + 1j]))
    np.testing.assert_array_equal(g, [0, 0])
