"""The paper's Lemma 1 on random array programs: for every program P, tangent dt and cotangent
ds, ``dt . vjp(ds) == jvp(dt) . ds`` (reverse mode is the transpose of forward mode) — plus
symmetry and agreement of the Hessians computed by different nestings."""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import deltaad as d
from numpy_checks import close, inner, random_like

_N = settings().max_examples
SETTINGS = settings(max_examples=max(20, _N), deadline=None, suppress_health_check=list(HealthCheck))


# Each step maps the program state (a list of arrays, all of shape (2, 3) or broadcastable to
# it) to a new array of shape (2, 3), so any sequence of steps is a valid program.
STEPS = [
    lambda s, a, b: np.sin(a) * b,
    lambda s, a, b: np.tanh(a + b),
    lambda s, a, b: a / (1.0 + b * b),
    lambda s, a, b: np.maximum(a, b) - np.minimum(a, 0.5),
    lambda s, a, b: np.exp(-a * a) + np.sqrt(1.0 + b * b),
    lambda s, a, b: a @ np.swapaxes(b, -1, -2) @ a * 0.1,
    lambda s, a, b: np.sum(a, axis=0, keepdims=True) * b,
    lambda s, a, b: np.mean(a, axis=1, keepdims=True) + np.max(b, axis=0),
    lambda s, a, b: np.cumsum(a, axis=1) * 0.5 + np.flip(b, 0),
    lambda s, a, b: np.roll(a, 1, axis=1) * np.sort(b, axis=1),
    lambda s, a, b: np.concatenate([a[:, :1], b[:, 1:]], axis=1),
    lambda s, a, b: np.where(a > b, a * b, a - b),
    lambda s, a, b: np.clip(a, -0.5, 0.5) + np.abs(b),
    lambda s, a, b: np.einsum("ij,kj->ik", a, b) @ a * 0.2,
    lambda s, a, b: (a.T * b.T).T + a.reshape(3, 2).reshape(2, 3),
    lambda s, a, b: d.logsumexp(a, axis=1, keepdims=True) - b,
    lambda s, a, b: np.linalg.norm(a, axis=1, keepdims=True) * b + np.prod(b, axis=0),
    lambda s, a, b: np.stack([a[0], b[1]]) + a[1, 2],
    lambda s, a, b: d.at(a)[0, 1:].set(b[1, :2]) * b,
    lambda s, a, b: np.tile(a[:, :1], (1, 3)) + np.repeat(b[:1], 2, axis=0),
    lambda s, a, b: d.sigmoid(a) * d.softplus(b) + d.erf(a),
    lambda s, a, b: np.linalg.solve(np.eye(2) * 3.0 + a @ a.T * 0.1, b),
    lambda s, a, b: np.log1p(a * a) * np.cos(b) + np.var(a, axis=1, keepdims=True),
    lambda s, a, b: np.pad(a[:, 1:], ((0, 0), (1, 0)), mode="edge") + np.triu(b),
    lambda s, a, b: a * np.linalg.det(np.eye(2) + 0.1 * a[:, :2]) + b[1, 1] ** 2,
]


@st.composite
def programs(draw):
    n = draw(st.integers(1, 6))
    steps = []
    for k in range(n):
        steps.append((draw(st.integers(0, len(STEPS) - 1)), draw(st.integers(0, k + 1)), draw(st.integers(0, k + 1))))
    outs = draw(st.lists(st.integers(0, n + 1), min_size=1, max_size=3))
    return steps, outs


def make(program):
    steps, outs = program

    def f(x, y):
        s = [x, y]
        for which, i, j in steps:
            s.append(STEPS[which](s, s[i], s[j]))
        return tuple(s[k] for k in outs)

    return f


@SETTINGS
@given(programs(), st.integers(0, 2**31 - 1))
def test_lemma1_random_programs(program, seed):
    rng = np.random.default_rng(seed)
    f = make(program)
    args = (rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 3)))
    out, pb = d.vjp(f, *args)
    expected = f(*args)
    for a, b in zip(out, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    u = tuple(random_like(rng, np.asarray(o)) for o in out)
    v = tuple(random_like(rng, a) for a in args)
    rev = inner(pb(u), v)
    _, t = d.jvp(f, args, v)
    fwd = inner(u, t)
    close(rev, fwd, rtol=1e-9, atol=1e-10, what="Lemma 1")


@settings(max_examples=max(6, _N // 4), deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(), st.integers(0, 2**31 - 1))
def test_hessians_of_random_programs_agree(program, seed):
    rng = np.random.default_rng(seed)
    f = make(program)
    y = rng.uniform(-1, 1, (2, 3))
    w = [rng.standard_normal((2, 3)) for _ in program[1]]

    def g(x):
        return sum(np.sum(o * wi) for o, wi in zip(f(x, y), w))

    x = rng.uniform(-1, 1, (2, 3))
    h1 = d.hessian(g)(x)
    h2 = d.jacrev(d.jacrev(g))(x)
    assert h1.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(h1, h2, rtol=1e-8, atol=1e-9)
    hm = h1.reshape(6, 6)
    np.testing.assert_allclose(hm, hm.T, rtol=1e-8, atol=1e-9)
