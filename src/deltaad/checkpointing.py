"""Checkpointed reverse mode: ``checkpoint`` (``remat``), ``fori_loop`` and ``while_loop``.

Reverse mode keeps one binding per operation until the backward sweep. A *checkpoint* keeps
none of a sub-computation's: it runs once, and once more when the sweep reaches it (Sigal,
*Automatic Differentiation via Effects and Handlers*, §5.2, and Sigal's *AD via Effects and
Handlers: An Implementation in Frank*, checkpointed reverse mode: the checkpointed thunk is handled by an evaluate-only handler, then by the
reverse handler).

How, in the monadic-Delta vocabulary. A checkpointed function very often reads duals it was not
given (parameters captured from the enclosing scope): those belong to the enclosing tape T,
so the function cannot be run "without recording" on stripped inputs, nor re-run later on a
tape of its own. So:

1. *First run*: note ``m = T.nbindings``, run the function (it records on T), read the region
   ``m ..`` : its free variables are the ids below ``m`` it reads. Drop the region
   (``Tape.truncate``) and record fresh duals for the outputs (their values are the first
   run's) followed by one *node* binding (``Tape.push_node``). Peak memory: one region.
2. *Sweep*: when the sweep reaches the node, the node re-runs the function recording on T
   itself, appended at the end (captured duals keep their ids below ``m``, so the segment
   connects to them), and hands the segment to the sweep in progress, which sweeps it into
   the same adjoints and drops it. Every variable the function reads gets its contributions
   in the same order as without the checkpoint, so values and gradients are the same to the
   last bit. The re-run must reproduce the first run: its outputs' values are compared bit
   for bit, and its segment may read no id but the first run's free variables; otherwise
   :class:`CheckpointError` says the function is not a function of its inputs.

Loops (``fori_loop``, ``while_loop`` with ``checkpoints``) become one node that runs a
schedule (:mod:`deltaad.schedules`) over saved loop states: advancing steps records and drops
(a batch of steps at a time), reversing a step re-records it from a saved state (fresh inputs
at the end of T) and sweeps it. A step can be as cheap as the Python bookkeeping around it, so
for the commonest state (a tuple or list of scalars) the backend runs the advancing
(``Tape.advance``), the reversing (``Sweep.turn``) and the schedule's loop (``Sweep.reverse``,
with the compiled twin of :func:`deltaad.schedules.plan` in the core).

Which differentiation a checkpoint is for: the innermost open trace, when it is a reverse
tape T. Under forward mode (innermost trace a forward level) or outside any differentiation a
checkpoint is just the function, a checkpointed loop just the loop. Inside ``hessian``
(forward over reverse) T's values are forward duals: checkpointing works as above. When T's
values are duals of an *outer reverse tape* (``grad`` of ``grad``), that outer tape records
every value of the computation anyway, and re-recording it there would change the order of
its sums: ``checkpoint`` then keeps the region as recorded (it checks whether an outer tape
grew during the first run), and a checkpointed loop runs as a plain loop whenever a reverse
tape of a lower level is open. Both still save memory for checkpoints *around* an inner
differentiation (``checkpoint`` of a function that calls ``grad``).
"""

import functools
from deltaad._plainmath import math
import operator

from deltaad._plainnumpy import np

from . import schedules as S
from ._backend import B
from ._errors import CheckpointError, divergence_error, escaped_error
from .numpy.array import array_input
from .pytrees import tree_flatten, tree_unflatten
from .trace import innermost, is_dual, leaf_kind, open_traces, reopened, rerun
from .trace import value as _plain
from .transforms import _check_constant_output, _pack_outputs

Dual = B.Dual
Tape = B.Tape
_zero = B.zero_adjoint
_plan = getattr(B, "plan", None) or S.plan  # the compiled core's twin of schedules.plan

__all__ = ["checkpoint", "remat", "fori_loop", "while_loop", "CheckpointError"]

