"""deltaad's own view of the ``numpy`` module.

While a differentiation is open, the interpreter's ``numpy`` module answers look-ups of its
array constructors and converters with deltaad's (:mod:`deltaad.stdmath`: ``np.zeros`` called
from the user's code gives an array duals can be stored in). deltaad's rules make numpy's float
arrays and must reach numpy's functions at full speed: they use this copy, a module object
holding the same functions (and numpy's lazy submodules), which nothing switches.
"""

import types as _types

import numpy as _numpy

np = _types.ModuleType(_numpy.__name__, _numpy.__doc__)
np.__dict__.update({k: v for k, v in vars(_numpy).items() if k not in ("__name__", "__doc__")})
