"""Functions whose results carry no derivative: indices, counts, tests, rounding, shapes, the
angle of a real number (0 or pi; complex values have their own rule).

On duals they are computed on the plain values (the paper's ``Zero``): ``np.argmax(x)`` of an
array dual is numpy's ``argmax`` of its value.
"""

from deltaad._plainnumpy import np

from .define import defconst

defconst(*[getattr(np, name, None) for name in (
    "shape ndim size argmax argmin argsort argwhere nonzero flatnonzero count_nonzero isclose "
    "allclose array_equal array_equiv any all searchsorted zeros_like ones_like empty_like round "
    "around fix result_type may_share_memory shares_memory iscomplexobj isrealobj iscomplex isreal "
    "digitize nanargmax nanargmin isin sign floor ceil trunc rint argpartition isneginf isposinf "
    "angle lexsort diag_indices_from tril_indices_from triu_indices_from ravel_multi_index "
    "unravel_index can_cast common_type min_scalar_type array2string array_repr array_str"
).split() if not isinstance(getattr(np, name, None), np.ufunc)])