# Steps are advanced in batches: the state's duals stay on the tape until this many bindings
# have been recorded, then the batch is dropped at once (the per-step cost is one call of the
# body and one comparison; memory is bounded by one batch, 96 kB in the compiled core).
_BATCH = 1 << 12

# Tests set this to a callable: it receives each loop after its run and after each reversal.
_observe = None


_divergence = divergence_error


def _same(a, b):
    """True when the plain values under ``a`` and ``b`` are the same bits."""
    a = _plain(a)
    b = _plain(b)
    ta = type(a)
    if ta is float and type(b) is float:
        if a == b:
            return a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b)
        return a != a and b != b
    if ta is np.ndarray or type(b) is np.ndarray:
        a = np.asarray(a)
        b = np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    try:
        return bool(a == b) or a is b
    except Exception:
        return a is b


# --------------------------------------------------------------------------------------------
# The trace stack


def _innermost_tape():
    """The innermost open trace if it is a reverse tape, else None."""
    top = innermost()
    if type(top) is Tape and not top.closed:
        return top
    return None


def _outer_tapes(tape):
    """The open reverse tapes of lower level than ``tape`` (its values may be their duals)."""
    return [t for t in open_traces() if type(t) is Tape and not t.closed and t.level < tape.level]


def _fresh(tape, values):
    """Fresh inputs on ``tape`` for the differentiable leaves among ``values`` (floats, arrays
    or duals of lower levels); static leaves stay. Returns ``(leaves, ids, positions)``: ids
    of the new inputs and the leaf positions they are at."""
    if B.all_floats(values):
        duals = tape.inputs(values)
        first = duals[0].id if duals else 0
        return duals, range(first, first + len(duals)), range(len(duals))
    out = []
    ids = []
    where = []
    for j, v in enumerate(values):
        kind = leaf_kind(v)
        if kind is None:
            out.append(v)
            continue
        if kind == "scalar":
            d = tape.input(v if type(v) is float or type(v) is Dual else float(v))
        else:
            d = array_input(tape, v, None)
        out.append(d)
        ids.append(d.id)
        where.append(j)
    return out, ids, where


def _value_on(x, tape):
    """The value of leaf ``x`` at ``tape``'s level (a dual of ``tape`` loses that level)."""
    if is_dual(x) and x.trace is tape:
        return x.value
    return x


# --------------------------------------------------------------------------------------------
# checkpoint


def checkpoint(fun=None, *, prevent_cse=True, policy=None, static_argnums=()):
    """``checkpoint(fun)``: ``fun`` with the same values and derivatives, whose operations are
    not kept on the tape of a reverse differentiation (JAX's ``jax.checkpoint``; alias
    ``remat``; usable as a decorator, with or without arguments).

    Under reverse mode ``fun`` runs once, its operations are dropped, and it runs again when
    the backward sweep reaches its outputs, recorded and swept at once, so the tape holds one
    checkpoint's operations at a time. ``fun`` may read duals it captured from the enclosing
    scope, call checkpointed functions (checkpoints nest), branch on values, call ``grad``.
    Arguments and results are pytrees. Values and gradients are those of ``fun`` to the last
    bit. ``fun`` must compute the same thing when run again: the re-run's outputs and the
    variables it reads are checked against the first run (:class:`CheckpointError`
    otherwise); a dual ``fun`` computes must not be kept anywhere but in its result (an
    ``EscapedDualError`` where that is detectable). Under forward mode, or outside any
    differentiation, it is just ``fun``. See the module docstring for nesting.

    ``prevent_cse`` and ``static_argnums`` are accepted for JAX compatibility and have no
    effect (deltaad does no common-subexpression elimination, and non-float arguments are
    constants anyway); ``policy`` (what to save instead of recompute) is not supported.
    """
    if fun is None:
        return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy,
                                 static_argnums=static_argnums)
    if policy is not None:
        raise NotImplementedError(
            "checkpoint(policy=...) is not supported: deltaad's checkpoint saves the inputs and "
            "recomputes everything else; leave policy=None")
    if not callable(fun):
        raise TypeError("checkpoint: expected a function, got %s" % type(fun).__name__)

    @functools.wraps(fun)
    def checkpointed(*args, **kwargs):
        return _checkpoint_call(fun, args, kwargs)

    return checkpointed


