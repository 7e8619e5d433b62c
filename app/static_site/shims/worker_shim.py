"""Run in the worker after the installs and before the app's code (patches.py): stand-ins
for what Pyodide 0.27 lacks, no change to Panel."""

import pyodide.ffi

# Panel 1.9.4 uses jsnull (Pyodide >= 0.28); in 0.27 JS null already arrives as None.
if not hasattr(pyodide.ffi, "jsnull"):
    pyodide.ffi.jsnull = object()

try:
    import nh3  # noqa: F401
except ImportError:
    # ReactiveHTML components (pn.FlexBox among them) sanitize their string params
    # with nh3, a Rust extension with no Pyodide 0.27 build here: escape instead
    # (stricter, and identical for the plain text they carry).
    import html
    import sys
    import types

    _nh3 = types.ModuleType("nh3")
    _nh3.clean = lambda text, **_kw: html.escape(text, quote=False)
    sys.modules["nh3"] = _nh3

try:
    from app.host.dataclass_code import use_compiled_dataclass_methods
    from app.host.gc_startup import hold_collections
except ImportError:  # a stock app (bench_site.py's yardstick) has no app package
    pass
else:
    # Panel's, Bokeh's and numpy's imports come first in the app's code: without this,
    # about 190 collections walk their growing objects. main.py's freeze lets it go.
    hold_collections()
    use_compiled_dataclass_methods()
