"""The complex dual: a complex number or array as the real dual of its (re, im) pairs.

deltaad's tapes and forward levels hold real numbers only, and keep doing so. A complex value
of shape ``S`` is carried as the real array of shape ``S + (2,)`` of its pairs ``(re, im)`` --
numpy's own memory layout of a complex array, viewed as reals -- and a complex dual is a real
array dual of those pairs (its *packed* form) with a thin wrapper, :class:`ComplexDual`. So the
whole real machinery serves complex numbers unchanged: both backends (which agree bit for bit
because they only ever see reals), reverse and forward mode, nesting, checkpointing. Real-only
programs never meet any of this: their fast paths are untouched.

Every complex operation is one real primitive on packed operands (:class:`CPrimitive`, applied by
:func:`capply`): its *value* is the complex result of numpy's (or cmath's, or Python's) own
complex function on the plain values -- never re-derived from real arithmetic -- and its linear
maps are written in complex arithmetic with one internal convention:

- a *tangent* of ``z = x + iy`` is the complex number ``ẋ + iẏ``;
- a *cotangent* of ``z`` is the complex number ``x̄ + iȳ`` of the real cotangents of its parts.

Under the real inner product ``Re(conj(a) b)`` a rule's vjp is then the adjoint of its jvp:
``c * conj(f'(z))`` for a holomorphic ``f``, ``A^H c`` for a complex-linear ``A``, ``conj(c)`` for
conjugation; the cotangent of a real operand is the real part. The conventions a user sees
(JAX's: a gradient is ``conj(x̄ + iȳ) = x̄ - iȳ``, a cotangent ``w`` seeds ``conj(w)``) are applied
only where values cross the boundary of a transformation: :func:`complex_input`,
:func:`gradient`, :func:`cotangent`, :func:`seed`.

A complex *scalar* keeps the type the plain program would have (Python ``complex`` or a numpy
complex scalar: its *flavour*), because Python's and numpy's complex arithmetic may differ in the
last bit: ``z * w`` on duals computes exactly what ``z * w`` computes on the plain values.
"""

import numbers
import operator

from deltaad._plainnumpy import np

from .._errors import escaped_error, no_float_error
from ..trace import dtype_of, register_dual_type
from ..trace import value as strip
from . import registry
from .array import ArrayDual, Dual, apply, getitem, normalize_index, Primitive

# --------------------------------------------------------------------------------------------
# Packing: plain complex values <-> real arrays of pairs

_REAL_OF = {
    np.dtype(np.complex64): np.dtype(np.float32),
    np.dtype(np.complex128): np.dtype(np.float64),
    np.dtype(np.clongdouble): np.dtype(np.longdouble),
}
_COMPLEX_OF = {r: c for c, r in _REAL_OF.items()}
_PLAIN_COMPLEX = (complex, np.complexfloating)


def complex_dtype(real_dtype):
    """The complex dtype whose parts have ``real_dtype`` (float16 parts widen to complex64)."""
    return _COMPLEX_OF.get(np.dtype(real_dtype), np.dtype(np.complex64)
                           if np.dtype(real_dtype).itemsize < 4 else np.dtype(np.complex128))


def real_dtype(cdtype):
    return _REAL_OF[np.dtype(cdtype)]


def pack(w):
    """The real array of pairs (shape ``S + (2,)``) of a plain complex (or real) number or array:
    a view of a contiguous complex array, so packing an input costs no copy."""
    a = np.asarray(w)
    if a.dtype.kind != "c":
        a = a.astype(np.result_type(a.dtype, np.complex64))
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return a.reshape(a.shape + (1,)).view(_REAL_OF[a.dtype])


def unpack(p, flavour=None):
    """The plain complex value of the real array of pairs ``p``: an array (``flavour`` None) or a
    scalar of type ``flavour`` (``complex``, ``np.complex128``...). Exact: no arithmetic."""
    a = np.ascontiguousarray(p)
    if a.dtype not in _COMPLEX_OF:
        a = a.astype(np.float32 if a.dtype.itemsize < 4 else np.float64)
    c = a.view(_COMPLEX_OF[a.dtype])[..., 0]
    if flavour is None:
        return c
    return flavour(c[()])


def is_plain_complex(x):
    """A plain complex number or complex ndarray (no dual inside)."""
    return isinstance(x, _PLAIN_COMPLEX) or (isinstance(x, np.ndarray) and x.dtype.kind == "c")


