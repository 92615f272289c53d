"""The pure-Python backend: the tape (the paper's DeltaBinds), the forward level and the dual.

This is the readable twin of ``deltaad._core``. Both implement the same interface with the same
arithmetic in the same order, so on the same program they give the same bits. Read this file to
learn what the compiled core does; change both together.

The monadic Delta of Krawiec et al. (§7, Figs. 9-10) in four sentences: a dual number is
``(value, delta)`` where ``delta`` is ``Zero`` (a plain number, not a dual at all) or ``Var id``.
Every primitive computes its value and its partial derivatives ``c_i`` and performs ``deltaLet``:
it appends the binding ``id := sum_i c_i * Var(v_i)`` to the tape and returns a dual holding the
fresh ``id``. ``eval`` walks the bindings newest-first once, adding ``c_i * adj[id]`` into
``adj[v_i]`` of one mutable array. A forward level instead carries a tangent in each dual and
combines the same partials with the operands' tangents on the spot (§4).

Nesting: every trace has a level; an operation is recorded on the trace of highest
level among its operands, and operands of lower levels are constants there. A dual's ``value``
may itself be a dual of a lower level; then values, partials and tangents are computed with that
lower level's arithmetic, so the derivative work is itself differentiated.
"""

import itertools
from deltaad._plainmath import math
from array import array as _array
import numbers
from operator import index as _index

from . import _rules
from . import elementwise as _table
from ._errors import (DUAL_NEW, escaped_error, exact_ratio_error as _exact_ratio_error,
                      kept_intermediate_error as _kept_intermediate_error,
                      formatted, no_float_error, step_reads_error as _step_reads_error,
                      trace_call_error)

_INF = math.inf
_NAN = math.nan

# ``_new(Dual)`` and four slot stores make a dual ~50 ns faster than ``Dual(...)``, which runs
# ``Dual.__init__`` as a Python call; the hot paths build their results that way.
_new = object.__new__

# Hooks the Python layer installs (numpy glue): what to do with a non-scalar argument of a math
# function, and how a scalar dual answers numpy's __array_ufunc__ protocol.
_hooks = {"fallback": None, "array_ufunc": None, "array_function": None, "complex": None}

# The recording value type of ``deltaad.compile`` (None until it is imported): a number below
# every dual that records the float operations done on it. Three places treat it as a float:
# a constant operand, the zero test (a recorded comparison), and the sweep's result.
_recorder = None


def set_recorder_type(cls):
    """Declare ``cls`` the recording number type (see ``deltaad._replay_pure``)."""
    global _recorder
    _recorder = cls


def set_hooks(fallback, array_ufunc, array_function=None, complex_binop=None,
              scalar_ufuncs=None, constant_ufuncs=None):
    """Install the numpy glue: ``fallback(name, *args)``, ``array_ufunc(ufunc, method, inputs,
    kwargs)``, ``array_function(dual, func, types, args, kwargs)`` and ``complex_binop(op, a,
    b)`` (an operator meeting a complex operand; NotImplemented for anything else);
    ``scalar_ufuncs`` and ``constant_ufuncs``, which the core's ``__array_ufunc__`` reads for
    the commonest call (``np.exp(x)`` of scalars: see ``_core.set_hooks``); here every call
    takes the hook, which reaches the same functions."""
    _hooks["fallback"] = fallback
    _hooks["array_ufunc"] = array_ufunc
    _hooks["array_function"] = array_function
    _hooks["complex"] = complex_binop


def _nonreal(a, b, op):
    """``a op b`` where one operand is not a real number: a complex one goes to the complex
    hook; anything else is NotImplemented (Python then tries the other operand)."""
    hook = _hooks["complex"]
    if hook is None:
        return NotImplemented
    return hook(op, a, b)


def all_floats(xs):
    """True when every item of the sequence ``xs`` is exactly a float."""
    return list(map(type, xs)).count(float) == len(xs)


def float_copy(xs):
    """A new list of the items of the list or tuple ``xs`` when every one is exactly a float;
    None otherwise (a flat float argument flattened and checked in one step)."""
    if (type(xs) is list or type(xs) is tuple) and all_floats(xs):
        return list(xs)
    return None


def all_scalars(xs):
    """True when every item of the list or tuple ``xs`` is a float or a scalar dual (a run of
    pytree leaves: flattened without a step per item)."""
    if type(xs) is not list and type(xs) is not tuple:
        return False
    types = list(map(type, xs))
    return types.count(float) + types.count(Dual) == len(xs)


def read_outputs(leaves, tape):
    """``(ids, values)`` of output ``leaves`` when every one is a dual of ``tape`` with a float
    value, ``ids`` a range when they are evenly spaced; None otherwise (the caller checks
    leaf by leaf)."""
    for x in leaves:
        if type(x) is not Dual or x.trace is not tape or type(x.value) is not float:
            return None
    ids = [x.id for x in leaves]
    m = len(ids)
    if m:
        step = ids[1] - ids[0] if m > 1 else 1
        r = range(ids[0], ids[0] + m * step, step) if step > 0 else None
        if r is not None and list(r) == ids:
            ids = r
    return ids, [x.value for x in leaves]


class Seeds:
    """Seeds for ``Tape.eval`` as two sequences of equal length, ``ids`` and ``cotangents``,
    instead of ``(id, cotangent)`` pairs (the core reads them without a tuple per seed).
    Iterating gives the pairs."""

    __slots__ = ("ids", "cotangents")

    def __init__(self, ids, cotangents):
        if len(ids) != len(cotangents):
            raise ValueError("Seeds: %d ids but %d cotangents" % (len(ids), len(cotangents)))
        self.ids = ids
        self.cotangents = cotangents

    def __iter__(self):
        return zip(self.ids, self.cotangents)


def read_tangents(leaves, level):
    """``(values, tangents)`` of output ``leaves`` when every one is a dual of the forward
    ``level`` with a float value and tangent; None otherwise."""
    for x in leaves:
        if (type(x) is not Dual or x.trace is not level or type(x.value) is not float
                or type(x.tangent) is not float):
            return None
    return [x.value for x in leaves], [x.tangent for x in leaves]


def set_module_classes(modules, classes):
    """``modules[k].__class__ = classes[k]`` for each k (the core swaps them directly)."""
    if len(modules) != len(classes):
        raise ValueError("set_module_classes: one class per module")
    for m, c in zip(modules, classes):
        if type(m) is not c:
            m.__class__ = c


def defer_numpy_scalars(types, comparing):
    """The core lets numpy's scalar types defer to a dual on their right in + - * / ** (and
    the comparisons of those in ``comparing``): numpy's own path asks the dual's
    ``__array_ufunc__``, which ends in the same reflected operator (see
    ``deltaad.numpy.elementwise._SCALAR``). Python cannot wrap a static type's slots, so here
    numpy's path stays: the results are the same, none is wrapped."""
    return ()


_DROPS_OF_NODES = [0]


def node_drops():
    """How many times a truncation has dropped node bindings, on any tape of this process: a
    value cached beside a node (an array's unpacked elements) is still valid while this count
    is what it was, and otherwise must ask whether its node is still on the tape."""
    return _DROPS_OF_NODES[0]


def free_inputs(holder, k, trace):
    """Drop ``holder[k]``, a list of input duals of ``trace`` (the core keeps the list for
    the next gradient of a list to take its duals in place; here Python frees them as
    usual)."""
    holder[k] = None


# --------------------------------------------------------------------------------------------
# Traces


