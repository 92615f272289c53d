"""Checks for complex rules: reverse mode, forward mode and finite differences in the real *and*
imaginary directions agree, to first and second order, and values are numpy's to the bit.

A function ``f`` of complex and real arguments with complex or real outputs is reduced to the
real number ``R = sum Re(conj(U) f(...))`` for a random complex weight ``U`` (real for a real
output), which mixes the real and imaginary parts of every output. With JAX's convention the
gradient of ``R`` with respect to ``z = x + iy`` is ``g = dR/dx - i dR/dy``, so its derivative
along ``V = Vr + i Vi`` is ``sum Re(g V)``; finite differences move the plain arguments along
``V``, i.e. in both the real and the imaginary directions. References are finite differences
of the plain numpy program (first order) and of the checked first derivative (second order).
"""

import numpy as np

import deltaad as d
from deltaad.pytrees import tree_flatten


def leaves(tree):
    return tree_flatten(tree)[0]


def is_complex(x):
    return np.iscomplexobj(x)


def rand_like(rng, x):
    """A random direction shaped like ``x``: complex for a complex ``x``."""
    shape = np.shape(x)
    r = rng.standard_normal(shape)
    if is_complex(x):
        r = r + 1j * rng.standard_normal(shape)
    if isinstance(x, np.ndarray):
        return np.asarray(r, dtype=np.result_type(x.dtype, r))
    return complex(r) if is_complex(x) else float(r)


def fd_directional(phi, h=1e-4):
    return (-phi(2 * h) + 8 * phi(h) - 8 * phi(-h) + phi(-2 * h)) / (12 * h)


def pairing(u, out):
    """``sum Re(conj(u) out)``: on plain values and on duals alike."""
    if out is None or u is None:
        return 0.0
    if is_complex(u) or d.numpy.ComplexDual is type(out) or is_complex(d.value(out)):
        return np.sum(np.real(np.conj(u) * out))
    return np.sum(u * out)


def reduced(f, us):
    """``R(*args) = sum over outputs of Re(conj(U) out)``."""

    def R(*args):
        tot = 0.0
        for u, y in zip(us, leaves(f(*args))):
            tot = tot + pairing(u, y)
        return tot

    return R


def moved(args, vs, s):
    return tuple(a + s * v for a, v in zip(args, vs))


def directional(g, v):
    """The derivative along ``v`` given a gradient ``g`` (JAX's convention for complex)."""
    return float(sum(np.sum(np.real(np.asarray(gi) * vi)) for gi, vi in zip(g, v)))


def close(a, b, rtol, atol, what):
    scale = max(1.0, abs(a), abs(b))
    assert abs(a - b) <= atol * scale + rtol * max(abs(a), abs(b)), "%s: %r vs %r" % (what, a, b)


def same_value(a, b):
    """Bit-for-bit equal plain values of the same shape and dtype (a deltaad scalar may be a
    float where numpy gives a numpy float, or a 0-d array)."""
    la, lb = leaves(a), leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        xa, ya = np.asarray(x), np.asarray(y)
        assert xa.shape == ya.shape, (xa.shape, ya.shape)
        assert xa.dtype == ya.dtype, (xa.dtype, ya.dtype)
        assert xa.tobytes() == ya.tobytes(), (x, y)
        if isinstance(y, (complex, np.complexfloating)):
            assert type(x) is type(y), (type(x), type(y))


def near_value(a, b):
    """Equal to rounding (numpy's object arithmetic on scalars may round differently from its
    vectorised loops), with numpy's shapes and dtypes."""
    la, lb = leaves(a), leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        xa, ya = np.asarray(x), np.asarray(y)
        assert xa.shape == ya.shape and xa.dtype == ya.dtype, (xa, ya)
        np.testing.assert_allclose(xa, ya, rtol=1e-13, atol=1e-15)


def check(f, args, seed=0, rtol=1e-5, atol=1e-6, second=True, modes=("fr", "rr", "rf", "ff"),
          h=1e-4, exact=True):
    """First order (reverse, forward, FD, and vjp against grad) and, with ``second``, the
    four nestings of Hessian-vector products against FD of the gradient; values numpy's to
    the bit (``exact``) or to rounding."""
    same_value = globals()["same_value"] if exact else near_value
    rng = np.random.default_rng(seed)
    args = tuple(args)
    nums = tuple(range(len(args)))
    expected = f(*args)
    out, pb = d.vjp(f, *args)
    same_value(out, expected)
    us = [rand_like(rng, np.asarray(y)) for y in leaves(expected)]
    R = reduced(f, us)
    vs = tuple(rand_like(rng, a) for a in args)
    g = d.grad(R, argnums=nums)(*args)
    for gi, a in zip(g, args):
        assert np.shape(gi) == np.shape(a)
        assert is_complex(gi) == is_complex(a), (gi, a)
    rev = directional(g, vs)
    fd = fd_directional(lambda s: R(*moved(args, vs, s)), h)
    close(rev, fd, rtol, atol, "reverse vs finite differences")
    out2, t = d.jvp(f, args, vs)
    same_value(out2, expected)
    fwd = float(sum(pairing(u, ti) for u, ti in zip(us, leaves(t))))
    close(fwd, fd, rtol, atol, "forward vs finite differences")
    close(fwd, rev, 1e-9, 1e-10, "forward vs reverse")
    # vjp with the cotangent conj(U) seeds exactly R's pairs: it is R's gradient
    from deltaad.pytrees import tree_unflatten
    cts = tree_unflatten(tree_flatten(expected)[1],
                         [np.conj(u) if is_complex(u) else u for u in us])
    gv = pb(cts)
    close(directional(gv, vs), rev, 1e-9, 1e-10, "vjp vs grad")
    if second:
        check_second(R, args, vs, rng, modes, h)
    return rev


def check_second(R, args, vs, rng, modes, h=1e-4, rtol=1e-4, atol=1e-5):
    nums = tuple(range(len(args)))
    ws = tuple(rand_like(rng, a) for a in args)
    grad = d.grad(R, argnums=nums)

    def L(gs):  # the derivative along ws, from a gradient (JAX's convention)
        return sum(np.sum(np.real(w * gi)) if is_complex(w) else np.sum(w * gi)
                   for w, gi in zip(ws, gs))

    fd = fd_directional(lambda s: float(L(grad(*moved(args, vs, s)))), h)
    if "fr" in modes:
        _, hv = d.jvp(grad, args, vs)
        close(float(L(hv)), fd, rtol, atol, "forward-over-reverse")
    if "rr" in modes:
        hv = d.grad(lambda *xs: L(grad(*xs)), argnums=nums)(*args)
        close(directional(hv, vs), fd, rtol, atol, "reverse-over-reverse")
    if "rf" in modes:
        def jv(*xs):
            return d.jvp(R, xs, ws)[1]

        hv = d.grad(jv, argnums=nums)(*args)
        close(directional(hv, vs), fd, rtol, atol, "reverse-over-forward")
    if "ff" in modes:
        def jv2(*xs):
            return d.jvp(R, xs, ws)[1]

        _, whv = d.jvp(jv2, args, vs)
        close(float(whv), fd, rtol, atol, "forward-over-forward")


def crandom(rng, shape, lo=0.3, hi=1.5):
    """Complex values with moduli in [lo, hi] and random phases (away from 0, the branch
    point of log and sqrt; phases away from pi, their branch cut)."""
    r = rng.uniform(lo, hi, shape)
    phi = rng.uniform(-2.6, 2.6, shape)
    z = r * np.exp(1j * phi)
    return z if np.shape(z) else complex(z)
