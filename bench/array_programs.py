"""The array programs: numpy code on parameter arrays (an MLP, the ADBench GMM, small ops).

Each program is ``fn(ns, n, params)`` like the scalar ones, but written against an *array
namespace* ``A = array_ns(ns)``: numpy for the float baseline and for deltaad (whose
``grad`` differentiates plain numpy code), ``autograd.numpy`` for autograd and a thin torch
wrapper for torch (the modes attach theirs as ``ns.array``). Only what the three libraries
spell differently goes through ``A`` (reductions with ``axis``/``keepdims``, constants);
arithmetic and ``@`` are ordinary operators.

- ``mlp``: softmax cross-entropy of a 784-h-h-10 tanh MLP on a fixed batch of 256; the size
  knob n is the hidden width h (the spec point is h = 512: 784-512-512-10, batch 256);
  gradient with respect to (W1, b1, W2, b2, W3, b3).
- ``gmm``: the ADBench Gaussian-mixture objective (d = 10, k = 25) on n fixed points (the spec
  point is n = 1000), gradient with respect to (alphas, means, icf).
- ``smallops`` (``smallops1``, ``smallops16``): a chain of n elementwise operations on a
  shape-(3,) (shape-(1,), shape-(16,)) array and a sum: the per-operation overhead on small
  arrays (2n + 1 operations).
- ``rk4small``: n RK4 steps of Lotka-Volterra on a 2-element numpy state (29n + 2
  operations): the same overhead in the program a user writes.
- ``stencil``: n explicit heat-equation steps on 64 grid points, numpy's finite-difference
  shape (slices, a scalar times an array, ``concatenate`` for the boundary, a clip at 0 by
  ``maximum``; 11n + 2 operations): the per-operation overhead of simulation and PDE code.

``ops(n)`` counts scalar floating-point work (multiply-adds), not deltaad bindings.
"""

import math

import numpy as np

from .program import Program, register


# --------------------------------------------------------------------------------------------
# array namespaces


class NumpyLike:
    """numpy, ``autograd.numpy`` or ``jax.numpy``: the functions the programs use."""

    def __init__(self, mod, name):
        self.name = name
        self.mod = mod
        self.tanh, self.exp, self.log, self.sin = mod.tanh, mod.exp, mod.log, mod.sin

    def sum(self, x, axis=None, keepdims=False):
        return self.mod.sum(x, axis=axis, keepdims=keepdims)

    def max(self, x, axis=None, keepdims=False):
        return self.mod.max(x, axis=axis, keepdims=keepdims)

    def const(self, a):
        return a

    def concatenate(self, xs):
        return self.mod.concatenate(xs)

    def maximum(self, x, c):
        return self.mod.maximum(x, c)


class TorchArrays:
    """The same functions on float64 torch tensors."""

    name = "torch"

    def __init__(self, torch):
        self.torch = torch
        self.tanh, self.exp, self.log, self.sin = torch.tanh, torch.exp, torch.log, torch.sin
        self._cache = {}

    def sum(self, x, axis=None, keepdims=False):
        if axis is None:
            return self.torch.sum(x)
        return self.torch.sum(x, dim=axis, keepdim=keepdims)

    def max(self, x, axis=None, keepdims=False):
        if axis is None:
            return self.torch.amax(x)
        return self.torch.amax(x, dim=axis, keepdim=keepdims)

    def concatenate(self, xs):
        return self.torch.cat(xs)

    def maximum(self, x, c):
        return self.torch.clamp(x, min=c)

    def const(self, a):
        # fixed data: converted once (shares memory with the numpy array)
        t = self._cache.get(id(a))
        if t is None or t[0] is not a:
            t = (a, self.torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64)))
            self._cache[id(a)] = t
        return t[1]


NUMPY = NumpyLike(np, "numpy")


def array_ns(ns):
    """The array namespace of a mode's namespace: its ``array`` attribute, else numpy (the
    float baseline and deltaad run plain numpy)."""
    return getattr(ns, "array", None) or NUMPY


