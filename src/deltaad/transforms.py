"""The differential operators: vjp, grad, jvp, jacrev, jacfwd, hessian, make_delta.

Each one opens a trace (a tape for reverse mode, a forward level for forward mode) at a level
above every trace already open, dualises the real leaves of the inputs (the paper's
``initVars``/``zip`` of §11), runs the user's function, closes the trace (also on exceptions),
and reads the outputs back (``lookup``/``delta``). Written once against the backend interface.
"""

import collections
import collections.abc
import functools
import numbers
import operator
import types
import weakref

from deltaad._plainnumpy import np

from . import delta as _delta
from ._backend import B
from .numpy import complex_array as _complex
from .numpy.array import ArrayDual, array_input, asarray
from .pytrees import (LEAF, _TUPLE_OF_LEAF, _flat_def, all_floats, all_scalars, flat_args_def,
                      flatten_float_args, tree_flatten, tree_unflatten, unflatten_owned)
from .trace import dtype_of as _dtype_of
from .trace import is_dual, traced
from .trace import leaf_kind as _leaf_kind
from .trace import on_trace as _on_trace
from .trace import recorded_arrays as _recorded_arrays
from .trace import recorders as _recorders

Dual = B.Dual


# --------------------------------------------------------------------------------------------
# Leaves: which are differentiable, how they become duals and come back


def _scalar_value(x):
    """A scalar input's value: a float, a dual, a recorded number (compile), or a numpy float
    scalar kept as it is, so that the program computes with it as numpy does
    (``np.float64(1) / 0`` is inf, with a warning; float32 stays float32)."""
    if type(x) is float or type(x) is Dual or type(x) in _recorders or isinstance(x, np.floating):
        return x
    return float(x)


def _dualise(trace, leaves, tangents=None):
    """Replace each differentiable leaf by a dual on ``trace``; return (new leaves, kinds).
    (All-float leaves, the common case, take ``trace.inputs`` directly: see ``_vjp``.)"""
    out = []
    kinds = []
    for k, x in enumerate(leaves):
        kind = _leaf_kind(x)
        kinds.append(kind)
        if kind is None:
            out.append(x)
        elif kind == "scalar":
            if tangents is None:
                out.append(trace.input(_scalar_value(x)))
            else:
                out.append(trace.input(_scalar_value(x), _tangent_value(tangents[k])))
        elif kind == "complex":  # a real input of its (re, im) pairs
            out.append(_complex.complex_input(trace, x, None if tangents is None else tangents[k]))
        else:
            out.append(array_input(trace, x, None if tangents is None else tangents[k]))
    return out, kinds


def _tangent_value(t):
    """The tangent of a scalar (float) primal, checked: a real number (a 0-d real array or a
    numpy scalar becomes a float, so both backends return the same types) or a scalar dual."""
    if type(t) is float or type(t) is Dual or type(t) in _recorders:
        return t
    if isinstance(t, (complex, np.complexfloating)):
        raise TypeError(
            "jvp: got the complex tangent %r for a real primal; a real primal's tangents are "
            "real (the imaginary part would be dropped). Make the primal complex (x + 0j) to "
            "push a complex tangent" % (t,)
        )
    if isinstance(t, numbers.Real):
        return float(t)
    if isinstance(t, np.ndarray) or is_dual(t):
        kind = _dtype_of(t).kind
        if kind == "c":
            raise TypeError(
                "jvp: got a complex array tangent for a real primal; a real primal's tangents "
                "are real (the imaginary part would be dropped). Make the primal complex "
                "(x + 0j) to push a complex tangent"
            )
        if np.shape(t) != ():
            raise ValueError(
                "jvp: got a tangent of shape %s for a float primal; the tangent of a float must be "
                "a float (or a 0-d array)" % (np.shape(t),)
            )
        if kind in "fiub":
            return t[()] if is_dual(t) else float(t)
    raise TypeError(
        "jvp: the tangent of a float primal must be a real number; got a value of type %s"
        % type(t).__name__
    )


_FLOAT64 = np.dtype(np.float64)


def _holds_dual(items, trace, seen=None):
    """True if ``items`` holds -- in nested containers, object arrays, dict views, sets and the
    attributes of plain objects -- a dual of ``trace`` or of a finished trace: one whose
    derivative reading it as a constant leaf would lose."""
    if seen is None:
        seen = set()
    for e in items:
        if is_dual(e):
            t = e.trace
            if t is trace or t.closed:
                return True
            continue
        te = type(e)
        if te is float or te is int or te is bool or te is str or e is None:
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        inner = _contents(e)
        if inner is not None and _holds_dual(inner, trace, seen):
            return True
    return False


def _contents(x):
    """What a value that is not a pytree node may hold, read without changing it: a
    container's items, an object array's elements, a plain object's attributes, a closure's
    cells; None for numbers, strings, plain arrays, types and modules."""
    if isinstance(x, np.ndarray):
        return x.ravel().tolist() if x.dtype.kind == "O" else None
    if isinstance(x, dict):
        return list(x.values())
    if isinstance(x, (list, tuple, set, frozenset, collections.deque, type({}.values()),
                      type({}.keys()), type({}.items()))):
        return list(x)
    if isinstance(x, (numbers.Number, str, bytes, bytearray, type, types.ModuleType, np.generic)):
        return None
    if isinstance(x, types.FunctionType):
        return [c.cell_contents for c in (x.__closure__ or ()) if _cell_full(c)]
    items = []
    d = getattr(x, "__dict__", None)
    if isinstance(d, dict):
        items.extend(d.values())
    for cls in type(x).__mro__:
        for name in cls.__dict__.get("__slots__", ()):
            if isinstance(name, str) and name not in ("__dict__", "__weakref__"):
                try:
                    items.append(getattr(x, name))
                except AttributeError:
                    pass
    return items


def _cell_full(c):
    try:
        c.cell_contents
    except ValueError:
        return False
    return True


def _is_iterator(x):
    return isinstance(x, collections.abc.Iterator)


def _check_constant_output(x, trace, who):
    """Raise if the output leaf ``x`` (not a dual of ``trace``) may hide duals of ``trace``
    where deltaad does not look (their derivative would silently be zero): in a container that
    is not a pytree node (a subclass of list or dict, a set, a dict view), in a plain object's
    attributes, or in an iterator or generator, which cannot be looked into without consuming
    it."""
    tx = type(x)
    if tx is float or tx is int or tx is bool or tx is str or x is None or tx in _recorders:
        return
    if isinstance(x, np.ndarray) and x.dtype.kind != "O":
        return
    if _is_iterator(x):
        raise TypeError(
            "%s: the function's output holds a %s, an iterator: deltaad cannot look inside it "
            "without consuming it, and the deltaad duals it may yield would silently get a zero "
            "derivative. Return list(...) or tuple(...) of it instead." % (who, tx.__name__)
        )
    inner = _contents(x)
    if inner is None or not _holds_dual(inner, trace, {id(x)}):
        return
    if isinstance(x, np.ndarray):
        raise TypeError(
            "%s: the function's output holds a numpy object array of deltaad duals that could "
            "not be read as an array (it holds duals of a finished differentiation, or items "
            "that are not numbers), so its derivative would be silently lost. Build the array "
            "with deltaad.stack([...]) or deltaad.asarray(...), or return a tuple or list of the "
            "duals instead." % who
        )
    raise TypeError(
        "%s: the function's output holds deltaad duals inside a %s, which is not a pytree "
        "container (those are tuple, list, dict, OrderedDict, defaultdict, namedtuple, dataclass "
        "and None -- the types themselves, not subclasses), so it is a constant leaf and its "
        "derivative would be silently lost. Return a tuple, list or dict instead (e.g. list(x) "
        "or dict(x)), or make the class a dataclass." % (who, tx.__name__)
    )


