"""Errors and messages shared by both backends, so they say the same thing."""


class EscapedDualError(RuntimeError):
    """A dual number was used after the differentiation that made it had finished."""


ESCAPED = (
    "this deltaad Dual belongs to a differentiation (trace at level {level}) that has already "
    "finished: it escaped, e.g. through a global, a closure or a container kept after grad/vjp/jvp "
    "returned. Its derivative information is gone. Use deltaad.value(x) to get its value, or "
    "compute with it inside the function being differentiated."
)

NO_FLOAT = (
    "{what}() on a deltaad Dual would silently drop its derivative. Use deltaad.value(x) if you "
    "really want the plain number, or use deltaad's functions (deltaad.sin, deltaad.exp, ...) or "
    "numpy's (np.sin, ...) instead of the math module."
)


DUAL_NEW = (
    "deltaad.Dual.__new__ would make a dual without a trace: create duals with "
    "Dual(value, trace, id, tangent), Tape.input or ForwardLevel.input"
)


def escaped_error(level):
    return EscapedDualError(ESCAPED.format(level=level))


def no_float_error(what):
    return TypeError(NO_FLOAT.format(what=what))


def complex_error(x=None):
    """deltaad differentiates real functions: a complex value where a real one is needed."""
    what = "a complex array" if getattr(x, "ndim", 0) else "a complex value"
    return TypeError(
        "deltaad differentiates real functions; got %s. Split it into real and imaginary parts "
        "(x.real, x.imag) and differentiate with respect to those." % what
    )
