"""``python -m bench.compiled_peers``: record-once-replay systems side by side.

For each scalar program at one size: the first call and the per-call time of value and
gradient by

- ``deltaad-compiled``: ``deltaad.compile(value_and_grad(f))`` (first call: the recording,
  median of three);
- ``casadi``: the same program called on CasADi ``SX`` symbols, ``Function`` of the value and
  ``gradient`` (first call: building the graph and the Function, then one evaluation; median
  of three);
- ``jax-jit``: ``jax.jit(jax.value_and_grad(f))`` in float64 (first call: tracing and XLA's
  compilation, reported as its compile time);

and the plain-float ``f`` for scale. Each system runs in its own process with a time limit
(``--timeout``): a missing package, a program the system cannot express (CasADi and ``jax.jit``
cannot branch on values) and a time-out are named in the table, never silent. Peers are
installed by ``make bench-deps``. Wall clock: compare ratios measured side by side.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

from .compiled import _median as _per_call
from .compiled import _size
from .programs import FLOAT_NS, NS, PROGRAMS, make_input

SYSTEMS = ("deltaad-compiled", "casadi", "jax-jit")




def _deltaad(p, n, xs):
    import deltaad as ad

    from .modes import deltaad_ns

    ns = deltaad_ns(ad)
    vg = ad.value_and_grad(lambda xs: p.fn(ns, n, xs))
    want = vg(xs)
    firsts = []
    for _ in range(3):  # a fresh compiled function each: the median of three recordings
        c = ad.compile(vg)
        t0 = time.perf_counter()
        got = c(xs)
        firsts.append(time.perf_counter() - t0)
    first = statistics.median(firsts)
    assert got == want
    return first, lambda: c(xs), (got[0], list(got[1]))


def _casadi(p, n, xs):
    try:
        import casadi as ca
    except ImportError as exc:
        raise _Missing("casadi is not installed (%s): make bench-deps" % exc)
    ns = NS("casadi", ca.sin, ca.cos, ca.exp, ca.sqrt, log=ca.log, tanh=ca.tanh)
    firsts = []
    for _ in range(3):  # the median of three builds (graph, Function, one evaluation)
        t0 = time.perf_counter()
        x = ca.SX.sym("x", len(xs))
        try:
            y = p.fn(ns, n, [x[i] for i in range(len(xs))])
        except Exception as exc:  # noqa: BLE001 - e.g. a branch on a symbol's value
            raise _Missing("the program does not build on SX symbols: %s: %s"
                           % (type(exc).__name__, str(exc).splitlines()[0][:80]))
        fun = ca.Function("f", [x], [y, ca.gradient(y, x)])
        r = fun(xs)
        firsts.append(time.perf_counter() - t0)
    first = statistics.median(firsts)
    out = (float(r[0]), [float(v) for v in r[1].full().ravel()])
    return first, lambda: fun(xs), out


def _jax(p, n, xs):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as exc:
        raise _Missing("jax is not installed (%s): make bench-deps" % exc)
    jax.config.update("jax_enable_x64", True)
    ns = NS("jax", jnp.sin, jnp.cos, jnp.exp, jnp.sqrt, log=jnp.log, tanh=jnp.tanh)
    k = len(xs)
    vg = jax.jit(jax.value_and_grad(lambda a: p.fn(ns, n, [a[i] for i in range(k)])))
    a = jnp.asarray(xs, dtype=jnp.float64)
    t0 = time.perf_counter()
    try:
        v, g = vg(a)
        v.block_until_ready()
    except Exception as exc:  # noqa: BLE001 - e.g. a branch on a traced value
        raise _Missing("jax.jit cannot trace the program: %s" % type(exc).__name__)
    first = time.perf_counter() - t0

    def call():
        v, g = vg(a)
        g.block_until_ready()
    return first, call, (float(v), [float(u) for u in g])


class _Missing(Exception):
    pass


RUN = {"deltaad-compiled": _deltaad, "casadi": _casadi, "jax-jit": _jax}


def worker(system, name, ops, reps):
    p = PROGRAMS[name]
    n = _size(p, ops)
    xs = make_input(p, n, 0)
    t_float = _per_call(lambda: p.fn(FLOAT_NS, n, xs), reps)
    try:
        first, call, (v, g) = RUN[system](p, n, xs)
    except _Missing as exc:
        return {"error": str(exc), "n": n, "ops": p.ops(n), "float": t_float}
    call()
    return {"n": n, "ops": p.ops(n), "float": t_float, "first": first,
            "per_call": _per_call(call, reps), "value": v, "grad0": g[0]}


def run(system, name, ops, reps, timeout):
    cmd = [sys.executable, "-m", "bench.compiled_peers", "--worker", system, name, str(ops),
           str(reps)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": "no result within %d s" % timeout}
    if r.returncode:
        return {"error": "failed: " + (r.stderr.strip().splitlines() or ["?"])[-1][:100]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--worker":
        system, name, ops, reps = sys.argv[2:6]
        print(json.dumps(worker(system, name, int(ops), int(reps))))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", default="taylor,letchain,rosenbrock,quaternion,ode,newton")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--ops", type=int, default=1000, help="operations per program (about)")
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per system and program")
    args = ap.parse_args(argv)
    systems = args.systems.split(",")
    print("first call and per-call time of value and gradient, ms (median of %d calls; per "
          "call also / plain-float f)" % args.reps)
    print("| program | ops | float f | " + " | ".join(
        "%s first | %s per call" % (s, s) for s in systems) + " |")
    print("| --- | ---: | ---: | " + " | ".join("---: | ---:" for _ in systems) + " |")
    notes = []
    for name in args.programs.split(","):
        cells = []
        row = None
        for s in systems:
            r = run(s, name, args.ops, args.reps, args.timeout)
            if "error" in r:
                cells.append("n/a | n/a")
                notes.append("%s on %s: %s" % (s, name, r["error"]))
                row = row or (r if "ops" in r else None)
                continue
            row = r
            cells.append("%.3g | %.3g (%.2f)" % (1e3 * r["first"], 1e3 * r["per_call"],
                                                 r["per_call"] / r["float"]))
        print("| %s | %s | %s | %s |" % (
            name, row["ops"] if row else "?", "%.3g" % (1e3 * row["float"]) if row else "?",
            " | ".join(cells)), flush=True)
    for note in notes:
        print("- " + note)


if __name__ == "__main__":
    main()