def _pack_outputs(out, trace):
    """``out`` with each numpy object array that holds duals (``np.array([x, y])``,
    ``np.r_[...]``, what numpy's object arithmetic returns) replaced by the array dual of
    those duals, recorded on ``trace`` while it is still open."""
    tx = type(out)
    if tx is Dual or tx is float or tx is list and all_scalars(out):  # no array to pack
        return out
    leaves, d = tree_flatten(out)
    changed = False
    for k, x in enumerate(leaves):
        if isinstance(x, np.ndarray) and x.dtype.kind == "O":  # (a fillable array too)
            x = x.view(np.ndarray)
            flat = x.ravel().tolist()
            if all(is_dual(e) or isinstance(e, numbers.Real) for e in flat):
                top = _top(flat)
                if top is None:
                    # no dual left (a max that picked constants): the float array numpy
                    # gives for those numbers, so its derivative is a zero array, not None
                    plain = np.array(flat).reshape(x.shape)
                    if plain.dtype.kind == "f":
                        leaves[k] = plain
                        changed = True
                elif not top.closed:
                    leaves[k] = asarray(x)
                    changed = True
    return tree_unflatten(d, leaves) if changed else out


def _top(items):
    top = None
    for e in items:
        if is_dual(e) and (top is None or e.trace.level > top.level):
            top = e.trace
    return top


def _primal(x, trace):
    d = _on_trace(x, trace)
    return x if d is None else d.value


def _restore_type(g, like):
    """Give a gradient the type of its input leaf (np.float32 in, np.float32 out); a complex
    leaf's gradient is JAX's ``x̄ - iȳ`` from the adjoint of its pairs."""
    if type(like) is float:
        return g
    if type(like) is np.ndarray and type(g) is np.ndarray and like.dtype.kind == "f":
        # a float array's gradient, the commonest after a float's: the steps below, in short
        if g.dtype != like.dtype:
            return g.astype(like.dtype)
        return g if g.flags.writeable else g.copy()  # (a broadcast view: an array of its own)
    if _complex.is_complex_leaf(like):
        return _complex.gradient(g, like)
    if type(g) is Dual or is_dual(g):
        return g
    if isinstance(like, np.floating):
        return type(like)(g)
    if isinstance(like, np.ndarray):
        if not isinstance(g, np.ndarray):  # a numpy scalar for a 0-d input
            return np.array(g, dtype=like.dtype).reshape(like.shape)
        if g.dtype != like.dtype:
            return g.astype(like.dtype)
        if not g.flags.writeable:  # a broadcast view: give the caller an array of its own
            return g.copy()
    return g


def _leaf_grad(g, x):
    """The gradient of input leaf ``x`` from its adjoint ``g`` (None: no path to the output)."""
    return _zero_like(x) if g is None else _restore_type(g, x)


def _zero_like(x):
    if _complex.is_complex_leaf(x):
        return _complex.gradient(None, x)
    if isinstance(x, np.ndarray):
        return np.zeros_like(x)
    if is_dual(x) and type(x) is not Dual:
        return np.zeros_like(x.value)
    return 0.0


def _argnum(n, argnums, who):
    """``n`` as a Python int (any integer type, via operator.index), or None; bools are refused
    (``argnums=True`` would silently mean argument 1)."""
    if isinstance(n, (bool, np.bool_)):
        raise TypeError(
            "%s: argnums=%r contains a bool; argnums takes argument positions, integers such as "
            "0 or (0, 1)" % (who, argnums)
        )
    try:
        return operator.index(n)
    except TypeError:
        return None


def _argnums_tuple(argnums, nargs, who):
    """``(single, positions)``: ``argnums`` (an integer or a sequence of them) checked against
    ``nargs`` arguments, negative positions normalised, repeats refused."""
    if type(argnums) is int and 0 <= argnums < nargs:  # the common case, checked at once
        return True, (argnums,)
    if type(argnums) is tuple:  # the next commonest: distinct plain ints in range
        for n in argnums:
            if type(n) is not int or not 0 <= n < nargs:
                break
        else:
            if argnums and len(set(argnums)) == len(argnums):
                return False, argnums
    n = _argnum(argnums, argnums, who)
    single = n is not None
    if single:
        nums = (n,)
    else:
        try:
            nums = tuple(argnums)
        except TypeError:
            nums = (argnums,)  # neither an integer nor a sequence: reported below
    if not nums:
        raise ValueError("%s: argnums must name at least one argument" % who)
    out = []
    for n in nums:
        i = _argnum(n, argnums, who)
        if i is None:
            raise TypeError(
                "%s: argnums=%r; argnums must be an int or a tuple of ints (argument positions, "
                "such as 0 or (0, 1))" % (who, argnums)
            )
        if not -nargs <= i < nargs:
            raise ValueError(
                "%s: argnums=%r, but the function was called with %d positional argument(s); "
                "argnums takes integer positions below that (or a tuple of them)"
                % (who, argnums, nargs)
            )
        i %= nargs
        if i in out:
            raise ValueError(
                "%s: argnums=%r names argument %d more than once; list each argument once (a "
                "repeated argument cannot be differentiated separately per copy)"
                % (who, argnums, i)
            )
        out.append(i)
    return single, tuple(out)


def _check_has_float(kinds, who, argnums=None):
    """Raise unless some leaf is differentiable (the message names ``argnums`` if given)."""
    if not any(k is not None for k in kinds):
        what = "primals" if argnums is None else "argument(s) %s" % (argnums,)
        raise TypeError(
            "%s: %s has no float leaf to differentiate with respect to. Differentiable inputs are "
            "floats, numpy float scalars and float arrays (in tuples, lists, dicts, ...); ints, "
            "bools and strings are constants. Pass e.g. 3.0 instead of 3." % (who, what)
        )


# --------------------------------------------------------------------------------------------
# Reverse mode


