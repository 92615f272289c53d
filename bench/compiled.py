"""``python -m bench.compiled``: deltaad.compile's first-call and per-call costs.

For each scalar program at one size (about ``--ops`` operations): the uncompiled ``grad``,
the first call of ``compile(value_and_grad(f))`` (the recording), a replayed call, and the
plain-float ``f``, all in this process, each the median of ``--reps`` runs (the first call:
a fresh compiled function each run). Also the bytes per recorded instruction and the per-call
time of a compiled 10-operation function. Ratios, not absolute times, are what to compare on a
shared machine.
"""

import argparse
import statistics
import time

from .modes import deltaad_ns
from .programs import FLOAT_NS, PROGRAMS, make_input


STAT = statistics.median  # --stat min: the least disturbed run, on a loaded machine


def _median(fn, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return STAT(ts)


def ten_ops(x, y):
    """The 10-operation function of two inputs whose per-call overhead is reported."""
    a = x * y
    b = a + x
    c = b * b
    d = c - y
    e = d / 3.0
    g = e * x
    h = g + 1.0
    i = h * y
    j = i - a
    return j * 0.5


def _size(program, ops):
    n = 1
    while program.ops(n * 2) <= ops and n * 2 <= program.n_max:
        n *= 2
    return n


def measure(names, ops, reps):
    import deltaad as ad

    ns = deltaad_ns(ad)
    rows = []
    for name in names:
        p = PROGRAMS[name]
        n = _size(p, ops)
        xs = make_input(p, n, 0)

        def f(xs, fn=p.fn, n=n):
            return fn(ns, n, xs)

        def plain(fn=p.fn, n=n, xs=xs):
            return fn(FLOAT_NS, n, xs)

        vg = ad.value_and_grad(f)
        t_float = _median(plain, reps)
        t_grad = _median(lambda: vg(xs), reps)
        firsts = []
        for _ in range(max(1, reps // 2)):
            c = ad.compile(vg)
            t0 = time.perf_counter()
            out = c(xs)
            firsts.append(time.perf_counter() - t0)
        t_first = STAT(firsts)
        assert c(xs) == out == vg(xs), name  # the replay is the uncompiled result, bit for bit
        t_replay = _median(lambda: c(xs), reps)
        assert c.recordings_made == 1, name
        prog = c.recordings()[0].prog
        rows.append(dict(program=name, n=n, ops=p.ops(n), instructions=prog.n,
                         bytes_per_instruction=prog.nbytes / prog.n,
                         tape_bytes_per_op=prog.tape_bytes / p.ops(n),
                         gradient_recording=c._grad is not None,
                         instructions_per_op=prog.n / p.ops(n),
                         first_over_grad=t_first / t_grad, replay_over_float=t_replay / t_float,
                         grad_over_float=t_grad / t_float,
                         replay_ns_per_op=1e9 * t_replay / p.ops(n)))
    return rows


def slopes(names, ops, reps):
    """Log-log slopes of the replay time, the first call's time and the tape's bytes against
    the number of operations, over sizes from about ``ops / 8`` to ``ops`` (1.00: linear)."""
    import math

    import deltaad as ad

    ns = deltaad_ns(ad)
    out = {}
    for name in names:
        p = PROGRAMS[name]
        pts = []
        for k in (8, 4, 2, 1):
            n = _size(p, ops // k)
            if pts and n == pts[-1][0]:
                continue
            xs = make_input(p, n, 0)
            vg = ad.value_and_grad(lambda xs, fn=p.fn, n=n: fn(ns, n, xs))
            firsts = []
            for _ in range(max(1, reps // 2)):
                c = ad.compile(vg)
                t0 = time.perf_counter()
                c(xs)
                firsts.append(time.perf_counter() - t0)
            prog = c.recordings()[0].prog
            pts.append((n, p.ops(n), _median(lambda: c(xs), reps), STAT(firsts),
                        prog.tape_bytes))
        if len(pts) < 2:
            continue
        lx = [math.log(q[1]) for q in pts]

        def fit(col):
            ly = [math.log(q[col]) for q in pts]
            mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
            return (sum((a - mx) * (b - my) for a, b in zip(lx, ly))
                    / sum((a - mx) ** 2 for a in lx))
        out[name] = dict(sizes=[q[1] for q in pts], replay=fit(2), first=fit(3), bytes=fit(4))
    return out


def _per_call_pair(c, reps, loops=2000):
    """Per-call time of ``c`` (a compiled function of ``ten_ops``'s two inputs, called once
    already) and of ``ten_ops`` itself."""
    def many(fn):
        def run():
            for _ in range(loops):
                fn(1.25, 0.75)
        return run
    return _median(many(c), reps) / loops, _median(many(ten_ops), reps) / loops


def overhead_10ops_grad(reps):
    """Per-call time of ``compile(value_and_grad(f))`` for a 10-operation ``f`` of two
    inputs, and of the plain ``f``."""
    import deltaad as ad

    c = ad.compile(ad.value_and_grad(ten_ops, argnums=(0, 1)))
    c(1.0, 2.0)
    return _per_call_pair(c, reps)


def overhead_10ops(reps):
    """Per-call time of a compiled 10-operation function, and of the function itself."""
    import deltaad as ad

    c = ad.compile(ten_ops)
    c(1.0, 2.0)
    return _per_call_pair(c, reps)


def hessian_10(reps):
    """Compiled vs uncompiled ``hessian`` of a 10-input function, and a Hessian-vector product."""
    import deltaad as ad

    def f(*xs):  # ten float arguments: the Hessian is nested tuples of floats (a list
        s = 0.0  # argument would give a numpy array, which compile does not record yet)
        for i in range(len(xs) - 1):
            s = s + ad.sin(xs[i] * xs[i + 1]) + xs[i] ** 2 * ad.exp(-xs[i + 1] * 0.1)
        return s

    xs = tuple(0.1 * k - 0.3 for k in range(10))
    v = tuple([1.0] * 10)
    nums = tuple(range(10))
    h0 = ad.hessian(f, argnums=nums)
    h = lambda xs: h0(*xs)  # noqa: E731
    hv = lambda xs, v: ad.hvp(f, xs, v)  # noqa: E731
    ch, chv = ad.compile(h), ad.compile(hv)
    assert ch(xs) == h(xs) and chv(xs, v) == hv(xs, v)
    assert ch.recordings_made == 1 and chv.recordings_made == 1
    loops = 20

    def many(fn, *a):
        def run():
            for _ in range(loops):
                fn(*a)
        return run
    return (_median(many(h, xs), reps) / loops, _median(many(ch, xs), reps) / loops,
            _median(many(hv, xs, v), reps) / loops, _median(many(chv, xs, v), reps) / loops)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", default="taylor,letchain,rosenbrock,quaternion,ode,newton")
    ap.add_argument("--ops", type=int, default=100_000, help="operations per program (about)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--slopes", action="store_true",
                    help="also fit time and memory slopes over sizes ops/8 .. ops")
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="summary of the repeated timings (min: for a loaded machine)")
    args = ap.parse_args(argv)
    global STAT
    STAT = statistics.median if args.stat == "median" else min
    import deltaad as ad

    print("deltaad backend: %s; %s of %d runs" % (ad.backend, args.stat, args.reps))
    rows = measure(args.programs.split(","), args.ops, args.reps)
    print("| program | ops | recording | instr/op | tape B/op | first call / grad "
          "| replay / float f | grad / float f | replay ns/op |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        r = dict(r, kind="gradient" if r["gradient_recording"] else "general")
        print("| %(program)s | %(ops)d | %(kind)s | %(instructions_per_op).2f "
              "| %(tape_bytes_per_op).1f | %(first_over_grad).1f | %(replay_over_float).2f "
              "| %(grad_over_float).2f | %(replay_ns_per_op).1f |" % r)
    if args.slopes:
        print("\nlog-log slopes against the number of operations (1.00: linear)")
        print("| program | sizes (ops) | replay time | first-call time | tape bytes |")
        print("| --- | --- | ---: | ---: | ---: |")
        for name, r in slopes(args.programs.split(","), args.ops, args.reps).items():
            print("| %s | %s | %.2f | %.2f | %.2f |" % (
                name, ", ".join(map(str, r["sizes"])), r["replay"], r["first"], r["bytes"]))
    t_c, t_f = overhead_10ops(args.reps)
    print("\n10-operation function: compiled call %.2f us, plain call %.2f us"
          % (t_c * 1e6, t_f * 1e6))
    t_c, t_f = overhead_10ops_grad(args.reps)
    print("compile(value_and_grad(f)) of a 10-operation f: %.2f us per call, plain f %.2f us"
          % (t_c * 1e6, t_f * 1e6))
    th, tch, thv, tchv = hessian_10(args.reps)
    print("hessian, 10 inputs: uncompiled %.0f us, compiled %.1f us (%.1fx faster); "
          "hvp: uncompiled %.0f us, compiled %.1f us (%.1fx faster)"
          % (th * 1e6, tch * 1e6, th / tch, thv * 1e6, tchv * 1e6, thv / tchv))


if __name__ == "__main__":
    main()
