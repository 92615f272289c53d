"""deltaad.compile's gradient recordings (``compile(grad(f))``, ``compile(value_and_grad(f))``):
f's primal operations recorded once, the backward sweep replayed -- the uncompiled call's bits,
and the general recording whenever f does something only duals show."""

import math

import pytest
from hypothesis import given, settings, strategies as st

import deltaad as d
from deltaad import _replay_pure as P
from helpers import agree_on, finite_inputs, programs, scalar_of

try:
    from deltaad import _replay as C
except ImportError:  # no compiled replayer: the C-vs-pure test is skipped, and says so
    C = None

compile_module = __import__("sys").modules["deltaad.compile"]


def tree_bits(x):
    """A pytree with every float replaced by its bit pattern; a nan is "nan" whatever its
    sign and payload: which nan a product or sum of two nans keeps is the C compiler's choice
    in the core (the core and the pure backend differ there too), not a result to match."""
    leaves, tdef = d.tree_flatten(x)
    return repr(tdef), [(type(v).__name__, (P._BITS.pack(v) if v == v else "nan")
                         if type(v) is float else v) for v in leaves]


def same(a, b):
    return tree_bits(a) == tree_bits(b)


def compiled(g, path):
    """``compile(g)`` recording the way ``path`` says: "grad" (the gradient recording, the
    default for a grad transform) or "general" (forced)."""
    cg = d.compile(g)
    if path == "general":
        cg._grad = None
    else:
        assert cg._grad is not None
    return cg


def check(g, points, path="grad"):
    """``compile(g)`` and ``g`` on every point in order: same bits or the same exception."""
    return agree_on(compiled(g, path), g, points, same)


# the operations a gradient recording replays (the others fall back: pow, mod, erf, ...)
REPLAYED = ["add", "sub", "mul", "div", "rdiv", "radd_int", "rsub", "rmul_int", "neg", "sq",
            "sin", "cos", "tan", "tanh", "arctan", "arcsinh", "exp", "expm1", "log", "sqrt",
            "abs", "branch", "max", "const_mix"]

special = st.one_of(finite_inputs, st.sampled_from(
    [0.0, -0.0, 1.0, -1.0, 1e-300, 1e300, math.inf, -math.inf, math.nan]))


@pytest.mark.parametrize("path", ["grad", "general"])
@pytest.mark.parametrize("maker", ["grad", "value_and_grad"])
@settings(deadline=None)
@given(prog=programs(max_in=3, max_ops=12, ops=REPLAYED),
       pts=st.lists(st.lists(special, min_size=3, max_size=3), min_size=2, max_size=5))
def test_random_programs_same_bits_both_paths(path, maker, prog, pts):
    if path == "general":  # (the general recording's nan payloads are not this file's)
        pts = [[v if math.isfinite(v) else 0.5 for v in p] for p in pts]
    f = scalar_of(prog)
    g = getattr(d, maker)(f, argnums=tuple(range(prog.n_in)))
    check(g, [tuple(p[:prog.n_in]) for p in pts] + [tuple(pts[0][:prog.n_in])], path)


@settings(deadline=None)
@given(prog=programs(max_in=3, max_ops=12),
       pts=st.lists(st.lists(finite_inputs, min_size=3, max_size=3), min_size=2, max_size=4))
def test_random_programs_with_every_operation(prog, pts):
    """Operations without a replay rule make the function record the general way."""
    g = d.value_and_grad(scalar_of(prog), argnums=tuple(range(prog.n_in)))
    check(g, [tuple(p[:prog.n_in]) for p in pts])


def test_gradient_recording_is_used_and_counts():
    calls = []

    def f(x, y):
        calls.append(1)
        s = x
        for _ in range(20):
            s = s * d.sin(y) + x / (1.5 + d.cos(s))
        return s

    g = d.value_and_grad(f, argnums=(0, 1))
    cg = check(g, [(0.3, 0.7), (0.4, 0.2), (-1.0, 2.0)])
    assert cg._grad is not None and cg.recordings_made == 1
    prog = cg.recordings()[0].prog
    assert prog.n < 2 * 20 * 6  # one instruction per primal operation (and the constants)
    assert len(calls) == 2 + 3  # the recording runs f twice (numbers, then the check)


def test_unused_inputs_constant_outputs_and_signed_zeros():
    check(d.value_and_grad(lambda x, y, z: x * 0.0, argnums=(0, 1, 2)),
          [(1.0, 2.0, 3.0), (-1.0, 0.0, -0.0), (math.inf, 1.0, 1.0)])
    check(d.value_and_grad(lambda x, y: 2.0, argnums=(0, 1)), [(1.0, 2.0), (3.0, 4.0)])
    check(d.grad(lambda x, y: -(x * y) - (-0.0 * x), argnums=(1, 0)),
          [(0.0, -0.0), (-0.0, 0.0), (1.0, -0.0)])
    check(d.grad(lambda x: x), [(1.0,), (-0.0,)])
    check(d.grad(lambda x, c: x * c, argnums=0), [(1.0, 2.0), (1.0, 3.0), (2.0, 0.0)])


