"""A differential fuzzer: random scalar and array programs (sharing, branches, loops, nesting)
differentiated every way deltaad can, each result checked against the others.

Each program is Python source generated from a seed (``program(seed)``), so a mismatch is
reproducible from its seed alone; ``check(seed)`` returns the list of mismatches, and
``digest(seed)`` the bits of every result, which two processes on the two backends compare
(``compare_backends``). Checks, for inputs drawn with the program:

- value: ``value_and_grad(f)(x)[0]`` and ``jvp``'s primal are the plain ``f(x)``, bit for bit;
- modes: reverse (``grad``) and forward (``jacfwd``) agree, and so do ``hessian`` (forward over
  reverse) and reverse over reverse, to rounding;
- finite differences: the gradient matches central differences where the program takes the
  same branches at ``x`` and at ``x +- h``;
- backends: the compiled core and the pure twin give the same bits for all of the above.

Command line (``make fuzz N=...``): ``python tests/fuzz.py --n N [--start S] [--out DIR]``
runs N programs on both backends and writes each mismatch to ``DIR/case_<seed>.py``, a
self-contained script that reproduces it.
"""

import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# --------------------------------------------------------------------------------------------
# Programs

SCALAR_UNARY = ["np.sin({a})", "np.cos({a})", "np.tanh({a})", "np.exp(np.sin({a}))",
                "np.log(1.0 + {a} * {a})", "np.sqrt(2.0 + np.cos({a}))", "np.arctan({a})",
                "-{a}", "abs({a} - 0.3)", "{a} ** 3", "(1.0 + {a} * {a}) ** 0.7",
                "deltaad.math.erf({a})", "math.sinh(0.5 * np.tanh({a}))"]
SCALAR_BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / (1.5 + np.sin({b}))",
                 "np.hypot({a}, {b})", "np.arctan2({a}, 1.5 + np.cos({b}))",
                 "np.logaddexp({a}, {b})", "0.5 * {a} + 0.25 * {b}", "np.maximum({a}, {b})"]
ARRAY_UNARY = ["np.sin({a})", "np.tanh({a})", "np.exp(np.cos({a}))", "{a} * {a}",
               "np.sqrt(1.0 + {a} ** 2)", "np.cumsum({a})", "{a}[::-1]", "np.sort({a})",
               "np.roll({a}, 1)", "{a} - np.mean({a})", "{a} / (1.0 + np.sum({a} ** 2))",
               "np.abs({a} - 0.2)", "np.clip({a}, -0.8, 0.9)"]
ARRAY_BINARY = ["{a} + {b}", "{a} * {b}", "{a} - 2.0 * {b}", "np.maximum({a}, {b})",
                "np.where({a} > {b}, {a}, {b} * 0.5)", "np.dot({a}, {b}) * {b}",
                "np.outer({a}, {b}) @ {a}", "np.linalg.norm({a}) * {b}", "np.hypot({a}, {b})"]
ARRAY_REDUCE = ["np.sum({a})", "np.dot({a}, {a})", "np.max({a})", "np.prod(1.0 + 0.1 * {a})",
                "np.linalg.norm({a})", "np.var({a})", "np.mean(np.exp({a}))"]