class _Pullback:
    """``vjp_fn``: maps an output cotangent to input cotangents; callable any number of times.

    It keeps the (closed) tape alive; the tape goes when this object does.
    """

    __slots__ = ("tape", "out_def", "out_ids", "out_leaves", "in_def", "in_ids", "_in_leaves",
                 "wanted", "all_float", "out_float", "__weakref__")

    @property
    def in_leaves(self):
        """The input leaves, as far as anything reads them (their kinds, types, shapes and
        dtypes): for one flat list of floats, read once into the input duals and not kept,
        as many floats."""
        leaves = self._in_leaves
        return [0.0] * len(self.wanted) if leaves is None else leaves

    def __call__(self, cotangent):
        tc = type(cotangent)
        if self.out_leaves is None and (tc is float or tc is Dual):  # one real output, a float
            return tuple(unflatten_owned(self.in_def, self.grads([(self.out_ids[0], cotangent)])))
        n = len(self.out_ids)
        if (tc is list and self.out_float and n and len(cotangent) == n and self.out_def.flat
                and self.out_def.kind == "list" and all_floats(cotangent)):
            # a flat list of floats for a flat list of float outputs, the commonest: what the
            # steps below check holds, and Seeds copies the list (no flattening copy first)
            return tuple(unflatten_owned(self.in_def, self.grads(B.Seeds(self.out_ids, cotangent))))
        ct_leaves, ct_def = tree_flatten(cotangent)
        if ct_def is not self.out_def and ct_def != self.out_def:
            ct_leaves = _align_none(ct_def, self.out_def, iter(ct_leaves))
        if ct_leaves is None:
            raise TypeError(
                "vjp: the cotangent must have the structure of the function's output, %r; got %r"
                % (self.out_def, ct_def)
            )
        outs = self.out_leaves
        n = len(self.out_ids)
        if self.out_float and n and len(ct_leaves) == n and all_floats(ct_leaves):
            # float outputs, float cotangents: what _cotangent checks holds for every pair
            # (Seeds: no tuple per output)
            return tuple(unflatten_owned(self.in_def, self.grads(B.Seeds(self.out_ids, ct_leaves))))
        seeds = []
        for k, (i, ct) in enumerate(zip(self.out_ids, ct_leaves)):
            if ct is None:
                continue
            ct = _cotangent(ct, 0.0 if outs is None else outs[k], k, n)
            if i is None or ct is None:
                continue
            seeds.append((i, ct))
        return tuple(unflatten_owned(self.in_def, self.grads(seeds)))

    def grads(self, seeds):
        """The input cotangents for ``seeds`` ((output id, checked cotangent) pairs), one per
        input leaf in order: ``None`` in the slots of static leaves."""
        wanted = self.wanted
        if self.all_float and seeds:  # float inputs: the float sweep's adjoints are floats
            adj = self.tape.eval(seeds, wanted, True)  # (no pass over them to check)
            if adj is not None:
                return adj
        adj = self.tape.eval(seeds, wanted) if seeds else [None] * len(wanted)
        if self.all_float and all_floats(adj):  # float inputs, float adjoints
            return adj
        it = iter(adj)
        grads = []
        for i, x in zip(self.in_ids, self.in_leaves):
            if i is None:
                grads.append(None)
            else:
                g = next(it)
                if type(x) is float and type(g) is float:
                    grads.append(g)
                else:
                    grads.append(_leaf_grad(g, x))
        return grads


def _cotangent(ct, out, k, n):
    """The cotangent ``ct`` for output leaf ``out`` (number ``k`` of ``n``), checked against it:
    real, and of the output's shape (a float output takes a real number or a 0-d array, which
    becomes a float). None for a static output leaf (an int, a string: nothing to seed)."""
    kind = _leaf_kind(out)
    if kind is None:
        return None
    where = "" if n == 1 else " for output leaf %d" % k
    if kind == "complex":  # JAX's convention: w seeds the pairs of conj(w)
        return _complex.cotangent(ct, out, where)
    tc = type(ct)
    if tc is float or tc is Dual or tc in _recorders:
        shape = ()
    elif isinstance(ct, (complex, np.complexfloating)):
        raise TypeError(
            "vjp: got the complex cotangent %r%s for a real output; a real output's cotangents "
            "are real (the imaginary part would be dropped)" % (ct, where)
        )
    elif isinstance(ct, numbers.Real):
        ct = float(ct)
        shape = ()
    elif isinstance(ct, np.ndarray) or is_dual(ct):
        dk = _dtype_of(ct).kind
        if dk == "c":
            raise TypeError(
                "vjp: got a complex cotangent array%s for a real output; a real output's "
                "cotangents are real (the imaginary part would be dropped)" % where
            )
        if dk not in "fiub":
            raise TypeError("vjp: the cotangent%s is an array of dtype %s; it must hold real numbers"
                            % (where, _dtype_of(ct)))
        shape = ct.shape
    else:
        raise TypeError("vjp: the cotangent%s must be a real number or array; got a value of type %s"
                        % (where, tc.__name__))
    shape_o = () if kind == "scalar" else tuple(np.shape(out))
    if shape != shape_o:
        raise ValueError(
            "vjp: the cotangent%s has shape %s, but the output has shape %s; each cotangent must "
            "have its output's shape (a float output takes a float or a 0-d array)"
            % (where, shape, shape_o)
        )
    tc = type(ct)
    if kind == "scalar":
        if tc is np.ndarray:
            return float(ct)
        if tc in _recorded_arrays:  # deltaad.compile's: a recorded float, as float() gives
            return _recorded_arrays[tc](ct)
        if tc is not float and tc is not Dual and tc not in _recorders:  # a 0-d array dual
            return ct[()]
    elif tc is float:
        return np.array(ct, dtype=_dtype_of(out))
    elif tc is Dual:
        return asarray(ct)
    return ct


def _align_none(ct_def, out_def, ct_iter, acc=None):
    """The cotangent's leaves in the output's leaf slots, where ``None`` may stand for the
    cotangent of any output leaf (a zero: what a static leaf's slot holds in gradients and
    tangents); None if the structures differ otherwise."""
    top = acc is None
    if top:
        acc = []
    if out_def.kind == "leaf":
        if ct_def.kind == "none":
            acc.append(None)
        elif ct_def.kind == "leaf":
            acc.append(next(ct_iter))
        else:
            return None
    elif (ct_def.kind != out_def.kind or ct_def.meta != out_def.meta
          or len(ct_def.children) != len(out_def.children)):
        return None
    else:
        for c, o in zip(ct_def.children, out_def.children):
            if _align_none(c, o, ct_iter, acc) is None:
                return None
    return acc


def _packed(trace, out):
    """An output that is not a dual, as ``_run_reverse`` packs it (the finish of
    ``Trace.call_on_inputs``, the run of one list or tuple of floats, without an aux)."""
    return _pack_outputs(out, trace)


def _packed_with_aux(who):
    """``call_on_inputs``' finish with an aux: ``(packed output, aux)``."""
    def finish(trace, out):
        out, aux = _split_aux(out, True, who)
        return (out if type(out) is Dual else _pack_outputs(out, trace)), aux
    return finish


def _run_reverse(tape, fun, args, kwargs, argnums, has_aux, who, leaves, in_def, floats):
    """The part of ``_vjp`` that runs with ``tape`` open: the inputs' ids (a range for float
    leaves, the common case: consecutive ids), the ids whose adjoints are wanted, the packed
    output and the aux (for one list or tuple of floats, see ``Trace.call_on_inputs``)."""
    if floats:
        duals = tape.inputs(leaves)
        first = duals[0].id
        in_ids = wanted = range(first, first + len(duals))
    else:
        duals, kinds = _dualise(tape, leaves)
        _check_has_float(kinds, who, argnums)
        in_ids = [d.id if k is not None else None for d, k in zip(duals, kinds)]
        wanted = [i for i in in_ids if i is not None]
    new_args = list(args)
    # the list of duals itself becomes the argument (the function may change it: ids were
    # read above)
    for n, a in zip(argnums, unflatten_owned(in_def, duals)):
        new_args[n] = a
    duals = a = None
    out, aux = _split_aux(fun(*new_args, **kwargs), has_aux, who)
    if type(out) is not Dual:
        out = _pack_outputs(out, tape)
    return in_ids, wanted, out, aux