class Trace:
    """One differentiation in progress; ``level`` orders nested traces (higher = inner).

    ``closed`` is a list, empty while the trace is open and ``[True]`` once it has closed (a
    list is as quick to test as a bool, and ``run`` needs one: see there)."""

    __slots__ = ("level", "closed", "__weakref__")
    is_forward = False

    def __init__(self, level):
        self.level = level
        self.closed = []

    def __call__(self, *args, **kwargs):
        # ``A.trace()`` meant numpy's method; an array dual's ``trace`` names its trace
        raise trace_call_error()

    def close(self):
        """End recording: duals of this trace may no longer enter arithmetic."""
        if not self.closed:
            self.closed.append(True)

    def __reduce__(self):
        raise TypeError("cannot pickle '%s' object" % type(self).__name__)

    def call_on_inputs(self, fn, args, kwargs, n, xs, ts, has_aux, finish):
        """The commonest differentiation's body (run with this trace open): one list or tuple
        of floats ``xs`` (tangents ``ts`` on a forward level, else None) is argument ``n`` of
        ``fn(*args, **kwargs)``, as a list of its input duals (a tuple for a tuple).
        ``finish(self, result)`` gives the output packed and, with ``has_aux``, the pair
        ``(output, aux)`` (not called on a dual output without an aux). ``(the inputs' ids (a
        range; None on a forward level), output, aux)``; None, nothing called, if an item is
        not a float."""
        if not 0 <= n < len(args):
            raise IndexError("call_on_inputs: no argument %d of %d" % (n, len(args)))
        duals = self.float_inputs(xs, ts) if self.is_forward else self.float_inputs(xs)
        if duals is None:
            return None
        ids = None if self.is_forward else range(duals[0].id, duals[0].id + len(duals))
        new_args = list(args)
        new_args[n] = duals if type(xs) is list else tuple(duals)
        duals = None
        out = fn(*new_args, **kwargs)
        free_inputs(new_args, n, self)
        if has_aux:
            out, aux = finish(self, out)
            return ids, out, aux
        if type(out) is not Dual:
            out = finish(self, out)
        return ids, out, None

    def run(self, fn, *args):
        """``fn(*args)`` with this trace open; it is closed when ``fn`` returns or raises.

        Closing must not be Python code: an asynchronous exception (``KeyboardInterrupt``, or
        one a tracer raises) arrives between any two bytecodes and would skip it. The compiled
        core closes in C; here ``list.sort`` does it. While sorting, CPython empties the list
        and calls the key function on each item, and afterwards puts the items back -- in C,
        whether the key function returned or raised. So ``closed``, ``[True]`` before, reads
        empty (open) exactly while ``fn`` runs as the key function of its one item."""
        closed = self.closed
        if not closed:
            closed.append(True)
        out = []

        def key(_):
            out.append(fn(*args))

        try:
            closed.sort(key=key)
        except ValueError:  # "list modified during sort": fn called close(); closed anyway
            if not out:
                raise
        return out[0]


