"""Errors and messages shared by both backends, so they say the same thing.

A conversion that would drop a derivative (``float(x)``, ``math.isnan(x)``, ``a[i] = x`` into
a float array, ``np.asarray(x, dtype=float)``...) reaches deltaad as one of the dual's
``__float__``/``__int__``/``__complex__``/``__array__``, whoever asked. The message names what
the user wrote: :func:`conversion_site` reads the instruction the calling Python frame was
running (a call, a subscript store, a ``%`` format) and the source it came from, which is the
same for both backends (the compiled core adds no frame; the pure backend's dunder frames
are skipped).
"""

import ast
import builtins
import dis
import linecache
import sys


class EscapedDualError(RuntimeError):
    """A dual number was used after the differentiation that made it had finished."""


ESCAPED = (
    "this deltaad Dual belongs to a differentiation (trace at level {level}) that has already "
    "finished: it escaped, e.g. through a global, a closure or a container kept after grad/vjp/jvp "
    "returned. Its derivative information is gone. Use deltaad.value(x) to get its value, or "
    "compute with it inside the function being differentiated."
)


DUAL_NEW = (
    "deltaad.Dual.__new__ would make a dual without a trace: create duals with "
    "Dual(value, trace, id, tangent), Tape.input or ForwardLevel.input"
)


def escaped_error(level):
    return EscapedDualError(ESCAPED.format(level=level))


def complex_error(x=None):
    """A complex value reached a rule that takes real values only."""
    what = "a complex array" if getattr(x, "ndim", 0) else "a complex value"
    return TypeError(
        "deltaad: this operation's derivative rule takes real values, and got %s. The "
        "functions with complex rules are listed under 'Complex numbers' in deltaad's "
        "documentation; otherwise split the value into real and imaginary parts (z.real, "
        "z.imag)." % what
    )


# --------------------------------------------------------------------------------------------
# Conversions that would drop a derivative: which operation asked


_CONVERSIONS = frozenset(("__float__", "__int__", "__complex__", "__index__", "__array__"))
_DUNDER_HOMES = frozenset(("deltaad._pure", "deltaad.numpy.array", "deltaad.numpy.complex_array"))


def _user_frame():
    """The frame that asked for the conversion: past this module, the duals' conversion
    methods (pure backend) and numpy's own Python code (``np.asarray_chkfinite`` ...)."""
    f = sys._getframe(1)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if mod == __name__ or (mod in _DUNDER_HOMES and f.f_code.co_name in _CONVERSIONS):
            f = f.f_back
        elif mod == "numpy" or mod.startswith("numpy."):
            f = f.f_back
        else:
            return f
    return None


_SEEN = {}  # (id(code), lasti) -> (code, instruction): code objects equal by value may differ in source


def _instruction(code, lasti):
    """``(opname, argrepr, source text of the instruction's expression)`` or None."""
    hit = _SEEN.get((id(code), lasti))
    if hit is not None and hit[0] is code:
        return hit[1]
    if len(_SEEN) > 256:
        _SEEN.clear()
    found = _find_instruction(code, lasti)
    _SEEN[(id(code), lasti)] = (code, found)
    return found


def _find_instruction(code, lasti):
    for ins in dis.get_instructions(code):
        if ins.offset == lasti:
            text = None
            pos = getattr(ins, "positions", None)
            if pos is not None and pos.lineno is not None and pos.col_offset is not None:
                lines = linecache.getlines(code.co_filename)
                if pos.end_lineno is not None and pos.end_lineno <= len(lines):
                    chunk = "".join(lines[pos.lineno - 1:pos.end_lineno]).encode("utf-8")
                    # offsets are in UTF-8 bytes, the end one on the last line
                    last = len("".join(lines[pos.lineno - 1:pos.end_lineno - 1]).encode("utf-8"))
                    text = chunk[pos.col_offset:last + pos.end_col_offset].decode("utf-8", "replace")
            return ins.opname, ins.argrepr, text
        if ins.offset > lasti:
            break
    return None


