"""Array programs give the same bits on both backends (the scalar twin of this is
test_core_backends.py). The array layer is written once over the backend, but its bindings live
on each backend's tape and are swept by each backend's general sweep; the two must agree to the
last bit. One process imports one backend, so each runs in a subprocess of its own."""

import os
import pickle
import subprocess
import sys

import pytest

pytest.importorskip("deltaad._core")

PROGRAMS = r'''
import pickle, sys
import numpy as np
import deltaad as ad

rng = np.random.default_rng(7)
x = rng.normal(size=(4, 3))
w = rng.normal(size=(3, 5))
v = rng.normal(size=5)
a = rng.normal(size=(3, 3)) + 3 * np.eye(3)

def mlp(x, w, v):
    h = np.tanh(x @ w + v)
    z = h - np.max(h, axis=1, keepdims=True)
    return np.sum(z - np.log(np.sum(np.exp(z), axis=1, keepdims=True)))

def indexing(x):
    y = x[1:, ::2] * x[np.array([0, 0, 3])][:, :2]
    return np.sum(y ** 2) + x[2, 1] * np.sum(ad.at(x)[np.array([0, 0])].add(1.5))

def linalg(a):
    return np.linalg.slogdet(a)[1] + np.sum(np.linalg.solve(a, a[0])) + np.linalg.norm(a[0], 3)

def mixed(x, s):
    return np.sum(np.cumprod(x, axis=0) * s) + s * np.std(x) + np.sum(np.sort(x * s, axis=1))

out = {
    "mlp": ad.value_and_grad(mlp, argnums=(0, 1, 2))(x, w, v),
    "indexing": ad.value_and_grad(indexing)(x),
    "linalg": ad.value_and_grad(linalg)(a),
    "mixed": ad.value_and_grad(mixed, argnums=(0, 1))(x, 0.7),
    "jvp": ad.jvp(mlp, (x, w, v), (x * 0.5, w * -1.0, v)),
    "hessian": ad.hessian(lambda v: mlp(x, w, v))(v),
    "jacfwd": ad.jacfwd(lambda a: np.linalg.inv(a) @ a[0])(a),
}
sys.stdout.buffer.write(pickle.dumps(out))
'''


def _run(backend):
    env = dict(os.environ, DELTAAD_BACKEND=backend)
    r = subprocess.run([sys.executable, "-c", PROGRAMS], env=env, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    return pickle.loads(r.stdout)


def _bits(x):
    """Nested results as bytes of every float, so that nan == nan and -0.0 != 0.0."""
    import numpy as np

    if isinstance(x, (tuple, list)):
        return [_bits(e) for e in x]
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, (float, np.floating)):
        return ("f", np.float64(x).tobytes())
    return repr(x)


def test_array_programs_bit_for_bit():
    c = _run("c")
    p = _run("python")
    assert c.keys() == p.keys()
    for k in c:
        assert _bits(c[k]) == _bits(p[k]), k
