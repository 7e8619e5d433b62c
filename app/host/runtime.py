"""Where the app runs: a server's CPython, or Pyodide in the static site's Web Worker.

Standard library only: the side processes (app/data/side_runs.py) import it too.
"""

from __future__ import annotations

import sys


def in_pyodide() -> bool:
    """Whether this is the static site's Pyodide (no server; Python in a Web Worker)."""
    return sys.platform == "emscripten"


def page_query() -> str | None:
    """In Pyodide, the page's query string: the worker sees its own URL, not the page's,
    so the page names the worker with its location as JSON (app/static_site/patches.py).
    None on a server, or when the worker was not named so."""
    if not in_pyodide():
        return None
    import json

    from js import name  # the worker's global `name` (Pyodide's js module)

    try:
        search = json.loads(str(name)).get("search") if name else None
    except (ValueError, AttributeError):
        return None
    return str(search) if search else ""
