"""Backend selection: the compiled core when it imports, else the pure-Python twin.

``DELTAAD_BACKEND=python`` forces the pure backend, ``DELTAAD_BACKEND=c`` demands the core.
Every other module imports the chosen one as ``B`` from here, once.
"""

import os

_choice = os.environ.get("DELTAAD_BACKEND", "").strip().lower()

if _choice in ("", "auto"):
    try:
        from . import _core as B
        name = "c"
    except ImportError:
        from . import _pure as B
        name = "python"
elif _choice in ("c", "core"):
    try:
        from . import _core as B
    except ImportError as exc:
        raise ImportError(
            "DELTAAD_BACKEND=c asks for deltaad's compiled core, but deltaad._core could not be "
            "imported (%s). Build it with `make build` (or reinstall with `pip install .` on a "
            "machine with a C compiler), or unset DELTAAD_BACKEND to use the pure-Python "
            "backend." % exc
        ) from exc
    name = "c"
elif _choice in ("python", "pure", "py"):
    from . import _pure as B
    name = "python"
else:
    raise ImportError(
        "DELTAAD_BACKEND=%r is not a deltaad backend; use DELTAAD_BACKEND=c (compiled core) or "
        "DELTAAD_BACKEND=python (pure Python), or leave it unset to pick automatically." % _choice
    )
