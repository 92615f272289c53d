"""Recording and replay: the lowest level of ``deltaad.compile`` (and the pure replayer).

A :class:`Recorder` is a number below every dual. ``compile`` calls the user's function with
Recorders in place of its float inputs; the transformations inside run as usual on top of them
(a dual's value, partials, tangents and adjoints are then Recorders), and every float operation
on a Recorder -- the function's own, and the derivative work of the transformations, sweeps
included -- computes its float value exactly as Python would and appends one *instruction*
(opcode, operand slots, constant) to the :class:`Recording`. The result is a straight-line
program over doubles (CppAD's and ADOL-C's operation sequence, or a "tape" in their words).

Where a value decides Python's control flow or leaves the recorded world -- a comparison,
``bool``, ``floor``/``ceil``/``round``/``trunc``/``int``, ``float()``, ``hash``, ``repr`` --
the outcome seen is recorded as a *guard*. A replay evaluates the instructions and guards in
order and stops at the first guard whose outcome differs (or at an operation Python would
raise on, such as a division by zero): the caller then records afresh. So a replay never
returns what the function's Python would not have computed (branch-taken semantics).

:class:`Program` here replays in Python; ``deltaad._replay`` is its compiled twin, bit for bit.
"""

from deltaad._plainmath import math
import operator
import struct

from deltaad._plainnumpy import np

from . import elementwise as _table
from ._errors import EscapedDualError

# -- opcodes (shared with cext/_replay.pyx) ---------------------------------------------------
INPUT, CONST, ADD, SUB, MUL, DIV, NEG, CALL1, CALL2 = range(9)
# unary functions the compiled replayer calls from libm; the pure one calls the Python function
# (funcs[k]), and so does the compiled one where libm's result is nan or inf from a finite
# argument (there Python's math raises, or the function is not libm's)
LIBM = (math.sin, math.cos, math.tan, math.asin, math.acos, math.atan, math.sinh, math.cosh,
        math.tanh, math.asinh, math.acosh, math.atanh, math.exp, math.expm1, math.log,
        math.log2, math.log10, math.sqrt, abs)
FIRST_LIBM = 16
# guards: outcome seen in k (comparisons) or c (the integer a rounding gave; the exact value)
G_LT, G_LE, G_GT, G_GE, G_EQ, G_NE, G_BITS, G_FLOOR, G_CEIL, G_TRUNC, G_ROUND = range(64, 75)

_LIBM_OP = {f: FIRST_LIBM + i for i, f in enumerate(LIBM)}
_CMP = {G_LT: operator.lt, G_LE: operator.le, G_GT: operator.gt, G_GE: operator.ge,
        G_EQ: operator.eq, G_NE: operator.ne}
_BITS = struct.Struct("<d")

INSTRUCTION_BYTES = 24  # the compiled replayer's struct {int32 op, a, b, k; double c}


class Unrecordable(Exception):
    """Raised inside a recording at something that cannot be recorded (its message says
    what); ``compile`` then runs the function uncompiled, with one warning."""


