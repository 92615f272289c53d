"""Gradient recordings: ``compile(grad(f))`` and ``compile(value_and_grad(f))`` made cheap.

The general recording runs ``f`` on duals whose values are recorded numbers, so every primal
operation, every partial and every step of the backward sweep becomes a recorded object and
an instruction. A gradient recording runs ``f`` once on plain recorded numbers: one
instruction per primal operation, each flagged when it depends on a differentiated input
(then it is a binding of the tape the uncompiled call records). The replayer evaluates the
instructions and then sweeps them backwards with the core's partials and its float sweep's
order (ADOL-C's forward-plus-reverse over one operation sequence), so values and gradients
are the uncompiled call's bits.

Whether ``f`` on numbers computes what ``f`` on duals does is checked, not assumed: the
recording call also runs the uncompiled transformation (its result is what the call
returns), and the recording is kept only if its bindings -- parents and partials, bit for
bit -- are those of the uncompiled tape and its replay gives the uncompiled result. Whatever
treats a dual differently from a number (``stop_gradient``, custom rules, checkpoints,
nested transformations, deltaad functions that turn a value into a float) shows up there or
fails the recording; ``compile`` then records the general way.
"""

import struct

from . import _replay_pure
from . import trace as _trace
from . import transforms as _tr
from ._backend import name as _backend_name
from .pytrees import tree_flatten, tree_unflatten, unflatten_owned


def transform_of(fun):
    """``fun`` when it is a ``grad`` or ``value_and_grad`` of a real function (what a gradient
    recording can replay), else None."""
    if type(fun) not in (_tr._Grad, _tr._ValueAndGrad) or fun.holomorphic:
        return None
    return fun


def _tape_bindings(tape):
    """The tape's bindings in the form the replayer's ``matches`` reads, or None when some
    binding is not two scalar parents with float partials."""
    if _backend_name == "c":
        return tape.bindings_bytes()
    if tape._linear or tape._general or tape._truncated or tape._nodes:
        return None
    return list(tape._b)


def record(tf, args, floats, dynamic, restore, rp):
    """Record ``tf`` (a transform of :func:`transform_of`) called with positional ``args``
    whose float leaves (in order, the static arguments left out by ``dynamic``) are
    ``floats``, with the replayer module ``rp``. Returns ``(replay, reference
    result)``: a :class:`Replay` and what the uncompiled call returns (this call's result),
    or None when this function cannot be recorded this way (the caller records the general
    way), or ``RAISED`` when it raised here (this call records the general way)."""
    try:
        single, nums = _tr._argnums_tuple(tf.argnums, len(args), "grad")
    except Exception:
        return None
    rec = rp.Recording(True)
    ins = iter(floats)
    new_args = []
    slots_of = {}
    for i, a in enumerate(dynamic(args)):
        leaves, d = tree_flatten(a)
        on = i in nums
        slots = []
        out = []
        for x in leaves:
            if type(x) is float:
                r = rec.input(next(ins), on)
                out.append(r)
                if on:
                    slots.append(r.slot)
            elif on:
                return None  # an int or other leaf in a differentiated argument
            else:
                out.append(x)
        if on:
            if not slots:
                return None
            slots_of[i] = slots
        new_args.append(tree_unflatten(d, out))
    if any(n not in slots_of for n in nums):
        return None  # a static argument differentiated
    wanted = [s for n in nums for s in slots_of[n]]
    level = next(_trace._levels)
    try:
        out = tf.fun(*restore(tuple(new_args), args))
    except _replay_pure.Unrecordable:
        return None
    except Exception:
        return RAISED  # the general recording (or the uncompiled call) raises it
    finally:
        rec.closed = True
    if next(_trace._levels) != level + 1:
        return None  # a transformation inside the function (or another thread's): general
    aux = None
    if tf.has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            return None
        out, aux = out
    Recorder = rp.Recorder
    outs = []
    if type(out) is Recorder:
        if out._rec is not rec:
            return None
        seed = out.slot if rec.diff[out.slot] else -1
        outs.append(out.slot)
        value = None
    elif type(out) is float:
        seed = -1
        value = out
    else:
        return None
    aux_spec = None
    if tf.has_aux:
        al, ad = tree_flatten(aux)
        spec = []
        for x in al:
            tx = type(x)
            if tx is Recorder:
                if x._rec is not rec:
                    return None
                spec.append(len(outs))
                outs.append(x.slot)
            elif tx is float or tx is int or tx is bool or tx is str or x is None:
                spec.append(-1)
            else:
                return None
        aux_spec = (ad, spec, al)
    code = rec.code if type(rec) is _replay_pure.Recording else rec  # C: its buffer
    prog = rp.Program(code, rec.funcs, rec.ninputs, outs, grad=(rec.diff, seed, wanted))
    in_def = tree_flatten(tuple([args[n] for n in nums]))[1]
    replay = Replay(prog, tf, single, value, aux_spec, len(outs), in_def)

    # the uncompiled call: what this call returns, and the tape the recording must match
    ref_out, pb, ref_aux = _tr._vjp(tf.fun, args, {}, nums, tf.has_aux, "grad")
    if type(ref_out) is not float:
        return None
    ref_grads = pb(1.0)
    ref = _result(tf, ref_out, ref_aux, ref_grads[0] if single else ref_grads)
    bindings = _tape_bindings(pb.tape)
    res = None if bindings is None else prog.checked_run(floats, bindings, wanted)
    if res is None or not _same_bits([ref_out] + tree_flatten(ref_grads)[0],
                                     (res[:1] if value is None else [value]) + res[len(outs):]):
        return None
    if tf.has_aux and not _same_aux(replay.build(res), ref, tf):
        return None
    return replay, ref


