"""scipy.optimize's solvers inside a differentiated function: the solution's derivative by the
implicit function theorem.

A model that solves an equation (``fsolve``, ``root``, the bracketing ``brentq``, ``brenth``,
``ridder``, ``bisect`` and ``root_scalar`` through them) or fits an inner problem
(``minimize``, ``minimize_scalar``, ``least_squares``) hands scipy a function that returns duals when the
parameters it closes over are being differentiated. scipy's solvers run in C or convert with
``np.asarray(..., dtype=float)``. So, while a differentiation is open, each runs in two steps:

1. scipy's solver runs on plain values (the user's function called as written, its plain value
   given to scipy): scipy's iterations, checks, errors and solution ``x*``, bit for bit;
2. from ``x*``, Newton steps for ``F(x, theta) = 0`` run on duals -- ``F`` the equations, or the
   gradient of the objective -- with the Jacobian (the Hessian) by forward mode. At a root the
   first step's derivative is the implicit function's, ``dx*/dtheta = -F_x^{-1} F_theta``, and
   ``k`` steps make every derivative up to order ``2^k - 1`` exact (Newton's convergence is
   quadratic); deltaad takes as many as the open differentiations need. The solution carries
   scipy's value.

The derivative exists where the solution is a regular point: ``F_x`` invertible (a strict local
minimum; a simple root), away from active bounds. A solver that did not converge (scipy reports
failure and the equations' residual is above 1e-6), constraints, and a solution on a bound
raise an error naming the solver; there is no derivative to give. Only ``x``, ``fun`` (and
``jac``, ``cost``) of a result carry derivatives; scipy's other fields (``hess_inv``, ``fjac``)
are its plain values.
"""

from deltaad._plainnumpy import np

from .numpy import registry
from .numpy.registry import holds_dual
from .numpy.scipy_late import operand, plain, plain_of, replace, revalue
from .trace import open_traces
from .trace import value as strip
from .transforms import grad, jacfwd


def _steps():
    """Newton steps that make derivatives of every open order exact (2^k - 1 >= orders)."""
    orders, k = len(open_traces()), 1
    while 2 ** k - 1 < orders:
        k += 1
    return k


def _newton(F, x_star, shape):
    """Newton's steps for ``F(x) = 0`` on duals from scipy's solution ``x_star`` (``shape ==
    ()``: a scalar equation, ``F`` called with a scalar)."""
    x = np.asarray(x_star, dtype=float).reshape(-1)

    def flat(x):
        return np.reshape(operand(F(x[0] if shape == () else np.reshape(x, shape))), (-1,))

    for _ in range(_steps()):
        x = x - np.linalg.solve(jacfwd(flat)(x), flat(x))
    return x[0] if shape == () else np.reshape(x, shape)


def _refuse(name, why):
    raise NotImplementedError("deltaad: scipy.optimize.%s on dual numbers: %s, so its solution "
                              "has no derivative to give" % (name, why))


def _converged(name, ok, message, residual):
    """Go on where scipy reports success, or where the equations (the gradient) are nearly
    zero anyway (BFGS's "precision loss" stops at a minimum): else there is no solution."""
    if ok:
        return
    r = np.max(np.abs(np.asarray(strip(operand(residual()))), dtype=float), initial=0.0)
    if not r <= 1e-6:
        _refuse(name, "it did not converge (%s; the equations' largest residual is %.3g)"
                % (message, r))


def _args(args):
    return args if isinstance(args, tuple) else (args,)


def _fsolve(original):
    def fsolve(func, x0, args=(), fprime=None, full_output=0, *rest, **kwargs):
        if not open_traces():
            return original(func, x0, args, fprime, full_output, *rest, **kwargs)
        args = _args(args)
        seen = [holds_dual(list(args))]
        f = plain_of(lambda x: func(x, *args), seen)
        jac = None if fprime is None else plain_of(lambda x: fprime(x, *args), seen)
        out = original(f, plain(x0), (), jac, 1, *rest, **kwargs)
        if not seen[0]:
            return out if full_output else out[0]
        x, info, ier, msg = out
        _converged("fsolve", ier == 1, msg, lambda: func(x, *args))
        x = revalue(_newton(lambda z: func(z, *args), x, np.shape(x)), x, "scipy.optimize.fsolve")
        return (x, info, ier, msg) if full_output else x

    return fsolve