def _resolve(expr, frame):
    """The object a dotted name (``math.isnan``, ``np.float64``) names in ``frame``, or None."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    name = expr.id
    ns = frame.f_locals
    if name in ns:
        obj = ns[name]
    elif name in frame.f_globals:
        obj = frame.f_globals[name]
    elif hasattr(builtins, name):
        obj = getattr(builtins, name)
    else:
        return None
    for p in reversed(parts):
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


class Site:
    """Where a conversion was asked for: ``kind`` is ``"call"`` (``callee`` is the text of the
    function called, ``func`` the object when it could be found), ``"store"`` (``target`` is
    the subscript stored into), ``"format"`` (``%``) or None (unknown); ``where`` is
    ``file:line``."""

    __slots__ = ("kind", "callee", "func", "target", "where")

    def __init__(self, kind=None, callee=None, func=None, target=None, where=None):
        self.kind, self.callee, self.func, self.target, self.where = kind, callee, func, target, where


def conversion_site():
    """The :class:`Site` of the conversion being refused (called from the error builders)."""
    try:
        f = _user_frame()
        if f is None:
            return Site()
        where = "%s:%d" % (f.f_code.co_filename, f.f_lineno)
        ins = _instruction(f.f_code, f.f_lasti)
        if ins is None:
            return Site(where=where)
        opname, argrepr, text = ins
        node = None
        if text:
            try:
                node = ast.parse(text.strip(), mode="eval").body
            except SyntaxError:
                node = None
        if opname == "STORE_SUBSCR":
            return Site("store", target=text.strip() if text else None, where=where)
        if opname == "BINARY_OP" and argrepr.startswith("%"):
            return Site("format", where=where)
        if (opname.startswith("CALL") or opname == "PRECALL") and isinstance(node, ast.Call):
            func = node.func
            callee = ast.unparse(func)
            if isinstance(func, ast.Attribute) and func.attr == "__setitem__":
                return Site("store", target="%s[...]" % ast.unparse(func.value), where=where)
            return Site("call", callee=callee, func=_resolve(func, f), where=where)
        return Site(where=where)
    except Exception:  # the message is a courtesy: never let finding it fail the error
        return Site()


_MODULE_FIX = {
    "math": "deltaad.math.{name}(x): `from deltaad import math` in place of `import math` makes "
            "every function of the math module take duals",
    "cmath": "deltaad.cmath.{name}(z): `from deltaad import cmath` in place of `import cmath` "
             "makes every function of the cmath module take duals (real or complex)",
}


def _module_of(func):
    mod = getattr(func, "__module__", None)
    if mod is None:
        self = getattr(func, "__self__", None)
        mod = getattr(self, "__name__", None) if self is not None else None
    return mod or ""


NUMPY_CONVERTERS = ("array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray",
                    "asarray_chkfinite")
# numpy's float constructors, which give arrays duals can be stored in while differentiating
NUMPY_CONSTRUCTORS = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                      "full_like")


def conversion_message(what, array=False, dtype=None, site=None):
    """The text of the error for converting a dual to a plain ``what`` (``"float"``,
    ``"int"``, ``"complex"`` or ``"array"`` with a ``dtype``): it names the operation found at
    ``site`` and the fix for that operation."""
    if site is None:
        site = conversion_site()
    dual = "a deltaad array dual" if array else "a deltaad Dual"
    plain = {"float": "a plain float", "int": "a plain int", "complex": "a plain complex number",
             "array": "a plain numpy array of %s" % dtype}[what]
    value = "deltaad.value(x) if you really want the plain number" + ("s" if array else "")
    text = _text(what, dual, plain, value, site)
    return text + (" The conversion is at %s." % site.where if site.where else "")


def _text(what, dual, plain, value, site):
    if site.kind == "store":
        target = site.target or "a[i]"
        base, _, idx = target.partition("[")
        idx = idx[:-1] if idx.endswith("]") else "i"
        return (
            "storing %s into a float array (%s = ...) would silently drop its derivative: a "
            "numpy float array holds plain numbers. Make the array inside the differentiated "
            "function with np.zeros / np.empty / np.zeros_like... (called as np.<name>: those "
            "take duals while deltaad differentiates), or write %s = %s.at[%s].set(value) when "
            "%s is a deltaad array (deltaad.at(%s)[%s].set(value) for a plain numpy array), or "
            "collect the values in a list and build the array with np.stack or deltaad.asarray."
            % (dual, target, base, base, idx, base, base, idx)
        )
    if site.kind == "format":
        return (
            "formatting %s with %% ('%%f' %% x) converts it to %s, which would silently drop "
            "its derivative. Use format(x, '.6f') or an f-string (f'{x:.6f}'), which work on "
            "duals, or %s." % (dual, plain, value)
        )
    if site.kind == "call":
        func, callee = site.func, site.callee
        mod = _module_of(func)
        name = getattr(func, "__name__", callee.rpartition(".")[2])
        if isinstance(func, type) and func not in (float, int, complex) and (
                mod == "numpy" or mod.startswith("numpy.")):  # np.float64(x)
            return (
                "%s(x) on %s converts it to %s, which would silently drop its derivative. Keep "
                "x as it is (a dual works wherever a float does in arithmetic), or use %s."
                % (callee, dual, plain, value)
            )
        if func is float or func is int or func is complex:
            if what == "complex" or func is complex:
                return (
                    "%s(x) on %s would silently drop its derivative. Build a complex number "
                    "from duals with arithmetic (x + 1j * y, deltaad.cmath.rect(r, phi)), which "
                    "keeps the derivative, or use %s." % (callee, dual, value)
                )
            if func is int:
                return (
                    "%s(x) on %s would drop its derivative (an integer has none). Write "
                    "int(deltaad.value(x)) to say so, or use round(x), math.floor(x) or "
                    "math.ceil(x), which give plain integers from duals." % (callee, dual)
                )
            return (
                "%s(x) on %s would silently drop its derivative. Keep x as it is (a dual "
                "works wherever a float does in arithmetic, and deltaad.math / numpy functions "
                "take it), or use %s." % (callee, dual, value)
            )
        if mod in _MODULE_FIX and "." not in callee:  # ``from math import sin`` bound it
            return (
                "%s(x) calls %s.%s itself, bound to a name before deltaad could make it take "
                "duals (as ``from %s import %s`` does): it converts its argument to %s, which "
                "would silently drop the "
                "derivative of %s. Import it from deltaad (``from deltaad.%s import %s``) or call "
                "it as %s.%s(x): while deltaad differentiates, the %s module's functions take "
                "duals." % (callee, mod, name, mod, name, plain, dual, mod, name, mod, name, mod)
            )
        if mod in _MODULE_FIX:
            return (
                "%s(x) converts its argument to %s, which would silently drop the derivative "
                "of %s. Use %s." % (callee, plain, dual, _MODULE_FIX[mod].format(name=name))
            )
        if mod == "numpy" or mod.startswith("numpy.") or name in ("astype", "asarray", "array"):
            bound = ""
            if "." not in callee and mod == "numpy" and name in NUMPY_CONVERTERS:
                bound = (
                    " It is numpy's %s bound to a name before deltaad could make it take duals "
                    "(as ``from numpy import %s`` does): call it as np.%s(...), which takes "
                    "duals with a float dtype while deltaad differentiates." % (name, name, name)
                )
            return (
                "%s(...) converts %s to %s, which would silently drop its derivative.%s Leave "
                "out the float dtype (np.asarray and np.array of duals give an object array of "
                "scalar duals, which keeps the derivative), build arrays with deltaad.asarray "
                "or np.stack, or use %s." % (callee, dual, plain, bound, value)
            )
        return (
            "%s(...) converts %s to %s, which would silently drop its derivative. If %s is "
            "code you can change, let the dual through (Python arithmetic, deltaad.math, "
            "numpy); otherwise give it a derivative rule (deltaad.custom_vjp, deltaad.defvjp), "
            "or pass it %s." % (callee, dual, plain, callee, value)
        )
    if what == "array":
        return (
            "converting %s to %s would silently drop its derivative. Leave out the float dtype "
            "(np.asarray of an array dual gives an object array of its scalar duals, which "
            "keeps the derivative), use numpy functions on the dual directly, or use %s."
            % (dual, plain, value)
        )
    return (
        "converting %s to %s would silently drop its derivative. Use deltaad's functions "
        "(deltaad.math, numpy) on it, or %s." % (dual, plain, value)
    )


def formatted(what, plain):
    """``float(x)`` / ``int(x)`` of a dual whose plain value is ``plain``: that value when
    Python converts the dual to format a string with ``%`` (``'%.3f' % x``, as ``logging``
    does) -- a string carries no derivative, just as with ``format(x, '.3f')`` and f-strings --
    and otherwise the error naming the conversion and its fix."""
    if what in ("float", "int") and conversion_site().kind == "format":
        return float(plain) if what == "float" else int(plain)
    raise no_float_error(what)


def exact_ratio_error():
    """The TypeError for ``x.as_integer_ratio()`` on a dual: ``statistics.mean``, ``stdev``,
    ``variance`` and ``fractions.Fraction`` compute with exact fractions, which carry no
    derivative. The message names the library function the program called."""
    f = sys._getframe(1)
    called = None
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if mod in ("statistics", "fractions", "decimal"):
            called = "%s.%s" % (mod, f.f_code.co_name)  # the outermost frame of that module
        elif not mod.startswith("deltaad") and called is not None:
            break
        f = f.f_back
    fix = ("Compute it with arithmetic on the duals instead: sum(xs) / len(xs) for a mean, or "
           "numpy (np.mean, np.var, np.std) on them.")
    if called and called.startswith("statistics."):
        name = called.partition(".")[2]
        fix = ("deltaad.statistics.%s takes duals (and so does statistics.%s looked up on the "
               "module while deltaad differentiates: a name bound before, as `from statistics "
               "import %s` binds it, is statistics' own)." % (name, name, name))
    return TypeError(
        "%s converts a deltaad Dual to an exact fraction (as_integer_ratio), which would "
        "silently drop its derivative. %s" % (called or "as_integer_ratio()", fix))


def no_float_error(what, dtype=None, array=False):
    """The TypeError for converting a dual to a plain ``what``: ``"float"``, ``"int"``,
    ``"complex"``, or ``"array"`` (with the requested ``dtype``)."""
    return TypeError(conversion_message(what, array=array or what == "array", dtype=dtype))


KEPT_INTERMEDIATE = (
    "a deltaad Dual computed inside a checkpointed function or loop body was kept (e.g. in a list "
    "or a global) and used after it returned; checkpointing drops such values from the tape. "
    "Return every value a checkpointed function computes, or compute it outside the checkpoint."
)


def trace_call_error():
    """``A.trace()`` on an array dual: ``A.trace`` is the differentiation it belongs to."""
    return TypeError(
        "x.trace on a deltaad dual is the differentiation it belongs to, not numpy's "
        "ndarray.trace method: write np.trace(A) (or np.trace(A, offset, axis1, axis2)), which "
        "takes array duals.")


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