remat = checkpoint


def _checkpoint_call(fun, args, kwargs):
    tape = _innermost_tape()
    if tape is None:
        return fun(*args, **kwargs)
    outer = [(t, t.nbindings) for t in _outer_tapes(tape)]
    m = tape.nbindings
    out = fun(*args, **kwargs)
    if tape.nbindings == m or tape.closed:
        return out
    out = _pack_outputs(out, tape)  # object arrays of duals (a filled np.zeros) as array duals
    for t, k in outer:
        if t.nbindings != k:  # its values are an outer tape's duals: keep it (module docstring)
            return out
    leaves, treedef = tree_flatten(out)
    slots = []     # per leaf: output index q >= 0; -1 - id for a dual from before; None
    firsts = {}    # first-run id -> output index
    outs = []      # the duals computed inside, one per distinct id
    for x in leaves:
        if is_dual(x):
            t = x.trace
            if t is tape:
                i = x.id
                if i >= m:
                    q = firsts.get(i)
                    if q is None:
                        q = firsts[i] = len(outs)
                        outs.append(x)
                    slots.append(q)
                else:
                    slots.append(-1 - i)
                continue
            if t.closed or t.level > tape.level:
                raise escaped_error(t.level)
        else:
            _check_constant_output(x, tape, "checkpoint")
        slots.append(None)
    free = tape.region_parents(m)
    values = [x.value for x in outs]
    tape.truncate(m)
    new = []
    for x, v in zip(outs, values):
        new.append(tape.input(v) if type(x) is Dual else array_input(tape, v, None))
    if new:
        node = _CheckpointNode(fun, args, kwargs, tape, treedef, slots, [d.id for d in new],
                               values, free)
        tape.push_node(free, node)
    return tree_unflatten(treedef, [x if q is None or q < 0 else new[q] for x, q in zip(leaves, slots)])


class _CheckpointNode:
    """The node a checkpoint leaves on the tape: what it needs to run ``fun`` again."""

    __slots__ = ("fun", "args", "kwargs", "tape", "treedef", "slots", "out_ids", "values",
                 "allowed")

    def __init__(self, fun, args, kwargs, tape, treedef, slots, out_ids, values, free):
        self.fun = fun
        self.args = args
        self.kwargs = kwargs
        self.tape = tape
        self.treedef = treedef
        self.slots = slots
        self.out_ids = out_ids
        self.values = values
        self.allowed = frozenset(free)

    def __call__(self, *args):
        raise TypeError("a checkpoint's node is run by the backward sweep, not called")

    def __repr__(self):
        return "<checkpoint of %s>" % _name(self.fun)

    def run(self, sweep, i):
        """Re-run ``fun`` on the tape and sweep what it records (see the module docstring)."""
        rerun(self.tape, i, self._run, sweep)

    def _run(self, sweep):
        cts = [sweep.adjoint(j) for j in self.out_ids]
        for c in cts:
            if not _zero(c):
                break
        else:
            return  # no adjoint reaches the outputs: nothing inside contributes
        tape = self.tape
        who = "checkpoint of %s" % _name(self.fun)
        start = tape.nbindings
        try:
            with reopened(tape):
                out = _pack_outputs(self.fun(*self.args, **self.kwargs), tape)
            seeds = self._seeds(out, start, cts, who)
            extra = set(tape.region_parents(start)) - self.allowed
            if extra:
                raise _divergence(who, "it read variables %s that its first run did not read"
                                  % sorted(extra)[:5])
        except BaseException:
            if tape.nbindings > start:
                tape.truncate(start)
            raise
        sweep.sweep(start, seeds, ())

    def _seeds(self, out, start, cts, who):
        tape = self.tape
        leaves, treedef = tree_flatten(out)
        if treedef is not self.treedef and treedef != self.treedef:
            raise _divergence(who, "its result has structure %r, not %r" % (treedef, self.treedef))
        seeds = []
        seen = {}
        for x, q in zip(leaves, self.slots):
            on = is_dual(x) and x.trace is tape
            if q is None:
                if on:
                    raise _divergence(who, "a result that was a constant depends on the "
                                           "differentiated variables")
            elif q < 0:
                if not on or x.id != -1 - q:
                    raise _divergence(who, "a result that was one of its inputs is not")
            else:
                if not on or x.id < start:
                    raise _divergence(who, "a result computed from its inputs is not")
                if not _same(x.value, self.values[q]):
                    raise _divergence(who, "a result has value %r, not %r"
                                      % (x.value, self.values[q]))
                k = seen.get(q)
                if k is None:
                    seen[q] = x.id
                    seeds.append((x.id, cts[q]))
                elif k != x.id:
                    raise _divergence(who, "results that were one value are not")
        return seeds