def _root(original):
    def root(fun, x0, args=(), method="hybr", jac=None, *rest, **kwargs):
        if not open_traces():
            return original(fun, x0, args, method, jac, *rest, **kwargs)
        args = _args(args)
        seen = [holds_dual(list(args))]
        if jac is True:
            f = plain_of(lambda x: fun(x, *args), seen)
            equations = lambda z: fun(z, *args)[0]  # noqa: E731
        else:
            f = plain_of(lambda x: fun(x, *args), seen)
            equations = lambda z: fun(z, *args)  # noqa: E731
            if callable(jac):
                jac = plain_of(lambda x, j=jac: j(x, *args), seen)
        res = original(f, plain(x0), (), method, jac, *rest, **kwargs)
        if not seen[0]:
            return res
        _converged("root", res.success, res.message, lambda: equations(res.x))
        x = _newton(equations, res.x, np.shape(res.x))
        res.x = revalue(x, res.x, "scipy.optimize.root")
        res.fun = revalue(operand(equations(x)), res.fun, "scipy.optimize.root")
        return res

    return root


def _objective(fun, args, jac):
    """The objective as a function of x on duals (the first part when ``jac=True``)."""
    if jac is True:
        return lambda z: fun(z, *args)[0]
    return lambda z: fun(z, *args)


def _interior(name, x, bounds):
    """Refuse a solution on a bound: there the derivative is the constrained problem's."""
    if bounds is None:
        return
    lo, hi = (bounds.lb, bounds.ub) if hasattr(bounds, "lb") else \
        np.asarray([(-np.inf if b[0] is None else b[0], np.inf if b[1] is None else b[1])
                    for b in bounds], dtype=float).T
    lo, hi = np.broadcast_to(lo, np.shape(x)), np.broadcast_to(hi, np.shape(x))
    scale = np.maximum(1.0, np.abs(x))
    if np.any(np.abs(x - lo) <= 1e-8 * scale) or np.any(np.abs(x - hi) <= 1e-8 * scale):
        _refuse(name, "the solution lies on a bound (an active constraint)")


def _minimize(original):
    def minimize(fun, x0, args=(), method=None, jac=None, hess=None, hessp=None, bounds=None,
                 constraints=(), *rest, **kwargs):
        if not open_traces():
            return original(fun, x0, args, method, jac, hess, hessp, bounds, constraints, *rest,
                            **kwargs)
        args = _args(args)
        seen = [holds_dual(list(args))]
        f = plain_of(lambda x: fun(x, *args), seen)
        pj = plain_of(lambda x, j=jac: j(x, *args), seen) if callable(jac) else jac
        ph = plain_of(lambda x, h=hess: h(x, *args), seen) if callable(hess) else hess
        pp = plain_of(lambda x, p, h=hessp: h(x, p, *args), seen) if callable(hessp) else hessp
        res = original(f, plain(x0), (), method, pj, ph, pp, bounds, constraints, *rest,
                       **kwargs)
        if not seen[0]:
            return res
        if constraints:
            _refuse("minimize", "constraints are not supported (the derivative would be the "
                    "KKT system's)")
        objective = _objective(fun, args, jac)
        _converged("minimize", res.success, res.message, lambda: grad(objective)(res.x))
        _interior("minimize", res.x, bounds)
        x = _newton(grad(lambda z: objective(z)), res.x, np.shape(res.x))
        res.x = revalue(x, res.x, "scipy.optimize.minimize")
        res.fun = revalue(objective(x), res.fun, "scipy.optimize.minimize")
        if "jac" in res:
            res.jac = revalue(grad(objective)(x), res.jac, "scipy.optimize.minimize")
        return res

    return minimize


def _minimize_scalar(original):
    def minimize_scalar(fun, bracket=None, bounds=None, args=(), *rest, **kwargs):
        if not open_traces():
            return original(fun, bracket, bounds, args, *rest, **kwargs)
        args = _args(args)
        seen = [holds_dual(list(args))]
        res = original(plain_of(lambda x: fun(x, *args), seen), plain(bracket), plain(bounds),
                       (), *rest, **kwargs)
        if not seen[0]:
            return res
        objective = lambda z: fun(z, *args)  # noqa: E731
        _converged("minimize_scalar", res.success, res.message, lambda: grad(objective)(res.x))
        if bounds is not None:
            _interior("minimize_scalar", np.asarray([res.x]), [tuple(plain(bounds))])
        x = _newton(lambda z: grad(objective)(z[0]), np.asarray([res.x]), (1,))[0]
        res.x = revalue(x, res.x, "scipy.optimize.minimize_scalar")
        res.fun = revalue(objective(x), res.fun, "scipy.optimize.minimize_scalar")
        return res

    return minimize_scalar