class Recording:
    """The instructions and guards recorded for one call (slot ``i`` = instruction ``i``)."""

    __slots__ = ("code", "funcs", "_fidx", "_consts", "closed", "failed", "ninputs", "nguards",
                 "diff")

    def __init__(self, grad=False):
        self.code = []          # (op, a, b, k, c)
        self.funcs = []         # Python functions of CALL1/CALL2 and libm instructions
        self._fidx = {}
        self._consts = {}
        self.closed = False
        self.failed = None      # why this recording cannot be used (even if the user caught it)
        self.ninputs = 0
        self.nguards = 0
        # a gradient recording (see ``deltaad._gradrecord``): per slot, whether its value
        # depends on a differentiated input (it has a binding on the uncompiled tape)
        self.diff = [] if grad else None

    def input(self, v, diff=False):
        r = _new(Recorder)
        r._rec = self
        r.slot = len(self.code)
        r.v = v
        self.code.append((INPUT, self.ninputs, 0, 0, 0.0))
        if self.diff is not None:
            self.diff.append(bool(diff))
        self.ninputs += 1
        return r

    def const(self, v):
        """The slot of constant ``v`` (one per distinct bit pattern)."""
        key = v if v == v and v != 0.0 else _BITS.pack(v)
        s = self._consts.get(key)
        if s is None:
            s = self._consts[key] = len(self.code)
            self.code.append((CONST, 0, 0, 0, v))
            if self.diff is not None:
                self.diff.append(False)
        return s

    def func(self, f):
        k = self._fidx.get(id(f))
        if k is None:
            k = self._fidx[id(f)] = len(self.funcs)
            self.funcs.append(f)
        return k

    def emit(self, op, a, b, k, v):
        if self.diff is not None:
            self.diff.append(self._diff(op, a, b, k))
        r = _new(Recorder)
        r._rec = self
        r.slot = len(self.code)
        r.v = v
        self.code.append((op, a, b, k, 0.0))
        return r

    def _diff(self, op, a, b, k):
        """A gradient recording: whether the result of ``op`` on slots ``a``, ``b`` depends
        on a differentiated input; an operation whose derivative the gradient replayer has
        no rule for fails the recording (``compile`` then records the general way)."""
        d = self.diff
        if op == NEG or FIRST_LIBM <= op < FIRST_LIBM + len(LIBM):
            return d[a]
        if op == CALL1:
            if d[a]:
                self.fail("grad: no replay rule for the derivative of %s"
                          % getattr(self.funcs[k], "__name__", "a function"))
            return False
        if op == CALL2:
            if d[a] or d[b]:
                if self.funcs[k] is _floordiv:  # piecewise constant: no binding, as uncompiled
                    return False
                self.fail("grad: no replay rule for the derivative of %s"
                          % getattr(self.funcs[k], "__name__", "a function"))
            return False
        return d[a] or d[b]  # ADD, SUB, MUL, DIV

    def guard(self, op, a, b, k, c):
        if self.diff is not None:
            if op == G_BITS and self.diff[a]:
                # uncompiled, the function met a dual here (deltaad's own functions treat one
                # differently from a number): record the general way
                self.fail("grad: a differentiated value left as a float")
            self.diff.append(False)
        self.code.append((op, a, b, k, c))
        self.nguards += 1

    def fail(self, why):
        if self.failed is None:
            self.failed = why
        raise Unrecordable(why)

    def call(self, f, args):
        """Record ``f`` (a float function) applied to ``args`` (Recorders or numbers)."""
        slots = []
        vals = []
        for x in args:
            s = self.operand(x)
            if s is None:
                self.fail("a recorded number met an argument of type %s" % type(x).__name__)
            slots.append(s)
            vals.append(x.v if type(x) is Recorder else float(x))
        v = f(*vals)
        if type(v) is not float:
            self.fail("%s gave a %s, not a float" % (getattr(f, "__name__", f), type(v).__name__))
        k = self.func(f)
        if len(slots) == 1:
            return self.emit(_LIBM_OP.get(f, CALL1), slots[0], 0, k, v)
        if len(slots) == 2:
            return self.emit(CALL2, slots[0], slots[1], k, v)
        self.fail("a function of %d recorded arguments" % len(slots))

    def operand(self, x):
        """The slot of operand ``x``; None when it is not a number the recording can use."""
        tx = type(x)
        if tx is Recorder:
            if x._rec is not self:
                raise _escaped()
            return x.slot
        if tx is float:
            return self.const(x)
        if tx is int or tx is bool:
            return self.const(float(x))  # what float arithmetic converts an int to
        if isinstance(x, (float, np.floating, np.integer)):  # numpy scalars: numpy semantics
            self.fail("a numpy scalar (%s) met a recorded number" % tx.__name__)
        return None


def _escaped():
    return EscapedDualError(
        "a value recorded by deltaad.compile was used after the call that recorded it had "
        "finished (it escaped, e.g. into a global or a closure). Return it from the compiled "
        "function instead."
    )


_new = object.__new__


def _bin(op, pyop):
    # ``Recording.operand`` and ``emit`` inlined for the commonest operands (a Recorder of
    # the same recording, a float): this is the recording's hot path.
    def f(self, other):
        rec = self._rec
        if rec.closed:
            raise _escaped()
        to = type(other)
        if to is Recorder and other._rec is rec:
            s = other.slot
            ov = other.v
        elif to is float:
            s = rec.const(other)
            ov = other
        else:
            s = rec.operand(other)
            if s is None:
                return NotImplemented
            ov = other.v if to is Recorder else float(other)
        r = _new(Recorder)
        r.v = pyop(self.v, ov)  # raises as floats do, before anything is recorded
        r._rec = rec
        code = rec.code
        r.slot = len(code)
        code.append((op, self.slot, s, 0, 0.0))
        d = rec.diff
        if d is not None:
            d.append(d[self.slot] or d[s])
        return r

    def r(self, other):
        rec = self._rec
        if rec.closed:
            raise _escaped()
        if type(other) is float:
            s = rec.const(other)
            ov = other
        else:
            s = rec.operand(other)
            if s is None:
                return NotImplemented
            ov = float(other)
        r = _new(Recorder)
        r.v = pyop(ov, self.v)
        r._rec = rec
        code = rec.code
        r.slot = len(code)
        code.append((op, s, self.slot, 0, 0.0))
        d = rec.diff
        if d is not None:
            d.append(d[s] or d[self.slot])
        return r
    return f, r