def _name(f):
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


# --------------------------------------------------------------------------------------------
# Loops


def _snapshot_count(checkpoints, n, who):
    """The snapshot count ``checkpoints`` asks for (None: no checkpointing)."""
    if checkpoints is None:
        return None
    if isinstance(checkpoints, str):
        if checkpoints != "auto":
            raise ValueError("%s: checkpoints=%r; use an integer >= 1, 'auto' or None"
                             % (who, checkpoints))
        return "auto"
    if isinstance(checkpoints, (bool, np.bool_)):
        raise TypeError("%s: checkpoints=%r; use an integer >= 1, 'auto' or None" % (who, checkpoints))
    try:
        c = operator.index(checkpoints)
    except TypeError:
        raise TypeError("%s: checkpoints must be an integer >= 1, 'auto' or None, not %s"
                        % (who, type(checkpoints).__name__)) from None
    if c < 1:
        raise ValueError("%s: checkpoints=%d; at least 1 saved state (the initial one) is "
                         "needed" % (who, c))
    return c


def auto_snapshots(n):
    """``checkpoints="auto"`` for ``n`` steps: ``max(2, ⌈log₂ n⌉)`` saved states."""
    return max(2, (max(n, 1) - 1).bit_length())


def _loop_tape():
    """The tape a loop checkpoints for: the innermost trace, when it is a reverse tape and no
    reverse tape of a lower level is open (see the module docstring)."""
    tape = _innermost_tape()
    if tape is None or _outer_tapes(tape):
        return None
    return tape


