"""``scipy.integrate``'s ``quad``, ``solve_ivp`` and ``odeint`` on duals: the derivative of the
discretisation scipy chose.

A model that integrates (``quad(lambda x: exp(-k * x * x), 0, 1)``) or solves an ODE
(``solve_ivp(lambda t, y: -k * y, ...)``) hands scipy a function that returns duals when ``k``
is being differentiated -- often through a closure, where no argument shows it. scipy's solvers
run in C or convert with ``np.asarray(..., dtype=float)``, which a dual cannot enter. So, while
a differentiation is open, each of them runs in two passes:

1. scipy's own function runs on plain values (the user's function called as written, its
   result's plain value given to scipy): scipy's checks, errors and result, bit for bit, and
   the discretisation it chose -- quad's final subintervals, solve_ivp's accepted steps;
2. the same discretisation is evaluated once on duals -- a 21-point Gauss-Legendre rule on each
   of quad's subintervals, solve_ivp's Runge-Kutta formulas (scipy's own tableau) over its
   accepted steps, and its dense-output polynomial at ``t_eval`` -- and the result is given
   scipy's value under every level.

The derivative is that of the discrete method with its partition held fixed
("discretise-then-differentiate", what differentiating a solver written in JAX gives), exact to
every order for that method and as accurate as scipy's tolerances for the true integral or
solution. Moving limits (``quad(f, 0, b)``, ``t_span=(0, T)``) move the partition with them,
which gives the Leibniz terms. Where nothing held a dual scipy's result is returned unchanged;
outside differentiation scipy's functions run as they are. ``odeint``'s LSODA keeps its steps and
orders inside its Fortran: its value is LSODA's, its derivative an explicit Runge-Kutta solve's
(RK45 at odeint's tolerances) of the same problem. What is refused (quad's ``weight=``, the
implicit ``solve_ivp`` methods, events) raises an error naming it.
"""

from deltaad._plainnumpy import np

from ..trace import is_dual, open_traces
from ..trace import value as strip
from . import registry
from .registry import holds_dual
from .scipy_late import operand, plain, plain_of, replace, revalue

_GL = {}


def _gauss_legendre(n=21):
    """Nodes on [0, 1] and weights summing to 1 (cached)."""
    if n not in _GL:
        x, w = np.polynomial.legendre.leggauss(n)
        _GL[n] = ((x + 1.0) / 2.0).tolist(), (w / 2.0).tolist()
    return _GL[n]


def _refuse(name, what, fix):
    raise NotImplementedError("deltaad: scipy.integrate.%s with %s on dual numbers is not "
                              "supported; %s" % (name, what, fix))


# quad

def _quad(original):
    def quad(func, a, b, args=(), full_output=0, epsabs=1.49e-8, epsrel=1.49e-8, limit=50,
             points=None, weight=None, wvar=None, wopts=None, maxp1=50, limlst=50,
             complex_func=False):
        if not open_traces():
            return original(func, a, b, args, full_output, epsabs, epsrel, limit, points,
                            weight, wvar, wopts, maxp1, limlst, complex_func)
        if not isinstance(args, tuple):
            args = (args,)
        seen = [holds_dual([a, b, args, points, wvar])]
        out = original(plain_of(lambda x, *_: func(x, *args), seen), strip(a), strip(b), (),
                       1, epsabs, epsrel, limit, plain(points), weight, plain(wvar), wopts,
                       maxp1, limlst, complex_func)
        if not seen[0]:
            return out if full_output else out[:2]
        if weight is not None or complex_func:
            _refuse("quad", "weight=%r" % (weight,) if weight is not None else "complex_func",
                    "integrate the weighted (or complex) integrand without weight= "
                    "(complex_func=) to differentiate it")
        if holds_dual(points):
            _refuse("quad", "points= holding duals", "give plain break points")
        info = out[2]
        total = _quad_on_duals(lambda x: func(x, *args), a, b, info)
        result = revalue(total, out[0], "scipy.integrate.quad")
        return (result,) + tuple(out[1:]) if full_output else (result, out[1])

    return quad


