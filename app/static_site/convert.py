"""Panel's conversion of the app to a Pyodide-worker page."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from app.static_site.assets import AssetError, canonical
from app.static_site.lock import LockPackages
from app.static_site.pins import PANEL_VERSION

# What `panel convert` has micropip install for any app (http_patch adds pyodide-http).
CONVERT_INSTALLS = ("bokeh", "panel", "pyodide-http")


def lock_names(project_meta: dict[str, object], lock: LockPackages) -> list[str]:
    """The lock's names the worker installs: convert's own, the project and its 'app'
    extra (each checked against the lock)."""
    from packaging.requirements import Requirement

    names = [*CONVERT_INSTALLS, canonical(str(project_meta["name"]))]
    extras = cast("dict[str, list[str]]", project_meta.get("optional-dependencies", {}))
    for line in extras.get("app", []):
        req = Requirement(line)
        key = canonical(req.name)
        if key in ("panel", "bokeh"):
            continue  # convert's own, pinned by panel_version
        if key not in lock or not req.specifier.contains(str(lock[key]["version"]), True):
            raise AssetError(f"missing asset {line}: the app extra needs it, the lock lacks it")
        names.append(key)
    return list(dict.fromkeys(names))


def convert(app: Path, out: Path, prerender: bool) -> None:
    """The app converted, with no requirement of its own: the worker installs them from
    the lock (patches.py), or, a stock app, only Panel's with micropip."""
    from panel.io.convert import convert_apps

    convert_apps(
        [str(app)],
        dest_path=out,
        runtime="pyodide-worker",
        requirements=[],
        prerender=prerender,
        build_index=False,
        build_pwa=False,
        max_workers=1,
        panel_version=PANEL_VERSION,
        http_patch=True,
        inline=False,
        compiled=False,
        verbose=False,
    )
    if not (out / f"{app.stem}.html").exists():
        raise AssetError(f"conversion of {app} failed (see the message above)")