def program(seed):
    """``(source, kind, inputs)``: the source of ``def f(*xs)``, "scalar" or "array", and
    the inputs (floats, or float arrays), all determined by ``seed``."""
    rng = random.Random(seed)
    kind = "array" if rng.random() < 0.4 else "scalar"
    n_in = rng.randint(1, 3)
    names = ["x%d" % i for i in range(n_in)]
    lines = []
    counter = [0]

    def fresh():
        counter[0] += 1
        return "v%d" % counter[0]

    def pick():  # recent values more often: deep programs, with sharing
        return names[-1 - min(int(rng.expovariate(0.7)), len(names) - 1)] if rng.random() < 0.7 else rng.choice(names)

    unary = SCALAR_UNARY if kind == "scalar" else ARRAY_UNARY
    binary = SCALAR_BINARY if kind == "scalar" else ARRAY_BINARY

    def step(indent):
        r = rng.random()
        pad = "    " * indent
        v = fresh()
        if r < 0.4:
            lines.append(pad + "%s = %s" % (v, rng.choice(unary).format(a=pick())))
        elif r < 0.8:
            lines.append(pad + "%s = %s" % (v, rng.choice(binary).format(a=pick(), b=pick())))
        elif r < 0.9:  # a branch on values (recorded in the path)
            a, b = pick(), pick()
            cond = "%s > %s" % (a, b) if kind == "scalar" else "np.sum(%s) > np.sum(%s)" % (a, b)
            lines.append(pad + "if _branch(%s):" % cond)
            lines.append(pad + "    %s = %s" % (v, rng.choice(unary).format(a=a)))
            lines.append(pad + "else:")
            lines.append(pad + "    %s = %s" % (v, rng.choice(binary).format(a=a, b=b)))
        else:  # a loop carrying a value
            a, b = pick(), pick()
            lines.append(pad + "%s = %s" % (v, a))
            lines.append(pad + "for _ in range(%d):" % rng.randint(1, 3))
            lines.append(pad + "    %s = 0.5 * %s + 0.5 * %s" % (
                v, rng.choice(unary).format(a=v), b))
        names.append(v)

    for _ in range(rng.randint(1, 8)):
        step(1)
    out = names[-1]
    if kind == "array":
        out = rng.choice(ARRAY_REDUCE).format(a=out)
    lines.append("    return %s" % out)
    src = "def f(%s):\n%s\n" % (", ".join("x%d" % i for i in range(n_in)), "\n".join(lines))
    if kind == "scalar":
        xs = [rng.uniform(-2.0, 2.0) for _ in range(n_in)]
    else:
        n = rng.randint(2, 4)
        xs = [np.array([rng.uniform(-2.0, 2.0) for _ in range(n)]) for _ in range(n_in)]
    return src, kind, xs


def compile_program(src, extra=None):
    """The function ``f`` of ``src`` and its branch path recorder (``extra``: more names)."""
    import deltaad
    import deltaad.math  # noqa: F401 - the programs call it
    path = []

    def _branch(c):
        path.append(bool(c))
        return c

    env = {"np": np, "math": deltaad.math, "deltaad": deltaad, "_branch": _branch}
    env.update(extra or {})
    exec(compile(src, "<fuzz program>", "exec"), env)
    return env["f"], path


# --------------------------------------------------------------------------------------------
# Results and checks


def _bits(x):
    """Every number in ``x`` as bit patterns (one token for every nan)."""
    if isinstance(x, (tuple, list)):
        return [_bits(e) for e in x]
    a = np.asarray(x, dtype=float)
    return [("nan" if math.isnan(v) else struct.pack("<d", v).hex()) for v in a.ravel()]


def _flat(x):
    if isinstance(x, (tuple, list)):
        return np.concatenate([_flat(e) for e in x]) if x else np.zeros(0)
    return np.asarray(x, dtype=float).ravel()


def results(seed, env=None):
    """Every result of the program ``seed`` (or of ``(source, kind, inputs)``): plain value,
    value_and_grad, jvp, jacfwd, hessian, and reverse over reverse, each a value or
    ``("raised", type, message)``."""
    import deltaad
    src, kind, xs = program(seed) if isinstance(seed, int) else seed
    f, path = compile_program(src, env)
    argnums = tuple(range(len(xs)))
    tangents = tuple(np.ones_like(x) if kind == "array" else 1.0 for x in xs)
    out = {}

    def run(name, thunk):
        try:
            out[name] = thunk()
        except Exception as exc:  # noqa: BLE001 - a result to compare
            out[name] = ("raised", type(exc).__name__, str(exc))

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        run("plain", lambda: f(*xs))
        run("value_and_grad", lambda: deltaad.value_and_grad(f, argnums)(*xs))
        run("jvp", lambda: deltaad.jvp(f, tuple(xs), tangents))
        run("jacfwd", lambda: deltaad.jacfwd(f, argnums)(*xs))
        run("hessian", lambda: deltaad.hessian(f, argnums)(*xs))
        run("rev_over_rev", lambda: deltaad.jacrev(deltaad.grad(f, argnums), argnums)(*xs))
    return src, kind, xs, out


