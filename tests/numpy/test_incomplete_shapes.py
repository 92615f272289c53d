"""scipy.special's incomplete gamma and beta functions and the table entries built on them,
differentiated in their shape parameters (first order): every path (scipy's ufunc on scalar and
array duals, ``deltaad.<name>``) against central differences, forward against reverse, both
backends to the bit; a second derivative involving a shape parameter is an error naming the
function. The parameter derivatives' own accuracy is tests/test_incomplete.py's."""

import math
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad as ad
from deltaad.elementwise import BY_NAME

sc = pytest.importorskip("scipy.special")

# name -> (orders, x): a point where the function is smooth in every argument
POINTS = {
    "gammainc": ((2.5,), 1.7), "gammaincc": ((0.7,), 2.3), "gammaincinv": ((2.5,), 0.3),
    "gammainccinv": ((1.5,), 0.6), "betainc": ((2.5, 3.5), 0.4), "betaincc": ((0.6, 4.0), 0.2),
    "betaincinv": ((2.5, 1.5), 0.3), "betainccinv": ((3.0, 0.8), 0.7),
    "chdtr": ((3.5,), 2.0), "chdtrc": ((5.0,), 7.5), "chdtri": ((3.5,), 0.3),
    "fdtr": ((4.5, 6.5), 1.2), "fdtrc": ((3.0, 9.0), 0.4), "fdtri": ((4.5, 6.5), 0.35),
    "stdtr": ((4.5,), -0.8), "stdtrit": ((2.5,), 0.8),
}
SHAPED = sorted(e.name for e in BY_NAME.values() if e.shape is not None)


def test_every_shaped_entry_is_covered():
    assert sorted(POINTS) == SHAPED


def _calls(name, j):
    """(f, v0) for each path, ``f`` a function of the ``j``-th order."""
    orders, x = POINTS[name]
    v0 = orders[j]
    s = getattr(sc, name)
    d = getattr(ad, name)

    def args(v):
        return [v if i == j else o for i, o in enumerate(orders)]

    xs = np.array([x, x * 0.9, x * 1.1])
    return {
        "scipy scalar": lambda v: s(*args(v), x),
        "scipy array": lambda v: np.sum(s(*args(v), xs)),
        "deltaad": lambda v: d(*args(v), x),
        "array order": lambda v: np.sum(s(*[np.full(3, 1.0) * o for o in args(v)], xs)),
    }, v0


def _fd(f, v, h=1e-6):
    return (f(v + h) - f(v - h)) / (2 * h)


@pytest.mark.parametrize("name", SHAPED)
def test_first_derivatives_in_each_parameter(name):
    for j in range(BY_NAME[name].orders):
        calls, v0 = _calls(name, j)
        grads = {}
        for path, f in calls.items():
            v, g = ad.value_and_grad(f)(v0)
            assert float(v) == float(f(v0)), (name, j, path)
            fd = _fd(f, v0)
            assert math.isfinite(g) and abs(g - fd) <= 1e-6 * max(1.0, abs(fd)), \
                (name, j, path, g, fd)
            _, t = ad.jvp(f, (v0,), (1.0,))
            assert float(t) == g, (name, j, path, t, g)
            grads[path] = g
        # one point through every path: the same derivative to the bit
        assert grads["scipy scalar"] == grads["deltaad"], (name, j, grads)


@pytest.mark.parametrize("name", SHAPED)
def test_mixed_arguments_and_the_variable(name):
    """Every argument at once (orders and x), reverse against forward per direction."""
    orders, x = POINTS[name]
    s = getattr(sc, name)
    p = tuple(orders) + (x,)
    g = ad.grad(lambda *a: s(*a), argnums=tuple(range(len(p))))(*p)
    for i in range(len(p)):
        t = ad.jvp(lambda u: s(*[u if k == i else q for k, q in enumerate(p)]), (p[i],),
                   (1.0,))[1]
        assert float(t) == g[i], (name, i)


@pytest.mark.parametrize("name", SHAPED)
def test_second_order_in_a_parameter_is_an_error_naming_the_function(name):
    calls, v0 = _calls(name, 0)
    order = BY_NAME[name].order.name
    for f in (calls["scipy scalar"], calls["scipy array"]):
        with pytest.raises(NotImplementedError, match=r"scipy\.special\.%s: deltaad "
                           r"differentiates it in %s to first order only" % (name, order)):
            ad.hessian(f)(v0)
    # second derivatives in x alone keep working (the parameters plain)
    orders, x = POINTS[name]
    s = getattr(sc, name)
    h = ad.hessian(lambda u: s(*orders, u))(x)
    fd2 = (s(*orders, x + 1e-4) - 2 * s(*orders, x) + s(*orders, x - 1e-4)) / 1e-8
    assert abs(float(h) - fd2) <= 1e-4 * max(1.0, abs(fd2))


@given(st.floats(-2.0, 2.0).map(lambda e: 10.0 ** e), st.floats(-3.0, 3.0),
       st.floats(0.05, 0.95))
def test_distribution_functions_on_a_sample(a, t, p):
    """stdtr, fdtr, chdtr and the inverses over a range of degrees of freedom: against central
    differences (relative step), whose own error sets the tolerance."""
    cases = [
        (lambda v: sc.stdtr(v, t), a), (lambda v: sc.stdtrit(v, p), a),
        (lambda v: sc.chdtr(v, abs(t) + 0.1), a), (lambda v: sc.chdtri(v, p), a),
        (lambda v: sc.fdtr(v, 2.0 + a, abs(t) + 0.1), a),
        (lambda v: sc.fdtr(2.0 + a, v, abs(t) + 0.1), a),
        (lambda v: sc.fdtri(v, 3.0, p), a), (lambda v: sc.gammaincinv(v, p), a),
        (lambda v: sc.betaincinv(v, 1.0 + a, p), a),
    ]
    for i, (f, v0) in enumerate(cases):
        g = ad.grad(f)(v0)
        h = 1e-5 * v0
        fd = (f(v0 + h) - f(v0 - h)) / (2 * h)
        assert abs(g - fd) <= 1e-5 * max(abs(fd), 1e-3 * abs(f(v0)) / v0, 1e-12), \
            (i, a, t, p, g, fd)


PROGRAM = r'''
import pickle, sys
import numpy as np
import scipy.special as sc
import deltaad as ad
sys.path.insert(0, sys.argv[1])
from test_incomplete_shapes import POINTS
out = {}
for name, (orders, x) in POINTS.items():
    s = getattr(sc, name)
    p = tuple(orders) + (x,)
    out[name] = ad.value_and_grad(lambda *a: s(*a), argnums=tuple(range(len(p))))(*p)
    out[name + " array"] = ad.grad(lambda o: np.sum(s(o, *p[1:-1], np.array([x, x * 0.9]))))(
        p[0])
    out[name + " jvp"] = ad.jvp(lambda o: s(o, *p[1:]), (p[0],), (1.0,))
sys.stdout.buffer.write(pickle.dumps(out))
'''


def test_both_backends_give_the_same_bits():
    pytest.importorskip("deltaad._core")
    outs = []
    for backend in ("c", "python"):
        env = dict(os.environ, DELTAAD_BACKEND=backend)
        r = subprocess.run([sys.executable, "-c", PROGRAM, os.path.dirname(__file__)], env=env,
                           capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr.decode()
        outs.append(pickle.loads(r.stdout))
    a, b = outs
    assert a.keys() == b.keys()
    for k in a:
        assert pickle.dumps(a[k]) == pickle.dumps(b[k]), (k, a[k], b[k])