def fori_loop(lower, upper, body_fun, init_val, *, checkpoints=None):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``; returns ``val``
    (``jax.lax.fori_loop``).

    With ``checkpoints=c`` (an integer >= 1) reverse mode keeps at most ``c`` saved states of
    the loop (the initial one included) instead of every step's operations, and recomputes
    steps by the optimal binomial schedule of Griewank and Walther's *revolve*: for ``n``
    steps ``body_fun`` runs ``r·n − C(c + r, c + 1) + n`` times in all (the first term is the
    least number of recomputations any schedule with ``c`` states needs, ``r`` the least
    integer with ``C(c + r, c) >= n``; ``n`` of the runs are recorded). The tape holds the
    loop's last step and one batch of steps at a time. ``checkpoints="auto"`` takes
    ``c = max(2, ⌈log₂ n⌉)``. Values and gradients are those of the plain loop to the last
    bit (one exception: a differentiated variable that the body passes through unchanged as a
    state leaf *and* that is read elsewhere gets that leaf's adjoint in one sum rather than
    interleaved with its other contributions, so it may differ in the last bits). A second
    backward sweep (``vjp_fn`` called again, ``jacrev``) first recomputes the
    states the previous one consumed (``n − 1`` more runs).

    ``init_val`` is any pytree; ``body_fun`` must return one with the same structure, may
    branch on values, read captured duals, call ``grad`` and use ``checkpoint``, and must be a
    function of ``i``, its state and what it captures (:class:`CheckpointError` otherwise).
    With ``checkpoints=None``, under forward mode, outside any differentiation, or while a
    reverse differentiation of a lower level is open (its tape keeps every value anyway) this
    is the plain Python loop.
    """
    try:
        lower = operator.index(lower)
        upper = operator.index(upper)
    except TypeError:
        raise TypeError("fori_loop: lower and upper must be integers, got %s and %s"
                        % (type(lower).__name__, type(upper).__name__)) from None
    c = _snapshot_count(checkpoints, upper - lower, "fori_loop")
    n = upper - lower
    tape = None if c is None or n <= 1 else _loop_tape()
    if tape is None:
        val = init_val
        for i in range(lower, upper):
            val = body_fun(i, val)
        return val
    if c == "auto":
        c = auto_snapshots(n)
    return _Fori(tape, body_fun, init_val, lower, n, min(c, n)).forward()


def while_loop(cond_fun, body_fun, init_val, *, checkpoints=None):
    """``while cond_fun(val): val = body_fun(val)``; returns ``val`` (``jax.lax.while_loop``).

    With ``checkpoints=c`` (an integer >= 1) reverse mode keeps at most ``c`` saved states. The
    step count ``n`` is not known until the loop ends, so the schedule is online: while the
    loop runs it keeps at most ``h = ⌈c/2⌉`` states, at the multiples of a stride that doubles
    whenever they are full, so they end ``s`` steps apart, ``s`` the least power of two with
    ``⌈n/s⌉ <= h``; the backward sweep reverses each interval between them, newest first, by
    revolve with the snapshots not in use (at least ``c − h + 1``). **Bound**: ``body_fun``
    runs at most ``(2 + ρ)·n`` times in all, ``ρ`` the least integer with
    ``C(c − h + 1 + ρ, ρ) >= s`` (``n`` runs of the loop itself, ``n`` recorded, and no step
    recomputed more than ``ρ`` times; :func:`deltaad.schedules.online_bound`). For comparison,
    ``fori_loop`` with the count known needs ``r·n − C(c + r, c + 1) + n``.
    ``checkpoints="auto"`` keeps at most ``max(2, ⌈log₂ k⌉)`` states after ``k`` steps while
    running and up to twice that during the reversal. ``cond_fun`` runs ``n + 1`` times, in the
    loop only. Otherwise as :func:`fori_loop`.
    """
    c = _snapshot_count(checkpoints, None, "while_loop")
    tape = None if c is None else _loop_tape()
    if tape is None:
        val = init_val
        while cond_fun(val):
            val = body_fun(val)
        return val
    return _While(tape, cond_fun, body_fun, init_val, c).forward()


class _Loop:
    """A checkpointed loop on ``tape``: its run, and the node that reverses it.

    States are lists of leaves (the structure is ``treedef``): at position 0 the initial
    leaves as given (duals of the tape included: reversing step 0 reads them, so their
    adjoints are summed as without checkpointing), elsewhere values at the tape's level.
    """

    indexed = True

    def __init__(self, who, tape, body, init_val, c):
        self.who = who
        self.tape = tape
        # the states are leaves: where they hold arrays, object arrays of duals (a filled
        # np.zeros) are packed into array duals, or the step's duals would be taken for
        # constants (a state of scalars, the common small step, pays nothing for it)
        if all(type(x) is float or type(x) is Dual for x in tree_flatten(init_val)[0]):
            self.body = body
        else:
            self.body = lambda *a: _pack_outputs(body(*a), tape)
        self.c = c
        self.init_val = init_val
        self.init, self.treedef = tree_flatten(init_val)
        td = self.treedef
        # A tuple or list of scalars (the commonest state) is taken apart and rebuilt without
        # the pytree walk, which costs more than a small step.
        self.flat = None
        if td.kind in ("tuple", "list") and all(ch.kind == "leaf" for ch in td.children):
            self.flat = type(init_val)
        # ... and a flat state of scalars is advanced and reversed step by step in the backend
        self.fast = self.flat is not None and all(type(x) is float or type(x) is Dual
                                                  for x in self.init)
        self.k = len(self.init)
        self.free = set()
        for x in self.init:
            if is_dual(x) and x.trace is tape:
                self.free.add(x.id)
            else:
                _check_constant_output(x, tape, who)
        self.allowed = None  # the free variables, once the run has found them all
        self.snaps = {}
        self.max_alive = 0
        self.intact = False
        self.out_ids = None
        self.out_values = None

    # -- states --------------------------------------------------------------------------

    def _leaves(self, out):
        if type(out) is self.flat and len(out) == self.k:
            for x in out:
                tx = type(x)
                if tx is not Dual and tx is not float:
                    break
            else:
                return list(out)
        leaves, treedef = tree_flatten(out)
        if treedef is not self.treedef and treedef != self.treedef:
            raise TypeError("%s: body_fun must return a value with the structure of init_val, "
                            "%r; got %r" % (self.who, self.treedef, treedef))
        return leaves

    def _values(self, leaves):
        tape = self.tape
        out = []
        for x in leaves:
            tx = type(x)
            if is_dual(x) and x.trace is tape:
                out.append(x.value)
            else:
                if tx is not float:  # a leaf hiding duals would keep them past the step
                    _check_constant_output(x, tape, self.who)
                out.append(x)
        return out

    def _tree(self, leaves):
        if self.flat is tuple:
            return tuple(leaves)
        if self.flat is list:
            return list(leaves)
        return tree_unflatten(self.treedef, leaves)

    def _collect(self, start):
        """Drop the region ``start ..``; during the loop's run, first add the ids below
        ``start`` it reads to the free variables. (Afterwards the reads are checked when each
        step is recorded for its reversal, which every step is once.)"""
        tape = self.tape
        if tape.nbindings > start:
            if self.allowed is None:
                self.free.update(tape.region_parents(start))
            tape.truncate(start)

    # -- actions ---------------------------------------------------------------------------

    def _advance(self, p, q, leaves):
        """The state at position ``q`` from the one at ``p`` (its leaves), not recording."""
        if self.fast:
            return self.tape.advance(self.body, self.lower + p if self.indexed else None, q - p,
                                     self.flat(leaves), _BATCH,
                                     self.free if self.allowed is None else None, self.who)
        tape = self.tape
        start = tape.nbindings
        limit = start + _BATCH
        body = self.body
        flat = self.flat
        val = tuple(leaves) if flat is tuple else self._tree(leaves)
        try:
            if self.indexed:
                for k in range(p + self.lower, q + self.lower):
                    val = body(k, val)
                    if tape.nbindings > limit:
                        val = self._tree(self._values(self._leaves(val)))
                        self._collect(start)
            else:
                for k in range(p, q):
                    val = body(val)
                    if tape.nbindings > limit:
                        val = self._tree(self._values(self._leaves(val)))
                        self._collect(start)
            out = []
            for x in self._leaves(val):
                tx = type(x)
                out.append(x.value if is_dual(x) and x.trace is tape else x)
            if tape.nbindings > start:
                if self.allowed is None:
                    self.free.update(tape.region_parents(start))
                tape.truncate(start)
            return out
        except BaseException:
            if tape.nbindings > start:
                tape.truncate(start)
            raise

    def _turn(self, sweep, pos, cur, adj, expect):
        """Record the step at ``pos`` from state ``cur`` and sweep it, given the adjoints
        ``adj`` of its output's leaves; return the adjoints of its input's leaves."""
        tape = self.tape
        start = tape.nbindings
        flat = self.flat
        if pos == 0:
            ins, ids, where = self.init, (), ()
        elif flat is not None and B.all_floats(cur):  # the commonest state: a few floats
            ins = tape.inputs(cur)
            ids = where = None
        else:
            ins, ids, where = _fresh(tape, cur)
        try:
            val = tuple(ins) if flat is tuple else (ins if flat is list else self._tree(ins))
            out = self.body(self.lower + pos, val) if self.indexed else self.body(val)
            leaves = self._leaves(out)
            vals = []
            seeds = []
            for x, a in zip(leaves, adj):
                tx = type(x)
                if is_dual(x) and x.trace is tape:
                    vals.append(x.value)
                    if a is not None and (a != 0.0 if type(a) is float else not _zero(a)):
                        seeds.append((x.id, a))
                else:
                    vals.append(x)
            if not (B.all_floats(vals) and vals == expect):  # a float == is bitwise but for 0.0
                self._check_values(pos, vals, expect)
            if tape.nbindings > start:
                self._check_reads(pos, start)
        except BaseException:
            if tape.nbindings > start:
                tape.truncate(start)
            raise
        if ids is None:  # fresh inputs for every leaf
            return sweep.sweep(start, seeds, range(start, start + self.k))
        got = sweep.sweep(start, seeds, ids)
        new = [None] * len(cur)
        for j, g in zip(where, got):
            new[j] = g
        return new

    def _outputs(self, cur):
        """Record the loop's state ``cur`` (values) as fresh duals, followed by the node."""
        self.allowed = frozenset(self.free)
        self.free = None
        outs, ids, where = _fresh(self.tape, cur)
        self.out_ids = [None] * len(cur)
        for j, i in zip(where, ids):
            self.out_ids[j] = i
        self.out_values = cur
        self.tape.push_node(sorted(self.allowed), self)
        self.intact = True
        return outs

    def __call__(self, *args):
        raise TypeError("a checkpointed loop's node is run by the backward sweep, not called")

    def __repr__(self):
        return "<%s of %s, %d steps, %s saved states>" % (self.who, _name(self.body), self.n, self.c)

    def run_node(self, sweep, reverse):
        adj = [None if i is None else sweep.adjoint(i) for i in self.out_ids]
        for a in adj:
            if not _zero(a):
                break
        else:
            return
        intact = self.intact
        self.intact = False
        with reopened(self.tape):
            reverse(sweep, adj, intact)
        if _observe is not None:
            _observe(self)

    def _reverse_with(self, sweep, actions, adj):
        """Execute the compound ``actions`` (the reversal part of a schedule,
        :func:`deltaad.schedules.plan`), the adjoints of the state after the next step to
        reverse being ``adj``."""
        expect = self.out_values
        if self.fast:
            # About two actions a step: for a small step their Python cost would be comparable
            # to the step itself, so a flat state of scalars is reversed by the backend up to
            # step 0 (which reads the initial leaves as given).
            adj, expect, most = sweep.reverse(
                actions, self.snaps, self.body, self.lower if self.indexed else None, self.flat,
                adj, expect, self.allowed, self._check_values, self.who, _BATCH)
            self.max_alive = max(self.max_alive, most)
            if adj is not None:
                self._turn(sweep, 0, self.init, adj, expect)
            return
        snaps = self.snaps
        for act in actions:
            kind = act[0]
            if kind == S.TURN:
                pos, cur = snaps[act[1]]
                q = act[2]
                if q > pos:
                    cur = self._advance(pos, q, cur)
                adj = self._turn(sweep, q, cur, adj, expect)
                expect = cur
                for a in adj:
                    if not _zero(a):
                        break
                else:
                    return  # nothing more flows back: the earlier steps contribute nothing
            elif kind == S.ADVANCE:
                pos, cur = snaps[act[1]]
                q = act[2]
                snaps[act[3]] = (q, self._advance(pos, q, cur))
                if len(snaps) > self.max_alive:
                    self.max_alive = len(snaps)
            else:
                del snaps[act[1]]

    def _check_values(self, q, vals, expect):
        for v, e in zip(vals, expect):
            if not _same(v, e):
                raise _divergence(self.who, "step %d gives %r, where the loop's run had %r"
                                  % (q, v, e))

    def _check_reads(self, q, start):
        ps = self.tape.region_parents(start)
        if not self.allowed.issuperset(ps):
            raise _divergence(self.who, "step %d read variables %s that the loop's run did not "
                                        "read" % (q, sorted(set(ps) - self.allowed)[:5]))

    def _run_ahead(self, actions):
        """Execute the compound actions up to the first TURN (the loop's run); return it."""
        snaps = self.snaps
        for act in actions:
            kind = act[0]
            if kind == S.ADVANCE:
                pos, cur = snaps[act[1]]
                snaps[act[3]] = (act[2], self._advance(pos, act[2], cur))
                if len(snaps) > self.max_alive:
                    self.max_alive = len(snaps)
            elif kind == S.STORE:
                snaps[act[1]] = (0, self.init)
                self.max_alive = max(self.max_alive, len(snaps))
            elif kind == S.FREE:
                del snaps[act[1]]
            else:
                return act