def _callop(pyop):
    def f(self, other):
        if self._rec.closed:
            raise _escaped()
        if self._rec.operand(other) is None:
            return NotImplemented
        return self._rec.call(pyop, (self, other))

    def r(self, other):
        if self._rec.closed:
            raise _escaped()
        if self._rec.operand(other) is None:
            return NotImplemented
        return self._rec.call(pyop, (other, self))
    return f, r


def _cmpop(op, pyop):
    def f(self, other):
        rec = self._rec
        if rec.closed:
            raise _escaped()
        tx = type(other)
        if tx is int or tx is bool:
            fo = float(other) if -2 ** 53 <= other <= 2 ** 53 else None
            if fo is None:  # Python compares floats with big ints exactly: keep the value
                return pyop(self._bits(), other)
            other = fo
        s = rec.operand(other)
        if s is None:
            return NotImplemented
        out = pyop(self.v, other.v if type(other) is Recorder else other)
        rec.guard(op, self.slot, s, 1 if out else 0, 0.0)
        return out
    return f


def _round_half_even(x):
    return float(round(x))


def _pow(a, b):
    return a ** b


def _floordiv(a, b):
    return a // b


def _mod(a, b):
    return a % b


class Recorder:
    """A float being recorded: its slot in the recording and its value in this call."""

    __slots__ = ("_rec", "slot", "v")

    __add__, __radd__ = _bin(ADD, operator.add)
    __sub__, __rsub__ = _bin(SUB, operator.sub)
    __mul__, __rmul__ = _bin(MUL, operator.mul)
    __truediv__, __rtruediv__ = _bin(DIV, operator.truediv)  # raises ZeroDivisionError as floats
    __pow__, __rpow__ = _callop(_pow)
    __floordiv__, __rfloordiv__ = _callop(_floordiv)
    __mod__, __rmod__ = _callop(_mod)
    __lt__ = _cmpop(G_LT, operator.lt)
    __le__ = _cmpop(G_LE, operator.le)
    __gt__ = _cmpop(G_GT, operator.gt)
    __ge__ = _cmpop(G_GE, operator.ge)
    __eq__ = _cmpop(G_EQ, operator.eq)
    __ne__ = _cmpop(G_NE, operator.ne)

    def __divmod__(self, other):
        return self.__floordiv__(other), self.__mod__(other)

    def __rdivmod__(self, other):
        return self.__rfloordiv__(other), self.__rmod__(other)

    def __neg__(self):
        if self._rec.closed:
            raise _escaped()
        return self._rec.emit(NEG, self.slot, 0, 0, -self.v)

    def __pos__(self):
        if self._rec.closed:
            raise _escaped()
        return self

    def __abs__(self):
        if self._rec.closed:
            raise _escaped()
        return self._rec.call(abs, (self,))

    # -- the value leaves the recorded world: guards --
    def _bits(self):
        """The value, as a plain float the caller keeps: guarded bit for bit."""
        rec = self._rec
        if rec.closed:
            raise _escaped()
        rec.guard(G_BITS, self.slot, 0, 0, self.v)
        return self.v

    def _rounded(self, op, fn):
        rec = self._rec
        if rec.closed:
            raise _escaped()
        out = fn(self.v)  # raises on inf and nan as floats do
        rec.guard(op, self.slot, 0, 0, float(out))
        return out

    def __bool__(self):
        rec = self._rec
        if rec.closed:
            raise _escaped()
        out = self.v != 0.0
        rec.guard(G_NE, self.slot, rec.const(0.0), 1 if out else 0, 0.0)
        return out

    def __float__(self):
        return self._bits()

    def __int__(self):
        return self._rounded(G_TRUNC, int)

    def __trunc__(self):
        return self._rounded(G_TRUNC, math.trunc)

    def __floor__(self):
        return self._rounded(G_FLOOR, math.floor)

    def __ceil__(self):
        return self._rounded(G_CEIL, math.ceil)

    def __round__(self, ndigits=None):
        if ndigits is None:
            return self._rounded(G_ROUND, round)
        return round(self._bits(), ndigits)

    def __complex__(self):
        return complex(self._bits())

    def __hash__(self):
        return hash(self._bits())

    def __repr__(self):
        return repr(self._bits())

    def __str__(self):
        return str(self._bits())

    def __format__(self, spec):
        return format(self._bits(), spec)

    @property
    def real(self):
        return self

    @property
    def imag(self):
        return 0.0

    def conjugate(self):
        return self

    def __getattr__(self, name):  # float's other methods (hex, is_integer, ...): on the value
        if name.startswith("__") or not hasattr(float, name):
            raise AttributeError("'float' object has no attribute %r" % name)
        return getattr(self._bits(), name)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        self._rec.fail("a recorded number was pickled")

    def __array__(self, *a, **k):
        self._rec.fail("a recorded number was converted to a numpy array")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self._rec.fail("numpy's %s on a recorded number" % getattr(ufunc, "__name__", ufunc))

    def __array_function__(self, func, types, args, kwargs):
        self._rec.fail("numpy's %s on a recorded number" % getattr(func, "__name__", func))