def test_edges_of_the_partials():
    def f(x):
        return d.sqrt(x) + d.log(x + 1.0) + abs(x) + 1.0 / (x + 2.0) + d.tanh(x) * d.exp(-x)

    check(d.value_and_grad(f), [(0.0,), (-0.0,), (1e-300,), (4.0,), (math.inf,), (math.nan,),
                                (-1.0,), (0.0,)])
    check(d.grad(lambda x: d.arcsin(x) + d.arccos(x) + d.arctanh(x * 0.5) + d.arccosh(x + 2.0)),
          [(0.5,), (1.0,), (-1.0,), (0.0,), (1.5,)])


@pytest.mark.parametrize("path", ["grad", "general"])
def test_guards(path):
    def piecewise(x):
        return x * x if x > 1.0 else 3.0 * x - 2.0

    cg = check(d.grad(piecewise), [(2.0,), (0.0,), (3.0,), (-5.0,), (1.0,), (1.5,)], path)
    assert cg.recordings_made == 2

    table = [1.0, 2.0, 4.0, 8.0]
    cg = check(d.value_and_grad(lambda x: table[math.floor(x)] * x * x),
               [(0.5,), (0.9,), (1.5,), (1.1,), (2.2,), (0.1,)], path)
    assert cg.recordings_made == 3

    def newton(a):
        x = a
        while abs(x * x - a) > 1e-12 * a:
            x = 0.5 * (x + a / x)
        return x

    cg = check(d.value_and_grad(newton), [(2.0,), (2.0 + 1e-9,), (9.0,), (2.0,), (1e6,)], path)
    assert cg.recordings_made <= 4

    cg = check(d.value_and_grad(lambda x: d.absolute(x) + abs(x) * 2.0),
               [(0.5,), (0.0,), (-0.0,), (-0.5,), (0.0,), (2.0,)], path)
    # abs's derivative is the replayer's (sign at run time); the general recording guards it
    assert cg.recordings_made == (1 if path == "grad" else 3)


def test_recursion_sharing_aux_argnums_and_lists():
    def tower(x, n):
        if n == 0:
            return x
        y = tower(x, n - 1)
        return y * y * 0.5 + d.sin(y)

    check(d.grad(lambda x: tower(x, 6)), [(0.3,), (0.7,), (-1.2,)])

    def f(p, xs, k):
        s = p["a"] * xs[0]
        for x in xs[1:]:
            s = s * x + p["b"]
        return s, {"s": s, "k": k, "half": xs[0] * 0.5}

    g = d.value_and_grad(f, argnums=(1, 0), has_aux=True)
    cg = check(g, [({"a": 1.0, "b": 2.0}, [0.5, 0.25, 3.0], 4),
                   ({"a": -1.0, "b": 0.0}, [1.5, -0.25, 2.0], 4)])
    assert cg._grad is not None and cg.recordings_made == 1
    cg = check(d.grad(f, has_aux=True), [({"a": 1.0, "b": 2.0}, [0.5, 0.25, 3.0], 4)])
    assert cg._grad is not None


@pytest.mark.parametrize("case", ["stop_gradient", "value", "custom_vjp", "checkpoint",
                                  "nested_grad", "jvp", "math_fsum", "pow", "fori_checkpoints"])
def test_dual_aware_functions_record_the_general_way(case):
    """What treats a dual differently from a number gives the uncompiled bits: the gradient
    recording's check sends such functions to the general recording."""
    @d.custom_vjp
    def cube(x):
        return x * x * x

    cube.defvjp(lambda x: (x * x * x, x), lambda x, ct: (ct * 2.0 * x,))  # a deliberate "wrong" rule

    def body(i, s):
        return s * 1.01 + 0.5

    fns = {
        "stop_gradient": lambda x, y: d.stop_gradient(x) * y + x,
        "value": lambda x, y: d.value(x) * y + x,
        "custom_vjp": lambda x, y: cube(x) * y,
        "checkpoint": lambda x, y: d.checkpoint(lambda a: d.sin(a) * a)(x) * y,
        "nested_grad": lambda x, y: d.grad(lambda a: a * a * y)(x) * x,
        "jvp": lambda x, y: d.jvp(lambda a: a * a, (x,), (y,))[1] * x,
        "math_fsum": lambda x, y: d.math.fsum([x, y, x * y]),
        "pow": lambda x, y: x ** 3 + y,
        "fori_checkpoints": lambda x, y: d.fori_loop(0, 8, body, x * y, checkpoints=2),
    }
    g = d.value_and_grad(fns[case], argnums=(0, 1))
    # y = 0 hides a stopped or custom derivative at the recording point: the structure shows it
    cg = check(g, [(2.0, 0.0), (2.0, 3.0), (-1.5, 0.5)])
    assert cg._grad is None


