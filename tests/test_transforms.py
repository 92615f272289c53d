"""The differential operators: worked examples from the papers, Lemma 1 on random programs,
the Delta term against the fast eval, nesting, Jacobians, argnums, has_aux, long chains.

Expected numbers come from the papers' worked examples (Krawiec et al.; Sigal's thesis; Abadi
and Plotkin), from hand-derived formulas, from
finite differences or from the other mode -- never from the mode under test.
"""

import math
import re
from collections import namedtuple

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import deltaad
from deltaad import delta as D_
from helpers import (
    assert_close, close, dot, fd, fd_partial, finite_inputs, program_is_tame, programs,
    scaled, step_for,
)

grad = deltaad.grad


def fwd_deriv(f, x):
    return deltaad.jvp(f, (x,), (1.0,))[1]


# --------------------------------------------------------------------------------------------
# Worked examples of the papers


def test_perturbation_confusion():
    """d/dx [x * d/dy (x + y) at y=1] at x=1 is 1 (a confused system says 2)."""
    assert grad(lambda x: x * grad(lambda y: x + y)(1.0))(1.0) == 1.0
    # every combination of modes
    assert fwd_deriv(lambda x: x * fwd_deriv(lambda y: x + y, 1.0), 1.0) == 1.0
    assert fwd_deriv(lambda x: x * grad(lambda y: x + y)(1.0), 1.0) == 1.0
    assert grad(lambda x: x * fwd_deriv(lambda y: x + y, 1.0))(1.0) == 1.0


def test_triple_nesting():
    """d/dx (x * d/dy (y * d/dz (z * (y * x)))) at 1, 1, 1 is 4."""

    def f(x):
        return x * grad(lambda y: y * grad(lambda z: z * (y * x))(1.0))(1.0)

    assert grad(f)(1.0) == 4.0
    assert fwd_deriv(f, 1.0) == 4.0

    def g(x):
        return x * fwd_deriv(lambda y: y * grad(lambda z: z * (y * x))(1.0), 1.0)

    assert grad(g)(1.0) == 4.0
    # and away from 1: d/dx 2 x^2 y at y=1 -> 4x
    for x in (0.5, -3.0, 2.25):
        assert grad(f)(x) == 4.0 * x


def test_higher_order_function_nesting():
    """Thesis l.1938: s(u, f, x) = f(u + x); ds(f, x) = d/du s at u = 0;
    ds(lambda x: ds(lambda y: y**3, x), 5) == 30."""

    def s(u, f, x):
        return f(u + x)

    def ds(f, x):
        return grad(lambda u: s(u, f, x))(0.0)

    def ds_fwd(f, x):
        return deltaad.jvp(lambda u: s(u, f, x), (0.0,), (1.0,))[1]

    assert ds(lambda x: ds(lambda y: y ** 3, x), 5.0) == 30.0
    assert ds_fwd(lambda x: ds(lambda y: y ** 3, x), 5.0) == 30.0
    assert ds(lambda x: ds_fwd(lambda y: y ** 3, x), 5.0) == 30.0
    assert ds_fwd(lambda x: ds_fwd(lambda y: y ** 3, x), 5.0) == 30.0


def test_cube_of_x_plus_one():
    def cube(x):
        return x * x * x

    v, g = deltaad.value_and_grad(lambda x: cube(x + 1.0))(4.0)
    assert (v, g) == (125.0, 75.0)
    assert deltaad.jvp(lambda x: cube(x + 1), (4.0,), (1.0,)) == (125.0, 75.0)


def test_two_argument_example():
    f = lambda x, y: 1 + x ** 3 - y ** 2  # noqa: E731
    v, g = deltaad.value_and_grad(f, argnums=(0, 1))(2.0, 4.0)
    assert v == -7.0 and g == (12.0, -8.0)
    assert deltaad.jvp(f, (2.0, 4.0), (1.0, 0.0)) == (-7.0, 12.0)
    assert deltaad.jvp(f, (2.0, 4.0), (0.0, 1.0)) == (-7.0, -8.0)
    assert grad(f)(2.0, 4.0) == 12.0
    assert grad(f, argnums=1)(2.0, 4.0) == -8.0


def monomial(k):
    """x ** k by repeated squaring (recursion and branches on a Python int)."""

    def f(x):
        if k == 0:
            return 1.0
        if k % 2 == 0:
            y = monomial(k // 2)(x)
            return y * y
        return x * monomial(k - 1)(x)

    return f


@given(st.integers(0, 80), st.floats(0.5, 1.5))
def test_monomial_by_repeated_squaring(k, x):
    v, g = deltaad.value_and_grad(monomial(k))(x)
    assert_close(v, x ** k, rtol=1e-13, atol=0)
    want = k * x ** (k - 1) if k else 0.0
    assert_close(g, want, rtol=1e-13, atol=0)
    assert_close(fwd_deriv(monomial(k), x), want, rtol=1e-13, atol=0)
    want2 = k * (k - 1) * x ** (k - 2) if k > 1 else 0.0
    assert_close(grad(grad(monomial(k)))(x), want2, rtol=1e-12, atol=0)


def taylor(x, n):
    """Thesis benchmark: the Taylor series of 1/x at 1, n terms."""
    prev = 1.0
    acc = 1.0
    for _ in range(n):
        prev = prev * (-(x - 1.0))
        acc = prev + acc
    return acc


def test_taylor_loop():
    n = 2000
    v, g = deltaad.value_and_grad(taylor)(0.5, n)
    assert abs(v - 2.0) < 1e-12 and abs(g + 4.0) < 1e-12
    p, t = deltaad.jvp(lambda x: taylor(x, n), (0.5,), (1.0,))
    assert p == v and abs(t + 4.0) < 1e-12
    # finite n, hand-derived: acc = sum_{k<=n} r^k with r = 1 - x; d/dx = -sum k r^(k-1)
    x, n = 0.7, 25
    r = 1 - x
    assert_close(grad(taylor)(x, n), -sum(k * r ** (k - 1) for k in range(1, n + 1)), 1e-13, 0)


# --------------------------------------------------------------------------------------------
# The quaternion of Fig. 12, written exactly as its left column

Vec3 = namedtuple("Vec3", "x y z")
Quaternion = namedtuple("Quaternion", "x y z w")


def q_to_vec(q):
    return Vec3(q.x, q.y, q.z)


def vdot(p, q):
    return p.x * q.x + p.y * q.y + p.z * q.z


def vadd(p, q):  # the paper's (++)
    return Vec3(p.x + q.x, p.y + q.y, p.z + q.z)


def scale(k, v):
    return Vec3(k * v.x, k * v.y, k * v.z)


def cross(a, b):
    return Vec3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x)


