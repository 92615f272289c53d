"""The modes: ways of running a program (plain floats, deltaad, ablations, peer libraries).

A mode turns ``(program, n, direction)`` into a runner ``run(xs)`` whose result is checked
against the reference and then timed:

- ``kind == "value"``:   the program's value (the float baseline),
- ``kind == "reverse"``: the gradient with respect to the whole input (a flat list),
- ``kind == "forward"``: the directional derivative along ``direction`` (a float).

``prepare()`` imports what the mode needs and raises :class:`Unavailable` when it cannot (the
mode is then reported "unavailable", e.g. deltaad-c before the compiled core exists). Each mode
runs in its own worker process; ``backend`` is the ``DELTAAD_BACKEND`` that process gets.
``ladder`` modes (the ablations) also run the program's small sizes, since they blow up long
before the main sweep starts; ``deadline`` modes abandon a run that passes
``ablations.DEADLINE``, which the worker sets before each of their runs. ``hidden`` modes run only when asked for by name.

Adding a mode: subclass :class:`Mode`, implement ``prepare`` and ``runner`` (and ``memory``
if there is more to report than traced memory), and :func:`register` it.
"""

import importlib

from .programs import FLOAT_NS, NS


class Unavailable(Exception):
    """The mode cannot run in this environment (missing package or backend)."""


def _version(dist):
    try:
        from importlib import metadata

        return metadata.version(dist)
    except Exception:
        return None


class Mode:
    name = ""
    kind = "reverse"
    kinds = ("scalar",)          # program kinds this mode can run
    backend = None               # DELTAAD_BACKEND for its worker (None: leave unset)
    ladder = False
    deadline = False             # honours ablations.DEADLINE (set before each of its runs)
    hidden = False
    peer = False
    description = ""

    def prepare(self):
        """Import what is needed; raise :class:`Unavailable` if impossible."""

    def runner(self, program, n, direction):
        raise NotImplementedError

    def memory(self, program, n, xs, direction):
        """One run for the memory measurement; returns ``(result, extra dict)``. By default
        the runner's; deltaad modes also report their tape."""
        return self.runner(program, n, direction)(xs), {}

    def versions(self):
        return {}


MODES = {}


def register(mode):
    MODES[mode.name] = mode
    return mode


def default_modes():
    return [m for m in MODES if not MODES[m].hidden]


# --------------------------------------------------------------------------------------------
# plain floats


class FloatMode(Mode):
    name = "float"
    kind = "value"
    kinds = ("scalar", "array", "loop")
    description = "the program on plain Python floats (the baseline)"

    def runner(self, program, n, direction):
        fn = program.fn
        if program.float_runs is not None:  # e.g. jacrev's: one run per Jacobian row
            runs = range(program.float_runs(n))

            def run_all(xs):
                out = None
                for _ in runs:
                    out = fn(FLOAT_NS, n, xs)
                return out
            return run_all

        def run(xs):
            return fn(FLOAT_NS, n, xs)
        return run


register(FloatMode())


# --------------------------------------------------------------------------------------------
# deltaad


def _deltaad(expect):
    try:
        import deltaad
    except ImportError as exc:
        raise Unavailable("cannot import deltaad with DELTAAD_BACKEND=%s: %s" % (expect, exc))
    if expect is not None and deltaad.backend != expect:
        raise Unavailable("deltaad.backend is %r, expected %r" % (deltaad.backend, expect))
    return deltaad


def deltaad_ns(deltaad, checkpoints=None):
    def fori_loop(lower, upper, body, val):
        return deltaad.fori_loop(lower, upper, body, val, checkpoints=checkpoints)
    return NS("deltaad", deltaad.sin, deltaad.cos, deltaad.exp, deltaad.sqrt,
              log=deltaad.log, tanh=deltaad.tanh, fori_loop=fori_loop)


def pullback_ones(vjp, f):
    """Reverse mode of a list-valued ``f`` (``Program.output == "list"``): its ``vjp`` pulled
    back with a list cotangent of ones, i.e. the gradient of the sum of its outputs."""
    def run(xs):
        out, pb = vjp(f, xs)
        return pb([1.0] * len(out))[0]
    return run