def _vjp(fun, args, kwargs, argnums, has_aux, who, flat=True):
    """Run ``fun`` on a fresh tape, differentiating the arguments in ``argnums`` (``flat``:
    trying one list of floats as such first)."""
    sel = tuple([args[n] for n in argnums])
    x = sel[0] if len(sel) == 1 else None
    ran = None
    if flat and (type(x) is list or type(x) is tuple) and x and type(x[0]) is float:
        # one list of floats, the commonest: its items are read once, into the input duals
        # (no checked copy first); the leaves are the argument itself, whose floats the
        # pullback never reads (every gradient is a float) and jacrev reads at once. (A list
        # whose first item is not a float, e.g. a tuple of arrays, is not tried on a tape of
        # its own first.)
        leaves, in_def = x, flat_args_def(x)
        floats = "flat"
        tape, ran = traced(B.Tape, B.Tape.call_on_inputs, fun, args, kwargs, argnums[0], x,
                           None, has_aux, _packed_with_aux(who) if has_aux else _packed)
        if ran is not None:
            ran = tape, (ran[0],) + ran
        # (else not all floats: the general path, on a fresh tape)
    if ran is None:
        leaves, in_def = tree_flatten(sel)
        floats = all_floats(leaves) and len(leaves) > 0
        ran = traced(B.Tape, _run_reverse, fun, args, kwargs, argnums, has_aux, who, leaves,
                     in_def, floats)
    tape, (in_ids, wanted, out, aux) = ran
    return _pullback(tape, in_ids, wanted, out, aux, in_def, leaves, floats, has_aux, who)


def _pullback(tape, in_ids, wanted, out, aux, in_def, leaves, floats, has_aux, who):
    """``_vjp``'s result from a run on ``tape``: the output's primal, the pullback and the
    aux (see ``_run_reverse`` for the other arguments)."""
    pb = _Pullback()
    pb.in_ids = in_ids
    pb.wanted = wanted
    pb.tape = tape
    if tape.nnodes:  # checkpoint nodes hold the tape: a cycle; free it without the collector
        weakref.finalize(pb, tape.release_nodes)
    pb.in_def = in_def
    pb._in_leaves = None if floats == "flat" else leaves
    pb.all_float = bool(floats)
    pb.out_float = False
    if has_aux:
        aux = _strip_tree(aux, tape)
    if type(out) is Dual and out.trace is tape:  # one real output, the commonest
        pb.out_def = LEAF
        pb.out_ids = [out.id]
        pb.out_leaves = None  # means [out.value]: one scalar
        return out.value, pb, aux
    if type(out) is list and all_scalars(out):  # a flat list (checked by _pack_outputs):
        out_leaves, pb.out_def = out, _flat_def(list, len(out))  # read below, not kept
    else:
        out_leaves, pb.out_def = tree_flatten(out)
    read = B.read_outputs(out_leaves, tape)  # every leaf a float dual of this tape: one loop
    if read is not None:
        pb.out_ids, primals = read
        pb.out_float = True
    else:
        pb.out_ids = []
        primals = []
        for x in out_leaves:
            d = _on_trace(x, tape)
            if d is None:
                _check_constant_output(x, tape, who)
            pb.out_ids.append(None if d is None else d.id)
            primals.append(x if d is None else d.value)
    pb.out_leaves = primals
    return tree_unflatten(pb.out_def, primals), pb, aux


def _strip_tree(tree, trace):
    leaves, d = tree_flatten(tree)
    return tree_unflatten(d, [_primal(x, trace) for x in leaves])


def vjp(fun, *primals, has_aux=False):
    """``(out, vjp_fn)`` (plus ``aux`` when ``has_aux``): JAX's ``vjp``.

    ``vjp_fn(cotangent)`` takes a cotangent with the output's structure and returns a tuple with
    one cotangent per primal. It can be called any number of times.
    """
    out, pb, aux = _vjp(fun, primals, {}, tuple(range(len(primals))), has_aux, "vjp")
    if has_aux:
        return out, pb, aux
    return out, pb


def _is_scalar_output(x):
    if type(x) is float or type(x) is Dual or type(x) in _recorders:
        return True
    if isinstance(x, (numbers.Real, np.floating)) and not isinstance(x, bool):
        return True
    if isinstance(x, np.ndarray) or (is_dual(x) and type(x) is not Dual):
        return np.shape(x) == ()
    return False


def _is_complex_scalar(x):
    return isinstance(x, (complex, np.complexfloating)) or (
        _complex.is_complex_leaf(x) and np.shape(x) == ())


def _check_holomorphic(leaves, who, what="inputs"):
    """``holomorphic=True`` promises a complex function of complex inputs (as in JAX)."""
    for x in leaves:
        k = _leaf_kind(x)
        if k is not None and k != "complex":
            raise TypeError(
                "%s with holomorphic=True requires %s with complex dtype, but got %s. Make the "
                "value complex (x + 0j), or drop holomorphic=True to differentiate a real "
                "function." % (who, what, _dtype_of(x))
            )


def _complex_output_error(who):
    return TypeError(
        "%s requires real-valued outputs, but the function returned a complex value. For a "
        "holomorphic function pass holomorphic=True (the result is then f'(z)); for a real "
        "quantity of complex values return it (abs(z)**2, z.real, ...); for other complex "
        "outputs use deltaad.vjp or deltaad.jvp directly (see 'Complex numbers' in the "
        "documentation)." % who
    )


class Transformed:
    """A differentiated function: what ``grad``, ``value_and_grad``, ``jacrev``, ``jacfwd`` and
    ``hessian`` return. It carries the function it differentiates (``__wrapped__``, its name
    and docstring, as ``functools.wraps`` gives) and pickles as the call that made it --
    ``grad(f, argnums)`` -- so ``f`` travels by reference when it is importable and by value
    through cloudpickle for a lambda or closure: ``ProcessPoolExecutor.map(grad(f), xs)`` and
    Dask work. As an attribute of a class it binds like a function (a method)."""

    __slots__ = ("fun", "argnums", "has_aux", "holomorphic", "who", "recipe", "__dict__",
                 "__weakref__")

    def __init__(self, fun, argnums, has_aux, who, recipe, holomorphic=False):
        self.fun = fun
        self.argnums = argnums
        self.has_aux = has_aux
        self.holomorphic = holomorphic
        self.who = who
        self.recipe = recipe  # (public maker, its arguments)
        try:
            functools.update_wrapper(self, recipe[1][0])  # the user's function
        except AttributeError:  # pragma: no cover -- an object that refuses attribute reads
            pass

    def __reduce__(self):
        return self.recipe

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self):
        return "<deltaad.%s of %r>" % (self.who, self.recipe[1][0])


class _ValueAndGrad(Transformed):
    __slots__ = ()

    def __call__(self, *args, **kwargs):
        return _value_and_grad(self, args, kwargs)


