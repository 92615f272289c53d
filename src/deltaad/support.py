"""What deltaad can differentiate, as a Markdown page generated from the rules themselves.

The documentation's "numpy and scipy support" page is this function's output, produced when
the site is built, so the list cannot drift from the code: a function appears because a rule
for it is registered, with the value it chooses at non-differentiable points as the rule
declared it (the elementwise table's ``chosen``, the registry's notes, ``functions.CHOSEN``).
``support_table()`` is the one entry point.
"""

from deltaad._plainnumpy import np

from . import elementwise, functions
from .numpy import complex_array, registry

BOTH = "rev, fwd"


def _name(f):
    """``numpy.linalg.norm`` -> ``linalg.norm``; ``numpy.sin`` -> ``sin``."""
    full = registry.qualified_name(f)
    for prefix in ("numpy.", "scipy.special."):
        if full.startswith(prefix):
            return full[len(prefix):]
    return full


def _grouped(rules):
    """``[(sorted names sharing one rule, note)]``: aliases (``max``/``amax``) on one row."""
    by_rule = {}
    for f, impl in rules.items():
        names, notes = by_rule.setdefault(id(impl), ([], []))
        names.append(_name(f))
        notes.append(registry.NOTES.get(f, ""))
    rows = [(sorted(set(names)), next((n for n in notes if n), "")) for names, notes in by_rule.values()]
    return sorted(rows)


def _code(names):
    return ", ".join("`%s`" % n for n in names)


def _table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def scalar_functions():
    """``[(name, math names, domain, modes, note)]`` for ``deltaad``'s functions on scalars:
    the elementwise table, then the piecewise functions."""
    rows = []
    for e in sorted(elementwise.TABLE, key=lambda e: e.name):
        note = e.chosen
        if e.order is not None:
            o = "called %s(%s, x) with %s" % (e.name, e.order.name, e.order)
            note = "%s; %s" % (o, note) if note else o
        if e.needs:
            note = "values from %s; %s" % (e.needs, note) if note else "values from " + e.needs
        rows.append((e.name, ", ".join(e.math), str(e.domain), BOTH, note))
    for name, (modes, note) in sorted(functions.CHOSEN.items()):
        rows.append((name, "", "all reals", modes, note))
    return rows


def ufuncs():
    """``(differentiable, constant)``: ``[(names, note)]`` and ``[name]`` for numpy ufuncs."""
    return _grouped(registry.UFUNCS), sorted(_name(u) for u in registry.CONSTANT_UFUNCS)


def ufunc_methods():
    return sorted("%s.%s" % (_name(u), method) for (u, method) in registry.METHODS)


def _is_numpy(f):
    return not registry.qualified_name(f).startswith("scipy.")


def numpy_functions():
    """``(differentiable, constant)``: ``[(names, note)]`` and ``[name]`` for numpy functions
    with a rule (``__array_function__``)."""
    rules = {f: impl for f, impl in registry.FUNCTIONS.items() if _is_numpy(f)}
    diff = {f: impl for f, impl in rules.items() if not getattr(impl, "constant", False)}
    const = sorted(_name(f) for f, impl in rules.items() if getattr(impl, "constant", False))
    return _grouped(diff), const


def _scipy_name(name):
    """``scipy.special.erf`` -> ``erf`` (as :func:`_name`); other modules keep their name."""
    return name[len("scipy.special."):] if name.startswith("scipy.special.") else name


def _refused(name):
    return getattr(registry.LATE[name], "refused", False)


def scipy_functions():
    """``[(name, note)]`` of the scipy functions with a rule (used once scipy is imported),
    ufuncs and Python functions alike."""
    return [(_scipy_name(name), registry.late_note(name)) for name in sorted(registry.LATE)
            if not _refused(name)]


def scipy_refused():
    """The scipy functions that refuse duals with an error naming them."""
    return [_scipy_name(name) for name in sorted(registry.LATE) if _refused(name)]


# --------------------------------------------------------------------------------------------
# Coverage: how much of numpy and scipy.special differentiates


def _public(module):
    """The public callables of ``module`` that are functions or ufuncs (not types)."""
    out = {}
    for name in dir(module):
        if name.startswith("_"):
            continue
        f = getattr(module, name, None)
        if isinstance(f, np.ufunc) or callable(f) and not isinstance(f, type):
            out.setdefault(id(f), (name, f))
    return [f for _, f in sorted(out.values(), key=lambda p: p[0])]


