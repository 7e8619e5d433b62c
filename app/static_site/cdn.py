"""Bokeh's and Panel's JS and CSS from the pinned wheels, and no remote reference left."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from app.static_site.assets import AssetError
from app.static_site.layout import (
    BOKEH_CDN,
    INDEX_HTML,
    LOCAL_BOKEH,
    LOCAL_PANEL,
    PANEL_BUNDLED_KEEP,
    PANEL_CDN,
)
from app.static_site.pins import BOKEH_VERSION, PANEL_VERSION

REMOTE_URL = re.compile(r"""(?:src|href)\s*=\s*["'](?:https?:)?//[^"']+""")


def check_self_hosted(site: Path) -> None:
    """No remote reference left, and every ./ reference in the page a file of the site."""
    for page in (site / INDEX_HTML, *site.glob("*.js")):
        text = page.read_text()
        found = REMOTE_URL.findall(text) + re.findall(r"importScripts\(\"https?://[^\"]+", text)
        found += [cdn for cdn in (BOKEH_CDN, PANEL_CDN) if cdn in text]  # in the copy's JSON
        if found:
            raise AssetError(f"remote reference left in {page.name}: {found[0]}")
    for ref in re.findall(r'(?:src|href)="\./([^"?#]+)', (site / INDEX_HTML).read_text()):
        if not (site / ref).is_file():
            raise AssetError(f"missing asset {ref}: index.html names it, site/ lacks it")


def copy_bokeh_js(bokeh_whl: Path, html: str, site: Path) -> None:
    """Copy each Bokeh bundle the page names, from the pinned wheel."""
    dest = site / LOCAL_BOKEH
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(bokeh_whl) as zf:
        for bundle in sorted(set(re.findall(rf"(bokeh[\w-]*?)-{BOKEH_VERSION}\.min\.js", html))):
            data = zf.read(f"bokeh/server/static/js/{bundle}.min.js")
            (dest / f"{bundle}-{BOKEH_VERSION}.min.js").write_bytes(data)


def keep_panel_asset(rel: str, named: set[str]) -> bool:
    if rel in named:
        return True
    if rel.startswith("bundled/"):
        return rel.split("/")[1] in PANEL_BUNDLED_KEEP
    if rel.startswith(("lib/", "dts/")) or rel.endswith((".map", "panel.json")):
        return False
    return rel != "panel.js"


def copy_panel_dist(panel_whl: Path, html: str, site: Path) -> None:
    """Mirror the CDN layout (panel/<version>/dist/...) from the pinned wheel."""
    dist = f"./{LOCAL_PANEL}{PANEL_VERSION}/dist/"
    named = {m.split("?")[0] for m in re.findall(rf'"{re.escape(dist)}([^"]+)"', html)}
    dest = site / LOCAL_PANEL / PANEL_VERSION / "dist"
    with zipfile.ZipFile(panel_whl) as zf:
        for name in zf.namelist():
            rel = name.removeprefix("panel/dist/")
            if rel != name and not name.endswith("/") and keep_panel_asset(rel, named):
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                (dest / rel).write_bytes(zf.read(name))