class Tape(Trace):
    """A reverse trace: the growable list of bindings ``id := c1*Var(p1) + c2*Var(p2)``.

    Binding ``i`` is the four items ``_b[4*i : 4*i+4] = [p1, c1, p2, c2]`` of one flat list (a
    flat list rather than a list of tuples: no tuple object per operation); a missing parent is
    -1. An input (a ``Var`` with no binding) has both parents -1. Bindings that do not fit two
    scalar coefficients (n-ary primitives, array operations) have ``p1 == -2`` and live in
    ``_linear[i]`` as ``(parents, coefs)`` or ``(parents, vjp)``. A *node* (``p1 == -3``,
    ``_linear[i] == (parents, node)``, its id in ``_nodes``) is a computation the tape does not
    keep: the sweep calls ``node.run(sweep, i)`` when it reaches it, and the node re-records its
    computation at the end of the tape and sweeps that segment (checkpointing). ``_n`` is the
    number of bindings, the next id (a counter: cheaper than ``len(_b) >> 2``, which makes two
    ints).

    Flags, set once and never reset (a truncation keeps them, so a checkpointed program takes
    the same kind of sweep as the program without checkpoints): ``_general`` some coefficient
    is not a float (an outer dual); ``_truncated`` bindings were dropped, so a dual kept from a
    dropped region could name a parent at or after its binding (the sweep checks).
    """

    __slots__ = ("_b", "_n", "_linear", "_general", "_nodes", "_truncated", "_busy")

    def __init__(self, level):
        Trace.__init__(self, level)
        self._b = []
        self._n = 0
        self._linear = {}
        self._general = False  # some coefficient is not a float (an outer dual)
        self._nodes = []       # ids of the node bindings, ascending
        self._truncated = False
        self._busy = False     # a sweep that may run nodes is in progress

    # -- recording (deltaLet) ----------------------------------------------------------------

    def input(self, value):
        """A fresh input variable ``(value, Var id)``."""
        _check_lower(self, value)
        r = _new(Dual)
        r.value = value
        r.trace = self
        r.id = i = self._n
        self._n = i + 1
        r.tangent = None
        self._b += (-1, 0.0, -1, 0.0)
        return r

    def inputs(self, values):
        """A fresh input variable for each of ``values``, with consecutive ids."""
        # ``input`` inlined into one loop: gradients often have 10^4 inputs or more.
        first = self._n
        out = []
        for i, v in enumerate(values, first):
            if type(v) is Dual:
                _check_lower(self, v)
            r = _new(Dual)
            r.value = v
            r.trace = self
            r.id = i
            r.tangent = None
            out.append(r)
        self._n = first + len(out)
        self._b += (-1, 0.0, -1, 0.0) * len(out)
        return out

    def float_inputs(self, xs):
        """``inputs(xs)`` for a non-empty list or tuple ``xs`` of exact floats (the core reads
        each item once); None, with nothing recorded, for anything else."""
        if (type(xs) is not list and type(xs) is not tuple) or not xs or not all_floats(xs):
            return None
        return self.inputs(xs)

    def _emit1(self, value, a, ca):
        r = _new(Dual)
        r.value = value
        r.trace = self
        r.id = i = self._n
        self._n = i + 1
        r.tangent = None
        if type(ca) is not float:
            ca = _as_float_coef(ca)
            if type(ca) is not float:
                self._general = True
        self._b += (a.id, ca, -1, 0.0)
        return r

    def _emit2(self, value, a, ca, x, cx):
        r = _new(Dual)
        r.value = value
        r.trace = self
        r.id = i = self._n
        self._n = i + 1
        r.tangent = None
        if type(ca) is not float or type(cx) is not float:
            ca = _as_float_coef(ca)
            cx = _as_float_coef(cx)
            if type(ca) is not float or type(cx) is not float:
                self._general = True
        self._b += (a.id, ca, x.id, cx)
        return r

    def push_linear(self, parents, rule):
        """Record a binding with any number of parents; return its id.

        ``rule`` is either a tuple of coefficients (one per parent: the paper's Fig. 14) or a
        callable ``vjp(ct) -> tuple`` giving each parent's cotangent (``None`` for zero): the
        paper's ``Scale`` by a linear operator (§10.2).
        """
        if self.closed:
            raise escaped_error(self.level)
        parents = _check_parents(parents, self._n)
        if not callable(rule) and not all_floats(rule):
            self._general = True
        i = self._n
        self._n = i + 1
        self._b += (-2, 0.0, -1, 0.0)
        self._linear[i] = (parents, rule)
        return i

    def push_node(self, parents, node):
        """Record a node binding: a computation the tape does not keep (checkpointing).

        ``parents`` are the earlier ids its computation reads (for inspection and checks).
        When the sweep reaches it, it calls ``node.run(sweep, id)``: the node reads its
        outputs' adjoints with ``sweep.adjoint``, re-records its computation at the end of the
        tape and hands that segment to ``sweep.sweep``, which adds into this same sweep's
        adjoints. The node runs even though nothing names its id (its adjoint slot holds a
        marker).
        """
        if self.closed:
            raise escaped_error(self.level)
        parents = _check_parents(parents, self._n)
        i = self._n
        self._n = i + 1
        self._b += (-3, 0.0, -1, 0.0)
        self._linear[i] = (parents, node)
        self._nodes.append(i)
        return i

    @property
    def nnodes(self):
        """The number of node bindings (checkpoints) on the tape."""
        return len(self._nodes)

    def release_nodes(self):
        """Let go of what the nodes hold (the checkpointed function, its arguments, a loop's
        states), for good: a sweep that reaches one of them raises. A node holds this very tape
        (and usually duals of it): a cycle, which only the garbage collector would free; the
        tape's owner (a vjp function) calls this when it is freed, so the tape goes at once."""
        for i in self._nodes:
            parents, node = self._linear[i]
            self._linear[i] = (parents, _RELEASED)

    def truncate(self, m):
        """Drop the bindings ``m, m+1, ...`` (a region recorded and no longer needed).

        Duals of the dropped region must not be used again: their ids will name other
        bindings. The sweep reports a parent at or after its own binding (such a dual used
        later) instead of reading out of bounds; an older id reused is not detectable.
        """
        m = _index(m)
        if not 0 <= m <= self._n:
            raise ValueError("truncate: %d is not between 0 and the tape's %d bindings" % (m, self._n))
        if m == self._n:
            return
        del self._b[4 * m:]
        self._n = m
        if self._linear:
            _pop_tail(self._linear, m)
            nodes = self._nodes
            if nodes and nodes[-1] >= m:
                _DROPS_OF_NODES[0] += 1
            while nodes and nodes[-1] >= m:
                nodes.pop()
        self._truncated = True

    def region_parents(self, m):
        """The ids below ``m`` that bindings ``m, m+1, ...`` read, ascending: the free
        variables of the region (inputs and duals captured from outside it)."""
        m = _index(m)
        if not 0 <= m <= self._n:
            raise ValueError("region_parents: %d is not between 0 and the tape's %d bindings" % (m, self._n))
        seen = set()
        bs = self._b
        linear = self._linear
        for i in range(m, self._n):
            j = bs[4 * i]
            if j >= 0:
                if j < m:
                    seen.add(j)
                k = bs[4 * i + 2]
                if 0 <= k < m:
                    seen.add(k)
            elif j < -1:
                for p in linear[i][0]:
                    if p < m:
                        seen.add(p)
        return sorted(seen)

    def advance(self, body, first, count, state, limit, free, who):
        """Run ``count`` steps of a loop whose state is a flat tuple or list (``state``'s type)
        of floats or scalar duals: ``state = body(first + k, state)`` (``body(state)`` when
        ``first`` is None), recording at the end of the tape and dropping what was recorded
        every ``limit`` bindings and at the end (checkpointing's advance: nothing is kept).
        The ids below the start the steps read are added to the set ``free`` (unless None).
        Returns the final state's leaves as values at this tape's level."""
        start = self._n
        lim = start + limit
        kind = type(state)
        k = len(state)
        val = state
        try:
            for j in range(count):
                val = body(val) if first is None else body(first + j, val)
                if self._n > lim:
                    val = kind(_flat_values(self, val, kind, k, who))
                    self._drop(start, free)
            out = _flat_values(self, val, kind, k, who)
            self._drop(start, free)
            return out
        except BaseException:
            if self._n > start:
                self.truncate(start)
            raise

    def _drop(self, start, free):
        if self._n > start:
            if free is not None:
                free.update(self.region_parents(start))
            self.truncate(start)

    # -- inspection -------------------------------------------------------------------------

    @property
    def nbindings(self):
        return self._n

    @property
    def nbytes(self):
        """Bytes of binding storage as the compiled core keeps it: 24 per binding."""
        return 24 * self._n

    def binding(self, i):
        """Binding ``i`` as ``(parents, rule)``; an input is ``((), ())``."""
        if not 0 <= i < self._n:
            raise IndexError("binding %d not on this tape of %d" % (i, self._n))
        p1, c1, p2, c2 = self._b[4 * i:4 * i + 4]
        if p1 < -1:
            return self._linear[i]
        if p1 == -1:
            return (), ()
        if p2 == -1:
            return (p1,), (c1,)
        return (p1, p2), (c1, c2)

    # -- eval (Fig. 10 with the mutable array of §7.3) ----------------------------------------

    def rows(self, seeds, wanted):
        """A Jacobian's rows: for each seed id alone (cotangent 1.0), the adjoints of the
        ``wanted`` ids, as one buffer of C doubles (an ``array("d")``), row after row; None
        unless every binding is a float one. The core sweeps each row in C; here, ``eval``."""
        if self._general or self._linear or self._truncated:
            return None
        n0 = self._n
        seeds = [_index(x) for x in seeds]
        wanted = [_index(x) for x in wanted]
        for what, ids in (("seed", seeds), ("wanted", wanted)):
            for i in ids:
                if not 0 <= i < n0:
                    raise IndexError("%s id %r is not on this tape of %d bindings" % (what, i, n0))
        out = _array("d")
        for s in seeds:
            out.extend(self.eval(((s, 1.0),), wanted))
        return out

    def eval(self, seeds, wanted, floats_only=False):
        """Sweep the bindings newest-first once; return the adjoints of the ``wanted`` ids.

        ``seeds`` is a sequence of ``(id, cotangent)``. When every coefficient and seed is a
        float the sweep runs over floats (untouched adjoints are 0.0); otherwise adjoints are
        arbitrary objects (outer duals, arrays) and an untouched one is ``None``. With
        ``floats_only``, only that float sweep runs (its result: floats only); None, nothing
        swept, where it does not apply.
        """
        # Each id is converted and checked once, and the iterators are consumed, before the
        # bindings are read (the core must: an iterator could record on this tape).
        # Seeds are kept as two lists (ids, cotangents), not a tuple per seed: n tuples would
        # each count towards a garbage collection (see the core).
        n0 = self._n
        sids = []
        cts = []
        float_seeds = True
        for i, ct in seeds:
            sid = i if type(i) is int else _index(i)
            if not 0 <= sid < n0:
                raise IndexError("seed id %r is not on this tape of %d bindings" % (i, n0))
            if type(ct) is not float:
                float_seeds = False
            sids.append(sid)
            cts.append(ct)
        if type(wanted) is range:
            if len(wanted):
                for w in (wanted[0], wanted[len(wanted) - 1]):  # every id lies between the ends
                    if not 0 <= w < n0:
                        raise IndexError("wanted id %r is not on this tape of %d bindings" % (w, n0))
            wanted = list(wanted)
        else:
            wl = []
            for w in wanted:
                sid = _index(w)
                if not 0 <= sid < n0:
                    raise IndexError("wanted id %r is not on this tape of %d bindings" % (w, n0))
                wl.append(sid)
            wanted = wl
        bs = self._b
        n = self._n
        if float_seeds and not self._general and not self._linear and not self._truncated:
            adj = [0.0] * n
            for i, ct in zip(sids, cts):
                adj[i] += ct
            # One reversed iterator read four items at a time yields each binding newest-first
            # as (c2, p2, c1, p1), cheaper than indexing the flat list; ``reversed(adj)`` reads
            # adj[i] only when binding i comes up, after every later binding added into it.
            rb = iter(reversed(bs))
            for a, c2, k, c1, j in zip(reversed(adj), rb, rb, rb, rb):
                if a == 0.0:
                    continue
                if j >= 0:
                    adj[j] += c1 * a
                    if k >= 0:
                        adj[k] += c2 * a
            return [adj[w] for w in wanted]
        if floats_only:
            return None
        nodes = self._nodes
        if nodes and self._busy:
            raise RuntimeError(_BUSY)
        # made before the try, so that an interrupt anywhere inside finds it in the finally
        sw = Sweep(self, float_seeds and not self._general)
        try:
            if nodes:
                self._busy = True
            sw.base = sw.keep = set(wanted)
            if sw.floats:
                adj = sw.adj = [0.0] * n
                for j in nodes:
                    adj[j] = 1.0  # the marker that makes the sweep stop at a node
                for i, ct in zip(sids, cts):
                    adj[i] += ct
                sw._float_range(0, n)
                if sw.floats:
                    # a linear binding's value may be an array no array cotangent reached
                    # (else the sweep would have turned to objects): its 0.0 means untouched,
                    # None, as the object sweep says (for a scalar both mean zero)
                    linear = self._linear
                    return [None if adj[w] == 0.0 and w in linear else adj[w] for w in wanted]
                adj = sw.adj
            else:
                adj = sw.adj = [None] * n
                for j in nodes:
                    adj[j] = 1.0
                for i, ct in zip(sids, cts):
                    _accumulate(adj, i, ct)
                sw._general_range(0, n)
            out = [adj[w] for w in wanted]
            if _recorder is not None and not self._linear and _recorded_floats(cts, bs):
                # The float sweep would have run: its adjoints start at 0.0, so a sum of -0.0
                # terms ends +0.0 there. Record that addition too (same bits as the float path).
                out = [0.0 + a if type(a) is _recorder or type(a) is float else a for a in out]
            return out
        finally:
            sw.active = False
            if nodes:
                self._busy = False


class _Released:
    """What a node becomes once its tape's owner has gone (``Tape.release_nodes``)."""

    def run(self, sweep, i):
        raise RuntimeError("deltaad: this tape's checkpoints were released when the "
                           "differentiation that recorded them (its vjp function) was freed")

    def __call__(self, *args):
        raise TypeError("a released checkpoint node is not a linear map")


_RELEASED = _Released()

_BUSY = ("deltaad: this tape is already being swept (by another thread, or re-entrantly from a "
         "checkpointed function); a tape holding checkpoints is swept by one caller at a time")


def _pop_tail(d, m):
    """Remove the keys >= m of ``d``, whose keys were inserted in increasing order."""
    while d:
        last = next(reversed(d))
        if last < m:
            break
        del d[last]


def _check_parents(parents, n):
    parents = tuple([_index(p) for p in parents])
    for p in parents:
        if not 0 <= p < n:  # the sweep relies on parents older than their binding
            raise ValueError("push_linear: parent %d is not an earlier binding of this tape "
                             "(it holds %d)" % (p, n))
    return parents


def _flat_values(tape, val, kind, k, who):
    """The leaves of a loop state that must be a ``kind`` of ``k`` floats or scalar duals, as
    values at ``tape``'s level."""
    if type(val) is not kind or len(val) != k:
        raise TypeError("%s: body_fun must return a value with the structure of init_val (a %s of %d "
                        "float leaves); got %s"
                        % (who, kind.__name__, k, _describe(val)))
    out = []
    for x in val:
        tx = type(x)
        if tx is Dual:
            out.append(x.value if x.trace is tape else x)
        elif tx is float:
            out.append(x)
        else:
            raise TypeError("%s: body_fun must return a value with the structure of init_val (a %s "
                            "of %d float leaves); got a leaf of type %s" % (who, kind.__name__, k, tx.__name__))
    return out


