"""Pre-rendered copies of the app at every scenario's addresses."""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

from app.static_site.assets import AssetError
from app.static_site.layout import BOKEH_CDN, PANEL_CDN
from app.static_site.patches import local_urls
from app.static_site.pins import PANEL_VERSION

COPY_JSON = re.compile(r'<script type="application/json" id="p\d+">\s*(.*?)\s*</script>', re.S)
COPY_ITEMS = re.compile(r"const render_items = (\[.*?\]);")


def prerendered_copy(html: str) -> dict[str, object]:
    """The pre-rendered document of a converted page: its JSON, id and root ids."""
    docs, items = COPY_JSON.search(html), COPY_ITEMS.search(html)
    if docs is None or items is None:
        raise AssetError("unexpected converted HTML: cannot find its pre-rendered document")
    item = json.loads(items.group(1))[0]
    # As the page holds it: HTML-escaped JSON text, which Bokeh unescapes before parsing.
    return {"docs_json": docs.group(1), "docid": item["docid"], "root_ids": item["root_ids"]}


def prerender_copies(app: Path, requirements: list[str]) -> tuple[dict[str, bytes], str]:
    """Every copy the project's app names (app/data/url.py), gzipped, and the page's own name.

    Runs the app once per address, in this process, as the conversion's prerender does;
    `convert` has put the project on sys.path.
    """
    from panel.io.convert import script_to_html

    from app.data import url  # the project's, on sys.path since convert()

    own = url.copy_of(url.parse_link(""))  # the page's own address: no query
    copies: dict[str, bytes] = {}
    for name, query in url.prerendered_copies().items():
        if name == own:
            continue  # the page holds it
        os.environ[url.PRERENDER_QUERY_ENV] = query
        try:
            html, _ = script_to_html(
                str(app),
                requirements=requirements,
                runtime="pyodide-worker",
                prerender=True,
                panel_version=PANEL_VERSION,
            )
        finally:
            del os.environ[url.PRERENDER_QUERY_ENV]
        text = json.dumps(prerendered_copy(local_urls(html)), separators=(",", ":"))
        if BOKEH_CDN in text or PANEL_CDN in text:
            raise AssetError(f"remote reference left in the pre-rendered copy {name}")
        copies[name] = gzip.compress(text.encode(), compresslevel=9, mtime=0)
    return copies, own
