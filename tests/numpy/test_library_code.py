"""Library code that converts its input with ``np.asarray`` differentiates unchanged: an array
dual converts to the object array of its scalar duals on the same trace (one gather binding,
linear in the number of elements), numpy's object arithmetic records each operation, and
object arrays of duals are array duals again where they re-enter deltaad (numpy functions,
outputs). Checked against scipy's own derivatives and finite differences, on both modes, nested,
and for the errors (a float cast, an escaped dual)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import seeds, shapes

from numpy import asarray as bound_asarray  # bound before any differentiation: numpy's own

so = pytest.importorskip("scipy.optimize")


def fd_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def test_asarray_gives_the_object_array_of_scalar_duals():
    def f(x):
        a = np.asarray(x)
        assert type(a) is np.ndarray and a.dtype == object and a.shape == x.shape
        tape = d.open_traces()[-1]
        assert all(type(e) is d.Dual and e.trace is tape for e in a.ravel())
        assert [d.value(e) for e in a.ravel()] == d.value(x).ravel().tolist()
        b = np.array(x)  # np.array too
        assert b.dtype == object and b.shape == x.shape
        return np.sum(a * a) + b[1, 0]

    x = np.arange(6.0).reshape(3, 2)
    want = 2 * x
    want[1, 0] += 1.0
    np.testing.assert_array_equal(d.grad(f)(x), want)


@given(shapes(max_dims=3, max_side=4), seeds)
def test_object_arithmetic_derivatives_match_array_duals(shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    w = rng.normal(size=shape)

    def through_objects(x):
        a = np.asarray(x)
        return np.sum(np.sin(a) * w + a ** 3 / (1.0 + a * a)) + np.sum(np.exp(a) * a)

    def on_duals(x):
        return np.sum(np.sin(x) * w + x ** 3 / (1.0 + x * x)) + np.sum(np.exp(x) * x)

    g = d.grad(through_objects)(x)
    np.testing.assert_allclose(g, d.grad(on_duals)(x), rtol=1e-12, atol=1e-12)
    assert g.dtype == np.float64 and g.shape == x.shape
    if x.size:
        J = d.jacfwd(through_objects)(x)  # forward mode unpacks the tangent too
        np.testing.assert_allclose(J, g, rtol=1e-12, atol=1e-12)


def test_repeated_and_unused_elements_and_linear_size():
    def f(x):
        a = np.asarray(x)
        tape = d.open_traces()[-1]
        n0 = tape.nbindings
        b = np.asarray(x)  # a second conversion: its own elements, link and gather node
        assert tape.nbindings == n0 + x.size + 2
        return a[0] * a[0] * b[0] + a[2] + 3.0 * b[2]  # a[1] unused

    np.testing.assert_array_equal(d.grad(f)(np.array([2.0, 5.0, 7.0])), [12.0, 0.0, 4.0])
    n = 20000
    x = np.linspace(-1, 1, n)
    np.testing.assert_allclose(d.grad(lambda x: np.sum(np.asarray(x) ** 2))(x), 2 * x)


def test_nesting_and_modes():
    x = np.array([1.3, 0.7, 0.8, 1.9, 1.2])
    p = np.array([0.5, -1.0, 2.0, 0.1, 0.3])
    # the array dual's value is an outer dual: Hessians of code that converts its input
    np.testing.assert_allclose(d.hessian(so.rosen)(x), so.rosen_hess(x), rtol=1e-13, atol=1e-11)
    np.testing.assert_allclose(d.hvp(so.rosen, (x,), (p,)), so.rosen_hess_prod(x, p), rtol=1e-12)
    # reverse over reverse, forward over forward
    rr = d.jacrev(d.grad(so.rosen))(x)
    ff = d.jacfwd(d.jacfwd(so.rosen))(x)
    np.testing.assert_allclose(rr, so.rosen_hess(x), rtol=1e-13, atol=1e-11)
    np.testing.assert_allclose(ff, so.rosen_hess(x), rtol=1e-13, atol=1e-11)
    # an outer dual converted inside an inner differentiation is a constant there
    def f(s):
        return d.grad(lambda y: np.sum(np.asarray(s * y) * np.asarray(y)))(np.ones(2)).sum()
    assert d.grad(f)(1.5) == pytest.approx(4.0)


def test_float_cast_and_escaped_dual_raise():
    made_before = np.zeros(3)  # numpy's float array (one made inside would take duals)

    def f(x):
        with pytest.raises(TypeError, match=r"bound_asarray\(\.\.\.\) converts a deltaad array dual"
                                            r".* call it as np\.asarray\(\.\.\.\)"):
            bound_asarray(x, dtype=float)
        with pytest.raises(TypeError, match=r"storing a deltaad array dual into a float array \(a\[:2\] = \.\.\.\)"):
            a = made_before
            a[:2] = x
        with pytest.raises(TypeError, match=r"storing a deltaad Dual into a float array.*"
                                            r"inside the differentiated function with np\.zeros"):
            a = made_before
            a[0] = x[0]
        with pytest.raises(TypeError, match="drop"):
            np.asarray(x).astype(float)
        return np.sum(x)

    d.grad(f)(np.array([1.0, 2.0]))
    box = []
    d.grad(lambda x: box.append(x) or np.sum(x))(np.array([1.0, 2.0]))
    with pytest.raises(d.EscapedDualError):
        np.asarray(box[0])


def test_float32_input_keeps_its_gradient_dtype():
    x = np.array([1.0, 2.0], dtype=np.float32)
    g = d.grad(lambda x: np.sum(np.asarray(x) ** 2))(x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [2.0, 4.0])


# --------------------------------------------------------------------------------------------
# scipy's own functions, called unchanged


def test_scipy_rosen_family_against_scipys_derivatives():
    rng = np.random.default_rng(1)
    for n in (2, 5, 30):
        x = rng.normal(size=n)
        np.testing.assert_allclose(d.grad(so.rosen)(x), so.rosen_der(x), rtol=1e-13, atol=1e-11)
        np.testing.assert_allclose(d.jacrev(so.rosen_der)(x), so.rosen_hess(x), rtol=1e-13, atol=1e-10)
        np.testing.assert_allclose(d.jacfwd(so.rosen_der)(x), so.rosen_hess(x), rtol=1e-13, atol=1e-10)
        p = rng.normal(size=n)
        np.testing.assert_allclose(d.jacrev(lambda x: so.rosen_hess_prod(x, p))(x),
                                   fd_jac(lambda x: so.rosen_hess_prod(x, p), x), rtol=1e-6, atol=1e-5)
    X = rng.normal(size=(4, 3))  # rosen on a 2-d array: one value per column
    np.testing.assert_allclose(d.jacrev(so.rosen)(X), fd_jac(so.rosen, X).reshape(3, 4, 3),
                               rtol=1e-6, atol=1e-5)


def fd_jac(f, x, h=1e-6):
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        cols.append(((f(x + e) - f(x - e)) / (2 * h)).ravel())
    return np.array(cols).T


LIBRARY = {
    "scipy.signal.convolve": lambda x: np.sum(__import__("scipy.signal").signal.convolve(x, np.array([1.0, -2.0, 0.5])) ** 2),
    "scipy.signal.correlate": lambda x: np.sum(__import__("scipy.signal").signal.correlate(x, x)),
    "scipy.integrate.trapezoid": lambda x: __import__("scipy.integrate").integrate.trapezoid(x ** 2),
    "scipy.integrate.simpson": lambda x: __import__("scipy.integrate").integrate.simpson(np.sin(x)),
    "scipy.special.softmax": lambda x: np.sum(__import__("scipy.special").special.softmax(x) * np.arange(x.size)),
    "scipy.spatial.distance.euclidean": lambda x: __import__("scipy.spatial.distance").spatial.distance.euclidean(x, np.ones(x.size)),
    "scipy.linalg.norm": lambda x: __import__("scipy.linalg").linalg.norm(x),
    "numpy.polyval": lambda x: np.polyval(x, 0.7),
    "numpy.trapezoid": lambda x: np.trapezoid(x ** 2),
    "numpy.convolve": lambda x: np.sum(np.convolve(x, x)),
    "numpy.vectorize": lambda x: np.sum(np.vectorize(lambda t: t * t if t > 0 else -t)(x)),
}


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_library_functions_unchanged(name):
    f = LIBRARY[name]
    x = np.array([1.3, 0.7, -0.8, 1.9, 1.2])
    g = d.grad(f)(x)
    assert type(g) is np.ndarray and g.dtype == np.float64
    np.testing.assert_allclose(g, fd_grad(f, x), rtol=1e-6, atol=1e-6)
    _, t = d.jvp(f, (x,), (np.ones_like(x),))
    assert t == pytest.approx(g.sum(), rel=1e-10, abs=1e-12)


# --------------------------------------------------------------------------------------------
# Packed duals: object arrays of duals as outputs and as inputs of numpy functions


PACKED = {
    "np.array": lambda x, y: np.array([x * y, y]),
    "np.r_": lambda x, y: np.r_[x, y * y, 2.0],
    "np.c_": lambda x, y: np.c_[[x, y], [y, x * x]],
    "np.append": lambda x, y: np.append([x, y], [x * y]),
    "np.hstack of lists": lambda x, y: np.hstack([[x], [y, 1.0]]),
    "object arithmetic": lambda x, y: np.array([x, y], dtype=object) * np.array([2.0, x]),
}


@pytest.mark.parametrize("name", sorted(PACKED))
def test_packed_duals_as_outputs(name):
    f = PACKED[name]
    out = d.jvp(f, (1.5, -0.5), (1.0, 0.0))[0]
    assert type(out) is np.ndarray and out.dtype == np.float64
    np.testing.assert_array_equal(out, np.asarray(f(1.5, -0.5), dtype=float))
    Jr = d.jacrev(f, argnums=(0, 1))(1.5, -0.5)
    Jf = d.jacfwd(f, argnums=(0, 1))(1.5, -0.5)
    h = 1e-6
    for k in range(2):
        assert type(Jr[k]) is np.ndarray and Jr[k].dtype == np.float64
        np.testing.assert_array_equal(Jr[k], Jf[k])
        a = [1.5, -0.5]
        b = [1.5, -0.5]
        a[k] += h
        b[k] -= h
        fd = (np.asarray(f(*a), dtype=float) - np.asarray(f(*b), dtype=float)) / (2 * h)
        np.testing.assert_allclose(Jr[k], fd, rtol=1e-6, atol=1e-8)


def test_packed_duals_meet_array_duals():
    def f(x):
        v = np.array([x[0] * x[1], x[1]])  # an object array of scalar duals
        a = v + x  # meets an array dual: packed into one
        assert isinstance(a, d.ArrayDual) or not d.open_traces()
        b = np.concatenate([v, x])  # a numpy function with an array dual: packed
        assert isinstance(b, d.ArrayDual) or not d.open_traces()
        c = np.polyval(v, x[0])  # numpy's own code on both
        return np.sum(a * a) + np.sum(b) + c

    x = np.array([0.6, -1.4])
    np.testing.assert_allclose(d.grad(f)(x), fd_grad(f, x), rtol=1e-6, atol=1e-7)


def test_numpy_functions_without_rules_run_numpys_code():
    def f(x):
        p = np.polyval(x, 0.5)
        assert type(p) is d.Dual or not d.open_traces()  # a scalar, as numpy gives
        u = np.unique(x)  # sorts: the branch taken
        assert isinstance(u, d.ArrayDual) or not d.open_traces()
        return p + np.sum(u * np.arange(u.size)) + np.trapezoid(x)

    x = np.array([0.3, -1.2, 2.5])
    np.testing.assert_allclose(d.grad(f)(x), fd_grad(f, x), rtol=1e-6, atol=1e-7)
    with pytest.raises(NotImplementedError, match=r"numpy\.polydiv.*numpy's own code.*failed"):
        d.grad(lambda x: np.sum(np.polydiv(x, x[:2])[0]))(x)


@given(shapes(min_dims=1, max_dims=2, min_side=1, max_side=5), seeds)
def test_ufuncs_without_rules_run_numpys_object_loop(shape, seed):
    """A ufunc (or ufunc method) without a rule that numpy has an object loop for -- a user's
    ``np.frompyfunc``, ``np.maximum.accumulate`` -- runs that loop on the scalar duals: the
    same derivative as the same arithmetic written on the array duals, in both modes."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    cube = np.frompyfunc(lambda a: a * a * a - a, 1, 1)
    hyp = np.frompyfunc(lambda a, b: a * b + b, 2, 1)

    def f(x):
        run = np.maximum.accumulate(x, axis=0) + np.minimum.accumulate(x * 2.0, axis=-1)
        return np.sum(cube(x) * 0.5 + hyp(x, 3.0)) + np.sum(run * run)

    def want(x):  # the running extrema as the selections they are, on plain indices
        v = np.asarray(d.value(x))
        i0 = np.maximum.accumulate(np.where(v == np.maximum.accumulate(v, axis=0),
                                            np.arange(v.shape[0]).reshape((-1,) + (1,) * (v.ndim - 1)), 0), axis=0)
        i1 = np.maximum.accumulate(np.where(2 * v == np.minimum.accumulate(2 * v, axis=-1),
                                            np.arange(v.shape[-1]), 0), axis=-1)
        run = (np.take_along_axis(x, i0, axis=0)
               + np.take_along_axis(x * 2.0, i1, axis=-1))
        return np.sum((x * x * x - x) * 0.5 + (x * 3.0 + 3.0)) + np.sum(run * run)

    np.testing.assert_allclose(f(x), want(x), rtol=1e-13)
    g = d.grad(f)(x)
    assert g.dtype == np.float64 and g.shape == x.shape
    np.testing.assert_allclose(g, d.grad(want)(x), rtol=1e-12, atol=1e-12)
    v = rng.normal(size=shape)
    np.testing.assert_allclose(d.jvp(f, (x,), (v,))[1], np.sum(g * v), rtol=1e-10, atol=1e-10)
    s = d.grad(lambda t: cube(t) + hyp(t, t))(0.7)  # scalar duals: numpy's 0-d object loop
    assert s == 3 * 0.7 ** 2 - 1 + 2 * 0.7 + 1


def test_ufunc_methods_that_write_in_place_still_raise():
    z = np.zeros(3)  # made before: numpy's float array
    with pytest.raises(NotImplementedError, match=r"numpy\.add\.at"):
        d.grad(lambda x: np.sum(np.add.at(z, [0, 1, 1], x) or x))(np.ones(3))