class _Fori(_Loop):
    def __init__(self, tape, body, init_val, lower, n, c):
        _Loop.__init__(self, "fori_loop", tape, body, init_val, c)
        self.lower = lower
        self.n = n

    def forward(self):
        first = self._run_ahead(_plan(self.n, self.c, False))  # (TURN, slot, n - 1)
        pos, cur = self.snaps[first[1]]
        if first[2] > pos:
            cur = self._advance(pos, first[2], cur)
        outs = self._outputs(cur)  # the state before the last step, then the node
        out = self.body(self.lower + self.n - 1, self._tree(outs))  # recorded: the first turn
        if _observe is not None:
            _observe(self)
        return out

    def run(self, sweep, i):
        rerun(self.tape, i, self.run_node, sweep, self._reverse)

    def _reverse(self, sweep, adj, intact):
        actions = _plan(self.n, self.c, False)
        if intact:  # the run's snapshots are in place: skip its actions
            for act in actions:
                if act[0] == S.TURN:
                    break
        else:
            self.snaps.clear()
            self._run_ahead(actions)
        self._reverse_with(sweep, actions, adj)


class _While(_Loop):
    indexed = False
    lower = 0

    def __init__(self, tape, cond, body, init_val, c):
        _Loop.__init__(self, "while_loop", tape, body, init_val, c)
        self.cond = cond
        self.n = 0
        self.stored = None
        self.total = None

    def _cap(self, p):
        """States the run may keep at position ``p``."""
        if self.c == "auto":
            return auto_snapshots(p)
        return (self.c + 1) // 2

    def forward(self):
        tape = self.tape
        cond = self.cond
        body = self.body
        on = S.Online(self._cap)
        self.snaps[0] = (0, self.init)
        self.max_alive = 1
        start = tape.nbindings
        limit = start + _BATCH
        val = self.init_val
        pos = 0
        try:
            while cond(val):
                if pos:
                    slot, freed = on.at(pos)
                    for s in freed:
                        del self.snaps[s]
                    if slot is not None:
                        cur = self._values(self._leaves(val))
                        self._collect(start)
                        val = self._tree(cur)
                        self.snaps[slot] = (pos, cur)
                        if len(self.snaps) > self.max_alive:
                            self.max_alive = len(self.snaps)
                val = body(val)
                pos += 1
                if tape.nbindings > limit:
                    val = self._tree(self._values(self._leaves(val)))
                    self._collect(start)
            cur = self._values(self._leaves(val)) if pos else None
            self._collect(start)
        except BaseException:
            if tape.nbindings > start:
                tape.truncate(start)
            raise
        if pos == 0:
            return self.init_val
        self.n = pos
        self.stored = dict(on.stored)
        self.total = 2 * auto_snapshots(pos) if self.c == "auto" else self.c
        out = self._tree(self._outputs(cur))
        if _observe is not None:
            _observe(self)
        return out

    def run(self, sweep, i):
        rerun(self.tape, i, self.run_node, sweep, self._reverse)

    def _reverse(self, sweep, adj, intact):
        if not intact:  # put the run's states back: the positions depend on n and c only
            self.snaps.clear()
            self.snaps[0] = (0, self.init)
            pos, cur = 0, self.init
            for p, slot in sorted(self.stored.items()):
                if p:
                    cur = self._advance(pos, p, cur)
                    pos = p
                    self.snaps[slot] = (p, cur)
        self._reverse_with(sweep, S.online_reversal(self.n, self.total, self.stored, frees=False), adj)
