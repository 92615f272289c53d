"""Pytrees (Krawiec et al. §11, JAX's convention): nested containers whose leaves get differentiated.

Containers are tuples, lists, dicts, ``collections.OrderedDict``, ``collections.defaultdict``,
namedtuples, dataclasses and ``None`` (an empty container); the types themselves, not their
subclasses (a subclass of ``dict`` or ``list`` is a leaf, as in JAX). Everything else is a leaf.
Flattening enumerates leaves left to right (dicts in insertion order), the paper's
``initVars``; unflattening rebuilds the same structure around new leaves, with the same types
(a defaultdict keeps its ``default_factory``).

Dataclasses are rebuilt from their fields, without calling ``__init__`` or ``__post_init__``
(as JAX rebuilds registered pytrees): the rebuilt object has exactly the fields (its leaves
replaced), nothing that ``__post_init__`` computed. So flattening a dataclass instance that
carries instance attributes which are not fields (e.g. set in ``__post_init__``) raises a
``TypeError`` naming them, rather than handing the function an object without them; compute
such values in a ``@property`` (or inside the function), or declare them as fields.
``functools.cached_property`` values are not fields either, but are simply recomputed on the
rebuilt object, so they are allowed.
"""

import dataclasses
import functools
from collections import OrderedDict, defaultdict

from deltaad._plainnumpy import np

from ._backend import B
from .trace import dual_types as _dual_types
from .trace import recorders as _recorders


class TreeDef:
    """The shape of a pytree with its leaves taken out."""

    __slots__ = ("kind", "meta", "_children", "nleaves", "flat")

    def __init__(self, kind, meta, children, flat=False, nleaves=None):
        self.kind = kind
        self.meta = meta
        self._children = children
        self.flat = flat  # every child a leaf: (un)flattened without recursion
        if kind == "leaf":
            self.nleaves = 1
        elif flat:  # children None: made on demand (a long float list needs no tuple of them)
            self.nleaves = len(children) if nleaves is None else nleaves
        else:
            self.nleaves = sum(c.nleaves for c in children)

    @property
    def children(self):
        if self._children is None:
            self._children = (LEAF,) * self.nleaves
        return self._children

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, TreeDef):
            return False
        if self.flat and other.flat:
            return self.kind == other.kind and self.meta == other.meta and self.nleaves == other.nleaves
        return self.kind == other.kind and self.meta == other.meta and self.children == other.children

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(repr, self.children))
        name = self.meta[0].__name__ if self.kind in ("namedtuple", "dataclass") else self.kind
        return "%s(%s)" % (name, inner)


def _dataclass_names(x, tx):
    """The field names of dataclass instance ``x``; a TypeError if it has instance attributes
    that are not fields (they would be lost when it is rebuilt: see the module docstring)."""
    names = tuple(f.name for f in dataclasses.fields(x))
    inst = getattr(x, "__dict__", None)
    if inst is not None and len(inst) > len(names):
        extra = [k for k in inst if k not in names
                 and not isinstance(getattr(tx, k, None), functools.cached_property)]
        if extra:
            raise TypeError(
                "deltaad pytrees: the %s instance has attribute(s) %s that are not dataclass "
                "fields. Only fields are part of the pytree: deltaad rebuilds dataclasses from "
                "their fields without calling __init__ or __post_init__, so these attributes "
                "would be missing on the object your function receives. Compute them in a "
                "@property (or inside the function), or declare them as fields."
                % (tx.__name__, ", ".join(map(repr, extra)))
            )
    return names


LEAF = TreeDef("leaf", None, ())
# The arguments of a one-argument function whose argument is a leaf (an array, usually): made
# once, not per call
_TUPLE_OF_LEAF = TreeDef("tuple", None, (LEAF,))


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


# True when every item of a list or tuple is exactly a float: the backend's loop (one C loop in
# the core), run on every input and gradient list, so it is part of the per-leaf cost.
all_floats = B.all_floats
# Likewise for "a float or a scalar dual": a list of either is a run of leaves (e.g. a
# function's output list), flattened without a step per item.
all_scalars = B.all_scalars


