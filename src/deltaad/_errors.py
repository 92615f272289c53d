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


def escaped_error(level):
    return EscapedDualError(ESCAPED.format(level=level))


def no_float_error(what):
    return TypeError(NO_FLOAT.format(what=what))


def complex_error(x=None):
    """A complex value reached a rule that takes real values only."""
    what = "a complex array" if getattr(x, "ndim", 0) else "a complex value"
    return TypeError(
        "deltaad: this operation's derivative rule takes real values, and got %s. The "
        "functions with complex rules are listed under 'Complex numbers' in deltaad's "
        "documentation; otherwise split the value into real and imaginary parts (z.real, "
        "z.imag)." % what
    )
