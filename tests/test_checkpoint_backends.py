"""Checkpointed programs give the same bits on the compiled core and the pure backend.

``deltaad`` binds one backend per process, so each backend runs the same script in a process
of its own and the printed results (``float.hex``) are compared."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("deltaad._core")

SCRIPT = r'''
import numpy as np
import deltaad as ad

out = []

def emit(x):
    if isinstance(x, (tuple, list)):
        for v in x:
            emit(v)
    elif isinstance(x, np.ndarray):
        for v in x.ravel().tolist():
            emit(v)
    else:
        out.append(float(x).hex())

def frank(x):
    z = ad.checkpoint(lambda: x + 2.0)()
    a = ad.checkpoint(lambda: ad.checkpoint(lambda: x * z)() + 2.0)()
    return ad.sin(a) * x

emit(ad.value_and_grad(frank)(0.7))
emit(ad.hessian(frank)(0.7))
emit(ad.grad(ad.grad(frank))(0.7))

def step(p):
    def body(i, s):
        x, y = s
        xy = x * y
        return (x + 0.01 * (p[0] * x - p[1] * xy), y + 0.01 * (p[2] * xy - p[3] * ad.tanh(y)))
    return body

def fori(p, s0, c):
    s = ad.fori_loop(0, 97, step(p), s0, checkpoints=c)
    return s[0] * s[1]

def whil(p, s0, c):
    s = ad.while_loop(lambda st: st[0] < 61, lambda st: (st[0] + 1, step(p)(st[0], st[1])),
                      (0, s0), checkpoints=c)[1]
    return s[0] + ad.sin(s[1])

P = (1.1, 0.4, 0.1, 0.4)
for c in (1, 3, "auto", None):
    emit(ad.value_and_grad(fori, argnums=(0, 1))(P, (1.5, 0.7), c))
    emit(ad.value_and_grad(whil, argnums=(0, 1))(P, (1.5, 0.7), c))
emit(ad.hessian(lambda s0: fori(P, s0, 3))((1.5, 0.7)))

w = np.array([[0.3, -0.8], [1.1, 0.2]])
def arr(x):
    v = ad.fori_loop(0, 9, lambda i, v: np.tanh(w @ v) * x, ad.stack([x, 1.0 - x]),
                     checkpoints=2)
    return np.sum(v * v)
emit(ad.value_and_grad(arr)(0.45))
@ad.custom_vjp
def cube(x):
    return x * x * x

cube.defvjp(lambda x: (cube(x), x), lambda x, g: (3.0 * x * x * g,))
wv = np.array([0.5, -1.5, 2.0])

def mixed(x, y):
    a = cube(x) * y
    b = ad.checkpoint(lambda: cube(a + y) - x)()
    s = ad.checkpoint(lambda: np.sum(np.sin(wv * a) ** 2)[()] + y)()
    return ad.tanh(s) * b + cube(y) * x

emit(ad.value_and_grad(mixed, argnums=(0, 1))(0.7, -0.3))
emit(ad.hessian(mixed, argnums=(0, 1))(0.7, -0.3))
print(" ".join(out))
'''


def run(backend):
    env = dict(os.environ, DELTAAD_BACKEND=backend)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.path.join(root, "src") + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    return res.stdout.split()


def test_checkpointed_programs_same_bits_on_both_backends():
    c = run("c")
    p = run("python")
    assert len(c) > 40
    assert c == p
