"""deltaad: reverse- and forward-mode automatic differentiation of ordinary Python code.

Built on the monadic Delta of Krawiec et al. (*Provably Correct, Asymptotically Efficient,
Higher-Order Reverse-Mode Automatic Differentiation*): every primitive appends one binding to a
tape and one linear sweep computes all adjoints. The documentation's design page
(``docs/design.md``) describes the architecture.
"""

from ._backend import B as _B
from ._backend import name as backend
from ._errors import EscapedDualError
from . import delta
from . import math  # the math module, differentiable: `from deltaad import math`
from . import stdmath  # ... and `import math` code too, while a differentiation is open
from . import numpy  # declares the numpy rules and installs the hooks scalar duals use
from .functions import *  # noqa: F401,F403 -- the elementary functions, from the table
from .functions import __all__ as _functions
from .functions import stop_gradient, value  # (named for readers and the API pages)
from .numpy import ArrayDual, ComplexDual, asarray, at, defconst, defjvp, defvjp, logsumexp, stack
from .pytrees import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten
from .custom import custom_jvp, custom_vjp, primitive
from .compile import CompileWarning, ReplayMismatch, compile
from .batching import vmap
from .checkpointing import CheckpointError, checkpoint, fori_loop, remat, while_loop
from .control import cond, scan, switch
from .support import support_table
from .trace import open_traces
from .transforms import (
    grad, hessian, hvp, jacfwd, jacobian, jacrev, jvp, linearize, make_delta, value_and_grad,
    vjp,
)
from . import implicit  # noqa: F401 (scipy.optimize's solvers, differentiated implicitly)

Dual = _B.Dual

__version__ = "0.1.0"

__all__ = [
    "backend", "Dual", "EscapedDualError", "delta", "math", "cmath", "stdmath",
    "grad", "value_and_grad", "vjp", "jvp", "jacrev", "jacobian", "jacfwd", "hessian", "hvp",
    "linearize", "make_delta", "vmap",
    "open_traces", "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "tree_structure",
    "ArrayDual", "ComplexDual", "asarray", "stack", "at", "logsumexp",
    "custom_vjp", "custom_jvp", "primitive", "defvjp", "defjvp", "defconst", "support_table",
    "compile", "CompileWarning", "ReplayMismatch",
    "checkpoint", "remat", "fori_loop", "while_loop", "CheckpointError", "scan", "cond", "switch",
] + list(_functions)


def __getattr__(name):
    """``deltaad.cmath`` (the differentiable cmath) is imported on first use: it loads the
    complex rule tables, which real-only programs do not need."""
    if name == "cmath":
        import importlib
        return importlib.import_module("deltaad.cmath")
    raise AttributeError("module 'deltaad' has no attribute %r" % name)