def _quad_on_duals(f, a, b, info):
    """The integral on duals over quad's final subintervals. scipy integrates from the lower
    limit to the upper and negates when ``b < a``; on an infinite range its variable is ``t`` in
    (0, 1] with ``x = bound +- (1 - t) / t`` (QUADPACK's ``qagie``)."""
    va, vb = strip(a), strip(b)
    if va == vb:
        return f(a) * (b - a)  # value 0; the Leibniz terms f(b) db - f(a) da
    flip = vb < va
    lo, hi = (b, a) if flip else (a, b)
    vlo, vhi = min(va, vb), max(va, vb)
    if not (np.isinf(vlo) or np.isinf(vhi)):
        if is_dual(lo) or is_dual(hi):
            span, width = hi - lo, vhi - vlo

            def integrand(x):
                return f(lo + span * ((x - vlo) / width))
            scale = span / width  # dx on the moving range per dx on scipy's
        else:
            integrand, scale = f, 1.0
    else:
        scale = 1.0
        if np.isinf(vlo) and np.isinf(vhi):
            def integrand(t):
                x = (1.0 - t) / t
                return (f(x) + f(-x)) / (t * t)
        elif np.isinf(vhi):
            def integrand(t):
                return f(lo + (1.0 - t) / t) / (t * t)
        else:
            def integrand(t):
                return f(hi - (1.0 - t) / t) / (t * t)
    last = int(info["last"])
    nodes, weights = _gauss_legendre()
    total = 0.0
    for alpha, beta in zip(info["alist"][:last].tolist(), info["blist"][:last].tolist()):
        h = beta - alpha
        part = 0.0
        for s, w in zip(nodes, weights):
            part = part + w * integrand(alpha + h * s)
        total = total + h * part
    total = total * scale
    return -total if flip else total


# solve_ivp

_EXPLICIT = ("RK23", "RK45", "DOP853")


def _solve_ivp(original):
    def solve_ivp(fun, t_span, y0, method="RK45", t_eval=None, dense_output=False, events=None,
                  vectorized=False, args=None, **options):
        if not open_traces():
            return original(fun, t_span, y0, method, t_eval, dense_output, events, vectorized,
                            args, **options)
        if args is not None:
            f_args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
            user = fun
            fun = lambda t, y: user(t, y, *f_args)  # noqa: E731
        else:
            f_args = ()
        seen = [holds_dual([t_span, y0, f_args, t_eval])]
        plain_fun = plain_of(fun, seen)
        plain_opts = {k: plain(v) for k, v in options.items()}
        sol = original(plain_fun, plain(t_span), plain(y0), method, plain(t_eval), dense_output,
                       events, vectorized, None, **plain_opts)
        if not seen[0]:
            return sol
        name = method if isinstance(method, str) else getattr(method, "__name__", str(method))
        fix = ("use method='RK45', 'RK23' or 'DOP853' (explicit Runge-Kutta, which deltaad "
               "differentiates step by step), or give the solve a rule with deltaad.custom_vjp")
        if name not in _EXPLICIT:
            _refuse("solve_ivp", "method=%r" % (name,), fix)
        if events is not None:
            _refuse("solve_ivp", "events=", "integrate to a fixed end time, or find the event "
                    "time by other means")
        if holds_dual(t_eval):
            _refuse("solve_ivp", "t_eval holding duals", "give plain output times")
        if not sol.success:
            return sol
        if name == "DOP853" and (t_eval is not None or dense_output):
            _refuse("solve_ivp", "method='DOP853' and t_eval= or dense_output=",
                    "use method='RK45' or 'RK23' for output between steps")
        steps = sol.t if t_eval is None else original(
            plain_fun, plain(t_span), plain(y0), method, None, False, None, vectorized, None,
            **plain_opts).t
        return _solve_on_duals(sol, fun, t_span, y0, name, steps, t_eval, dense_output,
                               vectorized)

    return solve_ivp