_ORDERED = {}


def make_dispatch(recorder):
    """The ``dispatch`` of the recording number type ``recorder`` (this module's or the
    compiled twin's): ``deltaad.<name>`` (a table function) with a recorded number among
    ``args``, recorded as a call of the table's float function (libm's for the common ones)."""

    def dispatch(name, *args):
        rec = None
        for a in args:
            if type(a) is recorder:
                rec = a._rec
                break
        if rec.closed:
            raise _escaped()
        f = _table.LIFTED.get(name)
        if f is not None:  # numpy's own function (numpy.tanh), or one bound to its orders
            return rec.call(f, args)
        e = _table.BY_NAME.get(name)
        if e is None:
            rec.fail("deltaad.%s on a recorded number" % name)
        if e.orders:
            k = _table.orders_of(e, args)
            if k is None:
                rec.fail("deltaad.%s with an order that is not a plain number" % name)
            f = _ORDERED.get((name, k))
            if f is None:
                def f(x, _f=e.float, _k=k):
                    return _f(*_k, x)
                f.__name__ = "%s(%s, .)" % (name, ", ".join(map(repr, k)))
                f = _ORDERED.setdefault((name, k), f)
            return rec.call(f, args[-1:])
        if len(args) != e.arity:
            raise TypeError("deltaad.%s takes %d argument(s), got %d" % (name, e.arity, len(args)))
        return rec.call(e.float, args)
    return dispatch


dispatch = make_dispatch(Recorder)