def _describe(x):
    if type(x) is tuple or type(x) is list:
        return "a %s of %d" % (type(x).__name__, len(x))
    return "a value of type %s" % type(x).__name__


class Sweep:
    """A backward sweep in progress over a tape with linear bindings or nodes.

    Adjoints live in one list, floats (``floats``: untouched is 0.0) or objects (untouched is
    None). A float sweep calls a linear binding's rule with its float adjoint and adds float
    cotangents; at the first cotangent that is not a float (an array) it turns into an object
    sweep for the rest (:meth:`_to_objects`). The core's twin of the object sweep (its mixed
    mode) keeps the float adjoints in a C array beside the others and sweeps float bindings
    in C, with these additions in this order: an untouched adjoint takes a product itself
    (``None + x`` is ``x``, where the float sweep's ``0.0 + x`` turns a -0.0 into +0.0). A node reads its outputs' adjoints with
    :meth:`adjoint` and hands the segment it re-recorded to :meth:`sweep`, which adds into
    this same list: a variable read inside a checkpoint gets its contributions in the same
    order as without the checkpoint, so results are the same to the last bit. ``keep``: the
    ids whose adjoints are read at the end (an object sweep frees the others once spent).
    """

    __slots__ = ("tape", "floats", "adj", "keep", "base", "wanted", "active")

    def __init__(self, tape, floats):
        self.tape = tape
        self.floats = floats
        self.adj = None
        self.keep = None    # the ids an object sweep must not free: base and every segment's
        self.base = None    # the eval's wanted ids
        self.wanted = []    # the wanted ids of the segments being swept
        self.active = True

    def _keep(self):
        """The ids an object sweep must not free: the eval's wanted ids and the segments'."""
        if not self.wanted:
            return self.base
        keep = set(self.base)
        for w in self.wanted:
            keep.update(w)
        return keep

    def adjoint(self, i):
        """The adjoint accumulated so far for id ``i`` (0.0 or None when untouched)."""
        if not self.active:
            raise RuntimeError("deltaad: this sweep has finished")
        i = _index(i)
        if not 0 <= i < len(self.adj):  # the slots in use: a node's new segment has none yet
            raise IndexError("adjoint: id %d is not in the part of the tape being swept" % i)
        return self.adj[i]

    def sweep(self, start, seeds, wanted):
        """Sweep the segment ``start .. end`` of the tape (recorded by a node), newest first,
        into this sweep's adjoints, after adding the ``seeds`` ``(id, cotangent)``; return the
        adjoints of the ``wanted`` ids and drop the segment (also on an exception)."""
        if not self.active:
            raise RuntimeError("deltaad: this sweep has finished")
        tape = self.tape
        start = _index(start)
        adj = self.adj
        n = tape._n
        if not len(adj) == start <= n:
            raise ValueError("sweep: a segment starts where the swept part ends (%d), not at %d "
                             "(the tape holds %d)" % (len(adj), start, n))
        pushed = False
        try:
            if self.floats:
                if tape._general:
                    raise RuntimeError(_NEW_KIND)
                adj.extend([0.0] * (n - start))
            else:
                adj.extend([None] * (n - start))
            for j in reversed(tape._nodes):
                if j < start:
                    break
                adj[j] = 1.0
            for i, ct in seeds:
                i = _index(i)
                if not 0 <= i < n:
                    raise IndexError("sweep: seed id %d is not on the tape" % i)
                if self.floats:
                    if type(ct) is not float:
                        raise TypeError("sweep: a float sweep takes float cotangents, not %s"
                                        % type(ct).__name__)
                    adj[i] += ct
                else:
                    _accumulate(adj, i, ct)
            wl = []
            for w in wanted:
                w = _index(w)
                if not 0 <= w < n:
                    raise IndexError("sweep: wanted id %d is not on the tape" % w)
                wl.append(w)
            self.wanted.append(wl)
            pushed = True
            if self.floats:
                self._float_range(start, n)
            else:
                self.keep = self._keep()
                self._general_range(start, n)
            return [adj[w] for w in wl]
        finally:
            if pushed:
                self.wanted.pop()
                if not self.floats:
                    self.keep = self._keep()
            tape.truncate(start)
            del adj[start:]

    def turn(self, body, index, state, adj, allowed, who):
        """Record one step of a loop from the flat state ``state`` (a tuple or list of values
        at this tape's level: its leaves become fresh inputs), ``body(index, state)``
        (``body(state)`` when ``index`` is None), and sweep it from ``adj``, the adjoints of
        its output's leaves. The step may read no id below its start but those in ``allowed``
        (``CheckpointError`` otherwise). Returns ``(adjoints of the input leaves, values of the
        output leaves)``; the segment is dropped."""
        if not self.active:
            raise RuntimeError("deltaad: this sweep has finished")
        tape = self.tape
        start = tape._n
        kind = type(state)
        k = len(state)
        ins = tape.inputs(state)
        try:
            out = body(kind(ins)) if index is None else body(index, kind(ins))
            vals = _flat_values(tape, out, kind, k, who)
            seeds = []
            for x, a in zip(out, adj):
                if type(x) is Dual and x.trace is tape and not zero_adjoint(a):
                    seeds.append((x.id, a))
            if tape._n > start:
                ps = tape.region_parents(start)
                if not allowed.issuperset(ps):
                    raise _step_reads_error(who, index, ps, allowed)
        except BaseException:
            if tape._n > start:
                tape.truncate(start)
            raise
        return self.sweep(start, seeds, range(start, start + k)), vals

    def reverse(self, actions, snaps, body, first, kind, adj, expect, allowed, check, who, limit):
        """Execute a loop's reversal schedule (compound actions of ``deltaad.schedules.plan``)
        for a flat state of scalars, up to the turn of step 0: ``snaps`` maps slots to
        ``(position, state leaves)``; the body is ``body(first + k, state)`` (``body(state)``
        when ``first`` is None), the state a ``kind`` (tuple or list) of leaves; ``adj`` are the adjoints of the output leaves of the next step
        to reverse, ``expect`` its output values; ``check(k, values, expect)`` is called when
        a re-run step's output is not the expected floats. Returns ``(adj, expect, most
        snapshots alive)``, with ``adj`` None when no adjoint flows back any more."""
        tape = self.tape
        most = len(snaps)
        for act in actions:
            op = act[0]
            if op == 4:  # TURN
                pos, cur = snaps[act[1]]
                q = act[2]
                if q > pos:
                    cur = tape.advance(body, None if first is None else first + pos, q - pos,
                                       kind(cur), limit, None, who)
                if q == 0:
                    return adj, expect, most
                adj, vals = self.turn(body, None if first is None else first + q, kind(cur),
                                      adj, allowed, who)
                if not (all_floats(vals) and vals == expect):  # == is bitwise but for 0.0
                    check(q, vals, expect)
                expect = cur
                if all_floats(adj):
                    if not any(adj):
                        return None, expect, most
                else:
                    for a in adj:
                        if not zero_adjoint(a):
                            break
                    else:
                        return None, expect, most
            elif op == 0:  # ADVANCE
                pos, cur = snaps[act[1]]
                q = act[2]
                snaps[act[3]] = (q, tape.advance(body, None if first is None else first + pos,
                                                 q - pos, kind(cur), limit, None, who))
                if len(snaps) > most:
                    most = len(snaps)
            else:  # FREE
                del snaps[act[1]]
        return adj, expect, most

    def _to_objects(self):
        """Turn this float sweep into an object sweep (a rule gave a cotangent that is not a
        float): zeros (untouched or not) become None, what the object sweep skips."""
        adj = self.adj
        for j in range(len(adj)):
            if adj[j] == 0.0:
                adj[j] = None
        self.floats = False
        self.keep = self._keep()

    def _float_range(self, lo, hi):
        tape = self.tape
        adj = self.adj
        linear = tape._linear
        check = tape._truncated
        rb = _from(tape._b, 4 * hi)
        for i, a, c2, k, c1, j in zip(range(hi - 1, lo - 1, -1), _from(adj, hi), rb, rb, rb, rb):
            if a == 0.0:
                continue
            if j >= 0:
                if check and (j >= i or k >= i):
                    raise _kept_intermediate_error()
                adj[j] += c1 * a
                if k >= 0:
                    adj[k] += c2 * a
            elif j == -2:
                parents, rule = linear[i]
                if callable(rule):
                    for p, ct in zip(parents, rule(a)):
                        if ct is None:
                            continue
                        if type(ct) is float and self.floats:
                            adj[p] += ct
                        else:
                            if self.floats:
                                self._to_objects()
                            _accumulate(adj, p, ct)
                    if not self.floats:  # the rest of the range over objects
                        if i not in self.keep:
                            adj[i] = None
                        self._general_range(lo, i)
                        return
                else:
                    for p, c in zip(parents, rule):
                        adj[p] += c * a
            elif j == -3:
                linear[i][1].run(self, i)
                if tape._n < hi:
                    raise RuntimeError(_NODE_DROPPED)
                if not self.floats:  # a segment turned the sweep into an object sweep
                    self._general_range(lo, i)
                    return

    def _general_range(self, lo, hi):
        tape = self.tape
        adj = self.adj
        keep = self.keep
        linear = tape._linear
        check = tape._truncated
        rb = _from(tape._b, 4 * hi)
        for i, c2, k, c1, j in zip(range(hi - 1, lo - 1, -1), rb, rb, rb, rb):
            a = adj[i]
            if a is None or (a == 0.0 if type(a) is float else _is_zero(a)):
                continue
            if j == -2:
                parents, rule = linear[i]
                if callable(rule):
                    for p, ct in zip(parents, rule(a)):
                        if ct is not None:
                            _accumulate(adj, p, ct)
                else:
                    for p, c in zip(parents, rule):
                        _accumulate(adj, p, c * a)
            elif j == -3:
                linear[i][1].run(self, i)
                if tape._n < hi:
                    raise RuntimeError(_NODE_DROPPED)
            elif j >= 0:
                if check and (j >= i or k >= i):
                    raise _kept_intermediate_error()
                _accumulate(adj, j, c1 * a)
                if k >= 0:
                    _accumulate(adj, k, c2 * a)
            if i not in keep:
                adj[i] = None  # free array adjoints as soon as they are spent


