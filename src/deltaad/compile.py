"""``deltaad.compile``: record a function's float work once, replay it on new inputs.

The first call with a new input *structure* runs the function on recording numbers
(:class:`deltaad._replay_pure.Recorder`): every float operation -- the function's own and the
derivative work of the transformations inside it, backward sweeps included -- becomes one
instruction of a straight-line program, and every place where a value steered Python's control
flow becomes a guard (CppAD's operation sequence with its comparison checks; ADOL-C's
retaping). Later calls replay the program over doubles (in C with the compiled core) without
running the function's Python; a call whose guards come out differently records afresh, and up
to ``max_recordings`` recordings are kept per structure, least recently used dropped.

The recordings of one input structure form a tree keyed by guard outcomes (:class:`_Tree`):
a replay that fails says at which step (the recorded guard) and with what outcome, and the
call follows that outcome to the recording made for it, so the lookup costs the depth of the
tree, not the number of recordings. A structure with array inputs also times its first
replays against the uncompiled call and keeps the faster
(:data:`deltaad.compile_arrays.CHOOSE`).
"""

import collections
import functools
import os as _os
import threading
import time
import warnings

from deltaad._plainnumpy import np

from . import _gradrecord, _replay_pure
from . import compile_arrays as _arrays
from . import stdmath as _stdmath
from ._backend import B
from ._backend import name as _backend_name
from .pytrees import tree_flatten, tree_unflatten
from .trace import is_dual, register_recorder_type

all_floats = B.all_floats

# The recording number, its recording and the replayer: in C with the compiled core (built
# with it, setup.py), their pure twins with the pure backend (same instructions, same bits).
_replayer = _replay_pure
if _backend_name == "c":
    try:
        from . import _replay as _replayer
    except ImportError:
        if _os.environ.get("DELTAAD_BACKEND", "").strip().lower() in ("c", "core"):
            raise
Program = _replayer.Program
Recorder = _replayer.Recorder
Recording = _replayer.Recording

B.set_recorder_type(Recorder)
register_recorder_type(Recorder, _replayer.dispatch)
if hasattr(B, "set_recorder_dispatch"):  # the core: deltaad.sin(x) reaches it directly
    B.set_recorder_dispatch(Recorder, _replayer.dispatch)

_FLOAT = object()  # the key's mark for a float leaf (its value is the recording's input)
_NONE = object()  # _record_grad: this call records the general way


class CompileWarning(UserWarning):
    """A function given to ``deltaad.compile`` does something that cannot be recorded; it runs
    uncompiled for inputs of that structure."""


class ReplayMismatch(AssertionError):
    """``compile(..., check=True)``: a replay differs from the uncompiled call."""


def compile(fun, *, static_argnums=(), max_recordings=8, check=False):
    """Return ``fun`` compiled: its float operations recorded once, then replayed.

    ``fun`` takes and returns pytrees of floats (and static leaves: ints, bools, strings,
    None); transformations inside it (``grad``, ``value_and_grad``, ``jacrev``, ``jacfwd``,
    ``hessian``, ``jvp``, ``vjp``) are recorded with it, derivatives included. The first call
    with a new input structure (pytree structure, static leaves and arguments, leaf types)
    records; later calls replay in C. A branch, comparison, ``int()``, ``floor`` or other
    value that leaves the recorded floats is a guard: a call that would take another branch
    is recorded afresh, so replay never returns what ``fun`` would not have computed.

    Like ``jax.jit``, Python side effects of ``fun`` (printing, appending to a global, reading
    a global that changes) happen when a call records, not when it replays; ``check=True``
    also runs ``fun`` uncompiled on every call and raises ``ReplayMismatch`` unless the
    results agree bit for bit. Arguments at ``static_argnums`` are part of the key (they must
    be hashable). Float ndarray inputs are recorded as numpy steps (their shapes, dtypes and
    layouts part of the key; see :mod:`deltaad.compile_arrays`); for such a structure the
    first replays are timed against uncompiled calls and the faster is kept (those uncompiled
    calls run ``fun``'s Python, side effects included; ``compile_arrays.CHOOSE``). Inputs that are duals
    (``grad(compile(f))``) run ``fun`` uncompiled, as does, with one ``CompileWarning``, a
    function that does something recording cannot capture, such as numpy calls on its float
    inputs or in-place writes to arrays.
    """
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    static_argnums = tuple(sorted(set(int(i) for i in static_argnums)))
    if not (isinstance(max_recordings, int) and max_recordings >= 1):
        raise ValueError("compile: max_recordings must be an int >= 1, got %r" % (max_recordings,))
    return Compiled(fun, static_argnums, max_recordings, bool(check))