_FLAT_DEFS = {}  # (list or tuple, length) -> its flat TreeDef, shared for short lengths
# The last flat TreeDef made of a longer list or tuple, as (type, length, TreeDef), and the
# last arguments' TreeDef made by ``flat_args_def``, as (its one child, TreeDef): repeated
# calls on arguments of one shape (a gradient in a loop) make neither again. Each is one
# tuple, replaced whole.
_last_flat = (None, -1, None)
_last_args = (None, None)


def _flat_def(tx, n):
    """The TreeDef of a list or tuple of ``n`` leaves (floats or scalar duals); the same object
    each time for short ones (no construction per call, and equal structures compare by
    identity), and for a long one made for the same type and length as the last."""
    global _last_flat
    d = _FLAT_DEFS.get((tx, n))
    if d is None:
        t, m, d = _last_flat
        if t is tx and m == n:
            return d
        d = TreeDef(tx.__name__, None, None, flat=True, nleaves=n)
        if n <= 256:
            _FLAT_DEFS[(tx, n)] = d
        else:
            _last_flat = (tx, n, d)
    return d


def _all_recorded(xs):
    """Every item of ``xs`` a float or a number ``deltaad.compile`` records (a flat vector)."""
    types = set(map(type, xs))
    types.discard(float)
    return all(t in _recorders for t in types)


def flatten_float_args(args):
    """``tree_flatten(args)`` for the commonest arguments, a tuple holding one list or tuple of
    floats (a one-argument call): ``(leaves, treedef)``, checked and copied in one step; None
    for anything else."""
    if len(args) == 1:
        x = args[0]
        leaves = B.float_copy(x)
        if leaves is not None:
            return leaves, flat_args_def(x)
    return None


def flat_args_def(x):
    """The TreeDef of the arguments ``(x,)``, ``x`` a list or tuple of floats (the same object
    as the last time for the same type and length: see ``_last_args``)."""
    return _args_def(_flat_def(type(x), len(x)))


def _args_def(inner):
    """The TreeDef of a one-item tuple (the arguments of a one-argument function) whose item
    has the TreeDef ``inner``: the same object as the last time for the same ``inner``."""
    global _last_args
    if inner is LEAF:
        return _TUPLE_OF_LEAF
    c, d = _last_args
    if c is inner:
        return d
    d = TreeDef("tuple", None, (inner,))
    _last_args = (inner, d)
    return d


def tree_flatten(tree):
    """Return ``(leaves, treedef)``."""
    # The commonest trees first, without the recursive walk (per-call cost of every grad/jvp):
    # one float, and a flat list or tuple of floats.
    tx = type(tree)
    if tx is float or tx is np.ndarray or tx in _dual_types:  # (an array: no walk either)
        return [tree], LEAF
    if tx is tuple or tx is list:
        if all_scalars(tree):
            return list(tree), _flat_def(tx, len(tree))
        if tx is tuple and len(tree) == 1:  # the arguments of a one-argument function
            leaves, inner = tree_flatten(tree[0])
            return leaves, _args_def(inner)
    leaves = []

    def walk(x):
        tx = type(x)
        if tx is float:  # the commonest leaf first: inputs are often long lists of floats
            leaves.append(x)
            return LEAF
        if x is None:
            return TreeDef("none", None, ())
        if tx in _recorders:  # deltaad.compile's numbers: leaves, found before the containers
            leaves.append(x)
            return LEAF
        if tx is tuple or tx is list:
            if all_scalars(x) or (_recorders and _all_recorded(x)):  # a flat vector: no
                # recursion per element
                leaves.extend(x)
                return _flat_def(tx, len(x))
            return TreeDef(tx.__name__, None, tuple(walk(c) for c in x))
        if tx is dict:
            keys = tuple(x)
            return TreeDef("dict", keys, tuple(walk(x[k]) for k in keys))
        if _is_namedtuple(x):
            return TreeDef("namedtuple", (tx,), tuple(walk(c) for c in x))
        if tx is OrderedDict:
            keys = tuple(x)
            return TreeDef("OrderedDict", keys, tuple(walk(x[k]) for k in keys))
        if tx is defaultdict:
            keys = tuple(x)
            return TreeDef("defaultdict", (x.default_factory, keys), tuple(walk(x[k]) for k in keys))
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            names = _dataclass_names(x, tx)
            return TreeDef("dataclass", (tx, names), tuple(walk(getattr(x, n)) for n in names))
        leaves.append(x)
        return LEAF

    treedef = walk(tree)
    walk = None  # the closure refers to itself: break the cycle so leaves are freed at once
    return leaves, treedef