@pytest.mark.skipif(C is None, reason="the compiled replayer is not built")
@settings(deadline=None)
@given(prog=programs(max_in=3, max_ops=12, ops=REPLAYED),
       pts=st.lists(st.lists(special, min_size=3, max_size=3), min_size=1, max_size=4))
def test_compiled_gradient_replayer_equals_pure(prog, pts):
    """The same gradient recording replayed by the C and the pure replayer: same bits."""
    f = scalar_of(prog)
    xs = [float(v) for v in pts[0][:prog.n_in]]
    progs = []
    for rp in (C, P):
        rec = rp.Recording(True)
        ins = [rec.input(v, True) for v in xs]
        try:
            out = f(*ins)
        except Exception:  # noqa: BLE001 - raises at its first point: nothing to replay
            return
        finally:
            rec.closed = True
        if type(out) is not rp.Recorder:
            return
        code = rec.code if rp is P else rec
        progs.append(rp.Program(code, rec.funcs, rec.ninputs, [out.slot],
                                grad=(rec.diff, out.slot if rec.diff[out.slot] else -1,
                                      [x.slot for x in ins])))
    cp, pp = progs
    for p in pts:
        ys = [float(v) for v in p[:prog.n_in]]
        a, b = cp.run(ys), pp.run(ys)
        assert (a is None) == (b is None)
        if a is not None:  # (a NaN as "nan": each replayer keeps its own backend's NaN)
            assert tree_bits(a) == tree_bits(b)


def test_gradient_recording_refuses_malformed_programs():
    code = [(P.INPUT, 0, 0, 0, 0.0), (P.CONST, 0, 0, 0, 2.0), (P.CALL2, 0, 1, 0, 0.0)]
    for rp in (P,) + ((C,) if C is not None else ()):
        with pytest.raises(ValueError):
            rp.Program(code, [pow], 1, [2], grad=([1, 0, 1], 2, [0]))  # no rule for pow
        with pytest.raises(ValueError):
            rp.Program(code, [pow], 1, [2], grad=([1, 0], 2, [0]))  # flags of the wrong length
        with pytest.raises(ValueError):
            rp.Program(code, [pow], 1, [2], grad=([1, 0, 0], 2, [7]))  # wanted out of range


def test_escaped_and_threads():
    import threading

    g = d.value_and_grad(lambda x, y: d.sin(x) * y + x / (y + 3.0), argnums=(0, 1))
    cg = compiled(g, "grad")
    pts = [(0.1 * k, 0.3 - 0.05 * k) for k in range(40)]
    want = [g(*p) for p in pts]
    got = [None] * len(pts)

    def work(k):
        for j in range(k, len(pts), 8):
            got[j] = cg(*pts[j])

    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(same(a, b) for a, b in zip(got, want))
    assert compile_module is not None


def test_keywords_and_raising_calls_keep_the_gradient_recording():
    def f(x, scale=2.0):
        if x > 10.0:
            raise ValueError("too big")
        return d.sin(x) * scale

    g = d.value_and_grad(f)
    cg = compiled(g, "grad")
    assert same(cg(0.5, scale=3.0), g(0.5, scale=3.0))  # keywords: the general recording
    with pytest.raises(ValueError):
        cg(11.0)
    assert same(cg(0.25), g(0.25)) and same(cg(0.75), g(0.75))
    assert cg._grad is not None


@pytest.mark.skipif(d.backend != "c", reason="the compiled replayer against the compiled "
                    "core; the pure backend's NaN payloads are not matched (see tree_bits)")
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_sums_of_two_nans_keep_the_uncompiled_nan(sign):
    """Where an adjoint and a contribution are both NaN (of opposite signs here), the replayed
    sweep keeps the NaN the uncompiled sweep keeps, bit for bit (not the C compiler's pick)."""
    nan = math.copysign(math.nan, sign)
    funcs = [lambda x, y, z: x * y + x * z, lambda x, y, z: y * x + z * x,
             lambda x, y, z: (x + y) * (x - z) + x * y]
    for f in funcs:
        g = d.value_and_grad(f, argnums=(0, 1, 2))
        for pt in [(1.0, nan, -nan), (1.0, -nan, nan), (nan, 1.0, -nan), (2.0, -nan, -nan)]:
            cg = d.compile(g)
            want = g(*pt)
            for _ in range(2):  # the recording call, then a replay
                got = cg(*pt)
                assert [P._BITS.pack(v) for v in d.tree_flatten(got)[0]] == \
                    [P._BITS.pack(v) for v in d.tree_flatten(want)[0]], (pt, got, want)
            assert cg.recordings_made == 1
