"""Ablations: two reverse modes built the ways the paper explains are *not* good enough.

``naive-delta`` (paper 003, §6, Figs. 7-8): a dual number is ``(value, Delta)`` where the Delta
is a *tree* of ``Zero | OneHot i | Scale c u | Add u1 u2`` with no ``Var``/``Let``. Building the
tree is linear (Python shares the sub-objects), but ``eval_2`` cannot see the sharing and walks
every path: ``x = (x + x) * 0.5`` n times costs 2^n. ``eval_2`` here uses an explicit stack, so
a deep tree cannot overflow the interpreter's stack.

``backpropagator`` (paper 003, §5; the thesis's continuation reverse mode): each dual carries a
closure ``dt -> contributions`` (a sparse vector: dict input index -> float) that calls its
operands' closures and adds their results with a functional ``⊕``. Nothing is shared: a value
used twice has its closure called twice (exponential on ``letchain``), and a long accumulation
adds ever-larger dicts (quadratic on sums).

Both abort with :class:`BudgetExceeded` once ``perf_counter()`` passes :data:`DEADLINE` (set by
the harness per run), because their worst cases would otherwise never finish.
"""

import math
import sys
import threading
import time

_now = time.perf_counter


class BudgetExceeded(Exception):
    """A run of an ablation went past the harness's deadline and was abandoned."""


DEADLINE = [math.inf]  # a list so the harness can set it: ablations.DEADLINE[0] = t


def set_deadline(t):
    DEADLINE[0] = t


# --------------------------------------------------------------------------------------------
# naive-delta: Delta trees, eval_2


ZERO = None          # the Zero delta
ONEHOT = 0           # (ONEHOT, i)
SCALE = 1            # (SCALE, c, u)
ADD = 2              # (ADD, u1, u2)


def _nd_const(x):
    return type(x) is float or type(x) is int


class NDual:
    """(value, Delta tree). Constants stay plain floats: the paper's ``(r, Zero)``."""

    __slots__ = ("v", "d")

    def __init__(self, v, d):
        self.v = v
        self.d = d

    def __add__(a, b):
        if type(b) is NDual:
            return NDual(a.v + b.v, (ADD, a.d, b.d))
        if _nd_const(b):
            return NDual(a.v + b, a.d)
        return NotImplemented

    def __radd__(a, b):
        if _nd_const(b):
            return NDual(b + a.v, a.d)
        return NotImplemented

    def __sub__(a, b):
        if type(b) is NDual:
            return NDual(a.v - b.v, (ADD, a.d, (SCALE, -1.0, b.d)))
        if _nd_const(b):
            return NDual(a.v - b, a.d)
        return NotImplemented

    def __rsub__(a, b):
        if _nd_const(b):
            return NDual(b - a.v, (SCALE, -1.0, a.d))
        return NotImplemented

    def __mul__(a, b):
        if type(b) is NDual:
            return NDual(a.v * b.v, (ADD, (SCALE, b.v, a.d), (SCALE, a.v, b.d)))
        if _nd_const(b):
            return NDual(a.v * b, (SCALE, float(b), a.d))
        return NotImplemented

    def __rmul__(a, b):
        if _nd_const(b):
            return NDual(b * a.v, (SCALE, float(b), a.d))
        return NotImplemented

    def __truediv__(a, b):
        if type(b) is NDual:
            v = a.v / b.v
            return NDual(v, (ADD, (SCALE, 1.0 / b.v, a.d), (SCALE, -v / b.v, b.d)))
        if _nd_const(b):
            return NDual(a.v / b, (SCALE, 1.0 / b, a.d))
        return NotImplemented

    def __rtruediv__(a, b):
        if _nd_const(b):
            v = b / a.v
            return NDual(v, (SCALE, -v / a.v, a.d))
        return NotImplemented

    def __neg__(a):
        return NDual(-a.v, (SCALE, -1.0, a.d))

    def __pos__(a):
        return a

    def __lt__(a, b):
        return a.v < _nd_value(b)

    def __le__(a, b):
        return a.v <= _nd_value(b)

    def __gt__(a, b):
        return a.v > _nd_value(b)

    def __ge__(a, b):
        return a.v >= _nd_value(b)


