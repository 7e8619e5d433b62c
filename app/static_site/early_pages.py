"""The early page of every address the site ships (app/page/early_page.py), and the
modules that lay it out in the browser."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from app.static_site.assets import AssetError
from app.static_site.layout import BOKEH_CDN, EARLY_DIR, PANEL_CDN, ROOT

# The early page's modules, shipped as they are in the project (their relative imports
# hold): the page's own, and the components it renders.
EARLY_MODULES = ("app/page/early_page.js", "app/components/*.js")


def early_pages() -> tuple[dict[str, bytes], str]:
    """Name -> gzipped early page of every address app/data/url.py names, and the start
    page's name. Makes the App at each address in this process; `convert` has put the
    project on sys.path."""
    from app.data import url  # the project's, on sys.path since convert()
    from app.page.early_page import early_page
    from app.page.layout import App

    pages: dict[str, bytes] = {}
    for name, query in url.early_pages().items():
        text = json.dumps(early_page(App(link=url.parse_link(query))), separators=(",", ":"))
        if BOKEH_CDN in text or PANEL_CDN in text:
            raise AssetError(f"remote reference left in the early page {name}")
        pages[name] = gzip.compress(text.encode(), compresslevel=9, mtime=0)
    return pages, url.START_PAGE


def write_early_pages(stage: Path, pages: dict[str, bytes]) -> None:
    """The pages in EARLY_DIR, and the modules beside the page, where it imports them."""
    (stage / EARLY_DIR).mkdir()
    for name, packed in pages.items():
        (stage / EARLY_DIR / f"{name}.json.gz").write_bytes(packed)
    for pattern in EARLY_MODULES:
        for source in sorted(ROOT.glob(pattern)):
            target = stage / source.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