class Compiled:
    """A compiled function (see :func:`compile`): call it like the function it wraps."""

    def __init__(self, fun, static_argnums, max_recordings, check):
        self.fun = fun
        self.static_argnums = static_argnums
        self.max_recordings = max_recordings
        self.check = check
        self._cache = {}        # key -> list of [treedef, _Tree of its recordings]
        self._uncompiled = {}   # key -> the reason it runs uncompiled
        self._lock = threading.Lock()
        self.recordings_made = 0
        # grad/value_and_grad of f: record f's primal operations only (see _gradrecord);
        # None once a call could not, and always for other functions
        self._grad = _gradrecord.transform_of(fun)
        functools.update_wrapper(self, fun)

    # -- the key --------------------------------------------------------------------------

    def _split(self, args, kwargs):
        """``(key, treedef, floats)`` or ``(None, reason, warn)`` when this call runs
        uncompiled."""
        statics = []
        if self.static_argnums:
            dyn = list(args)
            for i in self.static_argnums:
                if i < len(args):
                    statics.append((i, args[i]))
                    dyn[i] = None
            tree = (tuple(dyn), kwargs)
        else:
            tree = (args, kwargs)
        leaves, treedef = tree_flatten(tree)
        sig = []
        floats = []
        for x in leaves:
            tx = type(x)
            if tx is float:
                sig.append(_FLOAT)
                floats.append(x)
            elif tx is int or tx is bool or tx is str or x is None:
                sig.append((tx, x))
            elif _arrays.is_input(x):  # recorded as an array: its shape, dtype, layout keyed
                sig.append(_arrays.key_of(x))
                floats.append(x)
            elif is_dual(x) or tx is Recorder:
                return None, "an input is a dual or a recorded number", False
            else:
                return None, "an input leaf of type %s" % tx.__name__, True
        key = (repr(treedef), tuple(sig), tuple(statics))
        try:
            hash(key)
        except TypeError:
            return None, "a static argument is not hashable", True
        return key, treedef, floats

    # -- calling --------------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        key = None
        if not kwargs and not self.static_argnums:
            if all_floats(args):  # the commonest call: floats only
                key = len(args)
                floats = list(args)
            else:
                key, floats = _flat_key(args)
        if key is not None:
            treedef = key
        else:
            key, treedef, floats = self._split(args, kwargs)
        if key is None:
            if floats:  # warn: a reason worth saying
                self._warn(treedef)
            return self.fun(*args, **kwargs)
        why = self._uncompiled.get(key)
        if why is not None:
            return self.fun(*args, **kwargs)
        entries = self._cache.get(key)
        if entries is not None:
            for entry in entries:
                if entry[0] == treedef:
                    tree = entry[1]
                    if tree.mode is True:  # (floats: always)
                        only = tree.only
                        if only is not None:  # one recording: no failure list, no walk
                            res = only.prog.run(floats)
                            if res is not None:
                                out = only.build(res)
                                if self.check:
                                    self._check(out, args, kwargs)
                                return out
                        node, res, attach = tree.find(floats)
                        if node is None:
                            return self._recording(key, treedef, floats, args, kwargs, attach)
                        out = node.build(res)
                        if self.check:
                            self._check(out, args, kwargs)
                        return out
                    return self._call_tree(tree, key, treedef, floats, args, kwargs)
        return self._recording(key, treedef, floats, args, kwargs, None)

    def _call_tree(self, tree, key, treedef, floats, args, kwargs):
        """A call of a structure with array inputs while its replay is timed against the
        uncompiled function, or after the uncompiled one was timed faster."""
        mode = tree.mode
        if mode is False:
            return self.fun(*args, **kwargs)
        if mode is None:
            t_rep, t_unc = tree.times
            if len(t_unc) < len(t_rep):
                t0 = time.perf_counter()
                out = self.fun(*args, **kwargs)
                t_unc.append(time.perf_counter() - t0)
                tree.decide()
                return out
            t0 = time.perf_counter()
        node, res, attach = tree.find(floats)
        if node is None:
            return self._recording(key, treedef, floats, args, kwargs, attach)
        out = node.build(res)
        if mode is None:
            tree.times[0].append(time.perf_counter() - t0)
            tree.decide()
        if self.check:
            self._check(out, args, kwargs)
        return out

    def _recording(self, key, treedef, floats, args, kwargs, attach):
        if self._grad is not None and all(type(v) is float for v in floats):
            # (array inputs record the general way: numpy steps, see compile_arrays)
            out = self._record_grad(key, treedef, floats, args, kwargs, attach)
            if out is not _NONE:
                return out
        rec = Recording()
        arec = None
        if any(type(v) is not float for v in floats):  # arrays: numpy steps beside the floats
            arec = _arrays.ArrayRecording(rec, Recorder)
        ins = iter([rec.input(v) if type(v) is float else arec.input(v, k)
                    for k, v in enumerate(floats)])
        leaves, tdef = tree_flatten((self._dynamic(args), kwargs))
        leaves = [next(ins) if type(x) is float or _arrays.is_input(x) else x for x in leaves]
        dargs, dkwargs = tree_unflatten(tdef, leaves)
        dargs = self._restore_static(dargs, args)
        try:
            with _stdmath.switched():  # ``math.sin`` records too
                out = self.fun(*dargs, **dkwargs)
            if rec.failed is None:
                prog, result = _finish(rec, out, arec)
        except BaseException as exc:
            # an error after something unrecordable (which the function may have caught) is
            # no verdict on the function: it runs uncompiled below
            if rec.failed is None:
                if arec is None or not isinstance(exc, Exception):
                    raise
                # with arrays: the function's own error, or a recorded array behaving
                # otherwise than the ndarray it stands for? The uncompiled call says which.
                rec.closed = True
                arec.close()
                out = self.fun(*args, **kwargs)  # raises the function's own error
                why = "recording raised %s: %s" % (type(exc).__name__, exc)
                with self._lock:
                    self._uncompiled[key] = why
                self._warn(why)
                return out
        finally:
            rec.closed = True
            if arec is not None:
                arec.close()
        if rec.failed is not None:
            with self._lock:
                self._uncompiled[key] = rec.failed
            self._warn(rec.failed)
            return self.fun(*args, **kwargs)
        self._keep(key, treedef, prog, attach)
        if self.check:
            self._check(result, args, kwargs)
        return result

    def _record_grad(self, key, treedef, floats, args, kwargs, attach):
        """A gradient recording (``deltaad._gradrecord``): its result, or ``_NONE`` when
        this call cannot be recorded that way (nor, then, later ones)."""
        if kwargs:  # (keywords reach the function as they are: the general recording)
            return _NONE
        got = _gradrecord.record(self._grad, args, floats, self._dynamic,
                                 self._restore_static, _replayer)
        if got is _gradrecord.RAISED:
            return _NONE
        if got is not None:
            replay, result = got
            self._keep(key, treedef, replay, attach)
            if self.check:
                self._check(result, args, kwargs)
            return result
        self._grad = None
        return _NONE

    def _keep(self, key, treedef, prog, attach=None):
        with self._lock:
            entries = self._cache.setdefault(key, [])
            for entry in entries:
                if entry[0] == treedef:
                    break
            else:
                entry = [treedef, _Tree(type(prog.prog) is _arrays.ArrayProgram)]
                entries.append(entry)
            entry[1].add(prog, attach, self.max_recordings)
            self.recordings_made += 1

    def _dynamic(self, args):
        if not self.static_argnums:
            return args
        dyn = list(args)
        for i in self.static_argnums:
            if i < len(args):
                dyn[i] = None
        return tuple(dyn)

    def _restore_static(self, dargs, args):
        if not self.static_argnums:
            return dargs
        dargs = list(dargs)
        for i in self.static_argnums:
            if i < len(args):
                dargs[i] = args[i]
        return tuple(dargs)

    def _warn(self, why):
        warnings.warn("deltaad.compile(%s): runs uncompiled for inputs of this structure: %s"
                      % (getattr(self.fun, "__name__", "function"), why), CompileWarning,
                      stacklevel=3)

    def _check(self, out, args, kwargs):
        ref = self.fun(*args, **kwargs)
        if not _same(out, ref):
            raise ReplayMismatch("deltaad.compile(check=True): the replay gave %r, the "
                                 "uncompiled call %r" % (out, ref))

    def recordings(self):
        """The recordings kept now (over every input structure; each with its program,
        ``.prog``), most recently used first within a structure."""
        return [r for es in list(self._cache.values()) for e in es
                for r in reversed(list(e[1].order))]

    @property
    def nrecordings(self):
        """How many recordings are kept now (over every input structure)."""
        return sum(len(e[1]) for es in self._cache.values() for e in es)