def digest(seed):
    """The bits of every result of program ``seed`` (compared across backends)."""
    src, kind, xs, out = results(seed)
    return {k: (list(v) if _raised(v) else _bits(v))
            for k, v in out.items()}


def _close(a, b, rtol, atol):
    a = _flat(a)
    b = _flat(b)
    if a.shape != b.shape:
        return False
    nan = np.isnan(a) | np.isnan(b) | np.isinf(a) | np.isinf(b)
    if np.any(nan & ~((np.isnan(a) & np.isnan(b)) | (a == b))):
        # a nan or inf in one mode only: the IEEE limit of reverse mode (inf - inf in the
        # sweep) can make the other mode's exact value a nan; not a mismatch
        return True
    ok = ~nan
    return bool(np.all(np.abs(a[ok] - b[ok]) <= atol + rtol * np.abs(b[ok])))


def _raised(x):
    return isinstance(x, tuple) and len(x) == 3 and isinstance(x[0], str) and x[0] == "raised"


def check(seed, env=None):
    """The mismatches of program ``seed`` (or ``(source, kind, inputs)``, with ``env`` the
    names it uses beyond numpy and deltaad) on the selected backend (empty: all agree)."""
    src, kind, xs, out = results(seed, env)
    bad = []
    plain = out["plain"]
    if _raised(plain):
        for k, v in out.items():
            if not _raised(v) or v[1] != plain[1]:
                bad.append("%s: the plain program raised %s, %s gave %r" % (k, plain[1], k, v))
        return bad
    vg = out["value_and_grad"]
    if _raised(vg):
        return ["value_and_grad raised %s: %s where the plain program ran" % vg[1:]]
    value, grad = vg
    if _bits(value) != _bits(plain):
        bad.append("value_and_grad's value %r is not the plain value %r" % (value, plain))
    if not _raised(out["jvp"]) and _bits(out["jvp"][0]) != _bits(plain):
        bad.append("jvp's primal %r is not the plain value %r" % (out["jvp"][0], plain))
    scale = 1.0 + float(np.max(np.abs(_flat(grad)), initial=0.0, where=np.isfinite(_flat(grad))))
    for name, other, rtol in (("jacfwd", out["jacfwd"], 1e-9),):
        if _raised(other):
            bad.append("%s raised %s: %s" % ((name,) + other[1:]))
        elif not _close(other, grad, rtol, 1e-12 * scale):
            bad.append("%s %r differs from grad %r" % (name, other, grad))
    h, rr = out["hessian"], out["rev_over_rev"]
    if _raised(h) or _raised(rr):
        if not (_raised(h) and _raised(rr) and h[1] == rr[1]):
            bad.append("hessian %r / reverse over reverse %r" % (h, rr))
    elif not _close(h, rr, 1e-8, 1e-10 * (1.0 + float(np.max(np.abs(_flat(rr)), initial=0.0,
                                                              where=np.isfinite(_flat(rr)))))):
        bad.append("hessian %r differs from reverse over reverse %r" % (h, rr))
    bad += _finite_differences(src, xs, grad, env)
    return bad


