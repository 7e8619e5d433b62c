"""A component's CSS file, as the text Panel inlines.

Panel turns a stylesheet *path* into a URL under `panel serve` and also in the
static site's build-time render, where no server answers it; the text works in
both, and in Pyodide.
"""

from __future__ import annotations

from importlib import resources


def stylesheet(package: str, name: str) -> str:
    return resources.files(package).joinpath(name).read_text("utf-8")