def _least_squares(original):
    def least_squares(fun, x0, jac="2-point", bounds=(-np.inf, np.inf), *rest, args=(),
                      kwargs={}, **options):
        if not open_traces():
            return original(fun, x0, jac, bounds, *rest, args=args, kwargs=kwargs, **options)
        args = _args(args)
        seen = [holds_dual([list(args), list(kwargs.values())])]
        f = plain_of(lambda x: fun(x, *args, **kwargs), seen)
        pj = plain_of(lambda x, j=jac: j(x, *args, **kwargs), seen) if callable(jac) else jac
        res = original(f, plain(x0), pj, bounds, *rest, **options)
        if not seen[0]:
            return res
        residuals = lambda z: operand(fun(z, *args, **kwargs))  # noqa: E731
        cost = lambda z: 0.5 * np.sum(residuals(z) ** 2)  # noqa: E731
        _converged("least_squares", res.success, res.message, lambda: grad(cost)(res.x))
        if np.any(res.active_mask != 0):
            _refuse("least_squares", "the solution lies on a bound (an active constraint)")
        if options.get("loss", "linear") != "linear":
            _refuse("least_squares", "loss=%r (only the linear loss is differentiated)"
                    % options["loss"])
        x = _newton(grad(cost), res.x, np.shape(res.x))
        res.x = revalue(x, res.x, "scipy.optimize.least_squares")
        res.fun = revalue(residuals(x), res.fun, "scipy.optimize.least_squares")
        res.cost = revalue(cost(x), res.cost, "scipy.optimize.least_squares")
        return res

    return least_squares


def _split_args(rest, kwargs):
    """``(args, rest, kwargs)`` with a bracketing solver's ``args=`` taken out (positional
    after the bracket, or a keyword), a tuple as scipy makes it."""
    if rest:
        args, rest = rest[0], rest[1:]
    else:
        args = kwargs.pop("args", ())
    return _args(args), rest, kwargs


def _bracketing(name):
    """``brentq``, ``brenth``, ``ridder``, ``bisect`` (C loops on floats; ``root_scalar`` with a
    bracket calls them). A dual reaching the C loop would leave an exception set (an
    interpreter ``SystemError`` later), so ``f`` always gets plain values here. The bracket's
    derivative is irrelevant: the root does not move with it."""

    def factory(original):
        def solver(f, a, b, *rest, **kwargs):
            if not open_traces():
                return original(f, a, b, *rest, **kwargs)
            args, rest, kwargs = _split_args(rest, dict(kwargs))
            if holds_dual(list(rest)) or holds_dual(list(kwargs.values())):
                _refuse(name, "a tolerance or option holds a dual number")
            seen = [holds_dual(list(args))]
            res = original(plain_of(lambda x: f(x, *args), seen), strip(a), strip(b), (),
                           *rest, **kwargs)
            if not seen[0]:
                return res
            full = type(res) is tuple
            r = res[0] if full else res
            if full and not res[1].converged:
                _refuse(name, "it did not converge (%s)" % res[1].flag)
            root = revalue(_newton(lambda z: f(z, *args), r, ()), r, "scipy.optimize." + name)
            if not full:
                return root
            res[1].root = root  # root_scalar returns these RootResults: its root is the dual
            return (root,) + tuple(res[1:])

        return solver

    return factory


SOLVERS = {
    "fsolve": (_fsolve, ("scipy.optimize", "scipy.optimize._minpack_py")),
    "root": (_root, ("scipy.optimize", "scipy.optimize._root")),
    "minimize": (_minimize, ("scipy.optimize", "scipy.optimize._minimize")),
    "minimize_scalar": (_minimize_scalar, ("scipy.optimize", "scipy.optimize._minimize")),
    "least_squares": (_least_squares, ("scipy.optimize", "scipy.optimize._lsq",
                                       "scipy.optimize._lsq.least_squares")),
}
for _name in ("brentq", "brenth", "ridder", "bisect"):
    SOLVERS[_name] = (_bracketing(_name), ("scipy.optimize", "scipy.optimize._zeros_py"))


def install(module):
    """Replace the solvers in scipy.optimize's modules (once); outside differentiation the
    replacement calls scipy's function unchanged."""
    for name, (factory, where) in SOLVERS.items():
        for mod_name in where:
            replace(mod_name, name, factory)


registry.watch("scipy.optimize", install)