def norm(x):
    return deltaad.sqrt(vdot(x, x))


def rotate_vec_by_quat(v, q):
    u = q_to_vec(q)
    s = q.w
    return vadd(vadd(scale(2.0 * vdot(u, v), u), scale(s * s - vdot(u, u), v)),
                scale(2.0 * s, cross(u, v)))


Q0 = Quaternion(1.1, 2.2, 3.3, 4.4)
V0 = Vec3(5.5, 6.6, 7.7)


def e(q, v):
    return rotate_vec_by_quat(v, q).x


def quat_partials_by_hand(q, v):
    """Hand-derived partials of x = 2 (u.v) u_x + (s^2 - u.u) v_x + 2 s (u_y v_z - u_z v_y)."""
    ux, uy, uz, s = q
    vx, vy, vz = v
    uv = ux * vx + uy * vy + uz * vz
    uu = ux * ux + uy * uy + uz * uz
    return [
        2 * uv,
        2 * vy * ux - 2 * uy * vx + 2 * s * vz,
        2 * vz * ux - 2 * uz * vx - 2 * s * vy,
        2 * s * vx + 2 * (uy * vz - uz * vy),
        2 * ux * ux + s * s - uu,
        2 * uy * ux - 2 * s * uz,
        2 * uz * ux + 2 * s * uy,
    ]


def test_quaternion_fig12_partials():
    want = quat_partials_by_hand(Q0, V0)
    gq, gv = grad(e, argnums=(0, 1))(Q0, V0)
    assert type(gq) is Quaternion and type(gv) is Vec3
    got = list(gq) + list(gv)
    flat = list(Q0) + list(V0)

    def e_flat(*xs):
        return e(Quaternion(*xs[:4]), Vec3(*xs[4:]))

    for k in range(7):
        assert_close(got[k], want[k], rtol=1e-13, atol=1e-12, what="partial %d" % k)
        assert_close(got[k], fd_partial(e_flat, flat, k), rtol=1e-8, atol=1e-8)
        tang = [0.0] * 7
        tang[k] = 1.0
        _, t = deltaad.jvp(e, (Q0, V0), (Quaternion(*tang[:4]), Vec3(*tang[4:])))
        assert_close(t, got[k], rtol=1e-14, atol=1e-12, what="forward partial %d" % k)
    # the value, by hand
    assert_close(deltaad.value_and_grad(e)(Q0, V0)[0], rotate_by_hand(Q0, V0), 1e-14, 0)


def rotate_by_hand(q, v):
    ux, uy, uz, s = q
    vx, vy, vz = v
    uv = ux * vx + uy * vy + uz * vz
    uu = ux * ux + uy * uy + uz * uz
    return 2 * uv * ux + (s * s - uu) * vx + 2 * s * (uy * vz - uz * vy)


_LET = re.compile(r"^Let x(\d+) = (.*) in$")
_ATOM = re.compile(r"Var x(\d+)")


def test_quaternion_fig12_delta():
    out, d = deltaad.make_delta(e, Q0, V0)
    assert_close(out, rotate_by_hand(Q0, V0), 1e-14, 0)
    text = str(d)
    lines = text.split("\n")
    # a chain of Let bindings over Var ids, ending in the output's Var
    assert len(lines) >= 2
    defined = set(range(7))  # the seven inputs, Var x0 .. x6 in argument order
    for line in lines[:-1]:
        m = _LET.match(line)
        assert m, "not a Let line: %r" % line
        i, rhs = int(m.group(1)), m.group(2)
        assert i not in defined
        used = [int(u) for u in _ATOM.findall(rhs)]
        assert 1 <= len(used) <= 2 and all(u in defined for u in used), line
        # only Add, Scale, Var and numbers on the right
        assert re.fullmatch(r"(Add|Scale|Var|x\d+|[-+0-9.e()]|\s)+", rhs), rhs
        defined.add(i)
    assert re.fullmatch(r"Var x(\d+)", lines[-1]) and int(lines[-1][5:]) in defined
    # one binding per primitive operation with a dual operand: dot 5, 2*dot 1, scale 3,
    # s*s 1, dot 5, minus 1, scale 3, 2*s 1, cross 9, scale 3, two vector additions 6
    assert len(lines) - 1 == 38
    # the term is Let-nested, and its reference eval gives the seven partials
    assert isinstance(d, D_.Let)
    dmap = D_.eval(1.0, d, {})
    assert set(dmap) <= set(range(7))
    gq, gv = grad(e, argnums=(0, 1))(Q0, V0)
    g = list(gq) + list(gv)
    assert [dmap.get(k, 0.0) for k in range(7)] == g
    want = quat_partials_by_hand(Q0, V0)
    for k in range(7):
        assert_close(dmap[k], want[k], rtol=1e-13, atol=1e-12)


