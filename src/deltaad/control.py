"""JAX's structured control flow -- ``scan``, ``cond``, ``switch`` -- as the Python they stand for.

JAX needs them because it traces a function once; deltaad runs the user's Python with real
values, so ``for``, ``if`` and indexing already differentiate. These exist so that code
written for JAX (``jax.lax.scan`` over a time series, ``lax.cond`` on a flag) runs unchanged,
with JAX's argument conventions and result layout: ``scan`` stacks the per-step outputs along a
new leading axis of every leaf, as JAX does. For a long loop whose memory matters use
:func:`deltaad.fori_loop` with ``checkpoints=``.
"""

import operator

from deltaad._plainnumpy import np

from .numpy import asarray
from .pytrees import tree_flatten, tree_unflatten
from .trace import is_dual

__all__ = ["scan", "cond", "switch"]


def _length(xs_leaves, length):
    ns = {len(leaf) for leaf in xs_leaves}
    if len(ns) > 1:
        raise ValueError("scan: the leaves of xs have different leading lengths %s"
                         % sorted(ns))
    if ns:
        n = ns.pop()
        if length is not None and length != n:
            raise ValueError("scan: length=%d but xs has leading length %d" % (length, n))
        return n
    if length is None:
        raise ValueError("scan: give xs or length= (the number of steps)")
    return operator.index(length)


def _stack(column):
    """One leaf of the stacked outputs: an array (dual where a step's output is one)."""
    if any(is_dual(v) or (isinstance(v, np.ndarray) and v.dtype.kind == "O") for v in column):
        return np.stack([asarray(v) for v in column])
    return np.stack([np.asarray(v) for v in column])


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``carry, y = f(carry, x)`` for each ``x`` along the leading axis of ``xs`` (a pytree);
    returns ``(carry, ys)`` with the ``y`` stacked along a new leading axis
    (``jax.lax.scan``). ``xs=None`` with ``length=n`` runs ``n`` steps with ``x = None``;
    ``reverse=True`` runs from the last element and stores ``ys`` in ``xs``'s order. ``unroll``
    is accepted for JAX's signature and has no effect (the loop is Python's)."""
    leaves, treedef = tree_flatten(xs)
    n = _length(leaves, length)
    carry = init
    outs = [None] * n
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        x = tree_unflatten(treedef, [leaf[i] for leaf in leaves]) if leaves else xs
        carry, outs[i] = f(carry, x)
    if n == 0:
        return carry, None
    first, out_def = tree_flatten(outs[0])
    columns = [tree_flatten(o)[0] for o in outs]
    if any(len(c) != len(first) for c in columns):
        raise ValueError("scan: f returned outputs of different structures at different steps")
    stacked = [_stack([c[k] for c in columns]) for k in range(len(first))]
    return carry, tree_unflatten(out_def, stacked)


def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands) if pred else false_fun(*operands)`` (``jax.lax.cond``): only the
    branch taken runs, and its derivative is the derivative (the branch-taken semantics of
    Python's ``if``)."""
    return true_fun(*operands) if pred else false_fun(*operands)


def switch(index, branches, *operands):
    """``branches[index](*operands)``, the index clamped to the branches as JAX clamps it
    (``jax.lax.switch``)."""
    i = operator.index(index) if not is_dual(index) else int(index)
    return branches[min(max(i, 0), len(branches) - 1)](*operands)