class Program:
    """A finished recording, replayable on new inputs (the pure replayer)."""

    __slots__ = ("code", "funcs", "ninputs", "outs", "n", "diff", "seed", "wanted")

    def __init__(self, code, funcs, ninputs, outs, grad=None):
        self.code = list(code)
        self.funcs = tuple(funcs)
        self.ninputs = ninputs
        self.outs = list(outs)
        self.n = len(self.code)
        self.diff = None
        if grad is not None:  # (diff flags, seed slot or -1, wanted slots): see ``sweep``
            diff, seed, wanted = grad
            if len(diff) != self.n or not -1 <= seed < self.n or \
                    not all(0 <= w < self.n for w in wanted):
                raise ValueError("replay: a gradient recording's slots are out of range")
            self.diff = [bool(d) for d in diff]
            for i, (op, a, b, k, c) in enumerate(self.code):
                if self.diff[i] and not (op in (INPUT, ADD, SUB, MUL, DIV, NEG)
                                         or FIRST_LIBM <= op < FIRST_LIBM + len(LIBM)):
                    raise ValueError("replay: slot %d (operation %d) has no derivative rule"
                                     % (i, op))
            self.seed = seed
            self.wanted = list(wanted)

    @property
    def nbytes(self):
        """Bytes of the compiled replayer's instructions (with their exec codes) and value
        slots (and a gradient recording's flags, sweep exec codes and adjoints)."""
        if self.diff is not None:
            return (INSTRUCTION_BYTES + 3 + 16) * self.n
        return (INSTRUCTION_BYTES + 1 + 8) * self.n

    @property
    def tape_bytes(self):
        """Bytes of the compiled replayer's instruction tape: the instructions, their exec
        codes (one byte each) and a gradient recording's flags and sweep exec codes."""
        return (INSTRUCTION_BYTES + (3 if self.diff is not None else 1)) * self.n

    def run(self, inputs, fail=None):
        """The output slots' values on ``inputs`` (floats), or None where a guard fails; a
        gradient recording's also the adjoints of its wanted slots (see ``sweep``). Where a
        check fails, ``(index, outcome)`` is appended to the list ``fail`` (when given): the
        first instruction whose check failed and what it gave -- None for a comparison (its
        other outcome) or an operation Python raises on, the value for ``float()``, the
        integer (as a float) for a rounding. The compiled twin reports the same."""
        vals = self.values(inputs, fail)
        if vals is None:
            return None
        out = [vals[s] for s in self.outs]
        if self.diff is not None:
            adj = self.sweep(vals)
            out += [adj[w] for w in self.wanted]
        return out

    def sweep(self, vals):
        """The adjoints of every slot: the backward sweep of the uncompiled tape, replayed.

        Each slot whose value depends on a differentiated input is a binding of the tape that
        ``value_and_grad`` records (same order); its partials are computed by the core's
        formulas from the values, and adjoints start at 0.0, skip a binding whose adjoint is
        zero and accumulate ``adj[p] += c * a``, first parent first: the float sweep's order,
        so the gradient is the uncompiled one bit for bit."""
        n = self.n
        adj = [0.0] * n
        diff = self.diff
        if self.seed >= 0:
            adj[self.seed] += 1.0
        code = self.code
        for i in range(n - 1, -1, -1):
            if not diff[i]:
                continue
            g = adj[i]
            if g == 0.0:
                continue
            op, a, b, k, c = code[i]
            if op == INPUT:
                continue
            for p, cp in self.partials(i, op, a, b, vals):
                adj[p] += cp * g
        return adj

    def partials(self, i, op, a, b, vals):
        """``[(parent slot, partial)]`` of differentiated slot ``i``, first parent first:
        the binding the uncompiled tape holds for it."""
        diff = self.diff
        out = []
        if op == ADD:
            if diff[a]:
                out.append((a, 1.0))
            if diff[b]:
                out.append((b, 1.0))
        elif op == SUB:
            if diff[a]:
                out.append((a, 1.0))
            if diff[b]:
                out.append((b, -1.0))
        elif op == MUL:
            if diff[a]:
                out.append((a, vals[b]))
            if diff[b]:
                out.append((b, vals[a]))
        elif op == DIV:
            if diff[a]:
                out.append((a, 1.0 / vals[b]))  # the forward pass saw vals[b] != 0
            if diff[b]:
                out.append((b, -vals[i] / vals[b]))
        elif op == NEG:
            out.append((a, -1.0))
        else:
            out.append((a, _libm_partial(op - FIRST_LIBM, vals[a], vals[i])))
        return out

    def checked_run(self, inputs, bindings, ids):
        """``run(inputs)`` when this gradient recording, evaluated at ``inputs``, has the
        bindings of the uncompiled tape ``bindings`` (``[p1, c1, p2, c2, ...]`` per binding;
        its inputs are the slots ``ids``, in order) -- the same parents, partials the same
        bits -- else None."""
        vals = self.values(inputs)
        if vals is None or self.diff is None:
            return None
        m = len(ids)
        tid = {}
        for t, s in enumerate(ids):
            if not 0 <= s < self.n or not self.diff[s] or s in tid or self.code[s][0] != INPUT:
                return None
            tid[s] = t
        t = m
        nb = len(bindings) // 4
        if nb < m:
            return None
        for i, (op, a, b, k, c) in enumerate(self.code):
            if not self.diff[i]:
                continue
            if op == INPUT:
                if i not in tid:
                    return None
                continue
            if t >= nb:
                return None
            ps = self.partials(i, op, a, b, vals)
            p1, c1, p2, c2 = bindings[4 * t:4 * t + 4]
            want = [(p1, c1)] if p2 == -1 else [(p1, c1), (p2, c2)]
            if p1 < 0 or len(ps) != len(want):
                return None
            for (s, cs), (p, cp) in zip(ps, want):
                if tid.get(s) != p or type(cp) is not float or _BITS.pack(cs) != _BITS.pack(cp):
                    return None
            tid[i] = t
            t += 1
        if t != nb:
            return None
        adj = self.sweep(vals)
        for j in range(m):
            if bindings[4 * j] != -1 or bindings[4 * j + 2] != -1:
                return None
        return [vals[s] for s in self.outs] + [adj[w] for w in self.wanted]

    def values(self, inputs, fail=None):
        """Every slot's value on ``inputs``, or None where a check fails (then
        ``(index, outcome)`` appended to ``fail``, see ``run``)."""
        if len(inputs) != self.ninputs:
            raise ValueError("replay: %d inputs for a recording of %d" % (len(inputs), self.ninputs))
        vals = [0.0] * self.n
        funcs = self.funcs
        for i, (op, a, b, k, c) in enumerate(self.code):
            if op == ADD:
                vals[i] = vals[a] + vals[b]
            elif op == MUL:
                vals[i] = vals[a] * vals[b]
            elif op == SUB:
                vals[i] = vals[a] - vals[b]
            elif op == DIV:
                d = vals[b]
                if d == 0.0:
                    return _failed(fail, i, None)
                vals[i] = vals[a] / d
            elif op == NEG:
                vals[i] = -vals[a]
            elif op == INPUT:
                vals[i] = inputs[a]
            elif op == CONST:
                vals[i] = c
            elif op == CALL2:
                try:
                    r = funcs[k](vals[a], vals[b])
                except Exception:
                    return _failed(fail, i, None)
                if type(r) is not float:
                    return _failed(fail, i, None)
                vals[i] = r
            elif op < G_LT:  # CALL1 and the libm functions
                try:
                    r = funcs[k](vals[a])
                except Exception:
                    return _failed(fail, i, None)
                if type(r) is not float:
                    return _failed(fail, i, None)
                vals[i] = r
            elif op <= G_NE:
                if (1 if _CMP[op](vals[a], vals[b]) else 0) != k:
                    return _failed(fail, i, None)
            else:
                x = vals[a]
                if op == G_BITS:
                    if _BITS.pack(x) != _BITS.pack(c):
                        return _failed(fail, i, x)
                elif not math.isfinite(x):
                    return _failed(fail, i, None)
                else:
                    r = float(math.floor(x) if op == G_FLOOR else math.ceil(x) if op == G_CEIL
                              else math.trunc(x) if op == G_TRUNC else round(x))
                    if r != c:  # (G_ROUND: half to even, as Python's round)
                        return _failed(fail, i, r)
        return vals