def flavour_of(x):
    """The scalar type a plain complex value keeps (None for an array)."""
    if isinstance(x, np.ndarray):
        return None
    t = type(x)
    return t if t is complex or isinstance(x, np.complexfloating) else complex


# --------------------------------------------------------------------------------------------
# The complex dual


class ComplexDual:
    """A complex dual number or array: the real array dual ``packed`` of its ``(re, im)`` pairs
    (shape ``S + (2,)``), and the scalar type it stands for (``flavour``: ``complex``,
    ``np.complex128``, ... or None for an array). Its ``value`` is the plain complex value (or a
    complex dual of an outer differentiation), its ``tangent`` a complex tangent. numpy
    functions and operators on it are differentiated (see the documentation's list); it is
    immutable, like the real array dual."""

    __slots__ = ("packed", "flavour", "__weakref__")
    __array_priority__ = 1001.0
    __hash__ = None

    def __init__(self, packed, flavour=None):
        self.packed = packed
        self.flavour = flavour

    # -- what the transformations and trace functions read --
    @property
    def value(self):
        v = self.packed.value
        if type(v) is ArrayDual:
            return ComplexDual(v, self.flavour)
        return unpack(v, self.flavour)

    @property
    def trace(self):
        return self.packed.trace

    @property
    def id(self):
        return self.packed.id

    @property
    def tangent(self):
        t = self.packed.tangent
        if t is None:
            return None
        if type(t) is ArrayDual:
            return ComplexDual(t, self.flavour)
        return unpack(t, self.flavour)

    # -- attributes --
    @property
    def shape(self):
        return self.packed.shape[:-1]

    @property
    def ndim(self):
        return len(self.packed.shape) - 1

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self):
        return complex_dtype(self.packed.dtype)

    @property
    def real(self):
        return getitem(self.packed, (Ellipsis, 0))

    @property
    def imag(self):
        return getitem(self.packed, (Ellipsis, 1))

    @property
    def T(self):
        return function(np.transpose, (self,), {})

    @property
    def mT(self):
        return function(np.swapaxes, (self, -1, -2), {})

    def conjugate(self):
        load_rules()
        return OPS["conjugate"](self)

    conj = conjugate

    def __len__(self):
        s = self.shape
        if not s:
            raise TypeError("len() of unsized object")
        return s[0]

    def __iter__(self):
        s = self.shape
        if not s:
            raise TypeError("iteration over a 0-d array")
        for i in range(s[0]):
            yield self[i]

    def __getitem__(self, idx):
        return cgetitem(self, idx)

    def __setitem__(self, idx, v):
        raise TypeError(
            "deltaad complex duals are immutable under differentiation: instead of z[i] = v, "
            "build the array functionally (np.where, np.concatenate, np.stack)")

    # -- numpy protocols --
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ufunc_dispatch(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return function(func, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(z)``: the object array of ``z``'s scalar complex duals (as for a real
        array dual), so numpy's own Python code for a function without a complex rule runs on
        them through numpy's object arithmetic. A numeric ``dtype`` would drop the derivative."""
        if dtype is not None and np.dtype(dtype).kind != "O":
            raise TypeError(
                "converting a deltaad complex dual to a plain numpy array of dtype %s would "
                "silently drop its derivative (np.asarray/np.array, or storing it into a numpy "
                "array). Use numpy functions on it directly, or deltaad.value(z) for the plain "
                "value." % np.dtype(dtype))
        return object_array(self)

    # -- arithmetic: Python's operators on the plain values (numpy's for arrays and numpy
    #    scalars), differentiated --
    def __add__(self, other):
        return binop("add", self, other)

    def __radd__(self, other):
        return binop("add", other, self)

    def __sub__(self, other):
        return binop("sub", self, other)

    def __rsub__(self, other):
        return binop("sub", other, self)

    def __mul__(self, other):
        return binop("mul", self, other)

    def __rmul__(self, other):
        return binop("mul", other, self)

    def __truediv__(self, other):
        return binop("truediv", self, other)

    def __rtruediv__(self, other):
        return binop("truediv", other, self)

    def __pow__(self, other, modulo=None):
        if modulo is not None:
            return NotImplemented
        return binop("pow", self, other)

    def __rpow__(self, other):
        return binop("pow", other, self)

    def __matmul__(self, other):
        return ufunc_dispatch(np.matmul, "__call__", (self, other), {})

    def __rmatmul__(self, other):
        return ufunc_dispatch(np.matmul, "__call__", (other, self), {})

    def __floordiv__(self, other):
        return binop("floordiv", self, other)

    def __rfloordiv__(self, other):
        return binop("floordiv", other, self)

    def __mod__(self, other):
        return binop("mod", self, other)

    def __rmod__(self, other):
        return binop("mod", other, self)

    def __neg__(self):
        load_rules()
        return OPS["neg"](self)

    def __pos__(self):
        if self.trace.closed:
            raise escaped_error(self.trace.level)
        return self

    def __abs__(self):
        load_rules()
        return OPS["abs"](self)

    # -- comparisons: on values (complex numbers have no order, as in Python and numpy) --
    def __eq__(self, other):
        return strip(self) == strip(other)

    def __ne__(self, other):
        return strip(self) != strip(other)

    def __lt__(self, other):
        return strip(self) < strip(other)

    def __le__(self, other):
        return strip(self) <= strip(other)

    def __gt__(self, other):
        return strip(self) > strip(other)

    def __ge__(self, other):
        return strip(self) >= strip(other)

    def __bool__(self):
        return bool(strip(self))

    # -- conversions that would drop the derivative --
    def __complex__(self):
        raise no_float_error("complex")

    def __float__(self):
        raise no_float_error("float")

    def __int__(self):
        raise no_float_error("int")

    def __index__(self):
        raise TypeError("a deltaad complex dual cannot be used as an index")

    def __repr__(self):
        kind = "tangent" if self.trace.is_forward else "Var %d" % self.id
        return "ComplexDual(%r, %s, level=%d)" % (self.value, kind, self.trace.level)

    def __format__(self, spec):
        return format(strip(self), spec)

    def __reduce__(self):
        raise TypeError("a deltaad complex dual cannot be pickled: use deltaad.value(z)")

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    # -- ndarray methods --
    def copy(self, order="C"):
        return self

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return function(np.reshape, (self, shape), {"order": order})

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, np.integer))):
            axes = axes[0]
        return function(np.transpose, (self, axes if axes else None), {})

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return function(np.astype, (self, dtype), {})

    def item(self, *args):
        if not args:
            if self.size != 1:
                raise ValueError("can only convert an array of size 1 to a Python scalar")
            return cgetitem(function(np.ravel, (self,), {}), 0)
        return cgetitem(self, args[0] if len(args) == 1 else args)

    def tolist(self):
        if self.ndim == 0:
            return cgetitem(self, ())
        return [row.tolist() for row in self]


