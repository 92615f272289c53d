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


KEPT_INTERMEDIATE = (
    "a deltaad Dual computed inside a checkpointed function or loop body was kept (e.g. in a list "
    "or a global) and used after it returned; checkpointing drops such values from the tape. "
    "Return every value a checkpointed function computes, or compute it outside the checkpoint."
)


def kept_intermediate_error():
    return EscapedDualError(KEPT_INTERMEDIATE)


class CheckpointError(RuntimeError):
    """The re-run of a checkpointed function or loop step differs from its first run."""


DIVERGENCE = (
    "{who}: the re-run differs from the first run ({what}). A checkpointed function (a loop "
    "body) is run again during the backward sweep and must compute the same thing from the same "
    "arguments and captured values: it must not depend on state that changes in between (a "
    "global, a counter, a random draw, an iterator), nor keep or return duals it did not "
    "compute or receive."
)


def divergence_error(who, what):
    return CheckpointError(DIVERGENCE.format(who=who, what=what))


def step_reads_error(who, index, ids, allowed):
    extra = sorted(set(ids) - set(allowed))[:5]
    where = "a step" if index is None else "step %d" % index
    return divergence_error(who, "%s read variables %s that the loop's run did not read"
                            % (where, extra))