# --------------------------------------------------------------------------------------------
# Random programs: Lemma 1, Delta eval, Jacobians


def _vjp_program(prog, xs, ct):
    out, pb = deltaad.vjp(lambda *a: tuple(prog.run(deltaad, a)), *xs)
    return out, pb(tuple(ct))


def _jvp_program(prog, xs, ds):
    return deltaad.jvp(lambda *a: tuple(prog.run(deltaad, a)), tuple(xs), tuple(ds))


@st.composite
def program_and_point(draw, **kw):
    prog = draw(programs(**kw))
    xs = draw(st.lists(finite_inputs, min_size=prog.n_in, max_size=prog.n_in))
    assume(program_is_tame(prog, xs))
    return prog, xs


directions = st.floats(-1.0, 1.0, allow_nan=False)


@given(program_and_point(), st.data())
def test_lemma1_reverse_vs_forward(pp, data):
    """Paper Lemma 1: dt . jvp(f, s, ds) == vjp(f, s)(dt) . ds."""
    prog, xs = pp
    m = len(prog.outs)
    ds = data.draw(st.lists(directions, min_size=len(xs), max_size=len(xs)), label="ds")
    dt = data.draw(st.lists(directions, min_size=m, max_size=m), label="dt")
    out_f, t_out = _jvp_program(prog, xs, ds)
    out_r, ct_in = _vjp_program(prog, xs, dt)
    assert out_f == out_r == tuple(prog.run(deltaad, xs))
    lhs = dot(dt, t_out)
    rhs = dot(ct_in, ds)
    mag = sum(abs(a * b) for a, b in zip(dt, t_out)) + sum(abs(a * b) for a, b in zip(ct_in, ds))
    assert abs(lhs - rhs) <= 1e-9 * (1.0 + mag), (prog, lhs, rhs)


@given(program_and_point())
def test_lemma1_against_finite_differences(pp):
    """The vjp itself is right (not only consistent with jvp): against central differences
    along a random direction, for programs without jumps (no mod/branch/max/abs)."""
    prog, xs = pp
    assume(not any(op in ("mod", "branch", "max", "abs") for op, _, _ in prog.steps))
    dt = [1.0] + [0.5] * (len(prog.outs) - 1)
    ds = [((-1) ** k) * (0.3 + 0.1 * k) for k in range(len(xs))]
    _, ct = _vjp_program(prog, xs, dt)

    def phi(t):
        return dot(dt, prog.run(_floatns(), [x + t * d for x, d in zip(xs, ds)]))

    try:
        want = fd(phi, 0.0, 1e-4)
    except (ValueError, OverflowError, ZeroDivisionError):
        assume(False)
    got = dot(ct, ds)
    assert close(got, want, rtol=1e-5, atol=1e-6 * (1 + abs(phi(0.0)))), (prog, got, want)


def _floatns():
    from helpers import FloatMath

    return FloatMath


@given(program_and_point(max_out=1))
def test_fast_eval_vs_reference_delta_eval(pp):
    """tape.eval (the fast sweep) and delta.eval (Fig. 10 over a dict) agree exactly."""
    prog, xs = pp
    f = lambda *a: prog.run(deltaad, a)[0]  # noqa: E731
    out, d = deltaad.make_delta(f, *xs)
    dmap = D_.eval(1.0, d, {})
    assert set(dmap) <= set(range(len(xs)))
    v, g = deltaad.value_and_grad(f, argnums=tuple(range(len(xs))))(*xs)
    assert out == v
    assert [dmap.get(k, 0.0) for k in range(len(xs))] == list(g), prog
    # the printed term is a chain of Lets ending in a Var (or Zero for a constant output)
    lines = str(d).split("\n")
    assert all(_LET.match(line) for line in lines[:-1])
    assert re.fullmatch(r"Var x\d+|Zero", lines[-1])


def test_reference_eval_by_hand():
    """delta.eval on a hand-built term (Fig. 10): Let evaluates its body first."""
    # x2 = 3 x0 + x1; x3 = x2 * x2 (coefficient 2 * x2 = 10 at x2 = 5); output x3
    term = D_.Let(2, D_.Add(D_.Scale(3.0, D_.Var(0)), D_.Var(1)),
                  D_.Let(3, D_.Scale(10.0, D_.Var(2)), D_.Var(3)))
    assert D_.eval(1.0, term, {}) == {0: 30.0, 1: 10.0}
    assert D_.eval(2.0, term, {0: 1.0}) == {0: 61.0, 1: 20.0}
    assert D_.eval(1.0, D_.Zero, {}) == {}
    assert str(term) == ("Let x2 = Add (Scale 3.0 (Var x0)) (Var x1) in\n"
                         "Let x3 = Scale 10.0 (Var x2) in\nVar x3")


def test_make_delta_shares_instead_of_duplicating():
    """x1 = x + x; x2 = x1 + x1; ...: one Let per step (a tree would be exponential)."""
    n = 200

    def f(x):
        for _ in range(n):
            x = x + x
        return x

    out, d = deltaad.make_delta(f, 1.0)
    assert out == 2.0 ** n
    lines = str(d).split("\n")
    assert len(lines) == n + 1
    assert D_.eval(1.0, d, {}) == {0: 2.0 ** n}