register_dual_type(ComplexDual, complex_valued=True)

_METHODS = ("sum", "mean", "prod", "cumsum", "cumprod", "swapaxes", "squeeze", "ravel", "dot",
            "repeat", "take", "diagonal", "flatten")


def _make_method(name):
    func = getattr(np, "ravel" if name == "flatten" else name)

    def method(self, *args, **kwargs):
        return function(func, (self,) + args, kwargs)

    method.__name__ = name
    method.__doc__ = "``numpy.%s`` on a complex dual." % name
    return method


for _name in _METHODS:
    setattr(ComplexDual, _name, _make_method(_name))
del _name


def cview(v, flavour=None):
    """A packed value (plain real array, or a real array dual of an outer trace) as a complex
    value a rule computes with: a plain complex array, or a complex dual."""
    if type(v) is ArrayDual:
        return ComplexDual(v, flavour)
    return unpack(v, flavour)


def to_packed(g):
    """The packed form of a complex (or real) result of a rule: plain or dual."""
    tg = type(g)
    if tg is ComplexDual:
        return g.packed
    if tg is ArrayDual or tg is Dual:
        return pair(g, 0.0)
    return pack(g)


def pair(re, im):
    """The complex number or array ``re + i im`` from its parts (plain values or real duals),
    exactly: the parts are stored, not added. A ComplexDual when a part is a dual; a scalar
    part gives a ``complex``."""
    scalar = _is_scalar(re) and _is_scalar(im)
    if type(re) is not ArrayDual and type(re) is not Dual and \
            type(im) is not ArrayDual and type(im) is not Dual:
        if scalar:
            return complex(float(re), float(im))
        r = np.asarray(re)
        i = np.asarray(im)
        out = np.empty(np.broadcast_shapes(r.shape, i.shape),
                       dtype=complex_dtype(np.result_type(r.dtype, i.dtype, np.float32)))
        out.real = r
        out.imag = i
        return out
    if scalar:
        packed = registry.FUNCTIONS[np.stack]([re, im], axis=0)
        return ComplexDual(packed, complex)
    shape = np.broadcast_shapes(np.shape(strip(re)), np.shape(strip(im)))
    parts = [registry.FUNCTIONS[np.broadcast_to](p, shape) if np.shape(strip(p)) != shape else p
             for p in (re, im)]
    return ComplexDual(registry.FUNCTIONS[np.stack](parts, axis=-1), None)