class _Grad(Transformed):
    __slots__ = ()

    def __call__(self, *args, **kwargs):
        (out, g) = _value_and_grad(self, args, kwargs)
        if self.has_aux:
            return g, out[1]
        return g


def _float64_arrays(xs):
    for a in xs:
        if type(a) is not np.ndarray or a.dtype != _FLOAT64:
            return False
    return True


def _run_array(tape, fun, args, kwargs, n, x, has_aux):
    """``_run_reverse`` for one argument ``x`` (position ``n``) that is a float64 ndarray, or a
    tuple or list of them: their array duals made directly; the binding ids of the inputs,
    the output (packed as ``_run_reverse`` packs it) and the aux."""
    new_args = list(args)
    if type(x) is np.ndarray:
        d = array_input(tape, x, None)
        i = [d.id]
        new_args[n] = d
    else:
        ds = [array_input(tape, a, None) for a in x]
        i = [d.id for d in ds]
        new_args[n] = ds if type(x) is list else tuple(ds)
        ds = None
    d = None
    out, aux = _split_aux(fun(*new_args, **kwargs), has_aux, "grad")
    if type(out) is not Dual and type(out) is not ArrayDual:
        out = _pack_outputs(out, tape)
    return i, out, aux


def _sweep_once(tape, out_id, seed, wanted, floats_only=False):
    """The adjoints of ``wanted`` for one seed of a gradient's only sweep (``tape.eval``; None
    when ``floats_only`` and the float sweep does not apply: nothing swept). Once swept,
    checkpoint nodes' hold on the tape goes at once (also when the sweep raises), as the
    pullback's finalizer lets it go for the general path."""
    try:
        adj = tape.eval([(out_id, seed)], wanted, floats_only)
    except BaseException:
        if tape.nnodes:
            tape.release_nodes()
        raise
    if adj is not None and tape.nnodes:
        tape.release_nodes()
    return adj


def _array_value_and_grad(self, x, args, kwargs, n):
    """``value_and_grad`` of one argument that is a float64 ndarray or a tuple or list of them
    (a model's parameters), the commonest array calls: what ``_vjp`` and the pullback do for
    it when the output is a real number of the tape (a 0-d float64 array dual, a float dual)
    -- the same seed, sweep and gradient -- without the tree walks, the pullback object and
    the loops over leaves. Any other output: ``(out, pb, aux)`` as ``_vjp`` gives them, for
    the general checks. The gradient has ``x``'s structure, not yet put in a tuple."""
    has_aux = self.has_aux
    tape, (i, out, aux) = traced(B.Tape, _run_array, self.fun, args, kwargs, n, x, has_aux)
    seed = None
    if type(out) is ArrayDual and out.trace is tape:
        v = out.value
        if type(v) is np.ndarray and v.shape == () and v.dtype == _FLOAT64:
            seed = np.array(1.0)
            value = v[()]
    elif type(out) is Dual and out.trace is tape and type(out.value) is float:
        seed = 1.0
        value = out.value
    if seed is None:
        if type(x) is np.ndarray:
            leaves, in_def = [x], _TUPLE_OF_LEAF
        else:
            leaves, in_def = tree_flatten((x,))
        return None, _pullback(tape, i, i, out, aux, in_def, leaves, False, has_aux, "grad")
    if has_aux:
        aux = _strip_tree(aux, tape)
    adj = _sweep_once(tape, out.id, seed, i)
    if type(x) is np.ndarray:
        g = _leaf_grad(adj[0], x)
    else:
        g = [_leaf_grad(b, a) for a, b in zip(x, adj)]
        if type(x) is tuple:
            g = tuple(g)
    return ((value, aux), g) if has_aux else (value, g), None


def _flat_value_and_grad(self, x, args, kwargs, n):
    """``value_and_grad`` of one list or tuple of floats ``x`` (position ``n``), the commonest
    scalar call: ``_vjp``'s run of it and, when the output is a float dual of the tape and the
    float sweep applies, the pullback's seed, sweep and gradient without the pullback object
    and the tree walks. Otherwise ``(None, (out, pb, aux))`` as ``_vjp`` gives them, for the
    general checks; ``(None, None)`` when ``x`` is not all floats (the general path then runs
    on a fresh tape)."""
    has_aux = self.has_aux
    tape, ran = traced(B.Tape, B.Tape.call_on_inputs, self.fun, args, kwargs, n, x, None,
                       has_aux, _packed_with_aux("grad") if has_aux else _packed)
    if ran is None:
        return None, None
    wanted, out, aux = ran
    if type(out) is Dual and out.trace is tape:
        adj = _sweep_once(tape, out.id, 1.0, wanted, True)  # (None: not floats, not swept)
        if adj is not None:
            if has_aux:
                aux = _strip_tree(aux, tape)
            g = adj if type(x) is list else tuple(adj)
            return ((out.value, aux), g) if has_aux else (out.value, g), None
    return None, _pullback(tape, wanted, wanted, out, aux, flat_args_def(x), x, "flat",
                           has_aux, "grad")


def _value_and_grad(self, args, kwargs):
    single, nums = _argnums_tuple(self.argnums, len(args), "grad")
    has_aux = self.has_aux
    general = tried = None
    if len(nums) == 1 and not self.holomorphic:
        x = args[nums[0]]
        tx = type(x)
        if (tx is list or tx is tuple) and x and type(x[0]) is float:  # one list of floats
            r, general = tried = _flat_value_and_grad(self, x, args, kwargs, nums[0])
            if r is not None:
                return r if single else (r[0], (r[1],))
        elif (tx is np.ndarray and x.dtype == _FLOAT64 or (tx is tuple or tx is list) and x
                and _float64_arrays(x)):  # one float64 array, or a tuple of them, in short
            r, general = _array_value_and_grad(self, x, args, kwargs, nums[0])
            if r is not None:
                return r if single else (r[0], (r[1],))
    # (a list of floats that was not all floats is not tried as one again)
    out, pb, aux = general or _vjp(self.fun, args, kwargs, nums, has_aux, "grad", tried is None)
    g = None
    if not self.holomorphic:
        if type(out) is float:  # one real output, the commonest: what the checks below find
            g = pb(1.0)
        elif (type(out) is np.ndarray and pb.out_def is LEAF and out.shape == ()
              and out.dtype == _FLOAT64):
            # one 0-d float array (np.sum of an array dual), the commonest array output: what
            # the checks below and the cotangent's (a fresh 0-d one) would find
            i = pb.out_ids[0]
            g = tuple(unflatten_owned(pb.in_def,
                                      pb.grads([] if i is None else [(i, np.array(1.0))])))
            out = out[()]
    if g is not None:
        g = g[0] if single else g
        return ((out, aux), g) if has_aux else (out, g)
    if self.holomorphic:
        _check_holomorphic(pb.in_leaves, "grad")
        if not _is_complex_scalar(out):
            raise TypeError("grad with holomorphic=True requires a function returning one "
                            "complex number; got %s" % (_describe(out),))
    elif _is_complex_scalar(out):
        raise _complex_output_error("grad")
    elif not _is_scalar_output(out):
        raise TypeError(
            "grad requires a function returning one real number; got %s. Use "
            "deltaad.jacrev/jacobian or deltaad.vjp for other outputs, or has_aux=True to "
            "return extra data beside the number." % (_describe(out),)
        )
    g = pb(1.0 if type(out) is Dual or not isinstance(out, np.ndarray) and not is_dual(out) else np.ones(()))
    g = g[0] if single else g
    if type(out) is np.ndarray or type(out) in _recorded_arrays:  # np.sum(x) of an array
        # dual: numpy's scalar, as numpy gives
        out = out[()]
    return ((out, aux), g) if has_aux else (out, g)


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False):
    """``f(*args) -> (value, gradient)``; gradient has the structure of the argument(s).

    Complex inputs follow JAX's convention: the gradient of a real function of ``z = x + iy``
    is ``∂f/∂x - i ∂f/∂y`` (the conjugate of the steepest-ascent direction). With
    ``holomorphic=True`` the function maps complex inputs to a complex number and the
    gradient is its complex derivative ``f'(z)``."""
    return _ValueAndGrad(fun, argnums, has_aux, "value_and_grad",
                         (value_and_grad, (fun, argnums, has_aux, holomorphic)), holomorphic)


