"""Slimming: the worker never reads Bokeh's or Panel's JS bundles from the wheel."""

from __future__ import annotations

from collections.abc import Callable


def keep_in_bokeh(path: str) -> bool:
    if path.startswith("bokeh/server/static/"):
        return not path.endswith((".js", ".d.ts", ".json", ".map"))
    return True


def keep_in_panel(path: str) -> bool:
    if path.startswith(
        ("panel/tests/", "panel/dist/bundled/", "panel/dist/lib/", "panel/dist/dts/")
    ):
        return False
    return not (path.startswith("panel/dist/") and path.endswith((".js", ".map", ".json")))


# The app highlights Python only: the other 500 lexers are 1 MB of the download.
PYGMENTS_LEXERS_KEPT = ("__init__.py", "_mapping.py", "python.py")


def keep_in_pygments(path: str) -> bool:
    if path.startswith("pygments/lexers/"):
        return path.removeprefix("pygments/lexers/") in PYGMENTS_LEXERS_KEPT
    return True


# Parts of numpy neither Bokeh nor Panel imports (numpy 2 loads these lazily). Pyodide
# compiles every extension module of a package at load: these are 2.9 MB of wasm.
NUMPY_DROPPED = (
    "numpy/random/",
    "numpy/fft/",
    "numpy/f2py/",
    "numpy/_pyinstaller/",
    "numpy/linalg/lapack_lite.",
    "numpy/_core/_operand_flag_tests.",
    "numpy/_core/_rational_tests.",
    "numpy/_core/_struct_ufunc_tests.",
    "numpy/_core/_umath_tests.",
    "numpy/_core/_simd.",
)


def keep_in_numpy(path: str) -> bool:
    return not (path.startswith(NUMPY_DROPPED) or path.endswith(".pyi"))


SLIMMERS: dict[str, Callable[[str], bool]] = {
    "bokeh": keep_in_bokeh,
    "panel": keep_in_panel,
    "pygments": keep_in_pygments,
    "numpy": keep_in_numpy,
}