def _nd_value(x):
    return x.v if type(x) is NDual else x


def _nd_unary(f, df):
    def op(x):
        if type(x) is NDual:
            return NDual(f(x.v), (SCALE, df(x.v), x.d))
        return f(x)
    return op


def eval2(dt, delta, grad):
    """The paper's ``eval_2 dt delta grad`` (Fig. 8) with an explicit stack: adds
    ``dt * d delta`` into the list ``grad`` in place. Every path of the tree is walked."""
    deadline = DEADLINE[0]
    stack = [(dt, delta)]
    pop = stack.pop
    push = stack.append
    count = 0
    while stack:
        x, d = pop()
        if d is None:
            continue
        tag = d[0]
        if tag == ADD:
            push((x, d[2]))
            push((x, d[1]))
        elif tag == SCALE:
            push((x * d[1], d[2]))
        else:
            grad[d[1]] += x
        count += 1
        if not count & 0x3FFF and _now() > deadline:
            raise BudgetExceeded("naive-delta eval_2 stopped after %d nodes" % count)
    return grad


class _NaiveDelta:
    ns = None  # set below

    @staticmethod
    def grad(fn, xs):
        """Gradient of ``fn`` at the list ``xs`` (the wrapper of Fig. 8)."""
        duals = [NDual(x, (ONEHOT, i)) for i, x in enumerate(xs)]
        out = fn(duals)
        g = [0.0] * len(xs)
        if type(out) is NDual:
            eval2(1.0, out.d, g)
        return g


# --------------------------------------------------------------------------------------------
# backpropagator: closures dt -> contributions


_ticks = [0]


def _tick():
    _ticks[0] += 1
    if not _ticks[0] & 0xFFF and _now() > DEADLINE[0]:
        raise BudgetExceeded("backpropagator stopped after %d closure calls" % _ticks[0])


def _oplus(p, q):
    """The functional ⊕ of two sparse contribution vectors: a new dict."""
    _tick()
    if len(p) < len(q):
        p, q = q, p
    r = dict(p)
    for k, v in q.items():
        r[k] = r.get(k, 0.0) + v
    return r


def _bp_scaled(bp, c):
    def back(dt):
        _tick()
        return bp(dt * c)
    return back


def _bp_pair(bpa, ca, bpb, cb):
    def back(dt):
        return _oplus(bpa(dt * ca), bpb(dt * cb))
    return back


def _bp_onehot(i):
    def back(dt):
        return {i: dt}
    return back


class BDual:
    """(value, backpropagator)."""

    __slots__ = ("v", "bp")

    def __init__(self, v, bp):
        self.v = v
        self.bp = bp

    def __add__(a, b):
        if type(b) is BDual:
            return BDual(a.v + b.v, _bp_pair(a.bp, 1.0, b.bp, 1.0))
        if _nd_const(b):
            return BDual(a.v + b, a.bp)
        return NotImplemented

    def __radd__(a, b):
        if _nd_const(b):
            return BDual(b + a.v, a.bp)
        return NotImplemented

    def __sub__(a, b):
        if type(b) is BDual:
            return BDual(a.v - b.v, _bp_pair(a.bp, 1.0, b.bp, -1.0))
        if _nd_const(b):
            return BDual(a.v - b, a.bp)
        return NotImplemented

    def __rsub__(a, b):
        if _nd_const(b):
            return BDual(b - a.v, _bp_scaled(a.bp, -1.0))
        return NotImplemented

    def __mul__(a, b):
        if type(b) is BDual:
            return BDual(a.v * b.v, _bp_pair(a.bp, b.v, b.bp, a.v))
        if _nd_const(b):
            return BDual(a.v * b, _bp_scaled(a.bp, float(b)))
        return NotImplemented

    def __rmul__(a, b):
        if _nd_const(b):
            return BDual(b * a.v, _bp_scaled(a.bp, float(b)))
        return NotImplemented

    def __truediv__(a, b):
        if type(b) is BDual:
            v = a.v / b.v
            return BDual(v, _bp_pair(a.bp, 1.0 / b.v, b.bp, -v / b.v))
        if _nd_const(b):
            return BDual(a.v / b, _bp_scaled(a.bp, 1.0 / b))
        return NotImplemented

    def __rtruediv__(a, b):
        if _nd_const(b):
            v = b / a.v
            return BDual(v, _bp_scaled(a.bp, -v / a.v))
        return NotImplemented

    def __neg__(a):
        return BDual(-a.v, _bp_scaled(a.bp, -1.0))

    def __pos__(a):
        return a

    def __lt__(a, b):
        return a.v < _bd_value(b)

    def __le__(a, b):
        return a.v <= _bd_value(b)

    def __gt__(a, b):
        return a.v > _bd_value(b)

    def __ge__(a, b):
        return a.v >= _bd_value(b)