class _Tree:
    """The recordings of one input structure, as a tree keyed by guard outcomes.

    Two recordings of one function and structure run the same steps until the first guard
    (or checked result) whose outcome differs: a recording made because a replay of ``node``
    failed at step ``k`` with outcome ``o`` is ``node``'s child ``(k, o)``. A call replays
    the root; where it fails, it follows the outcome it met to that child, and so on -- an
    input that satisfies a recording's guards meets, in each ancestor, the step and outcome
    where that recording branched off, so it reaches it. At most ``max_recordings`` are
    kept; dropping the least recently used makes its children roots (a call then tries the
    roots in turn, most recently used first). Every result comes from a replay whose every
    guard held, whichever path found it.

    ``mode``: whether calls replay (True), run the uncompiled function (False: its replay
    was timed slower), or are still being timed (None; see ``decide``). A structure of
    floats always replays."""

    __slots__ = ("roots", "kids", "parent", "order", "mode", "times", "last", "only")

    def __init__(self, arrays=False):
        self.roots = []                         # recordings without a parent, most recent first
        self.kids = {}                          # recording -> {outcome: recording}
        self.parent = {}                        # recording -> (its parent, outcome)
        self.order = collections.OrderedDict()  # every recording, least recently used first
        self.mode = True
        if arrays:
            choose = _arrays.CHOOSE
            self.mode = True if choose == "replay" else False if choose == "uncompiled" else None
        self.times = ([], [])                   # seconds of timed replays, uncompiled calls
        self.last = None                        # the recording used last (see ``_touch``)
        self.only = None                        # the recording, while there is only one

    def __len__(self):
        return len(self.order)

    def find(self, floats):
        """``(recording, its results, None)`` of the recording whose guards ``floats``
        satisfy, or ``(None, None, where)``: where a new recording hangs (a recording and the
        outcome it failed with; None: a new root)."""
        attach = None
        fail = []
        for node in tuple(self.roots):
            while node is not None:
                res = node.prog.run(floats, fail)
                if res is not None:
                    if node is not self.last:
                        self._touch(node)
                    return node, res, None
                key = _outcome(fail)
                del fail[:]
                nxt = None
                if key is not None:
                    kids = self.kids.get(node)
                    if kids is not None:
                        nxt = kids.get(key)
                    if nxt is None and attach is None:
                        attach = (node, key)
                node = nxt
        return None, None, attach

    def _touch(self, node):
        """``node`` is now the most recently used (``last``: a call using it again skips
        this)."""
        self.last = node
        try:
            self.order.move_to_end(node)
            if node in self.roots and self.roots[0] is not node:
                self.roots.remove(node)
                self.roots.insert(0, node)
        except (KeyError, ValueError):  # dropped by another thread meanwhile
            pass

    def add(self, prog, attach, most):
        """Keep recording ``prog`` (at ``attach``, see ``find``); drop the least recently used
        beyond ``most``. (Under the compiled function's lock.)"""
        self.order[prog] = None
        self.last = prog
        if attach is not None and attach[0] in self.order:
            kids = self.kids.setdefault(attach[0], {})
            if attach[1] not in kids:
                kids[attach[1]] = prog
                self.parent[prog] = attach
                attach = True
        if attach is not True:
            self.roots.insert(0, prog)
        while len(self.order) > most:
            old = next(iter(self.order))
            del self.order[old]
            up = self.parent.pop(old, None)
            if up is not None:
                del self.kids[up[0]][up[1]]
            else:
                self.roots.remove(old)
            for kid in self.kids.pop(old, {}).values():
                del self.parent[kid]
                self.roots.append(kid)
        self.only = prog if len(self.order) == 1 else None

    def decide(self):
        """Replay or run uncompiled, once ``RACE_CALLS`` replays and uncompiled calls are
        timed: the faster by the least time of each (what a call costs when nothing else
        takes the machine: other load only adds time), replay on a tie."""
        t_rep, t_unc = self.times
        n = _arrays.RACE_CALLS
        if self.mode is None and len(t_rep) >= n and len(t_unc) >= n:
            self.mode = min(t_rep) <= min(t_unc)