def _is_scalar(x):
    t = type(x)
    return t is float or t is Dual or t is int or (isinstance(x, (numbers.Real, np.generic))
                                                   and not isinstance(x, np.ndarray))


def real_part(g):
    """The real part of a rule's cotangent (the cotangent of a real operand)."""
    tg = type(g)
    if tg is ComplexDual:
        return g.real
    if tg is ArrayDual or tg is Dual:
        return g
    if isinstance(g, complex):
        return g.real
    if isinstance(g, (np.ndarray, np.generic)) and np.iscomplexobj(g):
        return np.real(g)
    return g


# --------------------------------------------------------------------------------------------
# Complex primitives


class CPrimitive:
    """One differentiable operation with complex operands or results.

    - ``impl(*values, **params)``: the operation on plain values (complex numbers and arrays,
      real numbers and arrays), exactly as the plain program computes it;
    - ``vjp(out, values, on, **params)``: returns ``rule(c) -> tuple`` giving each operand's
      cotangent for the output cotangent ``c`` (complex: ``x̄ + iȳ``; real for a real output),
      ``None`` for zero; a complex cotangent for a real operand is reduced to its real part;
    - ``jvp(out, values, tangents, **params)``: the output tangent (complex ``ẋ + iẏ``).

    ``values``, ``out``, ``c`` and tangents are plain complex arrays or complex duals of outer
    traces (real ones for real operands): write the rules with numpy functions and they
    differentiate again. ``real_out``: the result is real (``abs``, ``angle``).
    """

    __slots__ = ("name", "impl", "vjp", "jvp", "real_out", "prim")

    def __init__(self, name, impl, vjp, jvp, real_out=False):
        self.name = name
        self.impl = impl
        self.vjp = vjp
        self.jvp = jvp
        self.real_out = real_out
        self.prim = Primitive(name, self._impl, self._vjp, self._jvp)

    def __repr__(self):
        return "<deltaad complex primitive %s>" % self.name

    def __call__(self, *args, **params):
        return capply(self, args, params)

    # The real primitive on packed operands. ``_k`` says per operand: "c" packed complex (with
    # flavour ``_f``), "p" a plain complex constant, "r" real. ``_box`` receives the flavour of
    # the plain result (the bottom level computes it).
    def _impl(self, *vals, _k, _f, _box, **params):
        plain = [unpack(v, f) if k == "c" else v for v, k, f in zip(vals, _k, _f)]
        w = self.impl(*plain, **params)
        if self.real_out:
            if type(w) is np.ndarray or type(w) is float:
                return w
            return float(w)  # a numpy scalar: a scalar dual, as for the real ufuncs
        _box["flavour"] = flavour_of(w) if not isinstance(w, np.ndarray) else None
        return pack(w)

    def _cvals(self, vals, _k):
        return [cview(v) if k == "c" else v for v, k in zip(vals, _k)]

    def _vjp(self, out, vals, on, _k, _f, _box, **params):
        cvals = self._cvals(vals, _k)
        cout = out if self.real_out else cview(out)
        crule = self.vjp(cout, cvals, on, **params)
        real_out = self.real_out

        def rule(ct):
            cts = crule(ct if real_out else cview(ct))
            return tuple(None if g is None else (to_packed(g) if k == "c" else real_part(g))
                         for g, k in zip(cts, _k))

        return rule

    def _jvp(self, out, vals, tans, _k, _f, _box, **params):
        cvals = self._cvals(vals, _k)
        cout = out if self.real_out else cview(out)
        ctans = [None if t is None else (cview(t) if k == "c" else t) for t, k in zip(tans, _k)]
        t = self.jvp(cout, cvals, ctans, **params)
        if self.real_out:
            return real_part(t)
        return to_packed(t)


_EMPTY = {}