def _classify(f):
    """``"differentiable"``, ``"constant"``, ``"raises"`` (numpy dispatches a dual to deltaad,
    which has no rule) or ``"no dispatch"`` (a function outside numpy's dispatch: constructors,
    settings, or code that converts its input with ``np.asarray``)."""
    if isinstance(f, np.ufunc):
        if f in registry.CONSTANT_UFUNCS or registry.late_constant(f):
            return "constant"
        if registry.ufunc_rule(f) is not None:
            return "differentiable"
        return "raises"
    impl = registry.FUNCTIONS.get(f)
    if impl is not None:
        return "constant" if getattr(impl, "constant", False) else "differentiable"
    if getattr(f, "deltaad_original", None) is not None:
        return "differentiable"
    if hasattr(f, "_implementation"):
        return "raises"
    return "no dispatch"


def coverage(scipy=True):
    """``{group: {class: count}}`` for numpy's public callables (``numpy``, ``numpy.linalg``,
    ``numpy.fft``) and, when ``scipy`` and scipy is installed, ``scipy.special``'s ufuncs and
    its Python functions with rules. (Importing scipy.special here is asked for: deltaad
    itself never imports it.)"""
    groups = {"numpy": _public(np), "numpy.linalg": _public(np.linalg),
              "numpy.fft": _public(np.fft)}
    if scipy:
        try:
            from scipy import special
        except ImportError:
            special = None
        if special is not None:
            groups["scipy.special (ufuncs)"] = [f for f in _public(special)
                                                if isinstance(f, np.ufunc)]
    out = {}
    for group, fs in groups.items():
        counts = {"differentiable": 0, "constant": 0, "raises": 0, "no dispatch": 0}
        for f in fs:
            counts[_classify(f)] += 1
        out[group] = counts
    return out


def coverage_table(scipy=True):
    """:func:`coverage` as a Markdown table."""
    cov = coverage(scipy)
    cols = ["differentiable", "constant", "raises", "no dispatch"]
    rows = [[g] + [c[k] for k in cols] + [sum(c.values())] for g, c in cov.items()]
    return _table(["callables of", "differentiable", "constant (derivative 0)",
                   "raise (no rule)", "outside numpy's dispatch", "total"], rows)


def complex_rules():
    """``(ufuncs, functions, constant ufuncs)`` with complex operands: ``[(names, note)]``,
    ``[(names, note)]`` and ``[name]``, from the complex rule tables."""
    complex_array.load_rules()
    def grouped(rules):
        by_rule = {}
        for f, impl in rules.items():
            names, notes = by_rule.setdefault(id(impl), ([], []))
            names.append(_name(f))
            notes.append(complex_array.NOTES.get(f, ""))
        return sorted((sorted(set(n)), next((x for x in notes if x), "")) for n, notes in by_rule.values())

    const = sorted(_name(u) for u in complex_array.CONSTANT_UFUNCS)
    return grouped(complex_array.UFUNCS), grouped(complex_array.FUNCTIONS), const