def _rng(rng):
    """A numpy generator seeded from the harness's ``random.Random`` (deterministic)."""
    return np.random.default_rng(rng.getrandbits(64))


# --------------------------------------------------------------------------------------------
# mlp


MLP_BATCH = 256
MLP_IN, MLP_OUT = 784, 10
_MLP_DATA = {}


def mlp_data():
    """The fixed batch: 256 inputs in [0, 1) and one-hot labels."""
    if not _MLP_DATA:
        g = np.random.default_rng(20240404)
        x = g.random((MLP_BATCH, MLP_IN))
        labels = g.integers(0, MLP_OUT, MLP_BATCH)
        y = np.zeros((MLP_BATCH, MLP_OUT))
        y[np.arange(MLP_BATCH), labels] = 1.0
        # fixed data: a float array even when first made under differentiation (numpy's
        # constructors give a fillable object array there)
        _MLP_DATA.update(x=x, y=np.asarray(y, dtype=float))
    return _MLP_DATA["x"], _MLP_DATA["y"]


def mlp(ns, n, params):
    """Mean softmax cross-entropy (stable log-softmax) of a 784-n-n-10 tanh MLP."""
    A = array_ns(ns)
    xd, yd = mlp_data()
    x, y = A.const(xd), A.const(yd)
    W1, b1, W2, b2, W3, b3 = params
    h = A.tanh(x @ W1 + b1)
    h = A.tanh(h @ W2 + b2)
    z = h @ W3 + b3
    z = z - A.max(z, axis=1, keepdims=True)
    logp = z - A.log(A.sum(A.exp(z), axis=1, keepdims=True))
    return -A.sum(y * logp) * (1.0 / MLP_BATCH)


def mlp_input(n, rng):
    g = _rng(rng)
    out = []
    for fan_in, fan_out in ((MLP_IN, n), (n, n), (n, MLP_OUT)):
        out.append(g.normal(0.0, 1.0 / math.sqrt(fan_in), (fan_in, fan_out)))
        out.append(g.normal(0.0, 0.1, fan_out))
    return tuple(out)


def mlp_ops(n):
    return MLP_BATCH * (MLP_IN * n + n * n + n * MLP_OUT)


# --------------------------------------------------------------------------------------------
# gmm (ADBench, python/modules/Autograd/gmm_objective.py, vectorised)


GMM_D, GMM_K = 10, 25
GMM_GAMMA, GMM_M = 1.0, 0  # ADBench's wishart prior parameters
_GMM_DATA = {}


def _multigammaln(a, p):
    return 0.25 * p * (p - 1) * math.log(math.pi) + sum(math.lgamma(a - 0.5 * j) for j in range(p))