def tree_unflatten(treedef, leaves):
    """Rebuild the structure ``treedef`` around ``leaves`` (a sequence or iterable, in order)."""
    if type(leaves) is not list:
        leaves = list(leaves)
    if len(leaves) < treedef.nleaves:
        raise ValueError("tree_unflatten: %r needs %d leaves, got %d" % (treedef, treedef.nleaves, len(leaves)))
    if treedef is LEAF:  # one leaf: no closure to build (per-call cost, as in tree_flatten)
        return leaves[0]
    if treedef.flat:
        k = treedef.kind
        if k == "list":
            return leaves[:treedef.nleaves]
        if k == "tuple":
            return tuple(leaves[:treedef.nleaves])
    if treedef.kind == "tuple" and len(treedef.children) == 1:  # see tree_flatten
        return (tree_unflatten(treedef.children[0], leaves),)
    pos = 0

    def build(d):
        nonlocal pos
        k = d.kind
        if k == "leaf":
            pos += 1
            return leaves[pos - 1]
        if k == "none":
            return None
        if d.flat:  # a run of leaves: one slice, not a step per leaf
            kids = leaves[pos:pos + d.nleaves]
            pos += d.nleaves
        else:
            kids = [build(c) for c in d.children]
        if k == "tuple":
            return tuple(kids)
        if k == "list":
            return kids
        if k == "dict":
            return dict(zip(d.meta, kids))
        if k == "namedtuple":
            return d.meta[0](*kids)
        if k == "OrderedDict":
            return OrderedDict(zip(d.meta, kids))
        if k == "defaultdict":
            return defaultdict(d.meta[0], zip(d.meta[1], kids))
        cls, names = d.meta
        obj = object.__new__(cls)
        for n, v in zip(names, kids):
            object.__setattr__(obj, n, v)
        return obj

    try:
        return build(treedef)
    finally:
        build = None  # break the self-reference cycle (see tree_flatten)


def unflatten_owned(treedef, leaves):
    """``tree_unflatten`` for a fresh list ``leaves`` that the caller hands over: a flat list,
    alone or as the one item of a tuple (the arguments of a one-argument function), comes back
    as that very list, not a copy (a long input or gradient list is not copied per call)."""
    if type(leaves) is list and len(leaves) == treedef.nleaves:
        if treedef is _TUPLE_OF_LEAF:  # one array argument, the commonest after float lists
            return (leaves[0],)
        if treedef.flat:
            if treedef.kind == "list":
                return leaves
        elif treedef.kind == "tuple" and len(treedef.children) == 1:
            inner = treedef.children[0]
            if inner.flat and inner.kind == "list":
                return (leaves,)
    return tree_unflatten(treedef, leaves)


def tree_map(f, tree, *rest):
    """Apply ``f`` leafwise to ``tree`` (and trees of the same structure in ``rest``)."""
    leaves, treedef = tree_flatten(tree)
    others = [tree_flatten(r)[0] for r in rest]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def tree_leaves(tree):
    """The leaves of ``tree``, in :func:`tree_flatten`'s order (``jax.tree_util.tree_leaves``)."""
    return tree_flatten(tree)[0]


def tree_structure(tree):
    """The structure of ``tree`` without its leaves (``jax.tree_util.tree_structure``)."""
    return tree_flatten(tree)[1]
