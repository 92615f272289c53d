"""``vmap``: JAX's batching signature, computed by a loop.

deltaad differentiates ordinary Python, so a function cannot be rewritten to act on a batch
dimension the way JAX's tracer does; ``vmap`` instead calls the function once per index of
the mapped axis and stacks the results. It exists so code written for JAX
(``vmap(grad(loss), in_axes=(None, 0))(params, xs)``: per-example gradients) runs unchanged,
with JAX's results; its cost is the loop's, one call per element, and it composes with every
transformation (inside and outside it: the stacking is ``numpy.stack``, which differentiates).
"""

from deltaad._plainnumpy import np

from .pytrees import tree_flatten, tree_unflatten
from .trace import is_dual
from .trace import value as strip


def _axes_tree(axes, tree, who):
    """``axes`` broadcast over the leaves of ``tree`` (an int or None applies to every leaf
    of its subtree): the per-leaf axes, in ``tree``'s leaf order."""
    leaves, d = tree_flatten(tree)
    if axes is None or isinstance(axes, int):
        return [axes] * len(leaves)
    if isinstance(axes, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(axes) != len(tree):
            raise ValueError("%s: in_axes %r has %d entries for %d arguments"
                             % (who, axes, len(axes), len(tree)))
        out = []
        for a, t in zip(axes, tree):
            out.extend(_axes_tree(a, t, who))
        return out
    if isinstance(axes, dict) and isinstance(tree, dict):
        out = []
        for k in tree:  # the order tree_flatten gives a dict's leaves (insertion)
            out.extend(_axes_tree(axes.get(k), tree[k], who))
        return out
    raise ValueError("%s: in_axes %r does not match the arguments' structure" % (who, axes))


def _size(x, axis):
    shape = np.shape(strip(x)) if is_dual(x) else np.shape(x)
    if not shape:
        raise ValueError("vmap: cannot map over axis %d of a scalar argument" % axis)
    return shape[axis]


def _take(x, axis, i):
    index = [slice(None)] * np.ndim(strip(x) if is_dual(x) else x)
    index[axis] = i
    return x[tuple(index)]


def vmap(fun, in_axes=0, out_axes=0, axis_size=None):
    """``fun`` mapped over an axis of its arguments, as ``jax.vmap``: ``in_axes`` says which
    axis of each argument is mapped (an int, or None to pass the argument whole; a tuple with
    one entry per argument, or a pytree matching it), ``out_axes`` where the mapped axis goes
    in every output leaf. Computed by calling ``fun`` once per index and stacking the results
    (see the module docstring): JAX's values, the loop's cost."""

    def mapped(*args):
        axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        per_leaf = _axes_tree(axes, tuple(args), "vmap")
        leaves, d = tree_flatten(tuple(args))
        sizes = {_size(x, a) for x, a in zip(leaves, per_leaf) if a is not None}
        if axis_size is not None:
            sizes.add(axis_size)
        if len(sizes) != 1:
            raise ValueError("vmap: the mapped axes have sizes %s; they must all be equal%s"
                             % (sorted(sizes), "" if sizes else " (no argument is mapped: "
                                "give axis_size)"))
        n = sizes.pop()
        results = []
        for i in range(n):
            sliced = [x if a is None else _take(x, a, i) for x, a in zip(leaves, per_leaf)]
            results.append(fun(*tree_unflatten(d, sliced)))
        return _stack_results(results, out_axes, n)

    mapped.__wrapped__ = fun
    mapped.__name__ = getattr(fun, "__name__", "mapped")
    mapped.__doc__ = getattr(fun, "__doc__", None)
    return mapped


def _stack_results(results, out_axes, n):
    """The per-index results stacked along ``out_axes`` leaf by leaf (JAX's output layout)."""
    if n == 0:
        raise ValueError("vmap: a mapped axis of size 0 gives no output structure to stack")
    first, d = tree_flatten(results[0])
    columns = [[] for _ in first]
    for r in results:
        leaves, dr = tree_flatten(r)
        if dr != d:
            raise ValueError("vmap: the function returned different structures for different "
                             "elements (%r and %r)" % (d, dr))
        for c, x in zip(columns, leaves):
            c.append(x)
    axes = [out_axes] * len(first) if out_axes is None or isinstance(out_axes, int) else \
        _axes_tree(out_axes, results[0], "vmap")
    out = []
    for c, a in zip(columns, axes):
        if a is None:
            out.append(c[0])  # JAX: an unmapped output is the same for every element
        else:
            out.append(np.stack(c, axis=a))
    return tree_unflatten(d, out)