def _lower_scatter(d):
    """The constant 0/1 matrix P (d(d-1)/2, d*d) with ``(icf[d:] @ P).reshape(d, d)`` = Lᵀ,
    L strictly lower triangular filled column by column (ADBench's ``constructL``)."""
    P = np.zeros((d * (d - 1) // 2, d * d))
    idx = 0
    for col in range(d):
        for row in range(col + 1, d):
            P[idx, col * d + row] = 1.0  # Lᵀ[col, row] = L[row, col]
            idx += 1
    return np.asarray(P, dtype=float)  # (a float array even when first made under differentiation)


def gmm_data(n):
    """n fixed points in d = 10 dimensions (ADBench draws them uniformly in [0, 1))."""
    x = _GMM_DATA.get(n)
    if x is None:
        x = _GMM_DATA[n] = np.random.default_rng(1000 + n).random((n, GMM_D))
    if "P" not in _GMM_DATA:
        _GMM_DATA["P"] = _lower_scatter(GMM_D)
    return x, _GMM_DATA["P"]


def gmm(ns, n, params):
    """ADBench's GMM objective: log-likelihood of n points under k Gaussians with inverse
    Cholesky factors exp(icf[:, :d]) on the diagonal and icf[:, d:] below it, plus the
    Wishart prior."""
    A = array_ns(ns)
    alphas, means, icf = params
    xd, Pd = gmm_data(n)
    x, P = A.const(xd), A.const(Pd)
    d, k = GMM_D, GMM_K
    q = icf[:, :d]
    Qdiags = A.exp(q)                                         # k x d
    sum_qs = A.sum(q, axis=1)                                 # k
    Lt = (icf[:, d:] @ P).reshape((k, d, d))                  # k x d x d: Lᵀ per component
    xc = x[None, :, :] - means[:, None, :]                    # k x n x d
    Lxc = Qdiags[:, None, :] * xc + xc @ Lt                   # (Q x)ᵀ per point
    sqsum = A.sum(Lxc * Lxc, axis=2)                          # k x n
    inner = (alphas + sum_qs)[:, None] - 0.5 * sqsum          # k x n
    mx = A.max(inner, axis=0, keepdims=True)
    lse = A.log(A.sum(A.exp(inner - mx), axis=0)) + mx[0]     # n
    amx = A.max(alphas)
    lse_alphas = A.log(A.sum(A.exp(alphas - amx))) + amx
    const = -n * d * 0.5 * math.log(2.0 * math.pi)
    # log_wishart_prior
    wn = d + GMM_M + 1
    off = icf[:, d:]
    prior = A.sum(0.5 * GMM_GAMMA * GMM_GAMMA * (A.sum(Qdiags * Qdiags, axis=1)
                                                  + A.sum(off * off, axis=1)) - GMM_M * sum_qs)
    C = wn * d * math.log(GMM_GAMMA / math.sqrt(2.0))
    prior = prior - k * (C - _multigammaln(0.5 * wn, d))
    return const + A.sum(lse) - n * lse_alphas + prior


def gmm_input(n, rng):
    g = _rng(rng)
    d, k = GMM_D, GMM_K
    alphas = g.normal(0.0, 1.0, k)
    means = g.random((k, d))
    icf = g.normal(0.0, 0.3, (k, d + d * (d - 1) // 2))
    return (alphas, means, icf)


def gmm_ops(n):
    d, k = GMM_D, GMM_K
    return n * k * (d * d + 3 * d + 4)


# --------------------------------------------------------------------------------------------
# smallops: per-operation overhead on shape-(1,), (3,) and (16,) arrays; rk4small


def smallops(ns, n, params):
    """``y = sin(y) + x`` n times on small arrays, then a sum: 2n + 1 operations."""
    A = array_ns(ns)
    (x,) = params
    y = x
    for _ in range(n):
        y = A.sin(y) + x
    return A.sum(y)


def _smallops_input(size):
    def make(n, rng):
        return (np.array([rng.uniform(-1.0, 1.0) for _ in range(size)]),)

    return make


smallops_input = _smallops_input(3)

RK4_H = 0.01
_SWAP = np.array([[0.0, 1.0], [1.0, 0.0]])
_LV_A = np.array([1.1, -0.4])   # prey growth, predator death
_LV_B = np.array([-0.4, 0.1])   # predation, predator growth


def rk4small(ns, n, params):
    """n RK4 steps of Lotka-Volterra on a 2-element state kept as one numpy array (the
    program a user writes with numpy: elementwise arithmetic, the other species by a constant
    swap matrix), then the sum of squares of the final state."""
    A = array_ns(ns)
    (s,) = params
    a, b, swap = A.const(_LV_A), A.const(_LV_B), A.const(_SWAP)
    h = RK4_H

    def rhs(u):
        return u * (a + b * (u @ swap))

    for _ in range(n):
        k1 = rhs(s)
        k2 = rhs(s + (0.5 * h) * k1)
        k3 = rhs(s + (0.5 * h) * k2)
        k4 = rhs(s + h * k3)
        s = s + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return A.sum(s * s)


def rk4small_input(n, rng):
    return (np.array([1.0 + 0.5 * rng.random(), 0.5 + 0.5 * rng.random()]),)


# --------------------------------------------------------------------------------------------
# stencil: a finite-difference time loop on a small grid

STENCIL_POINTS = 64
STENCIL_C = 0.2     # diffusion number (stable below 1/2)
_STENCIL_ZERO = np.zeros(1)


def stencil(ns, n, params):
    """n explicit heat-equation steps on 64 points, zero at both ends, the source term
    clipped at 0, then the sum of squares: ``u = max(u + c * concat([0], lap(u), [0]) + s, 0)``
    with ``lap(u) = u[2:] - 2 u[1:-1] + u[:-2]`` (11 operations a step)."""
    A = array_ns(ns)
    u, s = params
    z = A.const(_STENCIL_ZERO)
    c = STENCIL_C
    for _ in range(n):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u = A.maximum(u + c * A.concatenate([z, lap, z]) + s, 0.0)
    return A.sum(u * u)


def stencil_input(n, rng):
    g = _rng(rng)
    return (g.uniform(0.0, 1.0, STENCIL_POINTS), g.uniform(-0.01, 0.01, STENCIL_POINTS))


# --------------------------------------------------------------------------------------------
# registration

ARRAY_MODES = ("float", "deltaad-c", "deltaad-python", "torch", "autograd", "jax")

register(Program(
    "mlp", mlp, mlp_ops, mlp_input, n_max=2048, check_n=3,
    description="MLP loss: 784-n-n-10, tanh, softmax cross-entropy, batch 256, numpy; "
                "gradient w.r.t. (W1, b1, W2, b2, W3, b3); spec point n = 512",
    ops_text="256(784n + n² + 10n) multiply-adds", kind="array", modes=ARRAY_MODES,
    ops_are_bindings=False, spec_n=512,
    preset_sizes={"tiny": [2, 3, 4], "quick": [32, 128, 512],
                  "full": [16, 32, 64, 128, 256, 512, 1024, 2048]}))
register(Program(
    "gmm", gmm, gmm_ops, gmm_input, n_max=30_000, check_n=7,
    description="ADBench GMM objective, d = 10, k = 25, n points, numpy; gradient w.r.t. "
                "(alphas, means, icf); spec point n = 1000",
    ops_text="25n·134 multiply-adds", kind="array", modes=ARRAY_MODES, ops_are_bindings=False,
    spec_n=1000,
    preset_sizes={"tiny": [5, 10, 20], "quick": [100, 300, 1000],
                  "full": [30, 100, 300, 1000, 3000, 10000, 30000]}))
for _name, _size in (("smallops", 3), ("smallops1", 1), ("smallops16", 16)):
    register(Program(
        _name, smallops, lambda n: 2 * n + 1, _smallops_input(_size), n_max=10_000, check_n=5,
        description="y = sin(y) + x n times on shape-(%d,) arrays, then a sum (per-op overhead)"
                    % _size,
        ops_text="2n+1", kind="array", modes=ARRAY_MODES, ops_are_bindings=True, spec_n=500,
        overhead=True,
        preset_sizes={"tiny": [5, 10, 20], "quick": [50, 150, 500],
                      "full": [50, 150, 500, 1500, 5000]}))
register(Program(
    "rk4small", rk4small, lambda n: 29 * n + 2, rk4small_input, n_max=3000, check_n=3,
    description="n RK4 steps of Lotka-Volterra on a 2-element numpy state, then a sum of "
                "squares (per-op overhead of a realistic small-array program)",
    ops_text="29n+2", kind="array", modes=ARRAY_MODES, ops_are_bindings=True, spec_n=150,
    overhead=True,
    preset_sizes={"tiny": [2, 4, 8], "quick": [15, 50, 150], "full": [15, 50, 150, 500, 1500]}))
register(Program(
    "stencil", stencil, lambda n: 11 * n + 2, stencil_input, n_max=3000, check_n=3,
    description="n explicit heat-equation steps on 64 points (slices, concatenate, maximum), "
                "then a sum of squares (per-op overhead of numpy simulation code)",
    ops_text="11n+2", kind="array", modes=ARRAY_MODES, ops_are_bindings=True, spec_n=150,
    overhead=True,
    preset_sizes={"tiny": [2, 4, 8], "quick": [15, 50, 150], "full": [15, 50, 150, 500, 1500]}))