def test_make_delta_constant_output():
    out, d = deltaad.make_delta(lambda x: 3.0, 1.0)
    assert out == 3.0 and D_.eval(1.0, d, {}) == {}


@given(program_and_point(min_in=2, max_in=4, min_out=2, max_out=4))
def test_jacrev_equals_jacfwd(pp):
    prog, xs = pp
    f = lambda v: prog.run(deltaad, v)  # noqa: E731
    Jr = deltaad.jacrev(f)(xs)
    Jf = deltaad.jacfwd(f)(xs)
    assert isinstance(Jr, np.ndarray) and Jr.shape == (len(prog.outs), len(xs))
    assert Jf.shape == Jr.shape
    scale = 1.0 + np.abs(Jr).max()
    assert np.all(np.abs(Jr - Jf) <= 1e-10 * scale), (prog, Jr, Jf)
    # rows of jacrev are vjps with unit cotangents, columns of jacfwd are jvps
    _, pb = deltaad.vjp(f, xs)
    row0 = pb([1.0] + [0.0] * (len(prog.outs) - 1))[0]
    assert list(Jr[0]) == row0


# --------------------------------------------------------------------------------------------
# Nesting


SMOOTH = ["add", "sub", "mul", "div", "rdiv", "sq", "powi", "powf", "pow_dual", "rpow", "power",
          "sin", "cos", "tan", "tanh", "arctan", "arcsinh", "exp", "expm1", "log", "log1p",
          "sqrt", "erf", "sigmoid", "softplus", "logaddexp", "arctan2", "const_mix", "neg",
          "radd_int", "rmul_int", "rsub"]


@scaled(0.6)
@given(program_and_point(min_in=1, max_in=1, max_ops=8, max_out=1, ops=SMOOTH))
def test_second_derivative_all_mode_pairs(pp):
    """reverse-over-reverse, forward-over-reverse, reverse-over-forward, forward-over-forward
    agree, and match finite differences of the gradient."""
    prog, (x,) = pp
    f = lambda t: prog.run(deltaad, [t])[0]  # noqa: E731
    df = grad(f)
    rr = grad(df)(x)
    fr = fwd_deriv(df, x)
    rf = grad(lambda t: fwd_deriv(f, t))(x)
    ff = fwd_deriv(lambda t: fwd_deriv(f, t), x)
    slack = 1e-11 * (1.0 + abs(rr) + abs(df(x)))
    for other in (fr, rf, ff):
        assert abs(other - rr) <= slack, (prog, rr, fr, rf, ff)
    # a smaller step, Richardson-extrapolated (as the Hessian's below): the h^2 term of a
    # curvy program (sqrt(2 + cos((2x)^3)) at 2.0) exceeded the tolerance at 1e-3 (-1723.375
    # against -1723.302; central differences reach it only below 1e-4)
    h = step_for(x, 2.5e-4)
    want = (4.0 * fd(df, x, h / 2) - fd(df, x, h)) / 3.0
    assert close(rr, want, rtol=1e-5, atol=1e-7 * (1.0 + abs(df(x)))), (prog, rr, want)


@scaled(0.6)
@given(program_and_point(min_in=2, max_in=3, max_ops=8, max_out=1, ops=SMOOTH))
def test_hessian_vs_fd_of_grad(pp):
    prog, xs = pp
    f = lambda v: prog.run(deltaad, v)[0]  # noqa: E731
    H = deltaad.hessian(f)(xs)
    n = len(xs)
    assert isinstance(H, np.ndarray) and H.shape == (n, n)
    g = grad(f)
    g0 = g(xs)
    for k in range(n):
        h = step_for(xs[k], 1e-3)
        # central differences at h and h/2, Richardson-extrapolated: the h^2 error term of a
        # curvy program (((4x)^x)^x) exceeded the tolerance at h alone
        col = [(4.0 * fd(lambda t: g(xs[:k] + [t] + xs[k + 1:])[i], xs[k], h / 2)
                - fd(lambda t: g(xs[:k] + [t] + xs[k + 1:])[i], xs[k], h)) / 3.0
               for i in range(n)]
        for i in range(n):
            assert close(H[i][k], col[i], rtol=1e-5, atol=1e-7 * (1 + max(map(abs, g0)))), (
                prog, i, k, H, col)
    Hr = deltaad.jacrev(deltaad.jacrev(f))(xs)  # reverse over reverse
    assert np.allclose(H, Hr, rtol=1e-10, atol=1e-12 * (1 + np.abs(H).max()))


def branchy(v):
    """Code with branches, a while loop, recursion and a Python-int counter."""
    s = 0.0
    for i, x in enumerate(v):
        if x > 0:
            s = s + x ** 3 * (i + 1)
        else:
            s = s - x * x * v[0]
    k = 0
    t = v[-1]
    while abs(t) < 10.0 and k < 50:
        t = t * 1.5 + v[0] * 0.25
        k += 1
    return s + t * t + (deltaad.sin(v[1]) if k % 2 else deltaad.cos(v[1]))


def test_hessian_of_branches_and_loops():
    for xs in ([0.7, -1.3, 2.1], [-0.4, 0.9, -0.2], [1.5, 0.3, 0.8]):
        H = deltaad.hessian(branchy)(xs)
        g = grad(branchy)
        for k in range(3):
            h = 1e-4
            for i in range(3):
                want = fd(lambda t: g(xs[:k] + [t] + xs[k + 1:])[i], xs[k], h)
                assert close(H[i][k], want, rtol=1e-5, atol=1e-6), (xs, i, k, H[i][k], want)
        assert np.allclose(H, H.T, rtol=1e-12, atol=1e-12)
        # the gradient itself against finite differences
        for k in range(3):
            want = fd(lambda t: branchy(xs[:k] + [t] + xs[k + 1:]), xs[k], 1e-5)
            assert close(g(xs)[k], want, rtol=1e-6, atol=1e-6)


