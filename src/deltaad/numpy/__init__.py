"""deltaad's numpy support: numpy functions on dual numbers, differentiated.

- :mod:`.array`: the array dual and the mechanism -- primitives, how they are applied on
  operands of any level, indexing, and numpy's dispatch protocols;
- :mod:`.registry`: where the rules are found; :mod:`.define`: how a rule is declared
  (``defvjp``, ``defjvp``, ``defconst``, ``register``), by deltaad and by users;
- the rule families: :mod:`.elementwise` (the elementwise table, arithmetic, choices, casts),
  :mod:`.shape` (shape and indexing), :mod:`.reductions`, :mod:`.products` (matmul, einsum),
  :mod:`.linalg`, :mod:`.constant` (results without derivative);
- complex numbers: :mod:`.complex_array` (the complex dual, a real dual of (re, im) pairs, and
  its dispatch), :mod:`.complex_rules` (complex ufuncs and functions), :mod:`.complex_linalg`
  (``eig``, ``eigvals``, ``inv``, ``solve``) and :mod:`.fft` (``numpy.fft``);
- :mod:`.fast`: the compiled fast path of the commonest elementwise operations on small float64
  arrays (the extension ``deltaad._arrays``), installed on the compiled backend.

Importing this package declares every rule and installs the hooks through which the backend's
scalar duals answer numpy.
"""

from deltaad._plainnumpy import np

from .._backend import B
from . import (  # noqa: F401 (the rule families)
    constant, elementwise, linalg, products, reductions, registry, shape, special, stats,
)
# the complex families that real duals meet too (eig's complex results, numpy.fft), and
# numpy's library functions; the other complex rules load on first use
# (complex_array.load_rules)
from . import complex_linalg, fft, library  # noqa: F401
from . import scipy_fft, scipy_linalg, scipy_multivariate, scipy_spatial  # noqa: F401 (scipy's functions, taken up when scipy is imported)
from . import scipy_distributions  # noqa: F401 (scipy's private distribution ufuncs)
from . import scipy_integrate  # noqa: F401 (quad and solve_ivp: the derivative of scipy's discretisation)
from . import scipy_interpolate  # noqa: F401 (scipy's interpolants at dual points)
from . import scipy_signal  # noqa: F401 (scipy.signal's filters on duals)
from . import fast  # noqa: F401 (the compiled fast path of small arrays, on the compiled backend)
from .array import (
    ArrayDual, array_input, asarray, at, scalar_array_function, scalar_array_ufunc,
    scalar_fallback, stack,
)
from .complex_array import ComplexDual, binop as _complex_binop
from .define import Primitive, defconst, defjvp, defvjp, register
from .reductions import logsumexp

__all__ = [
    "ArrayDual", "ComplexDual", "array_input", "asarray", "at", "stack", "logsumexp", "Primitive", "defconst",
    "defjvp", "defvjp", "register",
]

B.set_hooks(scalar_fallback, scalar_array_ufunc, scalar_array_function, _complex_binop,
            registry.SCALAR_UFUNCS, registry.CONSTANT_UFUNCS)
# numpy's real scalars (np.float64 read from an array, np.int64 from np.arange) on the left of
# a dual: the dual's reflected operator at once, where numpy's ufunc path would reach it (the
# compiled core; the pure backend keeps numpy's path, with the same results). Comparisons
# only for the types numpy compares with a Python float as two doubles: numpy casts the
# float to float16 / float32, and compares a longdouble in its own precision.
_REAL_SCALARS = tuple(dict.fromkeys(np.dtype(c).type for c in "efdgbhilqBHILQ"))
DEFERRING = B.defer_numpy_scalars(_REAL_SCALARS, tuple(
    t for t in _REAL_SCALARS if t not in (np.float16, np.float32, np.longdouble)))
registry.watch_late()  # scipy.special's Python functions, now or when scipy.special is imported
