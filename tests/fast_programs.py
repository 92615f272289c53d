"""Random array programs over the operations of the compiled fast path of array duals.

A program is a list of steps (JSON-able, so that another process -- the pure backend -- can run
the same one); each step appends one array to a pool that starts with the inputs. The
operations are those the fast path takes (``+ - * /``, ``**`` by a constant, ``negative`` and
the table's functions), mixed with what it leaves to the Python path (broadcasting, scalar
duals, constants). Arguments of functions with a restricted domain are squashed into it with
``sin`` (which is itself an operation under test), so finite differences stay meaningful.

``python -m`` style entry: ``main()`` reads programs as JSON on stdin and prints the bits of
their values, gradients and tangents (for the test comparing backends).
"""

import json
import math
import sys

import numpy as np

UNARY = ("negative", "sin", "cos", "tan", "tanh", "exp", "log", "sqrt", "square", "absolute",
         "arctan", "sinh", "cosh", "expm1", "log1p", "reciprocal")
BINARY = ("add", "subtract", "multiply", "divide")
EXPONENTS = (2, 3, 2.0, 1.0, 0.0, 0.5, -1.5, 3.0)
CONSTANTS = (2.0, -0.75, 1.5, 3)


def _pos(v):
    """A positive argument made from ``v``: 1.5 + sin(v), in [0.5, 2.5] (a Python float for a
    Python number: a numpy float64 would make a float32 program float64)."""
    if type(v) in (int, float):
        return 1.5 + math.sin(v)
    return 1.5 + np.sin(v)


def unary(name, v):
    if name == "negative":
        return -v
    if name in ("sin", "cos", "tanh", "arctan", "square", "absolute"):
        return getattr(np, name)(v)
    if name in ("exp", "sinh", "cosh", "expm1"):
        return getattr(np, name)(np.sin(v))
    if name == "tan":
        return np.tan(0.5 * np.sin(v))
    if name in ("log", "sqrt", "reciprocal"):
        return getattr(np, name)(_pos(v))
    if name == "log1p":
        return np.log1p(0.5 * np.sin(v))
    raise ValueError(name)


def binary(name, a, b):
    if name == "add":
        return a + b
    if name == "subtract":
        return a - b
    if name == "multiply":
        return a * b
    if name == "divide":
        return a / _pos(b)
    raise ValueError(name)


def step(vals, consts, s):
    kind = s[0]
    if kind == "u":
        return unary(s[1], vals[s[2]])
    if kind == "b":
        return binary(s[1], vals[s[2]], vals[s[3]])
    if kind == "c":  # with a Python number, on either side
        c = s[3]
        v = vals[s[2]]
        if s[4]:
            return binary(s[1], c, v) if s[1] != "divide" else c / _pos(v)
        return binary(s[1], v, c)
    if kind == "k":  # with a constant array (broadcast against the value if it must be)
        return binary(s[1], vals[s[2]], consts[s[3]])
    if kind == "p":  # a constant power
        e = s[2]
        v = vals[s[1]]
        return (_pos(v) if isinstance(e, float) and e != int(e) else v) ** e
    if kind == "np.power":
        return np.power(vals[s[1]], s[2])
    raise ValueError(kind)


def run(program, consts, *xs):
    """The program's pool after the inputs: every array it made."""
    vals = list(xs)
    for s in program:
        vals.append(step(vals, consts, s))
    return vals[len(xs):]


def draw_program(rng, n_inputs, length):
    prog = []
    n = n_inputs
    for _ in range(length):
        r = rng.random()
        i = int(rng.integers(n))
        if r < 0.35:
            prog.append(["u", UNARY[int(rng.integers(len(UNARY)))], i])
        elif r < 0.65:
            prog.append(["b", BINARY[int(rng.integers(len(BINARY)))], i, int(rng.integers(n))])
        elif r < 0.8:
            c = CONSTANTS[int(rng.integers(len(CONSTANTS)))]
            prog.append(["c", BINARY[int(rng.integers(len(BINARY)))], i, c, bool(rng.integers(2))])
        elif r < 0.88:
            prog.append(["k", BINARY[int(rng.integers(3))], i, int(rng.integers(2))])
        elif r < 0.95:
            prog.append(["p", i, EXPONENTS[int(rng.integers(len(EXPONENTS)))]])
        else:
            prog.append(["np.power", i, 2.0])
        n += 1
    return prog


def bits(x):
    """Hex of the bytes of every float array / number in a nested list or tuple."""
    if isinstance(x, (list, tuple)):
        return [bits(e) for e in x]
    a = np.asarray(x)
    return [a.dtype.str, list(a.shape), a.tobytes().hex()]


def results(d, case):
    """Values, reverse cotangents and forward tangents of one case, as bits."""
    program, consts, xs, ct_seed = case["program"], case["consts"], case["xs"], case["seed"]
    xs = [float(x[0]) if s is None else np.asarray(x, dtype=case["dtype"]).reshape(s)
          for x, s in zip(xs, case["shapes"])]  # None: a Python float (a scalar dual)
    consts = [np.asarray(c, dtype=case["dtype"]).reshape(s) for c, s in zip(consts, case["cshapes"])]
    f = lambda *a: run(program, consts, *a)  # noqa: E731
    rng = np.random.default_rng(ct_seed)
    out, pb = d.vjp(f, *xs)
    cts = [rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype) for o in out]
    grads = pb(cts)
    tans = tuple(float(rng.standard_normal()) if type(x) is float
                 else rng.standard_normal(x.shape).astype(x.dtype) for x in xs)
    _, jv = d.jvp(f, tuple(xs), tans)
    return {"value": bits(out), "grad": bits(list(grads)), "jvp": bits(list(jv))}


def main():
    import deltaad as d

    cases = json.load(sys.stdin)
    json.dump([results(d, c) for c in cases], sys.stdout)


if __name__ == "__main__":
    main()