def _from(items, end):
    """An iterator over ``items[end - 1], items[end - 2], ...`` (live, without a copy): a
    reversed iterator with its first ``len(items) - end`` items skipped."""
    it = reversed(items)
    skip = len(items) - end
    if skip:
        next(itertools.islice(it, skip - 1, skip), None)
    return it


_NODE_DROPPED = ("deltaad: a node dropped bindings of the part of the tape being swept; a node "
                 "may drop only what it recorded itself")

_NEW_KIND = ("deltaad checkpoint: the re-run of a checkpointed computation recorded operations "
             "its first run did not (array or custom-rule operations, or values of an outer "
             "differentiation), so it is not a function of its inputs: it read state that "
             "changed in between")


def zero_adjoint(a):
    """True for an adjoint that contributes nothing: None, a float zero, or a forward dual
    that is zero all the way down (what the sweep skips)."""
    return a is None or (a == 0.0 if type(a) is float else _is_zero(a))


def _recorded_floats(cts, bs):
    """True when every seed's cotangent and every coefficient is a float or a recorded number:
    without recording this tape would have taken the float sweep."""
    for ct in cts:
        if type(ct) is not float and type(ct) is not _recorder:
            return False
    for k in range(1, len(bs), 2):
        c = bs[k]
        if type(c) is not float and type(c) is not _recorder:
            return False
    return True


def _accumulate(adj, i, x):
    old = adj[i]
    adj[i] = x if old is None else old + x


def _check_lower(tr, x):
    """A value or tangent handed to a trace may be a dual only of a lower level (an outer
    differentiation): a dual of the same or an inner level would break the nesting order, and
    chains of them would make freeing a dual recurse without bound (in the core)."""
    if type(x) is Dual and x.trace.level >= tr.level:
        raise ValueError("deltaad: a value or tangent of a trace of level %d must be a number "
                         "or a dual of a lower level (an outer differentiation), not of level %d"
                         % (tr.level, x.trace.level))


def _tmul(c, t):
    """``c * t`` for a partial ``c`` and a tangent ``t``: 0.0 when ``t`` is an exact zero (a
    float, or a forward dual that is zero all the way down), even through an infinite or nan
    partial: a zero vector maps to zero. This is forward mode's twin of the sweep skipping zero
    adjoints, so the modes agree at the edge of a domain (``jacfwd`` of ``sqrt(x) + y`` at 0).
    A zero *partial* is not special: 0 * inf between partials is indeterminate (nan)."""
    if _is_zero(t):
        return 0.0
    return c * t


def _is_zero(a):
    """An adjoint that contributes exactly nothing: a float zero, or a dual of a forward level
    whose value and tangent are such zeros. A tape dual is never skipped: it carries a
    derivative even where its value is 0."""
    while True:
        if type(a) is float:
            return a == 0.0
        if type(a) is _recorder and _recorder is not None:
            return bool(a == 0.0)  # a recorded comparison: the replay checks it
        if type(a) is not Dual or not a.trace.is_forward:
            return False
        if not _is_zero(a.tangent):
            return False
        a = a.value


class ForwardLevel(Trace):
    """A forward trace: each dual carries its tangent; partials meet tangents at once (§4)."""

    __slots__ = ()
    is_forward = True

    def input(self, value, tangent):
        _check_lower(self, value)
        _check_lower(self, tangent)
        if value is None:
            raise TypeError("Dual: the value must be a number or a dual, not None")
        if tangent is None:
            raise TypeError("Dual: the tangent must be a number, an array or a dual, not None")
        r = _new(Dual)
        r.value = value
        r.trace = self
        r.id = -1
        r.tangent = tangent
        return r

    def inputs(self, values, tangents):
        """``input`` for each pair of ``values`` and ``tangents``."""
        out = []
        for v, t in zip(values, tangents):
            _check_lower(self, v)
            _check_lower(self, t)
            r = _new(Dual)  # as in Tape.inputs
            r.value = v
            r.trace = self
            r.id = -1
            r.tangent = t
            out.append(r)
        return out

    def float_inputs(self, xs, ts):
        """``inputs(xs, ts)`` for non-empty lists or tuples ``xs`` and ``ts`` of exact floats
        of one length; None for anything else."""
        if ((type(xs) is not list and type(xs) is not tuple) or not xs
                or (type(ts) is not list and type(ts) is not tuple) or len(ts) != len(xs)
                or not all_floats(xs) or not all_floats(ts)):
            return None
        return self.inputs(xs, ts)

    def _emit1(self, value, a, ca):
        r = _new(Dual)
        r.value = value
        r.trace = self
        r.id = -1
        r.tangent = _tmul(_as_float_coef(ca), a.tangent)
        return r

    def _emit2(self, value, a, ca, b, cb):
        r = _new(Dual)
        r.value = value
        r.trace = self
        r.id = -1
        r.tangent = _tmul(_as_float_coef(ca), a.tangent) + _tmul(_as_float_coef(cb), b.tangent)
        return r

    def emit(self, value, operands, coefs):
        """Forward twin of ``Tape.push_linear`` with coefficients: sum of c_i * tangent_i."""
        t = None
        operands = list(operands)
        coefs = list(coefs)
        if len(operands) != len(coefs) or not operands:
            raise ValueError("emit: one coefficient per operand, and at least one operand")
        for x, c in zip(operands, coefs):
            if type(x) is not Dual or x.trace is not self:
                raise TypeError("emit: every operand must be a dual of this forward level")
            term = _tmul(c, x.tangent)
            t = term if t is None else t + term
        return Dual(value, self, -1, t)


# --------------------------------------------------------------------------------------------
# The dual number


def _const(x):
    """``x`` as a constant operand: a float, a lower-level dual, a numpy scalar (its arithmetic
    is numpy's), or None if not a real number."""
    tx = type(x)
    if tx is float or tx is Dual or (tx is _recorder and _recorder is not None):
        return x
    if tx is int or tx is bool:
        return float(x)
    if isinstance(x, numbers.Real):
        return _rules.numpy_const(x)
    return None


def _numpy_kind(va, vb):
    """True when the plain operands ``va``, ``vb`` of an operator (floats, numpy scalars or
    outer duals) include a numpy scalar and no dual: ``_rules.numpy_op`` computes it."""
    return ((type(va) is not float or type(vb) is not float)
            and type(va) is not Dual and type(vb) is not Dual
            and (_recorder is None or (type(va) is not _recorder and type(vb) is not _recorder)))


def _numpy_binop(op, t, a, a_on, v, va, b, b_on, vb):
    ca, cb = _rules.numpy_partials(op, va, vb)
    return _finish(t, v, a, a_on, ca, b, b_on, cb)


