"""Where the derivative rules for numpy (and scipy) functions are kept and found.

numpy hands every function call on a dual to deltaad through its dispatch protocols
(``__array_ufunc__`` for ufuncs, ``__array_function__`` for functions); deltaad looks the
function up here. The rules themselves are declared by the rule families of this package
(``elementwise``, ``reductions``, ``shape``, ``products``, ``linalg``, ``constant``) and by users,
with :mod:`deltaad.numpy.define`. A function nobody declared raises an error naming it -- never a
silently wrong (derivative-free) result.

- ``UFUNCS[ufunc]``: the rule for a ufunc call, ``rule(*operands) -> result``;
- ``SCALAR_UFUNCS[ufunc]``: the rule when every operand is a scalar (a scalar result, as numpy
  gives for scalars); without one, the array rule's 0-d result is turned back into a scalar;
- ``CONSTANT_UFUNCS``: ufuncs whose result has derivative zero (comparisons, ``floor``...):
  they are computed on plain values;
- ``METHODS[(ufunc, method)]``: ``ufunc.reduce``, ``ufunc.accumulate``, ``ufunc.outer``;
- ``FUNCTIONS[func]``: an implementation with ``func``'s signature, for ``__array_function__``;
- ``NOTES[f]``: the value a rule chooses where ``f`` is not differentiable (shown in the
  documentation's table of supported functions, which is generated from this registry);
- ``ELEMENTARY[name]``: the elementwise table's function ``name`` on arrays (what
  ``deltaad.sin(array)`` calls);
- ``LATE``: rules for functions of optional modules (``"scipy.special.erf"``), taken up when
  that module has been imported by the user -- deltaad never imports scipy to find out. A ufunc's
  rule is found through numpy's dispatch like numpy's own. A plain Python function of such a
  module (``scipy.special.logsumexp`` converts its input with ``np.asarray`` and never
  dispatches) is replaced in its module, when the module is imported, by a function that calls
  deltaad's rule when an argument holds a dual and the original otherwise (see
  :func:`install_late`);
- ``COMPLEX``: the complex rule family's dispatch (:mod:`deltaad.numpy.complex_array`), to which
  the real dispatch hands a call with a complex operand; it keeps its own rule tables.
"""

import functools
import importlib.abc
import sys

from deltaad._plainnumpy import np

from ..trace import is_dual

UFUNCS = {}
SCALAR_UFUNCS = {}
CONSTANT_UFUNCS = set()
METHODS = {}
FUNCTIONS = {}
NOTES = {}
ELEMENTARY = {}
LATE = {}  # "module.name" -> (array rule, scalar rule or None, note), or a factory (see below)
COMPLEX = None  # set when deltaad.numpy.complex_array is imported
# numpy function -> (its rule in FUNCTIONS, short path): the short path ``(args, kwargs) ->
# result or None`` records what the rule records for the commonest calls on the reverse trace,
# without the rule's argument checks; taken only while the rule is still FUNCTIONS' own.
SHORT_PATHS = {}


def register(*funcs, note=""):
    """Decorator: ``impl`` implements each numpy function in ``funcs`` (a ``None`` is skipped:
    a function this numpy version lacks) on duals, with the function's own signature; ``note``
    says what it chooses where the function is not differentiable."""

    def deco(impl):
        for f in funcs:
            if f is not None:
                FUNCTIONS[f] = impl
                if note:
                    NOTES[f] = note
        return impl

    return deco


def register_ufunc(ufunc, rule, scalar_rule=None, note=""):
    """``rule`` (and ``scalar_rule`` for scalar operands) answer calls of ``ufunc``; ``ufunc``
    may be the name ``"module.name"`` of a ufunc of an optional module."""
    if isinstance(ufunc, str):
        LATE[ufunc] = (rule, scalar_rule, note)
        return
    UFUNCS[ufunc] = rule
    if scalar_rule is not None:
        SCALAR_UFUNCS[ufunc] = scalar_rule
    else:  # a new rule replaces the old one on scalars too
        SCALAR_UFUNCS.pop(ufunc, None)
    if note:
        NOTES[ufunc] = note


def register_late(name, factory, note=""):
    """Rules for ``name`` (``"scipy.special.gammaln"``), a function of an optional module, made
    by ``factory(f)`` from the function ``f`` itself once the module is imported: for a ufunc,
    ``(array rule, scalar rule or None, note)``; for a plain Python function, its implementation
    on duals (same signature). ``note`` is the support table's note."""
    factory.note = note
    LATE[name] = factory


def _late(name, f):
    late = LATE.get(name)
    if late is None or type(late) is tuple:
        return late
    return late(f)


LATE_CONSTANT = set()  # "module.name" of ufuncs of optional modules with results of derivative 0


def late_constant(ufunc):
    """Whether ``ufunc`` is a ufunc of an optional module declared constant
    (``scipy.special.gammasgn``): then it joins ``CONSTANT_UFUNCS``."""
    if not LATE_CONSTANT or ufunc in UFUNCS or qualified_name(ufunc) not in LATE_CONSTANT:
        return False
    CONSTANT_UFUNCS.add(ufunc)
    return True


def late_name(ufunc):
    """The key of a ufunc's late rule: its qualified name, ``scipy.special._ufuncs.<name>`` for
    scipy's private ufuncs (which its Python functions and scipy.stats call)."""
    return qualified_name(ufunc).partition(" (")[0]


def ufunc_rule(ufunc):
    """The rule for ``ufunc``, registering a late one if its module has been imported."""
    rule = UFUNCS.get(ufunc)
    if rule is None:
        late = _late(late_name(ufunc), ufunc)
        if late is None:
            return None
        register_ufunc(ufunc, *late)
        rule = late[0]
    return rule


