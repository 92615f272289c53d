"""deltaad's own view of Python's ``math`` and ``cmath`` modules.

While a differentiation is open, the interpreter's ``math`` and ``cmath`` modules answer
attribute look-ups with deltaad's functions (:mod:`deltaad.stdmath`), so that code written
against them differentiates unchanged. deltaad's rules compute with floats and must reach the
C functions themselves, at full speed and without going round in a circle: they use these
copies, module objects holding the same functions, which nothing switches.
"""

import cmath as _cmath
import math as _math
import types as _types


def _copy(module):
    copy = _types.ModuleType(module.__name__, module.__doc__)
    copy.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    return copy


math = _copy(_math)
cmath = _copy(_cmath)