def _split(a, b):
    """Find the trace of highest level among ``a`` and ``b`` and their values relative to it.

    Returns ``(trace, a_on, b_on, va, vb)`` or None when the other operand is not a number.
    """
    if type(a) is Dual:
        ta = a.trace
        if type(b) is Dual:
            tb = b.trace
            if ta is tb:
                if ta.closed:
                    raise escaped_error(ta.level)
                return ta, True, True, a.value, b.value
            if ta.level < tb.level:
                if tb.closed:
                    raise escaped_error(tb.level)
                return tb, False, True, a, b.value
            if ta.closed:
                raise escaped_error(ta.level)
            return ta, True, False, a.value, b
        vb = _const(b)
        if vb is None:
            return None
        if ta.closed:
            raise escaped_error(ta.level)
        return ta, True, False, a.value, vb
    va = _const(a)
    if va is None:
        return None
    tb = b.trace
    if tb.closed:
        raise escaped_error(tb.level)
    return tb, False, True, va, b.value


def _finish(t, value, a, a_on, ca, b, b_on, cb):
    if a_on:
        if b_on:
            return t._emit2(value, a, ca, b, cb)
        return t._emit1(value, a, ca)
    return t._emit1(value, b, cb)


def _cmp(x):
    """The other side of a comparison: stripped, and a numpy scalar as a float (so: bool)."""
    x = strip(x)
    if type(x) is not float and type(x) is not int and isinstance(x, numbers.Real):
        return float(x)
    return x


def strip(x):
    """The plain number under any number of dual levels."""
    while type(x) is Dual:
        x = x.value
    return x


def _add(a, b):
    s = _split(a, b)
    if s is None:
        return _nonreal(a, b, "add")
    t, a_on, b_on, va, vb = s
    if _numpy_kind(va, vb):
        return _numpy_binop("add", t, a, a_on, va + vb, va, b, b_on, vb)
    return _finish(t, va + vb, a, a_on, 1.0, b, b_on, 1.0)


def _sub(a, b):
    s = _split(a, b)
    if s is None:
        return _nonreal(a, b, "sub")
    t, a_on, b_on, va, vb = s
    if _numpy_kind(va, vb):
        return _numpy_binop("sub", t, a, a_on, va - vb, va, b, b_on, vb)
    return _finish(t, va - vb, a, a_on, 1.0, b, b_on, -1.0)


def _mul(a, b):
    s = _split(a, b)
    if s is None:
        return _nonreal(a, b, "mul")
    t, a_on, b_on, va, vb = s
    if _numpy_kind(va, vb):
        return _numpy_binop("mul", t, a, a_on, va * vb, va, b, b_on, vb)
    return _finish(t, va * vb, a, a_on, vb, b, b_on, va)


def _truediv(a, b):
    s = _split(a, b)
    if s is None:
        return _nonreal(a, b, "truediv")
    t, a_on, b_on, va, vb = s
    if _numpy_kind(va, vb):
        return _numpy_binop("div", t, a, a_on, va / vb, va, b, b_on, vb)
    if type(vb) is float and type(va) is Dual and type(strip(va)) is not float:
        vb = _rules.numpy_weak(vb, strip(va))  # nested, a numpy scalar below: numpy's division
    v = va / vb  # raises ZeroDivisionError like floats do
    ca = 1.0 / vb if a_on else 0.0
    cb = -v / vb if b_on else 0.0
    return _finish(t, v, a, a_on, ca, b, b_on, cb)


def _floordiv(a, b):
    s = _split(a, b)
    if s is None:
        return _nonreal(a, b, "floordiv")
    # Piecewise constant: derivative 0, so the result is a constant (the paper's Zero).
    # Divide the converted operands (a numpy scalar constant is a float by now, as in _mod).
    return strip(s[3]) // strip(s[4])