def _finite_differences(src, xs, grad, env):
    """Central differences at steps h and h/4 on the branches ``xs`` takes; a derivative is
    judged only where the two agree (else the function is too rough at that scale for a
    difference to mean anything: a cube iterated into cos, say)."""
    f, path = compile_program(src, env)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        del path[:]
        size = abs(float(f(*xs)))  # the rounding of f: eps * |f| / h in a difference
        base = list(path)

        def central(i, j, h):
            vals = []
            for s in (h, -h):
                ys = [np.array(v, dtype=float, copy=True) if isinstance(v, np.ndarray) else v for v in xs]
                if isinstance(ys[i], np.ndarray):
                    ys[i].ravel()[j] += s
                else:
                    ys[i] += s
                del path[:]
                vals.append(float(f(*ys)))
                if path != base:
                    return None
            return (vals[0] - vals[1]) / (2 * h)

        flat_g = _flat(grad)
        k = 0
        bad = []
        for i, x in enumerate(xs):
            for j in range(np.size(x)):
                h = 1e-5 * max(1.0, abs(float(np.ravel(x)[j])))
                g = flat_g[k]
                k += 1
                fd, fd4 = central(i, j, h), central(i, j, h / 4)
                if fd is None or fd4 is None or not (math.isfinite(g) and abs(fd) < 1e6):
                    continue
                rounding = 1e-14 * size / h
                if abs(fd - fd4) > 1e-5 * (1.0 + abs(fd4)) + rounding:
                    continue  # the differences do not settle: no verdict
                if abs(fd4 - g) > 1e-4 * (1.0 + abs(g) + abs(fd4)) + rounding:
                    bad.append("d/dx%d[%d]: finite differences %r, grad %r" % (i, j, fd4, g))
    return bad


# --------------------------------------------------------------------------------------------
# Both backends


def digests_in(backend, seeds):
    """``{seed: digest}`` computed in a fresh process on ``backend``."""
    env = dict(os.environ, DELTAAD_BACKEND=backend)
    code = ("import json, sys; sys.path.insert(0, %r); import fuzz; "
            "print(json.dumps({s: fuzz.digest(s) for s in %r}))" % (HERE, list(seeds)))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True)
    return {int(k): v for k, v in json.loads(r.stdout.strip().splitlines()[-1]).items()}


def compare_backends(seeds):
    """``{seed: [result names that differ]}`` between the core and the pure twin."""
    c = digests_in("c", seeds)
    p = digests_in("python", seeds)
    out = {}
    for s in seeds:
        diff = sorted(k for k in set(c[s]) | set(p[s]) if c[s].get(k) != p[s].get(k))
        if diff:
            out[s] = diff
    return out


def save_case(out_dir, seed, problems):
    """Write ``case_<seed>.py``: the program, its inputs and what went wrong; running it
    repeats the checks on both backends."""
    src, kind, xs = program(seed)
    path = os.path.join(out_dir, "case_%d.py" % seed)
    with open(path, "w") as fh:
        fh.write('"""deltaad fuzz case, seed %d (%s program). Mismatches found:\n\n%s\n"""\n'
                 % (seed, kind, "\n".join("- " + p for p in problems)))
        fh.write("import sys\nsys.path.insert(0, %r)\nimport fuzz\n\n" % HERE)
        fh.write("# the program (fuzz.program(%d) regenerates it) and its inputs %r\n" % (seed, xs))
        fh.write("".join("# " + line + "\n" for line in src.splitlines()))
        fh.write("\nprint(fuzz.check(%d))\nprint(fuzz.compare_backends([%d]))\n" % (seed, seed))
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="number of programs")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--out", default="fuzz-cases", help="where mismatches are saved")
    ap.add_argument("--batch", type=int, default=200, help="programs per backend process")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    seeds = list(range(args.start, args.start + args.n))
    found = {}
    for k in range(0, len(seeds), args.batch):
        batch = seeds[k:k + args.batch]
        for s, diff in compare_backends(batch).items():
            found.setdefault(s, []).append("backends differ in: " + ", ".join(diff))
        for backend in ("c", "python"):
            env = dict(os.environ, DELTAAD_BACKEND=backend)
            code = ("import json, sys; sys.path.insert(0, %r); import fuzz; "
                    "print(json.dumps({s: fuzz.check(s) for s in %r}))" % (HERE, batch))
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                               text=True, check=True)
            for s, probs in json.loads(r.stdout.strip().splitlines()[-1]).items():
                if probs:
                    found.setdefault(int(s), []).extend("[%s] %s" % (backend, p) for p in probs)
        print("fuzz: %d/%d programs, %d with mismatches" % (
            min(k + args.batch, len(seeds)), len(seeds), len(found)), flush=True)
    for s, probs in sorted(found.items()):
        print("  seed %d -> %s" % (s, save_case(args.out, s, probs)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
