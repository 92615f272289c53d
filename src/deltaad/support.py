"""What deltaad can differentiate, as a Markdown page generated from the rule registries.

The documentation's "numpy and scipy support" page is this function's output, produced when
the site is built, so the list cannot drift from the code: a function appears because a rule
for it is registered, not because someone wrote it down. ``support_table()`` is the one entry
point; everything else here reads today's registries (``deltaad.arrays``' rule dicts, the scalar
functions of ``deltaad.functions``, scipy.special's ufuncs in ``deltaad.array_rules``).

Only the notes on values chosen at non-differentiable points are written by hand
(``AT_KINKS``): they are facts about individual rules that the registries do not carry.
"""

from . import array_rules, arrays, functions

BOTH = "rev, fwd"
CONSTANT = "constant"

# Values at non-differentiable points and domain edges, by function name (as in the rules'
# docstrings and tests). A name listed here but no longer registered is simply not shown.
AT_KINKS = {
    "abs": "0 at 0 (nan at nan)",
    "absolute": "0 at 0 (nan at nan)",
    "fabs": "0 at 0",
    "maximum": "½ to each argument at a tie; a nan argument is the result",
    "minimum": "½ to each argument at a tie; a nan argument is the result",
    "fmax": "½ to each argument at a tie; a nan argument is ignored",
    "fmin": "½ to each argument at a tie; a nan argument is ignored",
    "clip": "1 for `lo ≤ x ≤ hi` (bounds included); outside, to the bound taken "
            "(`hi` when `lo > hi`)",
    "hypot": "(0, 0) at the origin",
    "arctan2": "nan at (0, 0)",
    "sqrt": "inf at 0",
    "cbrt": "inf at 0",
    "arcsin": "inf at ±1",
    "arccos": "-inf at ±1",
    "arccosh": "inf at 1",
    "power": "`a ** b` in `b`: 0 at `a == 0`, nan for `a < 0`; in `a`: 0 at `a == b == 0`",
    "float_power": "as `power`",
    "sign": "0 everywhere (a constant)",
    "floor": "0 everywhere (a constant)",
    "ceil": "0 everywhere (a constant)",
    "max": "the cotangent is split evenly among tied maxima",
    "amax": "the cotangent is split evenly among tied maxima",
    "min": "the cotangent is split evenly among tied minima",
    "amin": "the cotangent is split evenly among tied minima",
    "ptp": "ties as `max` and `min`",
    "sort": "follows the stable sorting permutation",
    "norm": "0 at the zero vector",
    "vector_norm": "0 at the zero vector",
    "matrix_norm": "0 at the zero matrix",
    "prod": "exact at zeros (no division by the zero entry)",
    "cumprod": "exact at zeros",
    "det": "the cofactor matrix, also at a singular matrix (second derivatives there raise)",
    "remainder": "1 in the dividend; in the divisor `-floor(a / b)` (jumps ignored)",
    "fmod": "1 in the dividend; in the divisor `-trunc(a / b)` (jumps ignored)",
    "pad": "not `reflect_type='odd'`",
}


def _name(f):
    """``numpy.linalg.norm`` -> ``linalg.norm``; ``numpy.sin`` -> ``sin``."""
    full = arrays._fullname(f)
    for prefix in ("numpy.", "scipy.special."):
        if full.startswith(prefix):
            return full[len(prefix):]
    return full


def _base(name):
    return name.rsplit(".", 1)[-1]


def _note(*names):
    for n in names:
        if _base(n) in AT_KINKS:
            return AT_KINKS[_base(n)]
    return ""


def _is_constant_rule(impl):
    """A registered function whose result carries no derivative (``argmax``, ``round``...)."""
    return getattr(impl, "__qualname__", "").startswith("_plain.")


def _grouped(registry, key=_name):
    """``[(sorted names sharing one rule, rule)]``: aliases (``max``/``amax``) on one row."""
    by_rule = {}
    for f, impl in registry.items():
        by_rule.setdefault(id(impl), (impl, []))[1].append(key(f))
    rows = [(sorted(set(names)), impl) for impl, names in by_rule.values()]
    return sorted(rows, key=lambda r: r[0][0])


def _code(names):
    return ", ".join("`%s`" % n for n in names)


def _table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def scalar_functions():
    """``[(name, modes, note)]`` for the functions ``deltaad`` exports for floats and duals."""
    rows = []
    for name in sorted(vars(functions)):
        obj = getattr(functions, name)
        if name.startswith("_") or name == "value" or not callable(obj) or isinstance(obj, type):
            continue
        if getattr(obj, "__module__", None) == "math":
            continue
        constant = name in ("sign", "floor", "ceil")
        rows.append((name, CONSTANT if constant else BOTH, AT_KINKS.get(name, "")))
    return rows


