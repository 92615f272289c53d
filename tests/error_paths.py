"""Every error path we could find, to be run once per backend (``python error_paths.py``
prints ``{case: "ExceptionType: message"}`` as JSON): tests/test_errors.py checks that both
backends say exactly the same thing. A case that does not raise reports what it returned."""

import copy
import json
import math
import pickle
import sys

import numpy as np

import deltaad as ad
from deltaad._backend import B

_bound_asarray = np.asarray  # bound at import, before any differentiation: numpy's own

_msin = math.sin  # bound as `from math import sin` binds it: math's own function


def cases():
    T = B.Tape(1)
    x = T.input(2.0)
    y = T.input(0.0)
    L = B.ForwardLevel(2)
    u = L.input(2.0, 1.0)
    C = B.Tape(3)
    c = C.input(1.0)
    ca = ad.grad(lambda a: (KEPT.append(a), np.sum(a))[1])(np.ones(2)) is not None and KEPT[-1]
    C.close()
    a = np.ones(3)
    OUT3 = np.empty(3)

    @ad.custom_vjp
    def cv(t):
        return t * 2.0

    cv.defvjp(lambda t: (cv(t), None), lambda r, g: (g, g))

    @ad.custom_vjp
    def wrong_fwd(t):
        return t * 2.0

    wrong_fwd.defvjp(lambda t: (np.zeros(2) + np.sum(t), None), lambda r, g: (g * 2.0,))

    @ad.custom_jvp
    def cj(t):
        return t * 3.0

    cj.defjvp(lambda p, t: (cj(p[0]), t[0] * 3.0 + 1.0))

    return {
        # the scalar dual and Python's own messages about it
        "matmul": lambda: x @ 1.0,
        "rmatmul": lambda: 1.0 @ x,
        "add str": lambda: x + "s",
        "radd str": lambda: "s" + x,
        "rsub str": lambda: "s" - x,
        "lt str": lambda: x < "s",
        "lt None": lambda: x < None,
        "lshift": lambda: x << 1,
        "invert": lambda: ~x,
        "pow modulo": lambda: pow(x, 2, 3),
        "getitem": lambda: x[0],
        "len": lambda: len(x),
        "iter": lambda: iter(x),
        "attribute": lambda: x.foo,
        "new attribute": lambda: setattr(x, "foo", 1.0),
        "as index": lambda: [1][x],
        "hash": lambda: hash(x),
        "float": lambda: float(x),
        "complex": lambda: complex(x),
        "math.sin bound": lambda: _msin(x),  # `from math import sin`: math's own function
        "pickle": lambda: pickle.dumps(x),
        "pickle tape": lambda: pickle.dumps(T),
        "tape attribute": lambda: T.foo,
        "round bad": lambda: round(x, "s"),
        "format bad": lambda: format(x, "q"),
        "deepcopy": lambda: copy.deepcopy(x) is x or 1 / 0,
        # escaped duals
        "escaped add": lambda: c + 1.0,
        "escaped radd": lambda: 1.0 + c,
        "escaped mul": lambda: c * c,
        "escaped div": lambda: c / 2.0,
        "escaped neg": lambda: -c,
        "escaped pos": lambda: +c,
        "escaped abs": lambda: abs(c),
        "escaped pow": lambda: c ** 2.0,
        "escaped sin": lambda: ad.sin(c),
        "escaped hypot": lambda: ad.hypot(c, 1.0),
        "escaped np.sin": lambda: np.sin(c),
        "escaped floor": lambda: math.floor(c) and c.rint(),
        "escaped array": lambda: ca * 2.0,
        "escaped array np": lambda: np.sum(ca),
        "escaped output": lambda: ad.grad(lambda t: c)(1.0),
        # making duals by hand
        "new": lambda: B.Dual.__new__(B.Dual),
        "init value None": lambda: B.Dual(None, T, 0, None),
        "init trace": lambda: B.Dual(1.0, 5, 0, None),
        "init id": lambda: B.Dual(1.0, T, 99, None),
        "init forward id": lambda: B.Dual(1.0, L, 3, 1.0),
        "init tangent None": lambda: B.Dual(1.0, L, -1, None),
        "init again": lambda: x.__init__(1.0, T, 0, None),
        "input of a higher level": lambda: B.Tape(0).input(x),
        "eval seed": lambda: T.eval([(99, 1.0)], [0]),
        "eval wanted": lambda: T.eval([(0, 1.0)], [99]),
        "eval wanted range": lambda: T.eval([(0, 1.0)], range(5, 99)),
        "push_linear": lambda: T.push_linear([99], (1.0,)),
        "binding": lambda: T.binding(99),
        "emit foreign": lambda: L.emit(1.0, [x], [1.0]),
        "emit length": lambda: L.emit(1.0, [u], []),
        # arithmetic and domains
        "div zero": lambda: x / 0.0,
        "div zero dual": lambda: x / y,
        "rdiv zero": lambda: 1.0 / y,
        "forward div zero": lambda: u / 0.0,
        "floordiv zero": lambda: x // 0.0,
        "mod zero": lambda: x % 0.0,
        "divmod zero": lambda: divmod(x, 0.0),
        "fmod zero": lambda: x.fmod(0.0),
        "zero to a negative power": lambda: y ** -1.0,
        "negative to a fraction": lambda: (-x) ** 0.5,
        "log negative": lambda: ad.log(-x),
        "log zero": lambda: ad.log(y),
        "sqrt negative": lambda: ad.sqrt(-x),
        "exp overflow": lambda: ad.exp(x * 1000.0),
        "arcsin": lambda: ad.arcsin(x),
        "arccosh": lambda: ad.arccosh(y),
        "arctanh": lambda: ad.arctanh(x),
        "log1p": lambda: ad.log1p(-x),
        "sinh overflow": lambda: ad.sinh(x * 1000.0),
        "cosh overflow": lambda: ad.cosh(x * 1000.0),
        "expm1 overflow": lambda: ad.expm1(x * 1000.0),
        "exp2 overflow": lambda: ad.exp2(x * 1000.0),
        "log2 negative": lambda: ad.log2(-x),
        "log10 negative": lambda: ad.log10(-x),
        "float log negative": lambda: ad.log(-1.0),
        "float exp overflow": lambda: ad.exp(1000.0),
        "sin of a str": lambda: ad.sin("s"),
        "hypot of a str": lambda: ad.hypot(x, "s"),
        # the transformations
        "argnums float": lambda: ad.grad(lambda t: t, argnums=1.0)(1.0),
        "argnums str": lambda: ad.grad(lambda t: t, argnums="0")(1.0),
        "argnums None": lambda: ad.grad(lambda t: t, argnums=None)(1.0),
        "argnums out of range": lambda: ad.grad(lambda t: t, argnums=3)(1.0),
        "argnums repeated": lambda: ad.grad(lambda t, s: t, argnums=(0, 0))(1.0, 2.0),
        "argnums bool": lambda: ad.grad(lambda t: t, argnums=True)(1.0),
        "jacrev argnums": lambda: ad.jacrev(lambda t: t, argnums=[0.5])(1.0),
        "no float leaf": lambda: ad.grad(lambda t: t)(3),
        "non-scalar output": lambda: ad.grad(lambda t: (t, t))(1.0),
        "has_aux not a pair": lambda: ad.grad(lambda t: t, has_aux=True)(1.0),
        "cotangent shape": lambda: ad.vjp(lambda t: t * 2.0, a)[1](1.0),
        "cotangent complex": lambda: ad.vjp(lambda t: t, 1.0)[1](1j),
        "cotangent structure": lambda: ad.vjp(lambda t: (t, t), 1.0)[1](1.0),
        "tangent structure": lambda: ad.jvp(lambda t: t, (1.0,), ((1.0,),)),
        "tangent shape": lambda: ad.jvp(lambda t: t, (a,), (np.ones(2),)),
        "primals not a tuple": lambda: ad.jvp(lambda t: t, 1.0, 1.0),
        "complex input": lambda: ad.grad(lambda t: t)(1j),
        "hidden output": lambda: ad.jacrev(lambda t: {"k": t * 2.0}.values())(1.0),
        "list subclass output": lambda: ad.jacrev(lambda t: type("L", (list,), {})([t]))(1.0),
        "make_delta of arrays": lambda: ad.make_delta(lambda t: np.sum(t), a),
        # custom rules
        "custom_vjp bwd arity": lambda: ad.grad(cv)(1.0),
        "custom_vjp fwd shape": lambda: ad.grad(lambda t: np.sum(wrong_fwd(t)))(a),
        "custom_vjp fwd shape, forward": lambda: ad.jacfwd(wrong_fwd)(a),
        "custom_jvp not linear": lambda: ad.grad(cj)(1.0),
        "custom_vjp no rule": lambda: ad.grad(ad.custom_vjp(lambda t: t))(1.0),
        # numpy
        "unsupported numpy function": lambda: ad.grad(lambda t: np.interp(0.5, t, t))(a),
        "array to numpy float": lambda: ad.grad(lambda t: _bound_asarray(t, dtype=float).sum())(a),
        "array item assignment": lambda: ad.grad(lambda t: t.__setitem__(0, 1.0))(a),
        "array float": lambda: ad.grad(lambda t: float(t))(a),
        "dual index": lambda: ad.grad(lambda t: np.sum(t[t]))(a),
        # (an array made before differentiating: one made inside takes duals, see fillable)
        "ufunc out": lambda: ad.grad(lambda t: np.sum(np.sin(t, out=OUT3)))(a),
        "ufunc where": lambda: ad.grad(lambda t: np.sum(np.sin(t, where=True)) + np.sum(np.sin(t, where=a > 0)))(a),
        "ufunc dtype int": lambda: ad.grad(lambda t: np.sum(np.sin(t, dtype=int)))(a),
        "matmul shapes": lambda: ad.grad(lambda t: np.sum(t @ np.ones((2, 2))))(a),
        "reshape": lambda: ad.grad(lambda t: np.sum(t.reshape(2, 2)))(a),
        "scalar dual in matmul": lambda: ad.grad(lambda t: np.matmul(t, t))(1.0),
        "norm ord": lambda: ad.grad(lambda t: np.linalg.norm(t, ord=3))(np.eye(2)),
        "fill": lambda: ad.grad(lambda t: t.fill(0.0))(a),
    }


KEPT = []


def run():
    out = {}
    for name, f in cases().items():
        try:
            r = f()
            out[name] = "returned %s" % type(r).__name__
        except Exception as e:  # noqa: BLE001 - compared between backends
            out[name] = "%s: %s" % (type(e).__name__, e)
    return out


if __name__ == "__main__":
    json.dump(run(), sys.stdout)