def late_note(name):
    """The support table's note of a late rule."""
    late = LATE[name]
    return late[2] if type(late) is tuple else getattr(late, "note", "")


# --------------------------------------------------------------------------------------------
# Plain Python functions of optional modules: dispatching versions, installed on import


def holds_dual(a):
    """Whether ``a`` is a dual, or a list, tuple or object array holding one (at any depth)."""
    if is_dual(a):
        return True
    t = type(a)
    if t is list or t is tuple:
        return any(holds_dual(e) for e in a)
    if isinstance(a, np.ndarray) and a.dtype.kind == "O":  # (a fillable array too)
        return any(holds_dual(e) for e in a.ravel().tolist())
    return False


def dispatching(original, impl):
    """``original`` (a function that converts its input with ``np.asarray``) as a function that
    calls ``impl`` when an argument holds a dual and ``original`` otherwise (plain values keep
    the original's own results, at the cost of one check of the arguments)."""

    @functools.wraps(original)
    def f(*args, **kwargs):
        for a in args:
            if holds_dual(a):
                return impl(*args, **kwargs)
        for a in kwargs.values():
            if holds_dual(a):
                return impl(*args, **kwargs)
        return original(*args, **kwargs)

    f.deltaad_original = original
    FUNCTIONS[f] = impl
    return f


def install_late(module_name):
    """Give the plain Python functions of ``module_name`` that have late rules their
    dispatching versions (in the module's namespace). Names bound from the module before this
    ran (``from scipy.special import logsumexp`` before ``import deltaad``) keep the originals;
    deltaad watches for the import, so importing deltaad first is enough."""
    mod = sys.modules.get(module_name)
    if mod is None:
        return
    for full in list(LATE):
        where, _, name = full.rpartition(".")
        if where != module_name:
            continue
        f = getattr(mod, name, None)
        if f is None or isinstance(f, np.ufunc) or not callable(f) or \
                hasattr(f, "deltaad_original") or type(LATE[full]) is tuple:
            continue
        setattr(mod, name, dispatching(f, LATE[full](f)))


WATCHED = ("scipy.special",)
INSTALLERS = {}  # module name -> functions called with the module once it has been executed


def watch(module_name, installer):
    """Call ``installer(module)`` once ``module_name`` is imported (now, if it already is):
    how rules reach the classes of optional modules (scipy.stats's distributions)."""
    INSTALLERS.setdefault(module_name, []).append(installer)
    mod = sys.modules.get(module_name)
    if mod is not None:
        installer(mod)


def _installed(module_name):
    install_late(module_name)
    mod = sys.modules.get(module_name)
    for installer in INSTALLERS.get(module_name, ()):
        installer(mod)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs :func:`install_late` right after a watched module has been executed (the import
    machinery finds it as usual; only its loader's ``exec_module`` is followed by the install),
    so a ``from scipy.special import logsumexp`` after ``import deltaad`` gets the dispatching
    version. It never imports anything itself."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in WATCHED and fullname not in INSTALLERS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            run(module)
            _installed(fullname)

        loader.exec_module = exec_module
        return spec


def watch_late():
    """Install the late rules of the watched modules already imported, and watch for the
    others' import."""
    for name in WATCHED:
        install_late(name)
    if not any(type(f).__name__ == "_AfterImport" for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())


def qualified_name(f):
    """``module.name`` of a numpy or scipy function, as the user would write it: a ufunc is
    looked up in numpy and in the already imported ``scipy.special``."""
    name = getattr(f, "__name__", None) or repr(f)
    if isinstance(f, np.ufunc):
        if getattr(np, name, None) is f:
            return "numpy." + name
        special = sys.modules.get("scipy.special")
        if special is not None and getattr(special, name, None) is f:
            return "scipy.special." + name
        private = sys.modules.get("scipy.special._ufuncs")
        if private is not None and getattr(private, name, None) is f:
            # a private ufunc that a scipy.special Python function calls (zeta calls _zeta)
            return "scipy.special._ufuncs.%s (called by a scipy.special function)" % name
        return "ufunc " + name
    orig = getattr(f, "deltaad_original", f)
    mod = getattr(orig, "__module__", None) or "numpy"
    if mod.startswith(("numpy", "scipy.")):
        # numpy.linalg._linalg.norm is numpy.linalg.norm to a user (scipy.linalg._basic.inv
        # is scipy.linalg.inv)
        for public in ("numpy.linalg", "numpy.fft", "numpy", ".".join(mod.split(".")[:2])):
            parent = sys.modules.get(public)
            g = getattr(parent, name, None) if parent is not None else None
            if g is not None and (g is f or g is orig):
                mod = public
                break
    return "%s.%s" % (mod, name)


_ADVICE = ("Use a supported function, or give it one with deltaad.defvjp / deltaad.defjvp (or "
           "deltaad.custom_vjp for your own function); the supported list is in deltaad's "
           "documentation.")


def not_implemented(f, method=None, cause=None, on="dual numbers", advice=_ADVICE):
    """The error for a function (or ufunc method) without a rule; ``cause``: the error numpy's
    own code gave on the object arrays of scalar duals; ``on`` and ``advice``: what the values
    were and what to do (the complex rules say their own)."""
    name = qualified_name(f)
    if method is not None:
        name = "%s.%s" % (name, method)
    tried = ""
    if cause is not None:
        tried = (", and numpy's own code for it failed on the object array of scalar duals "
                 "(%s: %s)" % (type(cause).__name__, str(cause).split("\n")[0]))
    return NotImplementedError(
        "deltaad has no derivative rule for %s on %s%s. %s" % (name, on, tried, advice))
