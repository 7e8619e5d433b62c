"""A component's CSS file, as the text Panel inlines.

Panel turns a stylesheet *path* into a URL under `panel serve` and also in the
static site's build-time render, where no server answers it; the text works in
both, and in Pyodide.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources


def stylesheet(package: str, name: str) -> str:
    return resources.files(package).joinpath(name).read_text("utf-8")


def sheet_ids(texts: Iterable[str], index: dict[str, int]) -> list[int]:
    """Each text's place in ``index``, where a new one is added at the end: a page's
    stylesheets, each text once (the stepping page's `sheets`, the early page's)."""
    return [index.setdefault(text, len(index)) for text in texts]