def _describe(x):
    if isinstance(x, (tuple, list, dict)):
        return "a %s of %d item(s)" % (type(x).__name__, len(x))
    if isinstance(x, np.ndarray):
        return "an array of shape %s" % (x.shape,)
    return "a value of type %s" % type(x).__name__


def grad(fun, argnums=0, has_aux=False, holomorphic=False):
    """The gradient of a real-valued ``fun`` with respect to the argument(s) ``argnums``; for
    complex arguments, JAX's convention (see :func:`value_and_grad`)."""
    return _Grad(fun, argnums, has_aux, "grad", (grad, (fun, argnums, has_aux, holomorphic)),
                 holomorphic)


# --------------------------------------------------------------------------------------------
# Forward mode


def jvp(fun, primals, tangents, has_aux=False):
    """``(out, tangent_out)``: JAX's ``jvp``; ``tangents`` has the structure of ``primals``.
    With ``has_aux``, ``fun`` returns ``(output, aux)`` and the result is ``(out,
    tangent_out, aux)``, ``aux`` holding plain values."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (one entry per argument)")
    primals = tuple(primals)
    tangents = tuple(tangents)
    if len(primals) == 1 and len(tangents) == 1:
        x, t = primals[0], tangents[0]
        if (type(x) is list or type(x) is tuple) and type(t) is type(x) and len(t) == len(x) and x:
            # one list of floats and its tangents, the commonest: each item is read once, into
            # the input duals (no checked copy first)
            level, ran = traced(B.ForwardLevel, B.ForwardLevel.call_on_inputs, fun, (x,), {}, 0,
                                x, t, has_aux, _packed_with_aux("jvp") if has_aux else _packed)
            if ran is not None:
                return _forward_result(level, ran[1:], has_aux)
    flat = flatten_float_args(primals)  # one list of floats each, the commonest: one C loop
    t_flat = None
    if flat is not None:
        t0 = tangents[0] if len(tangents) == 1 else None
        if (type(t0) is type(primals[0]) and len(t0) == len(flat[0]) and all_floats(t0)):
            # the tangents as they are: read once into the input duals before the function
            # runs (never kept), so no copy is needed
            t_flat = t0, flat[1]
        else:
            t_flat = flatten_float_args(tangents)
    floats = None if flat is None else t_flat is not None and len(flat[0]) > 0
    leaves, in_def = flat if flat is not None else tree_flatten(primals)
    t_leaves, t_def = t_flat if t_flat is not None else tree_flatten(tangents)
    if t_def is not in_def and t_def != in_def:
        raise TypeError("jvp: tangents must have the structure of primals, %r; got %r" % (in_def, t_def))
    level, ran = traced(B.ForwardLevel, _run_forward, fun, leaves, in_def, t_leaves, floats,
                        has_aux)
    return _forward_result(level, ran, has_aux)


def _forward_result(level, ran, has_aux):
    """``jvp``'s result from the output and aux of ``_run_forward`` on ``level``."""
    out, aux = ran
    if has_aux:
        aux = _strip_tree(aux, level)
    if type(out) is Dual and out.trace is level:  # one real output, the commonest
        return (out.value, out.tangent, aux) if has_aux else (out.value, out.tangent)
    ps, ts, out_def = _read_forward(out, level, "jvp")
    if has_aux:
        return unflatten_owned(out_def, ps), unflatten_owned(out_def, ts), aux
    return unflatten_owned(out_def, ps), unflatten_owned(out_def, ts)


def _split_aux(out, has_aux, who):
    """``(output, aux)`` of a function's result; ``aux`` is None without ``has_aux``."""
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError("%s(has_aux=True): the function must return a pair (output, aux); got %s"
                        % (who, _describe(out)))
    return out


def _run_forward(level, fun, leaves, in_def, t_leaves, floats=None, has_aux=False):
    """The part of ``jvp`` that runs with ``level`` open (``floats``: every leaf and tangent a
    float, when the caller knows): the output and the aux (for one list or tuple of floats,
    see ``Trace.call_on_inputs``)."""
    if floats is None:
        floats = leaves and all_floats(leaves) and all_floats(t_leaves)
    if floats:  # the common case
        duals = level.inputs(leaves, t_leaves)
    else:
        duals, kinds = _dualise(level, leaves, t_leaves)
        _check_has_float(kinds, "jvp")
    out, aux = _split_aux(fun(*unflatten_owned(in_def, duals)), has_aux, "jvp")
    return (out if type(out) is Dual else _pack_outputs(out, level)), aux


def _read_forward(out, level, who):
    """The output of a forward trace as flat lists ``(primals, tangents, treedef)``: a zero
    tangent for a real constant, ``None`` for a static leaf."""
    if type(out) is list and all_scalars(out):  # a flat list: read, not kept (see _vjp)
        out_leaves, out_def = out, _flat_def(list, len(out))
    else:
        out_leaves, out_def = tree_flatten(out)
    read = B.read_tangents(out_leaves, level)  # every leaf a float dual of this level
    if read is not None:
        return read[0], read[1], out_def
    ps = []
    ts = []
    for x in out_leaves:
        d = _on_trace(x, level)
        if d is None:
            _check_constant_output(x, level, who)
            ps.append(x)
            ts.append(_zero_like(x) if _leaf_kind(x) is not None else None)
        else:
            ps.append(d.value)
            ts.append(d.tangent)
    return ps, ts, out_def


# --------------------------------------------------------------------------------------------
# Jacobians


def _components(leaves):
    """(leaf index, flat index, shape) for each real component of the differentiable leaves."""
    comps = []
    for k, x in enumerate(leaves):
        kind = _leaf_kind(x)
        if kind is None:
            continue
        shape = np.shape(x.value if is_dual(x) and type(x) is not Dual else x) if kind != "scalar" else ()
        size = int(np.prod(shape)) if shape else 1
        for j in range(size):
            comps.append((k, j, shape))
    return comps