def ufuncs():
    """``(differentiable, constant)``: ``[(names, note)]`` and ``[name]`` for numpy ufuncs on
    array duals (and scalar duals)."""
    diff = [(names, _note(*names)) for names, _ in _grouped(arrays.UFUNC_RULES)]
    return diff, sorted(_name(u) for u in arrays.PLAIN_UFUNCS)


def ufunc_methods():
    """``[(name, modes)]`` for ``ufunc.reduce`` / ``accumulate`` / ``outer``."""
    return sorted(("%s.%s" % (_name(u), method), BOTH) for (u, method) in arrays.REDUCE_RULES)


def numpy_functions():
    """``(differentiable, constant)``: ``[(names, note)]`` and ``[name]`` for numpy functions
    with a rule (``__array_function__``)."""
    diff, const = [], []
    for names, impl in _grouped(arrays.FUNCTION_RULES):
        if _is_constant_rule(impl):
            const += names
        else:
            diff.append((names, _note(*names)))
    return diff, sorted(const)


def scipy_functions():
    """``[name]`` of scipy.special's ufuncs that have a rule (used once scipy is imported)."""
    return sorted("scipy.special.%s" % n for n in getattr(array_rules, "_SCIPY_UFUNCS", {}))


def support_table():
    """The supported functions as Markdown (headings, tables), read from the registries."""
    modes_note = ("*Modes*: `rev` is reverse mode (`grad`, `vjp`, `jacrev`), `fwd` forward mode "
                  "(`jvp`, `jacfwd`); every "
                  "differentiable rule works in both and nests to any order (`hessian`, "
                  "reverse-over-reverse, ...). *Constant* functions return plain values: their "
                  "derivative is zero where it exists.")
    out = ["## Scalar functions", "",
           "`deltaad.<name>` on floats and scalar duals (and, through numpy, on arrays). "
           "`numpy`'s ufunc of the same name works on scalar duals too.", "",
           modes_note, ""]
    out += _table(["function", "modes", "at non-differentiable points"],
                  [["`%s`" % n, m, note] for n, m, note in scalar_functions()])
    out += ["", "Constants: `deltaad.pi`, `deltaad.e`.", ""]

    out += ["## numpy ufuncs", "",
            "Elementwise, with broadcasting; on array duals, scalar duals and mixtures with "
            "plain arrays. The operators `+ - * / ** @ // % abs -x` map to these.", ""]
    diff, const = ufuncs()
    out += _table(["ufunc", "modes", "at non-differentiable points"],
                  [[_code(names), BOTH, note] for names, note in diff])
    out += ["", "Constant ufuncs (comparisons, predicates, rounding; a plain result): "
            + _code(const) + ".", ""]
    out += ["### ufunc methods", ""]
    out += _table(["method", "modes"], [["`%s`" % n, m] for n, m in ufunc_methods()])

    diff, const = numpy_functions()
    top = [(n, note) for n, note in diff if not n[0].startswith("linalg.")]
    linalg = [(n, note) for n, note in diff if n[0].startswith("linalg.")]
    out += ["", "## numpy functions", "",
            "Reached through numpy's `__array_function__` protocol: call them as usual "
            "(`np.sum(x, axis=0)`).", ""]
    out += _table(["function", "modes", "notes"], [[_code(n), BOTH, note] for n, note in top])
    out += ["", "### numpy.linalg", ""]
    out += _table(["function", "modes", "notes"], [[_code(n), BOTH, note] for n, note in linalg])
    out += ["", "### Functions whose result carries no derivative", "",
            "These accept duals and return plain values (indices, booleans, shapes, rounded "
            "numbers): " + _code(const) + ".", ""]

    out += ["## scipy", "",
            "scipy is optional. Once the program has imported `scipy.special`, these ufuncs "
            "work on duals: " + _code(scipy_functions()) + ". Other scipy functions convert "
            "their arguments with `np.asarray`, which raises `TypeError` on a dual rather "
            "than drop its derivative: differentiate the numpy code around them, or give "
            "them a rule with `deltaad.custom_vjp`. `scipy.optimize` and `scipy.integrate` "
            "*call* your functions with plain arrays: hand them deltaad's gradients as "
            "`jac=` / `hess=` (see the examples).", ""]
    return "\n".join(out) + "\n"

