"""The early page of every address the site ships (app/page/early_page.py), the page of
every playground link, and the modules that lay it out in the browser."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

from app.static_site.assets import AssetError
from app.static_site.layout import BOKEH_CDN, EARLY_DIR, PANEL_CDN, ROOT

# The early page's modules, shipped as they are in the project (their relative imports
# hold): the page's own, and the components it renders.
EARLY_MODULES = ("app/page/early_page.js", "app/components/*.js")


def write_page(stage: Path, name: str, page: dict[str, Any]) -> None:
    text = json.dumps(page, separators=(",", ":"))
    if BOKEH_CDN in text or PANEL_CDN in text:
        raise AssetError(f"remote reference left in the early page {name}")
    packed = gzip.compress(text.encode(), compresslevel=9, mtime=0)
    (stage / EARLY_DIR / f"{name}.json.gz").write_bytes(packed)


def write_early_pages(stage: Path) -> None:
    """The gzipped early page of every address app/data/url.py names and of every
    playground link (url.PLAYGROUND) in EARLY_DIR, and the modules beside the page, where
    it imports them. Makes the App at each address in this process."""
    from app.data import url
    from app.page.early_page import early_page
    from app.page.layout import App

    (stage / EARLY_DIR).mkdir()
    for name, query in url.early_pages().items():
        write_page(stage, name, early_page(App(link=url.parse_link(query))))
    # Laid out at the empty playground; the worker fills in the link's.
    app = App(link=url.parse_link(url.empty_playground_href()))
    write_page(stage, url.PLAYGROUND, early_page(app, playground=True))
    for pattern in EARLY_MODULES:
        for source in sorted(ROOT.glob(pattern)):
            target = stage / source.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