def _failed(fail, i, outcome):
    """A replay's failure at instruction ``i``: reported in ``fail`` (when given); None."""
    if fail is not None:
        fail.append((i, outcome))
    return None


def _div(a, b):
    """``a / b`` as C divides doubles (the core's partials): inf or nan where b is 0."""
    if b == 0.0:
        if a == 0.0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _sqrt(x):
    return math.sqrt(x) if x >= 0.0 or x != x else math.nan


def _hyp(f, x):
    try:
        return f(x)
    except OverflowError:
        return math.copysign(math.inf, x) if f is math.sinh else math.inf


def _libm_partial(j, x, r):
    """The derivative of libm function ``LIBM[j]`` at ``x`` (value ``r``): the core's
    formulas (the table's derivatives over floats), operation for operation."""
    if j == 0:
        return math.cos(x)
    if j == 1:
        return -math.sin(x)
    if j == 2:
        return 1.0 + r * r
    if j == 3:
        return _div(1.0, _sqrt(1.0 - x * x))
    if j == 4:
        return -_div(1.0, _sqrt(1.0 - x * x))
    if j == 5:
        return _div(1.0, 1.0 + x * x)
    if j == 6:
        return _hyp(math.cosh, x)
    if j == 7:
        return _hyp(math.sinh, x)
    if j == 8:
        return 1.0 - r * r
    if j == 9:
        return _div(1.0, _sqrt(x * x + 1.0))
    if j == 10:
        return _div(1.0, _sqrt(x * x - 1.0))
    if j == 11:
        return _div(1.0, 1.0 - x * x)
    if j == 12:
        return r
    if j == 13:
        return r + 1.0
    if j == 14:
        return _div(1.0, x)
    if j == 15:
        return _div(1.0, x * _table.LN2)
    if j == 16:
        return _div(1.0, x * _table.LN10)
    if j == 17:
        return _div(0.5, r + 0.0)
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else (0.0 if x == 0.0 else math.nan))