def _rk_class(name):
    from scipy.integrate._ivp import rk
    return getattr(rk, name)


def _combine(coefs, ks, scale):
    """``scale * sum(c * k)`` over the nonzero coefficients (array duals or arrays)."""
    acc = None
    for c, k in zip(coefs, ks):
        if c != 0.0:
            term = c * k
            acc = term if acc is None else acc + term
    return acc * scale


def _solve_on_duals(sol, fun, t_span, y0, name, steps, t_eval, dense_output, vectorized,
                    who="scipy.integrate.solve_ivp"):
    rk = _rk_class(name)
    A, B, C = rk.A.tolist(), rk.B.tolist(), rk.C.tolist()
    n_stages = rk.n_stages

    def f(t, y):
        if vectorized:  # scipy calls a vectorized fun with one column
            return operand(fun(t, y[:, None])).ravel()
        return operand(fun(t, y))

    t0, tf = t_span
    steps = steps.tolist()
    moving = is_dual(t0) or is_dual(tf)
    v0, vf = strip(t0), strip(tf)

    def time(s):  # a step time of scipy's, moving with the ends of t_span
        if not moving:
            return s
        return t0 + (tf - t0) * ((s - v0) / (vf - v0))

    y = operand(np.asarray(y0, dtype=object) if holds_dual(y0) else np.asarray(y0, float))
    if not is_dual(y) and y.dtype.kind != "f":
        y = y.astype(float)
    ts = [time(s) for s in steps]
    ys, segments = [y], []
    k_new = f(ts[0], y)
    for i in range(len(ts) - 1):
        t, h = ts[i], ts[i + 1] - ts[i]
        K = [k_new]
        for s in range(1, n_stages):
            K.append(f(t + C[s] * h, y + _combine(A[s][:s], K, h)))
        y_new = y + _combine(B, K, h)
        k_new = f(t + h, y_new)
        K.append(k_new)
        segments.append((t, h, y, K))
        y = y_new
        ys.append(y)
    if t_eval is None:
        out = ys
    else:
        out = [_dense(rk, segments, steps, te) for te in np.asarray(t_eval, float).tolist()]
    stacked = np.stack([operand(v) for v in out], axis=-1)
    sol.y = revalue(stacked, sol.y, who)
    if dense_output:
        sol.sol = _DenseOnDuals(rk, segments, steps, sol.sol)
    return sol


def _segment(steps, te):
    """The index of scipy's step holding the time ``te`` (scipy's own choice at a boundary)."""
    import bisect
    if steps[-1] >= steps[0]:
        i = bisect.bisect_left(steps, te) - 1
    else:
        i = bisect.bisect_left([-s for s in steps], -te) - 1
    return min(max(i, 0), len(steps) - 2)


def _dense(rk, segments, steps, te):
    """The Runge-Kutta dense-output polynomial of the step holding ``te``, on duals."""
    if not segments:
        raise NotImplementedError("deltaad: scipy.integrate.solve_ivp on duals took no step "
                                  "(t_span of length 0): there is nothing to differentiate")
    t, h, y_old, K = segments[_segment(steps, te)]
    x = (te - t) / h
    P = rk.P.tolist()  # rows: stages, columns: powers x, x^2, ...
    acc, power = None, x
    for j in range(len(P[0])):
        term = _combine([row[j] for row in P], K, 1.0) * power
        acc = term if acc is None else acc + term
        power = power * x
    return y_old + h * acc


class _DenseOnDuals:
    """``sol.sol`` of a solve on duals: scipy's interpolant's value, the derivative of the
    same polynomial on duals."""

    def __init__(self, rk, segments, steps, reference):
        self.rk, self.segments, self.steps, self.reference = rk, segments, steps, reference

    def __call__(self, t):
        ref = self.reference(t)
        ts = np.asarray(t, float)
        if ts.ndim == 0:
            out = operand(_dense(self.rk, self.segments, self.steps, float(ts)))
        else:
            out = np.stack([operand(_dense(self.rk, self.segments, self.steps, te))
                            for te in ts.tolist()], axis=-1)
        return revalue(out, ref, "scipy.integrate.solve_ivp(...).sol")