def test_nested_closure_over_outer_dual():
    """An inner derivative that closes over the outer variable: d/dx [d/dy sin(x y)]_{y=2}."""
    f = lambda x: grad(lambda y: deltaad.sin(x * y))(2.0)  # noqa: E731
    # d/dy sin(xy) = x cos(xy); d/dx = cos(xy) - x y sin(xy)
    for x in (0.3, -1.1):
        want = math.cos(2 * x) - 2 * x * math.sin(2 * x)
        assert_close(grad(f)(x), want, 1e-14, 1e-15)
        assert_close(fwd_deriv(f, x), want, 1e-14, 1e-15)


def test_nested_through_vjp_and_jvp_with_dual_cotangents():
    """Cotangents and tangents may be outer duals: d/dx [vjp(sin, x)(x)] = d/dx [x cos x]."""
    want = math.cos(0.7) - 0.7 * math.sin(0.7)
    assert_close(grad(lambda x: deltaad.vjp(deltaad.sin, x)[1](x)[0])(0.7), want, 1e-15, 0)
    assert_close(grad(lambda x: deltaad.jvp(deltaad.sin, (x,), (x,))[1])(0.7), want, 1e-15, 0)
    assert_close(fwd_deriv(lambda x: deltaad.vjp(deltaad.sin, x)[1](x)[0], 0.7), want, 1e-15, 0)


def test_hessian_argnums_tuple():
    H = deltaad.hessian(lambda a, b: a * a * b + b ** 3, argnums=(0, 1))(1.0, 2.0)
    assert H == ((4.0, 2.0), (2.0, 12.0))


def test_third_derivative():
    f = lambda x: x ** 4 + deltaad.exp(2.0 * x)  # noqa: E731
    d3 = grad(grad(grad(f)))
    for x in (0.0, 0.5, -1.0):
        assert_close(d3(x), 24 * x + 8 * math.exp(2 * x), 1e-13, 1e-13)
    d3m = fwd_deriv(lambda t: grad(lambda u: fwd_deriv(f, u))(t), 0.5)
    assert_close(d3m, 12 + 8 * math.exp(1.0), 1e-13, 0)


# --------------------------------------------------------------------------------------------
# API conventions: argnums, has_aux, value_and_grad, vjp called repeatedly, jvp


def test_argnums_int_and_tuple():
    f = lambda a, b, c: a * b * b + c * 3.0  # noqa: E731
    assert grad(f)(2.0, 3.0, 4.0) == 9.0
    assert grad(f, argnums=1)(2.0, 3.0, 4.0) == 12.0
    assert grad(f, argnums=2)(2.0, 3.0, 4.0) == 3.0
    assert grad(f, argnums=-1)(2.0, 3.0, 4.0) == 3.0
    assert grad(f, argnums=(0, 2))(2.0, 3.0, 4.0) == (9.0, 3.0)
    assert grad(f, argnums=(1,))(2.0, 3.0, 4.0) == (12.0,)
    assert grad(f, argnums=(2, 0))(2.0, 3.0, 4.0) == (3.0, 9.0)
    v, g = deltaad.value_and_grad(f, argnums=(0, 1))(2.0, 3.0, 4.0)
    assert v == 30.0 and g == (9.0, 12.0)
    # keyword arguments pass through and are not differentiated
    assert grad(lambda a, k=1.0: a * k)(2.0, k=5.0) == 5.0


def test_argnums_non_differentiated_args_are_constants():
    seen = []

    def f(a, b):
        seen.append((type(a), type(b)))
        return a * b

    grad(f, argnums=1)(2.0, 3.0)
    assert seen[-1] == (float, deltaad.Dual)


def test_has_aux():
    def f(x):
        y = x * x
        return y, {"y": y, "n": 3}

    g, aux = grad(f, has_aux=True)(3.0)
    assert g == 6.0
    assert aux == {"y": 9.0, "n": 3}
    assert type(aux["y"]) is float  # duals in aux come back as values
    (v, aux2), g2 = deltaad.value_and_grad(f, has_aux=True)(3.0)
    assert v == 9.0 and aux2 == aux and g2 == 6.0
    out, pb, aux3 = deltaad.vjp(f, 3.0, has_aux=True)
    assert out == 9.0 and aux3 == aux and pb(2.0) == (12.0,)


def test_value_and_grad_structure():
    v, g = deltaad.value_and_grad(lambda p: p[0] * p[1])((2.0, 5.0))
    assert v == 10.0 and g == (5.0, 2.0)


def test_vjp_callable_many_times_and_linear():
    f = lambda x, y: (x * y, deltaad.sin(x) + y)  # noqa: E731
    out, pb = deltaad.vjp(f, 0.5, 2.0)
    assert out == (1.0, math.sin(0.5) + 2.0)
    a = pb((1.0, 0.0))
    b = pb((0.0, 1.0))
    assert a == (2.0, 0.5)
    assert b == (math.cos(0.5), 1.0)
    c = pb((3.0, -2.0))
    assert_close(c[0], 3 * a[0] - 2 * b[0], 1e-15, 0)
    assert_close(c[1], 3 * a[1] - 2 * b[1], 1e-15, 0)
    assert pb((0.0, 0.0)) == (0.0, 0.0)
    assert pb((1.0, 0.0)) == a  # unchanged by the calls in between
    assert pb((np.float64(1.0), 0)) == a  # numpy and int cotangents