RAISED = object()  # what ``record`` returns when the function raised on recorded numbers


class Replay:
    """A gradient recording's program and how its outputs (value, aux leaves, then the
    gradient's leaves) make the transformation's result."""

    __slots__ = ("prog", "vg", "has_aux", "single", "value", "aux", "k", "in_def")

    def __init__(self, prog, tf, single, value, aux_spec, k, in_def):
        self.prog = prog
        self.vg = type(tf) is _tr._ValueAndGrad
        self.has_aux = tf.has_aux
        self.single = single
        self.value = value  # None: output 0
        self.aux = aux_spec
        self.k = k
        self.in_def = in_def

    def build(self, res):
        k = self.k
        g = tuple(unflatten_owned(self.in_def, res[k:]))
        if self.single:
            g = g[0]
        v = res[0] if self.value is None else self.value
        if not self.has_aux:
            return (v, g) if self.vg else g
        ad, spec, consts = self.aux
        aux = tree_unflatten(ad, [c if j < 0 else res[j] for j, c in zip(spec, consts)])
        return ((v, aux), g) if self.vg else (g, aux)


def _same_bits(want, got):
    """Two lists of floats, the same bit for bit."""
    if len(got) != len(want) or not all(type(x) is float for x in want):
        return False
    fmt = "<%dd" % len(got)
    return struct.pack(fmt, *got) == struct.pack(fmt, *want)


def _same_aux(got, ref, tf):
    a = got[0][1] if type(tf) is _tr._ValueAndGrad else got[1]
    b = ref[0][1] if type(tf) is _tr._ValueAndGrad else ref[1]
    la, da = tree_flatten(a)
    lb, db = tree_flatten(b)
    if da != db or len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if type(x) is not type(y):
            return False
        if type(x) is float:
            if struct.pack("<d", x) != struct.pack("<d", y):
                return False
        elif x != y:
            return False
    return True


def _result(tf, value, aux, g):
    """What ``value_and_grad``/``grad`` return (see ``transforms._value_and_grad``)."""
    if type(tf) is _tr._ValueAndGrad:
        return ((value, aux), g) if tf.has_aux else (value, g)
    return (g, aux) if tf.has_aux else g