# odeint

_ODEINT_TOL = 1.49012e-8  # odeint's default rtol and atol


def _odeint(original):
    import inspect
    signature = inspect.signature(original)

    def odeint(func, y0, t, args=(), *rest, **kwargs):
        if not open_traces():
            return original(func, y0, t, args, *rest, **kwargs)
        if not isinstance(args, tuple):
            args = (args,)
        seen = [holds_dual([y0, t, args])]
        out = original(plain_of(lambda y, tt, *_: func(y, tt, *args), seen), plain(y0),
                       plain(t), (), *rest, **kwargs)
        if not seen[0]:
            return out
        opts = signature.bind(func, y0, t, args, *rest, **kwargs)
        opts.apply_defaults()
        return _odeint_on_duals(func, y0, t, args, out, opts.arguments)

    return odeint


def _odeint_on_duals(func, y0, t, args, out, opts):
    """odeint's result with LSODA's value, bit for bit, and the derivative of an explicit
    Runge-Kutta solve (RK45 at odeint's tolerances) of the same problem through the same output
    times: LSODA's own steps and orders are internal to its Fortran, so its discretisation
    cannot be evaluated again on duals. Both are the solution to the tolerance asked."""
    if holds_dual(t):
        _refuse("odeint", "t holding duals", "give plain output times")
    ts = np.asarray(t, dtype=float)  # monotonic: scipy's odeint has checked
    full = opts["full_output"]
    ref = out[0] if full else out
    tfirst = opts["tfirst"]
    if ts[0] == ts[-1]:  # the initial state only
        row = operand(np.atleast_1d(operand(y0)))
        y = revalue(np.stack([row] * len(ts)), ref, "scipy.integrate.odeint")
        return (y, out[1]) if full else y

    def fun(tt, y):
        return func(tt, y, *args) if tfirst else func(y, tt, *args)

    if np.ndim(plain(y0)) == 0:
        y0 = [y0]
    rtol = opts["rtol"] if opts["rtol"] is not None else _ODEINT_TOL
    atol = opts["atol"] if opts["atol"] is not None else _ODEINT_TOL
    ivp = _solve_ivp_original()
    span = (float(ts[0]), float(ts[-1]))
    plain_fun = plain_of(fun, [True])
    steps = ivp(plain_fun, span, plain(y0), "RK45", None, False, None, False, None,
                rtol=plain(rtol), atol=plain(atol))
    if not steps.success:
        _refuse("odeint", "a problem the Runge-Kutta solve for its derivative failed on (%s)"
                % steps.message, "give the solve a rule with deltaad.custom_vjp")

    class Solution:
        y = np.asarray(ref).T

    sol = _solve_on_duals(Solution(), fun, span, y0, "RK45", steps.t, ts, False, False,
                          who="scipy.integrate.odeint")
    y = sol.y.T
    return (y, out[1]) if full else y


def _solve_ivp_original():
    from scipy.integrate._ivp import ivp
    f = ivp.solve_ivp
    return getattr(f, "deltaad_original", f)


def install(module):
    """Replace quad, solve_ivp and odeint in scipy.integrate's modules (once)."""
    for mod_name, name, factory in (
            ("scipy.integrate", "odeint", _odeint),
            ("scipy.integrate._odepack_py", "odeint", _odeint),
            ("scipy.integrate", "quad", _quad),
            ("scipy.integrate._quadpack_py", "quad", _quad),
            ("scipy.integrate", "solve_ivp", _solve_ivp),
            ("scipy.integrate._ivp", "solve_ivp", _solve_ivp),
            ("scipy.integrate._ivp.ivp", "solve_ivp", _solve_ivp)):
        replace(mod_name, name, factory)


registry.watch("scipy.integrate", install)