def test_vjp_output_not_depending_on_input():
    out, pb = deltaad.vjp(lambda x: (x * 2.0, 7.0), 1.0)
    assert out == (2.0, 7.0)
    assert pb((1.0, 1.0)) == (2.0,)
    assert grad(lambda x: 7.0)(1.0) == 0.0
    assert deltaad.jvp(lambda x: 7.0, (1.0,), (1.0,)) == (7.0, 0.0)


def test_jvp_tangent_linearity_and_structure():
    f = lambda p: {"s": p[0] * p[1], "d": p[0] - p[1]}  # noqa: E731
    out, t = deltaad.jvp(f, ((2.0, 3.0),), ((1.0, 0.0),))
    assert out == {"s": 6.0, "d": -1.0} and t == {"s": 3.0, "d": 1.0}
    out, t = deltaad.jvp(f, ((2.0, 3.0),), ((0.5, 2.0),))
    assert t == {"s": 0.5 * 3.0 + 2.0 * 2.0, "d": 0.5 - 2.0}


def test_jacobian_is_jacrev():
    f = lambda v: [v[0] * v[1], v[0] + v[1], deltaad.exp(v[1])]  # noqa: E731
    J = deltaad.jacobian(f)([2.0, 0.5])
    assert np.array_equal(J, np.array([[0.5, 2.0], [1.0, 1.0], [0.0, math.exp(0.5)]]))


# --------------------------------------------------------------------------------------------
# Long chains: the sweep is iterative and linear


def test_long_chain(fast):
    n = 10 ** 7 if fast else 10 ** 6

    def f(x):
        for _ in range(n):
            x = (x + x) * 0.5
        return x

    v, g = deltaad.value_and_grad(f)(1.3)
    assert v == 1.3 and g == 1.0


def test_long_chain_forward(fast):
    n = 10 ** 6 if fast else 2 * 10 ** 5

    def f(x):
        for _ in range(n):
            x = (x + x) * 0.5
        return x

    assert deltaad.jvp(f, (1.3,), (1.0,)) == (1.3, 1.0)


def test_long_chain_nested(fast):
    """The general path (outer duals as coefficients) is iterative too."""
    n = 10 ** 5 if fast else 2 * 10 ** 4

    def f(x):
        y = x
        for _ in range(n):
            y = y * 0.5 + x * 0.5 + y * 0.0
        return y * x

    # y == x throughout: f = x^2, f'' = 2
    assert_close(grad(grad(f))(1.5), 2.0, 1e-12, 0)


def test_long_make_delta_prints_and_evals():
    n = 20000

    def f(x):
        for _ in range(n):
            x = x * 1.0
        return x

    out, d = deltaad.make_delta(f, 2.0)
    assert D_.eval(1.0, d, {}) == {0: 1.0}
    assert str(d).count("\n") == n


# --------------------------------------------------------------------------------------------
# hvp: forward over reverse, against the Hessian and finite differences of the gradient


@scaled(0.6)
@given(program_and_point(min_in=2, max_in=3, max_ops=8, max_out=1, ops=SMOOTH), st.data())
def test_hvp_is_hessian_times_vector(pp, data):
    prog, xs = pp
    f = lambda v: prog.run(deltaad, list(v))[0]  # noqa: E731
    x = np.array(xs)
    v = np.array(data.draw(st.lists(st.floats(-2, 2), min_size=len(xs), max_size=len(xs))))
    H = deltaad.hessian(f)(x)
    hv = deltaad.hvp(f, (x,), (v,))
    assert isinstance(hv, np.ndarray) and hv.shape == x.shape and hv.dtype == np.float64
    np.testing.assert_allclose(hv, H @ v, rtol=1e-9, atol=1e-9 * (1 + np.abs(H).max() * np.abs(v).sum()))


def test_hvp_arguments_and_structures():
    def f(x, y):
        return x * x * y + y ** 3 + x * np.sum(np.sin(y * np.arange(1.0, 3.0)))

    x, y, tx, ty = 0.7, 1.3, 0.5, -2.0
    h = 1e-5
    # d/dx of f along (tx, ty): forward difference of the gradient with respect to x
    gx = deltaad.grad(f)
    want = (gx(x + h * tx, y + h * ty) - gx(x - h * tx, y - h * ty)) / (2 * h)
    assert deltaad.hvp(f, (x, y), (tx, ty)) == pytest.approx(want, rel=1e-7)
    both = deltaad.hvp(f, (x, y), (tx, ty), argnums=(0, 1))
    gy = deltaad.grad(f, argnums=1)
    want_y = (gy(x + h * tx, y + h * ty) - gy(x - h * tx, y - h * ty)) / (2 * h)
    assert both == pytest.approx((want, want_y), rel=1e-7)
    # pytrees: a dict of arrays in, the same structure out
    tree = {"a": np.array([0.3, -0.2]), "b": 1.5}
    t = {"a": np.array([1.0, 0.5]), "b": -1.0}
    g = lambda p: np.sum(p["a"] ** 3) * p["b"]  # noqa: E731
    out = deltaad.hvp(g, (tree,), (t,))
    H_aa = np.diag(6 * tree["a"] * tree["b"])
    H_ab = 3 * tree["a"] ** 2
    np.testing.assert_allclose(out["a"], H_aa @ t["a"] + H_ab * t["b"], rtol=1e-13)
    assert out["b"] == pytest.approx(H_ab @ t["a"], rel=1e-13)
    with pytest.raises(TypeError, match="tuples"):
        deltaad.hvp(g, tree, t)
    # nested: the hvp inside a gradient (third derivatives)
    third = deltaad.grad(lambda s: deltaad.hvp(lambda u: u ** 4, (s,), (1.0,)))(0.5)
    assert third == pytest.approx(24 * 0.5, rel=1e-14)