def _one_hot(leaves, k, j):
    out = []
    for i, x in enumerate(leaves):
        kind = _leaf_kind(x)
        if kind is None:
            out.append(None)
            continue
        if kind == "complex":  # the tangent 1 (a holomorphic Jacobian's column)
            out.append(_complex.basis(x, j if i == k else -1))
            continue
        if kind == "array":
            z = np.zeros(np.shape(x.value if is_dual(x) else x), dtype=float)
            if i == k:
                z.reshape(-1)[j] = 1.0
            out.append(z)
        else:
            out.append(1.0 if i == k else 0.0)
    return out


def _entry(x, j):
    """Component ``j`` of a leaf value (scalar or array, maybe None for zero)."""
    if x is None:
        return 0.0
    if isinstance(x, np.ndarray):
        return x.reshape(-1)[j]
    if is_dual(x) and type(x) is not Dual:
        return x.reshape(-1)[j]
    return x


def _vector_like(tree):
    """Shape of ``tree`` as one vector, or None: an array, or a flat list/tuple of scalars."""
    if isinstance(tree, np.ndarray) or (is_dual(tree) and type(tree) is not Dual):
        return np.shape(tree)
    if type(tree) in (list, tuple) and all(_leaf_kind(x) == "scalar" for x in tree):
        return (len(tree),)
    return None


def _matrix(rows, dtype=_FLOAT64):
    """``np.array(rows, dtype)``; an array dual when entries are duals (Jacobians inside a
    differentiation, e.g. the inner jacrev of hessian), never an object array."""
    if any(is_dual(e) for row in rows for e in row):
        arr = asarray(rows)
        return arr if arr.dtype == dtype else arr.astype(dtype)
    if rows and rows[0]:
        if any(type(e) in _recorded_arrays for row in rows for e in row):  # deltaad.compile's
            return np.stack([np.stack(row) for row in rows]).astype(dtype, copy=False)
        return np.array(rows, dtype=dtype)
    return np.zeros((len(rows), 0), dtype=dtype)


def _result_dtype(leaves):
    """The dtype a Jacobian block of these (differentiable) leaves has: numpy's promotion of
    their dtypes, a float counting as float64 (float32 in and out gives float32, as in JAX)."""
    dtypes = {_dtype_of(x) for x in leaves if _leaf_kind(x) is not None}
    return functools.reduce(np.promote_types, dtypes, np.dtype(np.float16)) if dtypes else _FLOAT64


def _assemble(J, out_leaves, out_def, out_tree, in_leaves, in_def, in_tree, single):
    """Lay the Jacobian rows ``J[i][j]`` out as JAX does: the output's structure with each
    leaf replaced by the input's structure; a vector-to-vector Jacobian is an m x n array.
    Each block has the result dtype of its output and input leaves."""
    out_comps = _components(out_leaves)
    in_comps = _components(in_leaves)
    if single:
        vo = _vector_like(out_tree)
        vi = _vector_like(in_tree[0])
        if vo is not None and vi is not None and vo != ():
            dtype = _result_dtype(list(out_leaves) + list(in_leaves))
            arr = _matrix([[J[i][j] for j in range(len(in_comps))] for i in range(len(out_comps))], dtype)
            return arr.reshape(tuple(vo) + tuple(vi))
    # general layout
    out_index = {}
    for i, (k, j, shape) in enumerate(out_comps):
        out_index.setdefault(k, []).append(i)
    in_index = {}
    for j, (k, jj, shape) in enumerate(in_comps):
        in_index.setdefault(k, []).append(j)
    result_leaves = []
    for ko, xo in enumerate(out_leaves):
        rows = out_index.get(ko)
        if rows is None:
            result_leaves.append(None)
            continue
        shape_o = out_comps[rows[0]][2]
        per_in = []
        for ki, xi in enumerate(in_leaves):
            cols = in_index.get(ki)
            if cols is None:
                per_in.append(None)
                continue
            shape_i = in_comps[cols[0]][2]
            dtype = np.promote_types(_dtype_of(xo), _dtype_of(xi))
            if not shape_o and not shape_i:
                e = J[rows[0]][cols[0]]
                if dtype != _FLOAT64 and not is_dual(e):
                    e = dtype.type(e)
                per_in.append(e)
            else:
                block = _matrix([[J[r][c] for c in cols] for r in rows], dtype)
                per_in.append(block.reshape(tuple(shape_o) + tuple(shape_i)))
        sub = tree_unflatten(in_def, per_in)
        result_leaves.append(sub[0] if single else sub)
    return tree_unflatten(out_def, result_leaves)


def _float_rows(pb, out, in_tree):
    """The Jacobian of a vector of float outputs with respect to a vector of float inputs
    (the m x n array ``_assemble`` lays out) from the tape's rows, written by the backend
    straight into one buffer: no float object or Python step per entry. None for any other
    shape (or a tape that is not all float bindings)."""
    if pb.out_leaves is None:
        return None
    vo = _vector_like(out)
    vi = _vector_like(in_tree[0])
    if vo is None or vi is None or len(vo) != 1 or len(vi) != 1 or not vo[0] or not vi[0]:
        return None
    rows = pb.tape.rows(pb.out_ids, pb.wanted)
    if rows is None:
        return None
    return np.frombuffer(rows, dtype=_FLOAT64).reshape(vo[0], vi[0])


class _JacRev(Transformed):
    __slots__ = ()

    def __call__(self, *args, **kwargs):
        single, nums = _argnums_tuple(self.argnums, len(args), "jacrev")
        out, pb, aux = _vjp(self.fun, args, kwargs, nums, self.has_aux, "jacrev")
        if pb.out_leaves is None:
            out_leaves, out_def = [out], LEAF
        else:
            out_leaves, out_def = pb.out_leaves, pb.out_def
        in_leaves = pb.in_leaves
        holomorphic = self.holomorphic
        if holomorphic:
            _check_holomorphic(in_leaves, "jacrev")
            _check_holomorphic(out_leaves, "jacrev", "outputs")
        elif any(_leaf_kind(x) == "complex" for x in out_leaves):
            raise _complex_output_error("jacrev")
        in_tree = tuple(args[n] for n in nums)
        J = _float_rows(pb, out, in_tree) if single and pb.all_float and pb.out_float else None
        if J is not None:
            return (J, aux) if self.has_aux else J
        in_comps = _components(in_leaves)
        J = []
        for k, j, shape in _components(out_leaves):
            i = pb.out_ids[k]
            if i is None:  # a constant output: a row of zeros
                J.append([0.0] * len(in_comps))
                continue
            kind = _leaf_kind(out_leaves[k])
            if kind == "scalar":
                seed = 1.0
            elif kind == "complex":
                seed = _complex.seed(out_leaves[k], j)
            else:
                seed = np.zeros(shape)
                seed.reshape(-1)[j] = 1.0
            g = pb.grads([(i, seed)])  # one per input leaf, None in static slots
            J.append([_entry(g[ki], jj) for ki, jj, _s in in_comps])
        J = _assemble(J, out_leaves, out_def, out, in_leaves, pb.in_def, in_tree, single)
        return (J, aux) if self.has_aux else J