def _bd_value(x):
    return x.v if type(x) is BDual else x


def _bd_unary(f, df):
    def op(x):
        if type(x) is BDual:
            return BDual(f(x.v), _bp_scaled(x.bp, df(x.v)))
        return f(x)
    return op


# The backward pass recurses once per operation on the longest dependency chain. Pure-Python
# calls do not use the C stack on CPython >= 3.11, but to be safe on any version it runs in a
# thread with a large stack and a raised recursion limit.
_STACK_BYTES = 512 * 1024 * 1024
_RECURSION = 2_000_000


class _BigStackThread:
    """One long-lived thread with a large stack that runs submitted calls one at a time (so
    each run does not pay for creating a thread)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._thread = None
        self._jobs = None

    def _start(self):
        import queue

        self._jobs = queue.Queue()
        old_size = threading.stack_size()
        try:
            threading.stack_size(_STACK_BYTES)
            self._thread = threading.Thread(target=self._serve, name="backpropagator", daemon=True)
            self._thread.start()
        finally:
            threading.stack_size(old_size)

    def _serve(self):
        while True:
            f, args, box, done = self._jobs.get()
            try:
                box["value"] = f(*args)
            except BaseException as exc:  # re-raised in the caller
                box["error"] = exc
            finally:
                done.set()

    def call(self, f, *args):
        with self._lock:
            if self._thread is None:
                self._start()
            box = {}
            done = threading.Event()
            old_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(old_limit, _RECURSION))
            try:
                self._jobs.put((f, args, box, done))
                done.wait()
            finally:
                sys.setrecursionlimit(old_limit)
        if "error" in box:
            raise box["error"]
        return box["value"]


_big_stack = _BigStackThread()


def _in_big_stack(f, *args):
    return _big_stack.call(f, *args)


class _Backpropagator:
    @staticmethod
    def grad(fn, xs):
        def run():
            duals = [BDual(x, _bp_onehot(i)) for i, x in enumerate(xs)]
            out = fn(duals)
            g = [0.0] * len(xs)
            if type(out) is BDual:
                for i, c in out.bp(1.0).items():
                    g[i] += c
            return g
        return _in_big_stack(run)


def _make_ns(name, unary):
    from .programs import NS

    return NS(
        name,
        sin=unary(math.sin, math.cos),
        cos=unary(math.cos, lambda v: -math.sin(v)),
        exp=unary(math.exp, math.exp),
        sqrt=unary(math.sqrt, lambda v: 0.5 / math.sqrt(v)),
        log=unary(math.log, lambda v: 1.0 / v),
        tanh=unary(math.tanh, lambda v: 1.0 - math.tanh(v) ** 2),
    )


NAIVE_NS = _make_ns("naive-delta", _nd_unary)
BACKPROP_NS = _make_ns("backpropagator", _bd_unary)


def naive_delta_grad(fn, xs):
    """Gradient of ``fn`` (a function of a list of numbers) at ``xs`` by Delta trees."""
    return _NaiveDelta.grad(fn, xs)


def backpropagator_grad(fn, xs):
    """Gradient of ``fn`` at ``xs`` by backpropagator closures."""
    return _Backpropagator.grad(fn, xs)