def _outcome(fail):
    """The key of a failed replay's outcome ``[(step, what it gave)]`` (None: no key)."""
    if not fail:
        return None
    k, r = fail[0]
    if r is None:
        return (k, None)
    tr = type(r)
    if tr is float:
        return (k, tr, _replay_pure._BITS.pack(r))
    if isinstance(r, (np.ndarray, np.generic)):
        r = np.asarray(r)
        return (k, tr, r.shape, r.dtype.str, r.tobytes() if r.size <= 64 else None)
    try:
        hash(r)
    except TypeError:
        return None
    return (k, tr, r)


def _flat_key(args):
    """The key of the commonest calls without walking a pytree: every argument a float or a
    flat list or tuple of floats. ``(None, None)`` for anything else."""
    sig = []
    floats = []
    for a in args:
        ta = type(a)
        if ta is float:
            sig.append(ta)
            floats.append(a)
        elif (ta is list or ta is tuple) and all_floats(a):
            sig.append((ta, len(a)))
            floats += a
        else:
            return None, None
    return ("flat", tuple(sig)), floats


def _finish(rec, out, arec=None):
    """The Program of a finished recording whose function returned ``out``, and the result
    of this call (the recorded values)."""
    leaves, out_def = tree_flatten(out)
    if arec is not None:
        return _arrays.finish(rec, arec, leaves, out_def, _Replay)
    slots = []
    spec = []
    result = []
    for x in leaves:
        tx = type(x)
        if tx is Recorder:
            if x._rec is not rec:
                rec.fail("the result holds a number recorded by another call")
            spec.append(len(slots))
            slots.append(x.slot)
            result.append(x.v)
        elif tx is float or tx is int or tx is bool or tx is str or x is None:
            spec.append(-1)
            result.append(x)
        else:
            rec.fail("the result has a leaf of type %s" % tx.__name__)
    code = rec if type(rec) is not _replay_pure.Recording else rec.code  # C: its buffer
    prog = _Replay(Program(code, rec.funcs, rec.ninputs, slots), out_def, spec, leaves)
    return prog, tree_unflatten(out_def, result)