def jacrev(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Jacobian by reverse mode: one tape, one backward sweep per output component.

    Complex inputs give rows in JAX's convention (``∂/∂x - i ∂/∂y``); complex outputs need
    ``holomorphic=True`` (complex inputs and outputs; the entries are then ``f'(z)``). With
    ``has_aux``, ``fun`` returns ``(output, aux)`` and the result is ``(jacobian, aux)``."""
    return _JacRev(fun, argnums, has_aux, "jacrev",
                   (jacrev, (fun, argnums, has_aux, holomorphic)), holomorphic)


jacobian = jacrev


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Jacobian by forward mode: one ``jvp`` per input component.

    Complex inputs need ``holomorphic=True`` (complex outputs too; the entries are then
    ``f'(z)``); a real input may have complex outputs (complex columns). With ``has_aux``,
    ``fun`` returns ``(output, aux)`` and the result is ``(jacobian, aux)`` (``aux`` of the
    first evaluation, plain values)."""
    return _JacFwd(fun, argnums, has_aux, "jacfwd",
                   (jacfwd, (fun, argnums, has_aux, holomorphic)), holomorphic)


class _JacFwd(Transformed):
    __slots__ = ()

    def __call__(self, *args, **kwargs):
        who = self.who
        fun = self.fun
        holomorphic = self.holomorphic
        single, nums = _argnums_tuple(self.argnums, len(args), who)
        in_tree = tuple(args[n] for n in nums)
        in_leaves, in_def = tree_flatten(in_tree)
        in_comps = _components(in_leaves)
        kinds = [_leaf_kind(x) for x in in_leaves]
        _check_has_float(kinds, who, nums)
        if holomorphic:
            _check_holomorphic(in_leaves, who)
        elif "complex" in kinds:
            raise TypeError(
                "%s requires real-valued inputs, but got a complex one. For a holomorphic "
                "function pass holomorphic=True; for other functions of complex inputs use "
                "deltaad.jvp directly, or jacrev (its rows follow JAX's convention)." % who)

        def partial(*sel):
            new_args = list(args)
            for n, a in zip(nums, sel):
                new_args[n] = a
            return fun(*new_args, **kwargs)

        cols = []  # per input component: the output tangents, one per output leaf
        ps = out_def = aux = None
        has_aux = self.has_aux
        for k, j, shape in in_comps or [(-1, 0, ())]:  # (no components: run once for the output)
            ps, ts, out_def, a = _jvp_static(partial, in_leaves, in_def,
                                             _one_hot(in_leaves, k, j), who, has_aux)
            if aux is None:
                aux = a
            cols.append(ts)
        if holomorphic:
            _check_holomorphic(ps, who, "outputs")
        J = [[_entry(cols[c][ko], jo) for c in range(len(in_comps))]
             for ko, jo, _s in _components(ps)]
        out = tree_unflatten(out_def, ps)
        J = _assemble(J, ps, out_def, out, in_leaves, in_def, in_tree, single)
        return (J, aux) if has_aux else J


def _jvp_static(f, in_leaves, in_def, t_leaves, who, has_aux=False):
    """``jvp`` where static leaves carry ``None`` tangents (they are not dualised); the output
    as flat lists ``(primals, tangents, treedef)`` and the aux (plain values)."""
    level, (out, aux) = traced(B.ForwardLevel, _run_static, f, in_leaves, in_def, t_leaves,
                               has_aux, who)
    return _read_forward(out, level, who) + ((_strip_tree(aux, level) if has_aux else None),)


def _run_static(level, f, in_leaves, in_def, t_leaves, has_aux, who):
    duals, kinds = _dualise(level, in_leaves, t_leaves)
    out, aux = _split_aux(f(*tree_unflatten(in_def, duals)), has_aux, who)
    return _pack_outputs(out, level), aux


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """Second derivatives: forward over reverse (``jacfwd(jacrev(fun))``), as JAX does. With
    ``has_aux``, ``fun`` returns ``(output, aux)`` and the result is ``(hessian, aux)``."""
    return _JacFwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, "hessian",
                   (hessian, (fun, argnums, has_aux, holomorphic)), holomorphic)


def hvp(fun, primals, tangents, argnums=0):
    """The Hessian-vector product ``H @ v`` of a real-valued ``fun`` at ``primals``, without
    the Hessian: forward over reverse (``jvp(grad(fun), primals, tangents)``, JAX's recipe),
    so time and memory are a small multiple of one gradient's. ``tangents`` has the structure
    of ``primals`` (one tangent per argument); the result has the structure of the
    argument(s) ``argnums`` -- ``hessp`` for ``scipy.optimize.minimize`` is
    ``lambda x, p: deltaad.hvp(f, (x,), (p,))``."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("hvp: primals and tangents must be tuples (one entry per argument)")
    return jvp(grad(fun, argnums), tuple(primals), tuple(tangents))[1]


def linearize(fun, *primals):
    """``(out, f_jvp)``: JAX's ``linearize``. ``f_jvp(*tangents)`` is the derivative of ``fun``
    at ``primals`` applied to ``tangents`` (one per primal), ``jvp(fun, primals,
    tangents)[1]``. Each call runs ``fun`` again in forward mode (deltaad keeps no linear
    program between calls), so it costs one ``jvp``; ``out`` is computed once."""
    primals = tuple(primals)
    out = fun(*primals)

    def f_jvp(*tangents):
        if len(tangents) != len(primals):
            raise TypeError("linearize: f_jvp takes one tangent per primal (%d), got %d"
                            % (len(primals), len(tangents)))
        return jvp(fun, primals, tangents)[1]

    return out, f_jvp


# --------------------------------------------------------------------------------------------
# The Delta, first-class


def make_delta(fun, *primals):
    """Run ``fun`` once and return ``(value, delta)``: the ``Let``-nested Delta term that the
    paper's ``runDelta`` builds (Fig. 11), over ``Var`` ids 0, 1, ... for the real inputs in
    left-to-right order. ``str(delta)`` prints it in the style of Fig. 12 and
    ``deltaad.delta.eval(1.0, delta, {})`` evaluates it to ``{input id: partial derivative}``.
    """
    leaves, in_def = tree_flatten(tuple(primals))
    tape, out = traced(B.Tape, _run_delta, fun, leaves, in_def)
    d = _on_trace(out, tape)
    if d is None:
        _check_constant_output(out, tape, "make_delta")
    if d is None and not _is_scalar_output(out):
        raise TypeError("make_delta needs a function returning one real number; got %s" % _describe(out))
    body = _delta.Zero if d is None else _delta.Var(d.id)
    term = body
    for i in range(tape.nbindings - 1, -1, -1):
        parents, rule = tape.binding(i)
        if not parents:
            continue
        if callable(rule):
            raise TypeError("make_delta: binding %d is a linear map (an array operation); only scalar programs can be shown" % i)
        term = _delta.Let(i, _delta.term(parents, rule), term)
    return (out if d is None else d.value), term


def _run_delta(tape, fun, leaves, in_def):
    duals, kinds = _dualise(tape, leaves)
    _check_has_float(kinds, "make_delta")
    if any(k == "array" for k in kinds):
        raise TypeError("make_delta shows the Delta of scalar programs; pass floats, not arrays")
    return _pack_outputs(fun(*tree_unflatten(in_def, duals)), tape)