def classify(x):
    """``(kind, operand, flavour)`` of an operand of a complex primitive: ``"c"`` a complex
    dual (its packed form), ``"p"`` a plain complex constant, ``"r"`` a real number, array or
    dual; None for anything else."""
    tx = type(x)
    if tx is ComplexDual:
        return "c", x.packed, x.flavour
    if tx is ArrayDual or tx is Dual or tx is float or tx is int or tx is bool:
        return "r", x, None
    if tx is complex or isinstance(x, np.complexfloating):
        return "p", x, None
    if isinstance(x, np.ndarray):
        k = x.dtype.kind
        if k == "c":
            return "p", x, None
        if k in "fiub":
            return "r", x, None
        if k == "O":  # numpy's object arithmetic on scalar duals (see object_fallback)
            if x.ndim == 0:
                return classify(x[()])
            r = repack(x)
            if type(r) is np.ndarray and r.dtype.kind == "O":
                r = np.array(r.tolist())  # plain numbers only
                if r.dtype.kind == "O":
                    return None
            return classify(r)
        return None
    if isinstance(x, np.generic) or isinstance(x, numbers.Real):
        return "r", x, None
    if tx is list or tx is tuple:
        return classify(asarray(x))
    return None


def capply(cprim, operands, params=_EMPTY):
    """Apply the complex primitive ``cprim`` to ``operands`` (any mix of complex and real,
    plain and dual, of any levels): a plain result when no operand is a dual."""
    kinds = []
    ops = []
    flavours = []
    dual = False
    for x in operands:
        c = classify(x)
        if c is None:
            raise TypeError("deltaad: %s got an argument of unsupported type %s"
                            % (cprim.name, type(x).__name__))
        k, o, f = c
        if k == "c" or (k == "r" and (type(o) is ArrayDual or type(o) is Dual)):
            dual = True
        kinds.append(k)
        ops.append(o)
        flavours.append(f)
    if not dual:
        plain = [unpack(o, f) if k == "c" else o for o, k, f in zip(ops, kinds, flavours)]
        return cprim.impl(*plain, **params)
    box = {}
    p = dict(params)
    p["_k"] = tuple(kinds)
    p["_f"] = tuple(flavours)
    p["_box"] = box
    out = apply(cprim.prim, ops, p)
    if cprim.real_out:
        return out
    return ComplexDual(out, box.get("flavour"))


def cprimitive(name, impl, vjp, jvp, real_out=False):
    return CPrimitive(name, impl, vjp, jvp, real_out)


# --------------------------------------------------------------------------------------------
# Indexing and packing scalars into arrays: what the complex dual itself needs


def cgetitem(z, idx):
    """``z[idx]``: the same index on the packed pairs (the pair axis stays last). One element
    of an array is a numpy complex scalar, as numpy gives."""
    idx, unique = normalize_index(idx)
    if z.flavour is not None and idx == ():
        return z
    if any(k is Ellipsis for k in idx):
        idx = idx + (slice(None),)
    r = getitem(z.packed, idx, unique)
    flavour = None
    if len(idx) == z.ndim and all(type(k) is int for k in idx):
        flavour = np.dtype(z.dtype).type
    return ComplexDual(r, flavour)


def asarray(x):
    """A complex array (dual) from a list or tuple holding complex duals and numbers (what
    ``deltaad.asarray`` does for real duals); ``x`` itself for anything else."""
    if type(x) is not list and type(x) is not tuple:
        return x
    items = [asarray(e) if type(e) in (list, tuple) else e for e in x]
    if items and all(_is_scalar_item(e) for e in items):
        from .array import asarray as real_asarray
        ps = [parts(e) for e in items]
        return pair(real_asarray([r for r, _ in ps]), real_asarray([i for _, i in ps]))
    return function(np.stack, (items,), {})


def _is_scalar_item(e):
    t = type(e)
    if t is ComplexDual:
        return e.ndim == 0
    return t is Dual or t is float or t is int or t is complex or (
        isinstance(e, (np.generic, numbers.Number)) and not isinstance(e, np.ndarray))


def parts(z):
    """``(re, im)`` of a complex or real scalar (plain or dual): real scalars or scalar duals."""
    if type(z) is ComplexDual:
        return z.real, z.imag
    if isinstance(z, _PLAIN_COMPLEX):
        return float(z.real), float(z.imag)
    return z, 0.0



# --------------------------------------------------------------------------------------------
# numpy dispatch for complex operands. The rule tables are filled by the complex rule family
# (deltaad.numpy.complex_rules); the real dispatch hands a call over here when it meets a
# complex operand (registry.COMPLEX).

_RULES = "deltaad.numpy.complex_rules"  # (it imports deltaad.numpy.complex_decomp)


def load_rules():
    """Fill the rule tables below on first use: the complex rule families are imported when a
    program first meets a complex dual (or deltaad.cmath), not with deltaad -- real-only
    programs do not pay for their import."""
    global load_rules
    import importlib
    importlib.import_module(_RULES)
    load_rules = _loaded