class _Replay:
    """A program and how its output slots fill the result's pytree."""

    __slots__ = ("prog", "out_def", "consts", "fill", "direct", "make")

    def __init__(self, prog, out_def, spec, leaves):
        self.prog = prog
        self.out_def = out_def
        self.consts = [x if j < 0 else None for x, j in zip(leaves, spec)]
        self.fill = [(pos, j) for pos, j in enumerate(spec) if j >= 0]
        self.direct = spec == list(range(len(spec)))  # every leaf a slot, in order
        self.make = _builder(out_def, 0)[0]

    def build(self, res):
        if self.direct:
            return self.make(res)
        leaves = list(self.consts)
        for pos, j in self.fill:
            leaves[pos] = res[j]
        return self.make(leaves)


def _builder(td, start):
    """``(make, end)``: ``make(leaves)`` rebuilds the subtree ``td`` whose leaves are
    ``leaves[start:end]`` -- the result's pytree without walking its definition per call."""
    kind = td.kind
    if kind == "leaf":
        return (lambda L: L[start]), start + 1
    end = start + td.nleaves
    if kind in ("list", "tuple"):
        kids = td.children
        if all(c.kind == "leaf" for c in kids):
            if kind == "list":
                return (lambda L: L[start:end]), end
            return (lambda L: tuple(L[start:end])), end
        makes = []
        pos = start
        for c in kids:
            m, pos = _builder(c, pos)
            makes.append(m)
        if kind == "list":
            return (lambda L: [m(L) for m in makes]), end
        return (lambda L: tuple([m(L) for m in makes])), end
    return (lambda L: tree_unflatten(td, L[start:end])), end


def _same(a, b):
    """Same pytree, same leaf types, floats the same bit for bit."""
    la, da = tree_flatten(a)
    lb, db = tree_flatten(b)
    if not da == db or len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if type(x) is not type(y):
            return False
        if type(x) is float:
            if _replay_pure._BITS.pack(x) != _replay_pure._BITS.pack(y):
                return False
        elif isinstance(x, (np.ndarray, np.generic)):
            if not _arrays.same_bits(x, y):
                return False
        elif x != y:
            return False
    return True
