"""deltaad: reverse- and forward-mode automatic differentiation of ordinary Python code.

Built on the monadic Delta of Krawiec et al.: every primitive appends one binding to a tape
and one linear sweep computes all adjoints. See DESIGN.md for the architecture.
"""

from ._backend import B as _B
from ._backend import name as backend
from ._errors import EscapedDualError
from . import delta
from . import numpy_glue as _numpy_glue  # installs the numpy hooks in the backend
from .functions import (
    abs, absolute, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, cbrt, ceil, clip,
    cos, cosh, e, erf, erfc, exp, exp2, expm1, floor, fmax, fmin, hypot, log, log1p, log2, log10,
    logaddexp, pi, power, sigmoid, sign, sin, sinh, softplus, sqrt, tan, tanh, value,
)
from .pytrees import tree_flatten, tree_map, tree_unflatten
from .arrays import ArrayDual, asarray, at, stack
from .array_rules import logsumexp, stop_gradient
from .custom import custom_jvp, custom_vjp, primitive
from .checkpointing import CheckpointError, checkpoint, fori_loop, remat, while_loop
from .transforms import (
    grad, hessian, jacfwd, jacobian, jacrev, jvp, make_delta, open_traces, value_and_grad, vjp,
)

Dual = _B.Dual

__version__ = "0.1.0"

__all__ = [
    "backend", "Dual", "EscapedDualError", "delta", "value",
    "grad", "value_and_grad", "vjp", "jvp", "jacrev", "jacobian", "jacfwd", "hessian", "make_delta",
    "open_traces", "tree_flatten", "tree_unflatten", "tree_map",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "exp", "expm1", "exp2", "log", "log1p", "log2", "log10",
    "sqrt", "cbrt", "hypot", "power", "abs", "absolute", "sign", "floor", "ceil", "erf", "erfc",
    "sigmoid", "softplus", "logaddexp", "fmin", "fmax", "clip", "pi", "e",
    "ArrayDual", "asarray", "stack", "at", "logsumexp", "stop_gradient",
    "custom_vjp", "custom_jvp", "primitive",
    "checkpoint", "remat", "fori_loop", "while_loop", "CheckpointError",
]