def _loaded():
    pass


UFUNCS = {}       # ufunc -> rule(*operands) for operands of which some are complex
FUNCTIONS = {}    # numpy function -> implementation with its signature
OPS = {}          # Python's operators on plain values: "add", "mul", ..., "neg", "abs", "conjugate"
METHODS = {}      # (ufunc, "reduce" / "accumulate" / "outer") -> implementation
NOTES = {}        # ufunc or function -> what its rule chooses where it is not differentiable
CONSTANT_UFUNCS = set()


def not_implemented(f, method=None, cause=None):
    return registry.not_implemented(
        f, method, cause, on="complex numbers",
        advice="Use a supported function (see 'Complex numbers' in deltaad's documentation), or "
               "split the value into its real and imaginary parts (z.real, z.imag) and use the "
               "real functions.")


def ufunc_dispatch(ufunc, method, inputs, kwargs):
    """numpy's ``__array_ufunc__`` where an operand is complex."""
    load_rules()
    if method != "__call__":
        rule = METHODS.get((ufunc, method))
        if rule is None:  # numpy's object loop over the scalar complex duals
            return _object_method(ufunc, method, inputs, kwargs)
        return rule(*inputs, **kwargs)
    dtype = None
    for k, v in kwargs.items():
        if k == "out":
            if v is not None and any(o is not None for o in (v if isinstance(v, tuple) else (v,))):
                raise TypeError(
                    "numpy.%s(..., out=...) would write a dual into an array in place; deltaad "
                    "arrays are immutable under differentiation: use the returned value"
                    % ufunc.__name__)
        elif k == "dtype":
            dtype = v
        elif k == "where":
            if v is not True:
                raise NotImplementedError("deltaad: numpy.%s(..., where=...) on complex duals; "
                                          "use np.where" % ufunc.__name__)
        elif k not in ("casting", "order", "subok", "signature"):
            raise NotImplementedError("deltaad: numpy.%s(..., %s=...) on complex duals"
                                      % (ufunc.__name__, k))
    rule = UFUNCS.get(ufunc)
    if rule is None:
        if ufunc in CONSTANT_UFUNCS or ufunc in registry.CONSTANT_UFUNCS:
            return ufunc(*[np.asarray(_plain_list(x)) if type(x) in (list, tuple) else strip(x)
                           for x in inputs])
        raise not_implemented(ufunc)
    r = rule(*inputs)
    if dtype is not None:
        r = function(np.astype, (r, dtype), {})
    return r


def _plain_list(x):
    return [_plain_list(e) if type(e) in (list, tuple) else strip(e) for e in x]


def function(func, args, kwargs):
    """numpy's ``__array_function__`` where an argument is complex."""
    load_rules()
    impl = FUNCTIONS.get(func)
    if impl is None:
        impl = registry.FUNCTIONS.get(func)
        if impl is None or not getattr(impl, "constant", False):
            return object_fallback(func, args, kwargs)
    return impl(*args, **kwargs)


def object_array(z):
    """A complex dual as the numpy object array of its scalar complex duals (each of numpy's
    scalar type for the dtype, as iterating over a complex array gives)."""
    if z.ndim == 0:  # a scalar complex dual is its own element
        out = np.empty((), dtype=object)
        out[()] = z
        return out
    from .array import object_array as real_object_array
    pairs = real_object_array(z.packed).reshape(-1, 2).tolist()
    out = np.empty(z.shape, dtype=object)
    flavour = np.dtype(z.dtype).type
    stack = registry.FUNCTIONS[np.stack]
    flat = out.reshape(-1)
    for k, (re, im) in enumerate(pairs):  # one by one: a slice assignment would convert them
        flat[k] = ComplexDual(stack([re, im], axis=0), flavour)
    return out


def object_fallback(func, args, kwargs):
    """A numpy function without a complex rule: numpy's own Python code run on the values as
    they are (complex duals convert to object arrays of scalar complex duals), as the real
    dispatch does for real duals: correct where numpy's code stays in its object arithmetic,
    and as slow as Python arithmetic on each element. Object arrays of duals in the result
    become complex (or real) duals again; where numpy's code cannot run on objects, the error
    names the function."""
    impl = getattr(func, "_implementation", None)
    if impl is None:
        raise not_implemented(func)
    conv = lambda x: object_array(x) if type(x) is ComplexDual else x  # noqa: E731
    try:
        r = impl(*[conv(x) for x in args], **{k: conv(v) for k, v in kwargs.items()})
    except Exception as exc:
        if type(exc).__name__ == "EscapedDualError":
            raise
        raise not_implemented(func, cause=exc) from exc
    return repack(r)