# --------------------------------------------------------------------------------------------
# has_aux on every transformation, and linearize (JAX's signatures)


@settings(max_examples=25)
@given(st.lists(st.floats(-2.0, 2.0), min_size=1, max_size=4))
def test_has_aux_everywhere_gives_the_aux_of_the_plain_call(xs):
    x = np.array(xs)

    def f(x):
        y = np.sin(x) * x + np.sum(x * x)
        return y, {"norm": np.sum(y * y), "n": len(xs), "tag": "t"}

    def plain(x):
        return f(x)[1]

    want = plain(x)
    for J, aux in (deltaad.jacrev(f, has_aux=True)(x), deltaad.jacfwd(f, has_aux=True)(x)):
        np.testing.assert_allclose(J, deltaad.jacrev(lambda x: f(x)[0])(x), rtol=1e-12, atol=1e-12)
        assert aux["norm"] == want["norm"] and aux["n"] == len(xs) and aux["tag"] == "t"
        assert not deltaad.trace.is_dual(aux["norm"])

    def s(x):
        y, a = f(x)
        return np.sum(y), a

    H, aux = deltaad.hessian(s, has_aux=True)(x)
    np.testing.assert_array_equal(H, deltaad.hessian(lambda x: s(x)[0])(x))
    assert aux["norm"] == want["norm"]
    v = np.linspace(-1.0, 1.0, len(xs))
    out, t, aux = deltaad.jvp(f, (x,), (v,), has_aux=True)
    o2, t2 = deltaad.jvp(lambda x: f(x)[0], (x,), (v,))
    np.testing.assert_array_equal(out, o2)
    np.testing.assert_array_equal(t, t2)
    assert aux["norm"] == want["norm"] and not deltaad.trace.is_dual(aux["norm"])
    with pytest.raises(TypeError, match=r"jvp\(has_aux=True\): the function must return a pair"):
        deltaad.jvp(lambda x: x, (x,), (v,), has_aux=True)


@settings(max_examples=25)
@given(st.floats(-2.0, 2.0), st.floats(-2.0, 2.0), st.floats(-3.0, 3.0), st.floats(-3.0, 3.0))
def test_linearize_is_jvp_at_the_point(a, b, ta, tb):
    f = lambda x, y: (np.sin(x) * y, x * x + y)  # noqa: E731
    out, f_jvp = deltaad.linearize(f, a, b)
    assert out == f(a, b)
    assert f_jvp(ta, tb) == deltaad.jvp(f, (a, b), (ta, tb))[1]
    assert f_jvp(1.0, 0.0) == (math.cos(a) * b, 2 * a)
    with pytest.raises(TypeError, match="one tangent per primal"):
        f_jvp(1.0)


# --------------------------------------------------------------------------------------------
# grad of one float64 array argument: the short path against the general one


def _general_grad(f, x, has_aux=False):
    """grad by the general path (vjp's pullback), as value_and_grad would give it."""
    if has_aux:
        out, pb, aux = deltaad.vjp(f, x, has_aux=True)
    else:
        (out, pb), aux = deltaad.vjp(f, x), None
    if isinstance(out, np.ndarray):  # np.sum of an array dual: value_and_grad gives numpy's scalar
        g = pb(np.ones(()))[0]
        out = out[()]
    else:
        g = pb(1.0)[0]
    return out, g, aux


def _both_paths(f, x, aux):
    """``value_and_grad``'s value and gradient and the general path's, the aux compared."""
    out, g = deltaad.value_and_grad(f, has_aux=aux)(x)
    want_out, want_g, want_aux = _general_grad(f, x, has_aux=aux)
    if aux:
        out, got_aux = out
        assert got_aux == want_aux
    return out, g, want_out, want_g


def _bits(*xs):
    return [np.asarray(v).tobytes() + str(np.asarray(v).dtype).encode() for v in xs]


@pytest.mark.parametrize("case", ["sum", "float", "item64", "unused", "nested", "checkpoint",
                                  "zero-d", "aux"])