def support_table():
    """The supported functions as Markdown (headings, tables), read from the rules."""
    # first: classifying every function takes up the late rules and constants (scipy's), so
    # the tables below list them whatever this process called before
    coverage_rows = coverage_table()
    modes_note = ("*Modes*: `rev` is reverse mode (`grad`, `vjp`, `jacrev`), `fwd` forward mode "
                  "(`jvp`, `jacfwd`); every differentiable rule works in both and nests to any "
                  "order (`hessian`, reverse-over-reverse, ...). *Constant* functions return "
                  "plain values: their derivative is zero where it exists.")
    out = ["## Scalar functions", "",
           "`deltaad.<name>` on floats and scalar duals (and, through numpy, on arrays), with "
           "`math`'s values and domain errors; numpy's ufunc of the same name works on scalar "
           "duals too, with numpy's values.", "", modes_note, ""]
    out += _table(["function", "`math` name", "domain", "modes", "at non-differentiable points"],
                  [["`%s`" % n, m, dom, modes, note] for n, m, dom, modes, note in scalar_functions()])
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
    out += _table(["method", "modes"], [["`%s`" % n, BOTH] for n in ufunc_methods()])

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

    cu, cf, cc = complex_rules()
    out += ["## Complex numbers", "",
            "With complex operands (complex duals, or plain complex numbers and arrays meeting "
            "real duals); values are numpy's, `cmath`'s or Python's own. See [Complex "
            "numbers](complex.md) for the conventions. `deltaad.cmath` has every function of "
            "`cmath`, with the derivatives of the ufuncs of the same names.", "",
            "Operators: `+ - * / ** @`, unary `-`, `abs`, `.conjugate()`, `.real`, `.imag` "
            "(`//` and `%` raise, as in Python).", ""]
    out += _table(["ufunc", "modes", "at non-differentiable points"],
                  [[_code(names), BOTH, note] for names, note in cu])
    out += ["", "Constant ufuncs on complex numbers (a plain result): " + _code(cc) + ".", ""]
    out += _table(["function", "modes", "notes"], [[_code(n), BOTH, note] for n, note in cf])
    out += ["", "ufunc methods with complex operands: " + _code(sorted(
        "%s.%s" % (_name(u), m) for (u, m) in complex_array.METHODS)) + ".", ""]

    out += ["## scipy", "",
            "scipy is optional and deltaad never imports it. Once the program has imported "
            "`scipy.special` (`scipy.linalg`, `scipy.fft`, `scipy.signal`), these functions "
            "work on duals, with scipy's own values. The ufuncs (`scipy.special`'s, listed "
            "by their bare names) reach deltaad through numpy's dispatch; the others "
            "(`logsumexp`, `softmax`, `scipy.linalg.expm`, ...) are Python functions that "
            "convert their input with `np.asarray`: deltaad replaces them in their module by "
            "versions that call its rule when an argument is a dual and scipy's function "
            "otherwise (a name bound with `from scipy.linalg import ...` *before* `import "
            "deltaad` keeps scipy's original: import deltaad first). See [Arrays](arrays.md) "
            "for `scipy.stats`' distributions.", ""]
    out += _table(["function", "modes", "at non-differentiable points"],
                  [["`%s`" % n, BOTH, note] for n, note in scipy_functions()])
    out += ["", "These raise an error naming them on duals (no rule yet): "
            + _code(scipy_refused()) + "."]
    out += ["", "Other scipy functions convert their arguments with `np.asarray`, which "
            "raises `TypeError` on a dual rather than drop its derivative: differentiate the "
            "numpy code around them, or give them a rule with `deltaad.defvjp` / "
            "`deltaad.custom_vjp`. Outside a differentiation `scipy.optimize` and "
            "`scipy.integrate` *call* your functions with plain arrays: hand them deltaad's "
            "gradients as `jac=` / `hess=` (see the examples).", "",
            "Solvers and interpolants *inside* a differentiated function (their result carries "
            "scipy's value; see [Arrays](arrays.md) for how each is differentiated): "
            "`scipy.optimize`'s `brentq`, `brenth`, `ridder`, `bisect`, `root_scalar`, "
            "`fsolve`, `root`, `minimize`, `minimize_scalar`, "
            "`least_squares` (the implicit function's derivative, every order); "
            "`scipy.integrate`'s `quad` (and `dblquad`, `tplquad`, `nquad`) and `solve_ivp` "
            "with `RK45`, `RK23`, `DOP853` (the derivative of scipy's discretisation); "
            "`scipy.interpolate`'s `CubicSpline`, `PPoly`, `BPoly`, `PchipInterpolator`, "
            "`Akima1DInterpolator`, `BSpline`, `interp1d`, `RegularGridInterpolator` evaluated "
            "at dual points (scipy's own derivatives).", ""]
    out += ["## Coverage", "",
            "How many of numpy's public callables and of scipy.special's ufuncs differentiate "
            "(computed from the rules when this page was built, by "
            "`deltaad.support.coverage()`). *Raise*: numpy hands a dual to deltaad, which has "
            "no rule and says so. *Outside numpy's dispatch*: constructors (`zeros`, "
            "`arange`), settings, types' helpers and functions that convert their input with "
            "`np.asarray`; on a dual they return a constant or raise `TypeError`.", ""]
    out += coverage_rows
    return "\n".join(out) + "\n"