class DeltaadReverse(Mode):
    kind = "reverse"
    kinds = ("scalar", "array", "loop")
    scale = 1.0  # != 1 only for the deliberately wrong test mode

    def __init__(self, backend, name=None, scale=1.0, hidden=False):
        self.backend = backend
        self.name = name or "deltaad-%s" % backend
        self.scale = scale
        self.hidden = hidden
        self.description = "deltaad.grad, %s backend" % {
            "c": "compiled", "python": "pure-Python"}.get(backend, "current")
        if scale != 1.0:
            self.description = "deltaad.grad times %g: a deliberately wrong mode (tests)" % scale

    def prepare(self):
        self.dd = _deltaad(self.backend)
        self.ns = deltaad_ns(self.dd)

    def _f(self, program, n):
        fn, ns = program.fn, self.ns

        def f(xs):
            return fn(ns, n, xs)
        return f

    def runner(self, program, n, direction):
        if program.output == "jacobian":
            g = self.dd.jacrev(self._f(program, n))
        elif program.output == "list":
            g = pullback_ones(self.dd.vjp, self._f(program, n))
        else:
            g = self.dd.grad(self._f(program, n))
        if self.scale == 1.0:
            return g
        scale = self.scale

        def wrong(xs):
            return [scale * v for v in g(xs)]
        return wrong

    def memory(self, program, n, xs, direction):
        if program.output == "jacobian":  # the Jacobian's memory, not one pullback's
            return self.runner(program, n, direction)(xs), {}
        out, vjp_fn = self.dd.vjp(self._f(program, n), xs)
        g = vjp_fn([1.0] * len(out) if program.output == "list" else 1.0)[0]
        tape = vjp_fn.tape
        extra = {"tape_nbytes": int(tape.nbytes), "tape_nbindings": int(tape.nbindings)}
        del vjp_fn, tape
        return g, extra

    def versions(self):
        return {"deltaad": getattr(self.dd, "__version__", None), "deltaad.backend": self.dd.backend}


class DeltaadForward(DeltaadReverse):
    kind = "forward"
    kinds = ("scalar", "loop")  # not run on the array programs

    def __init__(self, backend, hidden=False):
        DeltaadReverse.__init__(self, backend, "deltaad-%s-fwd" % backend, hidden=hidden)
        self.description = "deltaad.jvp along one random direction, %s backend" % (
            "compiled" if backend == "c" else "pure-Python")

    def runner(self, program, n, direction):
        f = self._f(program, n)
        jvp = self.dd.jvp
        args = (direction,)

        def run(xs):
            return jvp(f, (xs,), args)[1]
        return run

    def memory(self, program, n, xs, direction):
        return self.runner(program, n, direction)(xs), {}


class DeltaadCheckpoint(DeltaadReverse):
    """``deltaad.grad`` of a loop program with ``fori_loop(..., checkpoints=c)``."""

    kinds = ("loop",)

    def __init__(self, backend, checkpoints):
        DeltaadReverse.__init__(self, backend, "deltaad-%s-ckpt%s" % (backend, checkpoints))
        self.checkpoints = checkpoints
        self.description = "deltaad.grad, fori_loop(..., checkpoints=%r), %s backend" % (
            checkpoints, "compiled" if backend == "c" else "pure-Python")

    def prepare(self):
        self.dd = _deltaad(self.backend)
        self.ns = deltaad_ns(self.dd, self.checkpoints)


register(DeltaadReverse("c"))
register(DeltaadReverse("python"))
for _c in (10, 30, "auto"):
    register(DeltaadCheckpoint("c", _c))
register(DeltaadForward("c"))
register(DeltaadForward("python", hidden=True))  # on request: --modes ...,deltaad-python-fwd
register(DeltaadReverse(None, name="deltaad-wrong", scale=1.1, hidden=True))


class DeltaadCompiled(DeltaadReverse):
    """``deltaad.compile(value_and_grad(f))``: the first call (the reference check) records,
    the timed calls replay the recording in C."""

    def __init__(self):
        DeltaadReverse.__init__(self, "c", "deltaad-compiled")
        self.kinds = ("scalar",)
        self.description = "deltaad.compile(value_and_grad(f)) replayed, compiled core"

    def runner(self, program, n, direction):
        cg = self.dd.compile(self.dd.value_and_grad(self._f(program, n)))

        def run(xs):
            return cg(xs)[1]
        return run


register(DeltaadCompiled())


# --------------------------------------------------------------------------------------------
# ablations (bench/ablations.py)


