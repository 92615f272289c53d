"""Transformed functions pickle -- by reference when the function is importable, by value
through cloudpickle for lambdas and closures -- so gradients run in other processes:
``ProcessPoolExecutor.map(grad(f), ...)`` and a Dask cluster of two worker processes give the
serial results, to the bit."""

import inspect
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import deltaad
from picklable import energy, scalar

MAKERS = [
    ("grad", lambda f: deltaad.grad(f)),
    ("value_and_grad", lambda f: deltaad.value_and_grad(f)),
    ("grad argnums", lambda f: deltaad.grad(f, argnums=(0,))),
    ("grad has_aux", lambda f: deltaad.grad(lambda x: (f(x), 1), has_aux=True)),
    ("jacrev", lambda f: deltaad.jacrev(f)),
    ("jacobian", lambda f: deltaad.jacobian(f)),
    ("jacfwd", lambda f: deltaad.jacfwd(f)),
    ("hessian", lambda f: deltaad.hessian(f)),
]
X = np.array([0.3, 1.1, 2.6, 3.2])


def _same(a, b):
    la, da = deltaad.tree_flatten(a)
    lb, db = deltaad.tree_flatten(b)
    assert da == db
    for u, v in zip(la, lb):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("name,make", [m for m in MAKERS if m[0] != "grad has_aux"],
                         ids=[m[0] for m in MAKERS if m[0] != "grad has_aux"])
def test_pickle_by_reference(name, make):
    g = make(energy)
    data = pickle.dumps(g)
    assert b"picklable" in data and b"energy" in data  # the function by its name
    h = pickle.loads(data)
    _same(h(X), g(X))
    assert h.__name__ == "energy" and h.__wrapped__ is energy


@pytest.mark.parametrize("name,make", MAKERS, ids=[m[0] for m in MAKERS])
def test_cloudpickle_lambdas_and_closures(name, make):
    cloudpickle = pytest.importorskip("cloudpickle", reason="cloudpickle is in the dist extra")
    k = 0.25
    g = make(lambda x: energy(x) * k)  # a lambda closing over k
    h = pickle.loads(cloudpickle.dumps(g))
    _same(h(X), g(X))


def test_transformed_functions_look_like_the_function():
    g = deltaad.grad(scalar, argnums=1)
    assert g.__name__ == "scalar" and g.__doc__ == scalar.__doc__ and g.__wrapped__ is scalar
    assert str(inspect.signature(g)) == "(a, b)"
    assert "deltaad.grad" in repr(g) and "scalar" in repr(g)
    assert "deltaad.hessian" in repr(deltaad.hessian(scalar)) and "scalar" in repr(deltaad.hessian(scalar))

    class Spring:
        k = 3.0

        def energy(self, x):
            return 0.5 * self.k * x * x

        force = deltaad.grad(energy, argnums=1)  # binds like a method

    assert Spring().force(2.0) == 6.0
    assert Spring.force(Spring(), 2.0) == 6.0


def test_process_pool_map():
    xs = [X + 0.1 * k for k in range(8)]
    g = deltaad.grad(energy)
    serial = list(map(g, xs))
    with ProcessPoolExecutor(2) as ex:
        parallel = list(ex.map(g, xs))
    for a, b in zip(parallel, serial):
        np.testing.assert_array_equal(a, b)
    h = deltaad.grad(scalar, argnums=(0, 1))
    with ProcessPoolExecutor(2) as ex:
        assert list(ex.map(h, [0.5, 1.5], [2.0, 3.0])) == [h(0.5, 2.0), h(1.5, 3.0)]


def test_dask_local_cluster_200_gradients():
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is optional: pip install 'deltaad[dist]'")
    rng = np.random.default_rng(7)
    xs = [rng.normal(size=6) for _ in range(200)]
    by_ref = deltaad.grad(energy)
    closure = deltaad.value_and_grad(lambda x: energy(x) * 0.5 + x[1] ** 3)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        got = client.gather(client.map(by_ref, xs))
        got2 = client.gather(client.map(closure, xs[:50]))
        pids = set(client.run(lambda: __import__("os").getpid()).values())
    assert len(pids) == 2
    for a, x in zip(got, xs):
        np.testing.assert_array_equal(a, by_ref(x))
    for (v, g), x in zip(got2, xs[:50]):
        v0, g0 = closure(x)
        assert v == v0
        np.testing.assert_array_equal(g, g0)
