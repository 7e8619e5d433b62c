"""Where the app runs: a server's CPython, or Pyodide in the static site's Web Worker.

Standard library only: the side processes (app/data/side_runs.py) import it too.
"""

from __future__ import annotations

import sys


def in_pyodide() -> bool:
    """Whether this is the static site's Pyodide (no server; Python in a Web Worker)."""
    return sys.platform == "emscripten"