class AblationMode(Mode):
    kind = "reverse"
    ladder = True
    deadline = True

    def __init__(self, name, description, grad_name, ns_name):
        self.name = name
        self.description = description
        self._grad_name = grad_name
        self._ns_name = ns_name

    def prepare(self):
        from . import ablations

        self.grad = getattr(ablations, self._grad_name)
        self.ns = getattr(ablations, self._ns_name)

    def runner(self, program, n, direction):
        fn, ns, grad = program.fn, self.ns, self.grad

        def f(duals):
            return fn(ns, n, duals)

        def run(xs):
            return grad(f, xs)
        return run


register(AblationMode(
    "naive-delta", "Delta trees without Var/Let, eval_2 (Krawiec et al., section 6)", "naive_delta_grad", "NAIVE_NS"))
register(AblationMode(
    "backpropagator", "closures dt -> contributions, functional ⊕ (Krawiec et al., section 5)",
    "backpropagator_grad", "BACKPROP_NS"))


# --------------------------------------------------------------------------------------------
# peers


class TorchMode(Mode):
    name = "torch"
    peer = True
    description = "PyTorch: float64 scalar tensors with requires_grad, .backward()"

    def prepare(self):
        try:
            self.torch = importlib.import_module("torch")
        except ImportError as exc:
            raise Unavailable("torch is not installed (%s)" % exc)
        self.torch.set_num_threads(1)
        t = self.torch
        from .array_programs import TorchArrays

        self.ns = NS("torch", t.sin, t.cos, t.exp, t.sqrt, log=t.log, tanh=t.tanh,
                     array=TorchArrays(t))

    def runner(self, program, n, direction):
        fn, ns, torch = program.fn, self.ns, self.torch
        f64 = torch.float64
        tensor = torch.tensor
        if program.kind == "array":  # numpy arrays in and out (as_tensor shares memory)
            as_tensor = torch.as_tensor

            def run_arrays(xs):
                ts = [as_tensor(x, dtype=f64).requires_grad_(True) for x in xs]
                out = fn(ns, n, ts)
                out.backward()
                return [t.grad.numpy() for t in ts]
            return run_arrays

        def run(xs):
            ts = [tensor(x, dtype=f64, requires_grad=True) for x in xs]
            out = fn(ns, n, ts)
            out.backward()
            return [0.0 if t.grad is None else t.grad.item() for t in ts]
        return run

    def versions(self):
        return {"torch": self.torch.__version__}


class _FunctionalGradMode(Mode):
    """A peer whose ``grad(f)`` differentiates a function of a list (autograd, jax);
    ``prepare`` sets ``self.grad`` and ``self.ns``."""

    def runner(self, program, n, direction):
        fn, ns = program.fn, self.ns

        def f(xs):
            return fn(ns, n, xs)
        g = self.grad(f)
        if program.kind == "array":
            return lambda xs: g(list(xs))

        def run(xs):
            return [float(v) for v in g(list(xs))]
        return run


class AutogradMode(_FunctionalGradMode):
    name = "autograd"
    peer = True
    description = "HIPS autograd: autograd.grad of the function of a list"

    def prepare(self):
        try:
            self.autograd = importlib.import_module("autograd")
            anp = importlib.import_module("autograd.numpy")
        except ImportError as exc:
            raise Unavailable("autograd is not installed (%s)" % exc)
        from .array_programs import NumpyLike

        self.grad = self.autograd.grad
        self.ns = NS("autograd", anp.sin, anp.cos, anp.exp, anp.sqrt, log=anp.log, tanh=anp.tanh,
                     array=NumpyLike(anp, "autograd.numpy"))

    def versions(self):
        return {"autograd": _version("autograd")}


class JaxMode(_FunctionalGradMode):
    name = "jax"
    peer = True
    description = "JAX eager (no jit): jax.grad of the function of a list, float64"

    def prepare(self):
        try:
            self.jax = importlib.import_module("jax")
            jnp = importlib.import_module("jax.numpy")
        except ImportError as exc:
            raise Unavailable("jax is not installed (%s)" % exc)
        self.jax.config.update("jax_enable_x64", True)
        try:
            self.jax.config.update("jax_platforms", "cpu")
        except Exception:
            pass
        from .array_programs import NumpyLike

        self.grad = self.jax.grad
        self.ns = NS("jax", jnp.sin, jnp.cos, jnp.exp, jnp.sqrt, log=jnp.log, tanh=jnp.tanh,
                     array=NumpyLike(jnp, "jax.numpy"))

    def versions(self):
        return {"jax": self.jax.__version__, "jaxlib": _version("jaxlib")}


register(TorchMode())
register(AutogradMode())
register(JaxMode())
