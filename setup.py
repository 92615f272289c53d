"""Build script for deltaad's optional compiled core, ``deltaad._core``.

All project metadata lives in pyproject.toml; this file only declares the
Cython extension and makes building it *optional*:

* If the core cannot be built (Cython missing, a Cython or C compile error,
  no C compiler, ...) a WARNING is printed and the install still succeeds;
  ``import deltaad`` then runs on the pure-Python backend ``deltaad._pure``.
* ``DELTAAD_REQUIRE_CORE=1`` turns that warning into a hard failure. The
  Makefile sets it, so our own builds and CI notice a broken core.
* ``DELTAAD_TRACE=1`` compiles the core with Cython line tracing
  (``linetrace=True`` and ``CYTHON_TRACE=1``) for profilers and coverage.
  It slows the core down; never ship a traced build.

Setting either variable to "", "0", "false", "no" or "off" means unset.
"""

import glob
import os
import sys
import traceback

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _env_flag(name):
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


REQUIRE_CORE = _env_flag("DELTAAD_REQUIRE_CORE")
TRACE = _env_flag("DELTAAD_TRACE")

CYTHON_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "nonecheck": False,
    "embedsignature": True,
}
DEFINE_MACROS = []
if TRACE:
    CYTHON_DIRECTIVES["linetrace"] = True
    DEFINE_MACROS.append(("CYTHON_TRACE", "1"))

# Headers and .pxd files the core depends on: a change to any of them rebuilds
# it, and setuptools puts them into the sdist.
CORE_DEPENDS = sorted(glob.glob("cext/*.pxd") + glob.glob("cext/*.h"))

CORE = Extension(
    "deltaad._core",
    sources=["cext/_core.pyx"],
    include_dirs=["cext"],
    depends=CORE_DEPENDS,
    define_macros=DEFINE_MACROS,
    language="c",
)

# The compiled replayer of deltaad.compile (its pure twin is deltaad._replay_pure).
REPLAY = Extension(
    "deltaad._replay",
    sources=["cext/_replay.pyx"],
    include_dirs=["cext"],
    depends=["cext/_replay_float.h", "cext/_replay_exec.h"],
    define_macros=DEFINE_MACROS,
    language="c",
)



# The compiled fast path of small array duals (its Python twin is deltaad.numpy.array.apply):
# numpy's inner loops called on the arrays' buffers, so it compiles against numpy's headers.
ARRAYS = Extension(
    "deltaad._arrays",
    sources=["cext/_arrays.pyx"],
    include_dirs=["cext"],
    depends=["cext/_fpe.h", "cext/_bcast.h"],
    define_macros=DEFINE_MACROS + [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    language="c",
)

# The compiled replayer of deltaad.compile's array steps (its Python twin is the loop of
# deltaad.compile_arrays.ArrayProgram.run): numpy's inner loops, so numpy's headers too.
ARRAY_REPLAY = Extension(
    "deltaad._array_replay",
    sources=["cext/_array_replay.pyx"],
    include_dirs=["cext"],
    depends=["cext/_fpe.h"],
    define_macros=DEFINE_MACROS + [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    language="c",
)

# Optimisation flags by compiler family (extra_compile_args are chosen once the
# compiler is known, so that a non-gcc compiler is not handed gcc flags).
OPT_FLAGS = {"unix": ["-O3"], "mingw32": ["-O3"], "cygwin": ["-O3"], "msvc": ["/O2"]}

_RULE = "*" * 78


def _print_banner(title, lines):
    text = "\n".join([_RULE, title, *lines, _RULE])
    print("\n" + text + "\n", file=sys.stderr, flush=True)


def _describe(exc):
    """One line saying why the core failed to build."""
    message = str(exc).strip() or "(no message)"
    kind = type(exc)
    if kind.__name__ == "CompileError" and kind.__module__.startswith("Cython"):
        return "Cython reported errors in %s (shown above)" % message
    if kind.__name__ in ("CompileError", "LinkError", "CCompilerError"):
        return "the C compiler failed (its output is above): %s" % message
    return "%s: %s" % (kind.__name__, message)


class optional_build_ext(build_ext):
    """``build_ext`` that cythonizes the core itself and lets it fail softly."""

    def build_extensions(self):
        flags = OPT_FLAGS.get(getattr(self.compiler, "compiler_type", ""), [])
        for ext in self.extensions:
            for flag in flags:
                if flag not in ext.extra_compile_args:
                    ext.extra_compile_args.append(flag)
        super().build_extensions()

    def build_extension(self, ext):
        try:
            if ext.name in ("deltaad._arrays", "deltaad._array_replay"):
                import numpy  # a build requirement of this extension only

                if numpy.get_include() not in ext.include_dirs:
                    ext.include_dirs.append(numpy.get_include())
            self._cythonize(ext)
            super().build_extension(ext)
        except BaseException as exc:  # noqa: BLE001 - any failure means "no core"
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._core_failed(ext, exc)

    def run(self):
        try:
            super().run()
        except BaseException as exc:  # noqa: BLE001 - e.g. no usable C compiler
            if isinstance(exc, KeyboardInterrupt) or getattr(exc, "_deltaad_reported", False):
                raise
            for ext in self.extensions:
                self._core_failed(ext, exc)

    def _cythonize(self, ext):
        pyx = [src for src in ext.sources if src.endswith(".pyx")]
        if not pyx:
            return
        try:
            from Cython.Build import cythonize
        except ImportError as exc:
            raise RuntimeError(
                "Cython is not installed (%s); it is needed to compile %s. "
                "Install it with: pip install 'Cython>=3.0'" % (exc, ", ".join(pyx))
            ) from exc
        # cythonize() writes cext/<name>.c beside the .pyx, regenerating it only
        # when the .pyx or anything it cimports changed (unless --force).
        (cythonized,) = cythonize(
            [ext],
            compiler_directives=dict(CYTHON_DIRECTIVES),
            include_path=["cext"],
            force=bool(self.force),
            quiet=not self.verbose,
        )
        ext.sources = list(cythonized.sources)

    def _core_failed(self, ext, exc):
        # Lets setuptools skip copying the missing file for --inplace/editable.
        ext.optional = True
        reason = _describe(exc)
        if REQUIRE_CORE:
            _print_banner(
                "ERROR: the compiled core %s could not be built." % ext.name,
                [
                    "  Why:  " + reason,
                    "  (Compiler/Cython output, if any, is above.)",
                    "  DELTAAD_REQUIRE_CORE=1 is set, so this is a hard failure.",
                    "  Unset it to install with the pure-Python backend instead.",
                ],
            )
            try:
                exc._deltaad_reported = True
            except Exception:  # noqa: BLE001 - exception type without __dict__
                pass
            raise exc
        _print_banner(
            "WARNING: the compiled core %s could not be built." % ext.name,
            [
                "  Why:  " + reason,
                "  (Compiler/Cython output, if any, is above; traceback below.)",
                "  The installation continues WITHOUT it: deltaad will run on its",
                "  slower pure-Python backend (deltaad._pure). Results are the same,",
                "  only speed differs. Check with:",
                "      python -c 'import deltaad; print(deltaad.backend)'",
                "  To get the core: install a C compiler, Python headers and",
                "  Cython>=3.0, then reinstall. Set DELTAAD_REQUIRE_CORE=1 to make",
                "  this failure an error instead of a warning.",
            ],
        )
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
        sys.stderr.flush()


setup(
    ext_modules=[CORE, REPLAY, ARRAYS, ARRAY_REPLAY],
    cmdclass={"build_ext": optional_build_ext},
)