def test_grad_of_one_array_same_as_the_general_path(case):
    """``grad``/``value_and_grad`` of one float64 array take a short path: the value, its type,
    the gradient and its type, bit for bit those of the general path (``vjp`` and its
    pullback), whatever the output is."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(() if case == "zero-d" else (3, 4))
    c = rng.standard_normal(x.shape)
    fs = {
        "sum": lambda a: np.sum(np.sin(a) * c),            # a 0-d array dual
        "float": lambda a: sum(np.ravel(a * c).tolist()),  # a float dual
        "item64": lambda a: (a * c).ravel()[1],            # a scalar dual of an np.float64
        "unused": lambda a: np.sum(c),                     # a plain number: zero gradient
        "nested": lambda a: np.sum(a * deltaad.grad(lambda b: np.sum(np.sin(a * b)))(c)),
        "checkpoint": lambda a: np.sum(deltaad.checkpoint(lambda b: np.cos(b) * c)(a)),
        "zero-d": lambda a: a * a + 1.0,
        "aux": lambda a: (np.sum(a ** 2), {"n": a.size}),
    }
    f = fs[case]
    aux = case == "aux"
    out, g, want_out, want_g = _both_paths(f, x, aux)
    assert type(out) is type(want_out) and type(g) is type(want_g)
    assert _bits(out, g) == _bits(want_out, want_g)
    assert _bits(deltaad.grad(f, has_aux=aux)(x)[0] if aux else deltaad.grad(f)(x)) == _bits(g)
    (g1,) = deltaad.grad(f, argnums=(0,), has_aux=aux)(x)[0] if aux else \
        deltaad.grad(f, argnums=(0,))(x)
    assert _bits(g1) == _bits(g)
    assert g.flags.writeable and g.shape == x.shape  # an array of the caller's own


def test_grad_of_one_array_errors_as_the_general_path():
    """Outputs that are not one real number: the general path's errors, also on the short
    path (a float32 argument takes the general path from the start)."""
    x = np.ones(3)
    for f, err, match in [(lambda a: a * 2.0, TypeError, "one real number"),
                          (lambda a: (np.sum(a), np.sum(a)), TypeError, "one real number"),
                          (lambda a: np.sum(a) * 1j, TypeError, "complex")]:
        with pytest.raises(err, match=match):
            deltaad.grad(f)(x)
    g = deltaad.grad(lambda a: np.sum(a * a))(np.ones(3, dtype=np.float32))
    assert g.dtype == np.float32 and np.array_equal(g, 2 * np.ones(3))


@pytest.mark.parametrize("container", [tuple, list])
@pytest.mark.parametrize("case", ["sum", "unused", "aux", "shared"])
def test_grad_of_arrays_in_a_tuple_same_as_the_general_path(container, case):
    """A tuple or list of float64 arrays (a model's parameters) takes the short path too: the
    value and the gradients (their container, types and bits) of the general path."""
    rng = np.random.default_rng(2)
    W, b = rng.standard_normal((3, 2)), rng.standard_normal(2)
    X = rng.standard_normal((5, 3))
    fs = {
        "sum": lambda p: np.sum(np.tanh(X @ p[0] + p[1])),
        "unused": lambda p: np.sum(p[1] * 2.0),
        "aux": lambda p: (np.sum(p[0] ** 2) + np.sum(p[1]), "aux"),
        "shared": lambda p: np.sum(p[0] * p[1][0]),
    }
    f = fs[case]
    aux = case == "aux"
    params = container([W, b] if case != "shared" else [W, W])
    out, g = deltaad.value_and_grad(f, has_aux=aux)(params)
    if aux:
        out, got_aux = out
        (want_out, pb, want_aux) = deltaad.vjp(f, params, has_aux=True)
        assert got_aux == want_aux
    else:
        want_out, pb = deltaad.vjp(f, params)
    (want_g,) = pb(np.ones(()))
    assert type(g) is container and type(want_g) is container
    assert _bits(out, *g) == _bits(want_out[()], *want_g)


@pytest.mark.parametrize("container", [list, tuple])
@pytest.mark.parametrize("case", ["float", "unused", "nested", "checkpoint", "array", "aux",
                                  "mixed", "int"])
def test_grad_of_one_float_list_same_as_the_general_path(container, case):
    """``grad``/``value_and_grad`` of one list or tuple of floats take a short path: the value,
    the gradient, their types and bits are the general path's (``vjp`` and its pullback),
    whatever the output is (a float dual of the tape, a constant, a dual of a nested
    differentiation, a 0-d array dual) and whatever the list holds."""
    rng = np.random.default_rng(3)
    x = [float(v) for v in rng.standard_normal(5)]
    if case == "mixed":
        x[3] = np.float64(x[3])  # not all floats: the general path from the start
    elif case == "int":
        x[4] = 2
    x = container(x)
    c = [float(v) for v in rng.standard_normal(5)]
    fs = {
        "float": lambda a: sum(math.sin(u) * v for u, v in zip(a, c)),
        "unused": lambda a: 1.5,
        "nested": lambda a: a[0] * deltaad.grad(lambda b: math.sin(a[1] * b[0] * b[1]))(c)[1],
        "checkpoint": lambda a: deltaad.checkpoint(lambda b: math.cos(b[0]) * b[1])(a) + a[2],
        "array": lambda a: np.sum(np.array(a) * c),
        "aux": lambda a: (a[0] * a[1] ** 2, {"n": len(a)}),
        "mixed": lambda a: a[3] * a[0] + a[2],
        "int": lambda a: a[4] * a[0] + a[1],
    }
    f = fs[case]
    aux = case == "aux"
    out, g, want_out, want_g = _both_paths(f, x, aux)
    assert type(out) is type(want_out) and type(g) is type(want_g) is container
    assert [type(v) for v in g] == [type(v) for v in want_g]
    assert _bits(out, *g) == _bits(want_out, *want_g)
    g2 = deltaad.grad(f, has_aux=aux)(x)
    assert _bits(*(g2[0] if aux else g2)) == _bits(*g)
    (g1,) = deltaad.grad(f, argnums=(0,), has_aux=aux)(x)[0] if aux else \
        deltaad.grad(f, argnums=(0,))(x)
    assert _bits(*g1) == _bits(*g)


def test_grad_of_one_float_list_errors_as_the_general_path():
    """Outputs that are not one real number raise the general path's errors on the short path;
    an exception in the function leaves no trace open."""
    x = [1.0, 2.0]
    for f, match in [(lambda a: [a[0], a[1]], "one real number"),
                     (lambda a: a[0] * 1j, "complex")]:
        with pytest.raises(TypeError, match=match):
            deltaad.grad(f)(x)

    def boom(a):
        raise KeyError("boom")

    with pytest.raises(KeyError):
        deltaad.grad(boom)(x)
    assert deltaad.trace.open_traces() == []