def _mod(a, b):
    s = _split(a, b)
    if s is None:
        return _nonreal(a, b, "mod")
    t, a_on, b_on, va, vb = s
    if _numpy_kind(va, vb):
        return _numpy_binop("mod", t, a, a_on, va % vb, va, b, b_on, vb)
    v = va % vb
    # a % b == a - b * floor(a / b): d/da = 1, d/db = -floor(a / b) (0 across the jumps).
    cb = -(strip(va) // strip(vb)) if b_on else 0.0
    return _finish(t, v, a, a_on, 1.0, b, b_on, cb)


_float_pow = _rules.float_pow
_as_float_coef = _rules.as_float_coef


def _pow(a, b):
    s = _split(a, b)
    if s is None:
        return _nonreal(a, b, "pow")
    t, a_on, b_on, va, vb = s
    if _numpy_kind(va, vb):
        return _numpy_binop("pow", t, a, a_on, va ** vb, va, b, b_on, vb)
    if type(va) is float and type(vb) is float:
        v = _float_pow(va, vb)
        ca = _pow_da(va, vb) if a_on else 0.0
        if b_on:
            cb = math.log(va) * v if va > 0.0 else (0.0 if va == 0.0 else _NAN)
        else:
            cb = 0.0
    else:
        v = va ** vb
        ca = _pow_da(va, vb) if a_on else 0.0
        if b_on:
            sa = strip(va)
            cb = log(va) * v if sa > 0.0 else (0.0 if sa == 0.0 else _NAN)
        else:
            cb = 0.0
    return _finish(t, v, a, a_on, ca, b, b_on, cb)


class Dual:
    """A dual number ``(value, delta)``: ``value`` with ``Var id`` on ``trace`` (a tape) or with
    ``tangent`` (a forward level). ``value`` is a float or a dual of a lower level.

    It keeps its trace, and the garbage collector frees any cycle through it. The compiled
    core's dual, an object the collector does not track, names its trace through a handle
    instead (see ``TraceHandle`` there): the same results and errors, but there a dual keeps
    no trace alive -- a left-over dual of a finished differentiation keeps no tape, and a
    trace made by hand that nothing else holds is finished (its duals are escaped)."""

    __slots__ = ("value", "trace", "id", "tangent")
    __hash__ = None  # equality compares values; duals are not dictionary keys

    def __new__(cls, *args, **kwargs):
        if not args and not kwargs:  # a dual without a trace, as the core refuses it too
            raise TypeError(DUAL_NEW)
        return _new(cls)

    def __init__(self, value, trace, id, tangent):
        # A dual made by hand must name a binding its tape holds (the core's sweep writes to
        # adj[id] unchecked) and is never rebound; the hot paths build duals without this.
        if getattr(self, "trace", None) is not None:
            raise TypeError("Dual: a dual number is immutable; make a new one")
        if not isinstance(trace, (Tape, ForwardLevel)):
            raise TypeError("Dual: trace must be a deltaad Tape or ForwardLevel")
        i = _index(id)
        if trace.is_forward:
            if i != -1:
                raise ValueError("Dual: a dual of a forward level has id -1, not %r" % (id,))
        elif not 0 <= i < trace._n:
            raise ValueError("Dual: id %r is not a binding of this tape (it holds %d); make "
                             "inputs with Tape.input" % (id, trace._n))
        _check_lower(trace, value)
        if value is None:
            raise TypeError("Dual: the value must be a number or a dual, not None")
        if trace.is_forward:
            _check_lower(trace, tangent)
            if tangent is None:
                raise TypeError("Dual: the tangent must be a number, an array or a dual, not None")
        id = i
        self.value = value
        self.trace = trace
        self.id = id
        self.tangent = tangent

    # -- arithmetic --
    # The first branch of each operator is ``_split`` inlined for its commonest case (the
    # other operand a dual of the same open trace, or a float), and ``_emit1``/``_emit2`` of
    # the trace (a Tape or a ForwardLevel) inlined after it: a Python call is ~45 ns of a
    # ~400 ns operation. Same formulas in the same order, so same bits: the value first (it
    # may raise), then the binding [p1, c1, p2, c2] or the tangent. A coefficient that is a
    # constant or an operand already known to be a float needs no ``_general`` check.
    def __add__(self, other):
        t = self.trace
        if type(other) is Dual:
            if other.trace is t and not t.closed:
                r = _new(Dual)
                r.value = self.value + other.value
                r.trace = t
                if type(t) is Tape:
                    r.id = i = t._n
                    t._n = i + 1
                    r.tangent = None
                    t._b += (self.id, 1.0, other.id, 1.0)
                else:
                    r.id = -1
                    r.tangent = _tmul(1.0, self.tangent) + _tmul(1.0, other.tangent)
                return r
        elif type(other) is float and not t.closed:
            r = _new(Dual)
            r.value = self.value + other
            r.trace = t
            if type(t) is Tape:
                r.id = i = t._n
                t._n = i + 1
                r.tangent = None
                t._b += (self.id, 1.0, -1, 0.0)
            else:
                r.id = -1
                r.tangent = _tmul(1.0, self.tangent)
            return r
        return _add(self, other)

    def __radd__(self, other):
        t = self.trace
        if type(other) is float and not t.closed:
            r = _new(Dual)
            r.value = other + self.value
            r.trace = t
            if type(t) is Tape:
                r.id = i = t._n
                t._n = i + 1
                r.tangent = None
                t._b += (self.id, 1.0, -1, 0.0)
            else:
                r.id = -1
                r.tangent = _tmul(1.0, self.tangent)
            return r
        return _add(other, self)

    def __sub__(self, other):
        t = self.trace
        if type(other) is Dual:
            if other.trace is t and not t.closed:
                r = _new(Dual)
                r.value = self.value - other.value
                r.trace = t
                if type(t) is Tape:
                    r.id = i = t._n
                    t._n = i + 1
                    r.tangent = None
                    t._b += (self.id, 1.0, other.id, -1.0)
                else:
                    r.id = -1
                    r.tangent = _tmul(1.0, self.tangent) + _tmul(-1.0, other.tangent)
                return r
        elif type(other) is float and not t.closed:
            r = _new(Dual)
            r.value = self.value - other
            r.trace = t
            if type(t) is Tape:
                r.id = i = t._n
                t._n = i + 1
                r.tangent = None
                t._b += (self.id, 1.0, -1, 0.0)
            else:
                r.id = -1
                r.tangent = _tmul(1.0, self.tangent)
            return r
        return _sub(self, other)

    def __rsub__(self, other):
        t = self.trace
        if type(other) is float and not t.closed:
            r = _new(Dual)
            r.value = other - self.value
            r.trace = t
            if type(t) is Tape:
                r.id = i = t._n
                t._n = i + 1
                r.tangent = None
                t._b += (self.id, -1.0, -1, 0.0)
            else:
                r.id = -1
                r.tangent = _tmul(-1.0, self.tangent)
            return r
        return _sub(other, self)

    def __mul__(self, other):
        t = self.trace
        if type(other) is Dual:
            if other.trace is t and not t.closed:
                va = self.value
                vb = other.value
                if (type(va) is not float or type(vb) is not float) and _numpy_kind(va, vb):
                    return _mul(self, other)
                r = _new(Dual)
                r.value = va * vb
                r.trace = t
                if type(t) is Tape:
                    r.id = i = t._n
                    t._n = i + 1
                    r.tangent = None
                    t._b += (self.id, vb, other.id, va)
                    if type(va) is not float or type(vb) is not float:
                        t._general = True
                else:
                    r.id = -1
                    r.tangent = _tmul(vb, self.tangent) + _tmul(va, other.tangent)
                return r
        elif type(other) is float and not t.closed:
            r = _new(Dual)
            r.value = self.value * other
            r.trace = t
            if type(t) is Tape:
                r.id = i = t._n
                t._n = i + 1
                r.tangent = None
                t._b += (self.id, other, -1, 0.0)
            else:
                r.id = -1
                r.tangent = _tmul(other, self.tangent)
            return r
        return _mul(self, other)

    def __rmul__(self, other):
        t = self.trace
        if type(other) is float and not t.closed:
            r = _new(Dual)
            r.value = other * self.value
            r.trace = t
            if type(t) is Tape:
                r.id = i = t._n
                t._n = i + 1
                r.tangent = None
                t._b += (self.id, other, -1, 0.0)
            else:
                r.id = -1
                r.tangent = _tmul(other, self.tangent)
            return r
        return _mul(other, self)

    def __truediv__(self, other):
        t = self.trace
        if type(other) is Dual:
            if other.trace is t and not t.closed:
                vb = other.value
                if type(vb) is not float or type(self.value) is not float:
                    return _truediv(self, other)  # nested or numpy scalars: the general path
                v = self.value / vb  # raises ZeroDivisionError like floats do
                ca = 1.0 / vb
                cb = -v / vb
                r = _new(Dual)
                r.value = v
                r.trace = t
                if type(t) is Tape:
                    r.id = i = t._n
                    t._n = i + 1
                    r.tangent = None
                    t._b += (self.id, ca, other.id, cb)
                    if type(ca) is not float or type(cb) is not float:
                        t._general = True
                else:
                    r.id = -1
                    r.tangent = _tmul(ca, self.tangent) + _tmul(cb, other.tangent)
                return r
        elif type(other) is float and not t.closed:
            if type(self.value) is not float:
                return _truediv(self, other)
            v = self.value / other  # raises ZeroDivisionError like floats do
            ca = 1.0 / other
            r = _new(Dual)
            r.value = v
            r.trace = t
            if type(t) is Tape:
                r.id = i = t._n
                t._n = i + 1
                r.tangent = None
                t._b += (self.id, ca, -1, 0.0)
            else:
                r.id = -1
                r.tangent = _tmul(ca, self.tangent)
            return r
        return _truediv(self, other)

    def __rtruediv__(self, other):
        t = self.trace
        if type(other) is float and not t.closed:
            vb = self.value
            if type(vb) is not float:
                return _truediv(other, self)
            v = other / vb  # raises ZeroDivisionError like floats do
            cb = -v / vb
            r = _new(Dual)
            r.value = v
            r.trace = t
            if type(t) is Tape:
                r.id = i = t._n
                t._n = i + 1
                r.tangent = None
                t._b += (self.id, cb, -1, 0.0)
                if type(cb) is not float:
                    t._general = True
            else:
                r.id = -1
                r.tangent = _tmul(cb, self.tangent)
            return r
        return _truediv(other, self)

    def __reduce__(self):
        raise TypeError("a deltaad Dual cannot be pickled: use deltaad.value(x)")

    def __copy__(self):
        return self  # immutable, like a float: copy.copy and copy.deepcopy give it back

    def __deepcopy__(self, memo):
        return self

    def __divmod__(self, other):
        return _floordiv(self, other), _mod(self, other)

    def __rdivmod__(self, other):
        return _floordiv(other, self), _mod(other, self)

    def __floordiv__(self, other):
        return _floordiv(self, other)

    def __rfloordiv__(self, other):
        return _floordiv(other, self)

    def __mod__(self, other):
        return _mod(self, other)

    def __rmod__(self, other):
        return _mod(other, self)

    def __pow__(self, other, modulo=None):
        if modulo is not None:
            return NotImplemented
        return _pow(self, other)

    def __rpow__(self, other):
        return _pow(other, self)

    def __neg__(self):
        t = self.trace
        if t.closed:
            raise escaped_error(t.level)
        r = _new(Dual)
        r.value = -self.value
        r.trace = t
        if type(t) is Tape:
            r.id = i = t._n
            t._n = i + 1
            r.tangent = None
            t._b += (self.id, -1.0, -1, 0.0)
        else:
            r.id = -1
            r.tangent = _tmul(-1.0, self.tangent)
        return r

    def __pos__(self):
        if self.trace.closed:
            raise escaped_error(self.trace.level)
        return self

    def __abs__(self):
        v = self.value
        if (type(v) is not float and type(strip(v)) is not float
                and (_recorder is None or type(strip(v)) is not _recorder)):  # a numpy scalar
            t = self.trace
            if t.closed:
                raise escaped_error(t.level)
            y, c = _rules.numpy_abs(v, strip(v))
            return t._emit1(y, self, c)
        return absolute(self)

    # -- comparisons: on values, returning bool (the branch the value takes) --
    # The first branch of each is the commonest case (a float value against a float or a
    # float-valued dual), answered without the calls of the general ``strip``/``_cmp``.
    def __eq__(self, other):
        v = self.value
        if type(v) is float:
            if type(other) is float:
                return v == other
            if type(other) is Dual and type(other.value) is float:
                return v == other.value
        return strip(self) == _cmp(other)

    def __ne__(self, other):
        v = self.value
        if type(v) is float:
            if type(other) is float:
                return v != other
            if type(other) is Dual and type(other.value) is float:
                return v != other.value
        return strip(self) != _cmp(other)

    def __lt__(self, other):
        v = self.value
        if type(v) is float:
            if type(other) is float:
                return v < other
            if type(other) is Dual and type(other.value) is float:
                return v < other.value
        return strip(self) < _cmp(other)

    def __le__(self, other):
        v = self.value
        if type(v) is float:
            if type(other) is float:
                return v <= other
            if type(other) is Dual and type(other.value) is float:
                return v <= other.value
        return strip(self) <= _cmp(other)

    def __gt__(self, other):
        v = self.value
        if type(v) is float:
            if type(other) is float:
                return v > other
            if type(other) is Dual and type(other.value) is float:
                return v > other.value
        return strip(self) > _cmp(other)

    def __ge__(self, other):
        v = self.value
        if type(v) is float:
            if type(other) is float:
                return v >= other
            if type(other) is Dual and type(other.value) is float:
                return v >= other.value
        return strip(self) >= _cmp(other)

    def __bool__(self):
        v = self.value
        if type(v) is float:
            return v != 0.0
        return bool(strip(self))

    # -- conversions that would drop the derivative --
    def __float__(self):
        return formatted("float", strip(self))

    def __complex__(self):
        raise no_float_error("complex")

    def as_integer_ratio(self):
        raise _exact_ratio_error()

    # -- piecewise-constant conversions (derivative 0: plain results) --
    def __int__(self):
        return int(strip(self))

    def __round__(self, ndigits=None):
        return round(strip(self), ndigits)

    def __floor__(self):
        return math.floor(strip(self))

    def is_integer(self):
        # a truth about the value, as comparisons are (float's method; numbers.Real lacks it)
        return strip(self).is_integer()

    def __ceil__(self):
        return math.ceil(strip(self))

    def __trunc__(self):
        return math.trunc(strip(self))

    def __repr__(self):
        kind = "tangent" if self.trace.is_forward else "Var %d" % self.id
        return "Dual(%r, %s, level=%d)" % (self.value, kind, self.trace.level)

    def __format__(self, spec):
        return format(strip(self), spec)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        hook = _hooks["array_ufunc"]
        if hook is None:
            return NotImplemented
        return hook(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        hook = _hooks["array_function"]
        if hook is None:
            return NotImplemented
        return hook(self, func, types, args, kwargs)

    # -- methods numpy object arrays of duals call: np.sin(a) calls a[i].sin(), ... (the
    #    elementary functions' methods are added from the table at the end of this module) --
    def conjugate(self):
        return self

    # -- a real number's complex parts, as floats have them (complex values: ComplexDual) --
    @property
    def real(self):
        check_open(self)
        return self

    @property
    def imag(self):
        check_open(self)
        return 0.0

    def fmod(self, other):
        return lift([self, other], math.fmod, _fmod_partials)

    def rint(self):
        return float(round(check_open(self)))  # round half to even, as numpy; derivative 0



def _fmod_partials(a, b):
    """fmod(a, b) = a - b * trunc(a / b): partials 1 and -trunc(a / b) (0 across the jumps)."""
    return 1.0, -float(math.trunc(strip(a) / strip(b)))


# --------------------------------------------------------------------------------------------
# Elementary functions: every entry of the table (deltaad.elementwise) lifted to scalars.


def lift1(name, f, derivative, ns=None, plain=None):
    """The scalar function of a unary table entry: ``f`` on floats; on a dual, one binding
    whose coefficient is ``derivative(ns, x, y)``, evaluated over the namespace ``ns`` (by
    default ``NS``, this module's functions), so it is itself differentiable when ``x`` is a
    dual of an outer differentiation."""
    if ns is None:
        ns = NS

    def fn(x):
        tx = type(x)
        if tx is float:
            return f(x)
        if tx is Dual:
            t = x.trace
            if t.closed:
                raise escaped_error(t.level)
            v = x.value
            if type(v) is float:
                y = f(v)
            elif type(v) is not Dual and (_recorder is None or type(v) is not _recorder):
                # a numpy scalar: the value is the plain program's (``plain``, numpy's function
                # on it, in its type), the derivative the float's
                if plain is not None:
                    yp = plain(v)
                    return t._emit1(yp, x, derivative(ns, float(v), float(yp)))
                v = float(v)
                y = f(v)
            else:
                y = fn(v)
            c = derivative(ns, v, y)
            # t._emit1(y, x, c) inlined, as in Dual.__mul__
            r = _new(Dual)
            r.value = y
            r.trace = t
            if type(t) is Tape:
                r.id = i = t._n
                t._n = i + 1
                r.tangent = None
                t._b += (x.id, c, -1, 0.0)
                if type(c) is not float:
                    t._general = True
            else:
                r.id = -1
                r.tangent = _tmul(c, x.tangent)
            return r
        if tx is int or tx is bool or isinstance(x, numbers.Real):
            return f(float(x))
        return _fallback(name, x)

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = "%s of a float or a dual (elementwise numpy for arrays)." % name
    return fn


def _fallback(name, *args):
    hook = _hooks["fallback"]
    if hook is None:
        raise TypeError("deltaad.%s: unsupported argument types %s" % (name, [type(a).__name__ for a in args]))
    return hook(name, *args)


def lift2(name, f, partials, ns=None, plain=None):
    """The scalar function of a binary table entry: ``f`` on floats, ``partials(NS, a, b, y)
    -> (da, db)`` on duals (``ns`` defaults to ``NS``)."""
    if ns is None:
        ns = NS

    def fn(a, b):
        ta = type(a)
        tb = type(b)
        if ta is not Dual and tb is not Dual:
            va = _const(a)
            vb = _const(b)
            if va is None or vb is None or (_recorder is not None and (
                    type(va) is _recorder or type(vb) is _recorder)):  # deltaad.compile records it
                return _fallback(name, a, b)
            return f(va, vb)
        s = _split(a, b)
        if s is None:
            return _fallback(name, a, b)
        t, a_on, b_on, va, vb = s
        if type(va) is float and type(vb) is float:
            y = f(va, vb)
        elif (type(va) is not Dual and type(vb) is not Dual
              and (_recorder is None or (type(va) is not _recorder and type(vb) is not _recorder))):
            # a numpy scalar: as in lift1
            if plain is not None:
                yp = plain(va, vb)
                da, db = partials(ns, float(va), float(vb), float(yp))
                return _finish(t, yp, a, a_on, da, b, b_on, db)
            va = float(va)
            vb = float(vb)
            y = f(va, vb)
        else:
            y = fn(va, vb)
        da, db = partials(ns, va, vb, y)
        return _finish(t, y, a, a_on, da, b, b_on, db)

    fn.__name__ = name
    fn.__qualname__ = name
    return fn


def power(a, b):
    """``a ** b`` on floats or duals (a ValueError where the real power does not exist)."""
    if type(a) is not Dual and type(b) is not Dual:
        va = _const(a)
        vb = _const(b)
        if va is None or vb is None:
            return _fallback("power", a, b)
        return _float_pow(va, vb)
    r = _pow(a, b)
    if r is NotImplemented:
        return _fallback("power", a, b)
    return r


def check_open(x):
    """Raise if ``x`` is a dual whose trace has closed (used by the piecewise-constant functions)."""
    while type(x) is Dual:
        if x.trace.closed:
            raise escaped_error(x.trace.level)
        x = x.value
    return x


def math_function(name, dual_name, plain, slow, signature="(x, /)"):
    """``math.<name>`` as deltaad.math gives it: deltaad.math's Python function ``slow`` (the
    core makes a builtin with a C fast path for float duals; see ``_core.math_function``)."""
    return slow


def lift(operands, f, partials):
    """Apply a primitive of n reals (paper Fig. 14) to ``operands`` (floats or duals).

    ``f(*values)`` computes the value and ``partials(*values)`` the tuple of partial derivatives;
    both receive values relative to the trace of highest level, so they must be written with
    deltaad-aware operations for higher derivatives to be right. Returns a plain result when no
    operand is a dual.
    """
    top = None
    operands = list(operands)
    for x in operands:
        if type(x) is Dual and (top is None or x.trace.level > top.level):
            top = x.trace
    if top is None:
        return f(*operands)
    if top.closed:
        raise escaped_error(top.level)
    on = [type(x) is Dual and x.trace is top for x in operands]
    vals = [x.value if o else x for x, o in zip(operands, on)]
    y = lift(vals, f, partials)
    cs = tuple(partials(*vals))
    if len(cs) != len(on):
        raise ValueError("lift: partials gave %d coefficient(s) for %d operand(s)" % (len(cs), len(on)))
    duals = [x for x, o in zip(operands, on) if o]
    coefs = tuple(c for c, o in zip(cs, on) if o)
    if top.is_forward:
        return top.emit(y, duals, coefs)
    if len(duals) == 1:
        return top._emit1(y, duals[0], coefs[0])
    if len(duals) == 2:
        return top._emit2(y, duals[0], coefs[0], duals[1], coefs[1])
    i = top.push_linear([x.id for x in duals], coefs)
    return Dual(y, top, i, None)


# The derivative namespace, the table's functions and the Dual methods numpy object arrays call
NS = _rules.namespace(strip, lift)
for _e in _table.TABLE:
    _fn = _table.lift(_e, lift1, lift2, _fallback, Dual)
    globals()[_e.name] = _fn
    setattr(NS, _e.name, _fn)
    for _u in _e.ufuncs:
        if not isinstance(_u, str):
            setattr(Dual, _u.__name__, _fn)
del _e, _fn, _u
for _k, _v in _rules.SCALAR_ATTRIBUTES.items():  # shape, ndim, size, dtype as numpy scalars
    setattr(Dual, _k, _v)
del _k, _v

_ipow, _pow_da = _rules.pow_rules(strip, lift)