def _object_method(ufunc, method, inputs, kwargs):
    """``ufunc.reduce`` / ``accumulate`` / ``reduceat`` / ``outer`` without a complex rule: the
    method on the object arrays of the scalar duals (Python arithmetic on each element)."""
    if kwargs.get("out") is not None or kwargs.get("dtype") is not None:
        raise not_implemented(ufunc, method)
    from .array import object_array as real_object_array
    conv = [object_array(x) if type(x) is ComplexDual else
            real_object_array(x) if type(x) is ArrayDual else x for x in inputs]
    try:
        r = getattr(ufunc, method)(*conv, **kwargs)
    except Exception as exc:
        if type(exc).__name__ == "EscapedDualError":
            raise
        raise not_implemented(ufunc, method, cause=exc) from exc
    if type(r) is np.ndarray and r.dtype.kind != "O":
        raise not_implemented(ufunc, method)  # (the derivative would be lost)
    return repack(r)


def repack(r):
    """``r`` with object arrays holding complex duals (numpy's object arithmetic) turned into
    complex duals, and those holding real duals only into real array duals."""
    tr = type(r)
    if tr is np.ndarray:
        if r.dtype.kind == "O" and r.size:
            flat = r.ravel().tolist()
            if any(type(e) is ComplexDual for e in flat):
                return asarray(r.tolist()) if r.ndim else flat[0]
            if any(is_plain_complex(e) for e in flat) and any(type(e) is Dual for e in flat):
                return asarray(r.tolist()) if r.ndim else flat[0]
        from .array import repack as real_repack
        return real_repack(r)
    if tr is tuple or tr is list:
        return tr(repack(e) for e in r)
    return r


def binop(op, a, b):
    """Python's operator ``op`` (``"add"``, ``"mul"``...) on operands one of which is complex;
    NotImplemented when neither is (so the other operand's reflected method is tried)."""
    ta = type(a)
    tb = type(b)
    if (ta is ArrayDual or ta is Dual or ta is float) and \
            (tb is ArrayDual or tb is Dual or tb is float):  # real operands: first, and cheap
        return NotImplemented
    if not (_complex_operand(a) or _complex_operand(b)):
        return NotImplemented
    load_rules()
    rule = OPS.get(op)
    if rule is None:
        return NotImplemented
    if classify(a) is None or classify(b) is None:
        return NotImplemented
    return rule(a, b)


def _complex_operand(x):
    return type(x) is ComplexDual or is_plain_complex(x)


def involved(xs):
    """True when an operand of a numpy call is complex (a complex dual or a plain complex
    number or array, also one level down in lists)."""
    for x in xs:
        tx = type(x)
        if tx is ArrayDual or tx is Dual or tx is float:  # the real operands: first, and cheap
            continue
        if tx is ComplexDual or tx is complex:
            return True
        if tx is np.ndarray:
            if x.dtype.kind == "c":
                return True
        elif tx is list or tx is tuple:
            for e in x:
                te = type(e)
                if te is ArrayDual or te is Dual or te is float:
                    continue
                if te is np.ndarray:  # (is_plain_complex, inlined for the commonest item)
                    if e.dtype.kind == "c":
                        return True
                    continue
                if te is ComplexDual or is_plain_complex(e):
                    return True
        elif isinstance(x, np.complexfloating):
            return True
    return False


class _Hook:
    """What the real dispatch (deltaad.numpy.array, the backends) calls for complex operands."""

    types = (ComplexDual,)
    involved = staticmethod(involved)
    ufunc = staticmethod(ufunc_dispatch)
    function = staticmethod(function)
    asarray = staticmethod(asarray)

    @staticmethod
    def has(func):
        load_rules()
        return func in FUNCTIONS


registry.COMPLEX = _Hook


PYOPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
         "truediv": operator.truediv, "pow": operator.pow, "floordiv": operator.floordiv,
         "mod": operator.mod}


# --------------------------------------------------------------------------------------------
# The boundary of the transformations: complex leaves in and out, with JAX's conventions


def is_complex_leaf(x):
    return type(x) is ComplexDual or is_plain_complex(x)


def complex_input(trace, x, tangent=None):
    """A complex leaf as an input of ``trace``: a fresh real array input of its pairs. A
    tangent ``ẋ + iẏ`` (a real tangent: ``ẏ = 0``) is the pair ``(ẋ, ẏ)``."""
    from .array import array_input
    flavour = x.flavour if type(x) is ComplexDual else flavour_of(x)
    value = x.packed if type(x) is ComplexDual else pack(x)
    t = None
    if trace.is_forward:
        if tangent is None:
            t = np.zeros(np.shape(strip(value)), dtype=strip(value).dtype)
        else:
            t = _tangent_pairs(tangent, np.shape(strip(value))[:-1], strip(value).dtype)
    return ComplexDual(array_input(trace, value, t), flavour)


def _tangent_pairs(t, shape, rdt):
    tt = type(t)
    if tt is ComplexDual:
        p = t.packed
    elif tt is ArrayDual or tt is Dual:
        p = to_packed(t)
    else:
        a = np.asarray(t)
        if a.dtype.kind not in "fiubc":
            raise TypeError("jvp: the tangent of a complex primal must be a number or array; "
                            "got a value of type %s" % tt.__name__)
        p = pack(a)
        if p.dtype != rdt:
            p = p.astype(rdt)
    if tuple(np.shape(strip(p)))[:-1] != tuple(shape):
        raise ValueError("jvp: tangent of shape %s for a complex primal of shape %s; tangents "
                         "must have the primal's shape" % (np.shape(strip(p))[:-1], shape))
    return p


def gradient(g, like):
    """The gradient of a complex leaf ``like`` as JAX gives it, ``x̄ - iȳ``, from the adjoint
    ``g`` of its pairs (None: zero), with ``like``'s type or dtype."""
    flavour = like.flavour if type(like) is ComplexDual else flavour_of(like)
    shape = like.shape if type(like) is ComplexDual else np.shape(like)
    cdt = like.dtype if type(like) is ComplexDual else np.asarray(like).dtype
    if g is None:
        z = np.zeros(shape, dtype=cdt)
        return z if flavour is None else flavour(0j)
    if type(g) is ArrayDual:  # an outer differentiation's dual (nesting)
        load_rules()
        z = OPS["conjugate"](ComplexDual(g, flavour))
        return z
    z = np.conj(unpack(np.asarray(g, dtype=real_dtype(cdt))))
    return z if flavour is None else flavour(z[()])


def cotangent(ct, out, where=""):
    """The seed for a complex output ``out`` from the user's cotangent ``ct`` (JAX's
    convention: ``w`` seeds the pairs of ``conj(w)``); a real cotangent has imaginary part 0."""
    shape = np.shape(out)
    rdt = real_dtype(dtype_of(out))
    tc = type(ct)
    if tc is ComplexDual:
        if ct.shape != shape:
            _shape_error(ct.shape, shape, where)
        load_rules()
        return OPS["conjugate"](ct).packed
    if tc is ArrayDual or tc is Dual:
        s = np.shape(strip(ct))
        if s != shape:
            _shape_error(s, shape, where)
        return pair(ct, 0.0).packed
    a = np.asarray(ct)
    if a.dtype.kind not in "fiubc":
        raise TypeError("vjp: the cotangent%s must be a number or array; got a value of type %s"
                        % (where, tc.__name__))
    if a.shape != shape:
        _shape_error(a.shape, shape, where)
    p = pack(np.conj(a) if a.dtype.kind == "c" else a)
    return p.astype(rdt) if p.dtype != rdt else p


def _shape_error(s, shape, where):
    raise ValueError("vjp: the cotangent%s has shape %s, but the output has shape %s; each "
                     "cotangent must have its output's shape" % (where, s, shape))


def seed(out, j):
    """The seed of component ``j`` of the complex output ``out`` for a Jacobian row (the pairs
    of ``conj(1) = 1``)."""
    p = np.zeros(tuple(np.shape(out)) + (2,), dtype=real_dtype(dtype_of(out)))
    p.reshape(-1, 2)[j, 0] = 1.0
    return p


def zero_like(x):
    """A zero tangent for a complex constant output."""
    if isinstance(x, np.ndarray):
        return np.zeros_like(x)
    return flavour_of(x)(0j)


def basis(x, j):
    """The tangent ``1`` at component ``j`` of the complex leaf ``x`` and 0 elsewhere (``j`` < 0:
    zero): a column of a holomorphic Jacobian."""
    v = strip(x)
    if not isinstance(v, np.ndarray):
        return flavour_of(v)(1.0 if j >= 0 else 0.0)
    z = np.zeros(v.shape, dtype=v.dtype)
    if j >= 0:
        z.reshape(-1)[j] = 1.0
    return z
