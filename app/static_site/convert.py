"""Panel's conversion of the app to a Pyodide-worker page."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import cast

from app.static_site.assets import AssetError, canonical
from app.static_site.pins import PANEL_VERSION

# What `panel convert` has micropip install for any app (http_patch adds pyodide-http).
CONVERT_INSTALLS = ("bokeh", "panel", "pyodide-http")


def app_requirements(
    project_meta: dict[str, object] | None, wheel: Path | None, lock: dict[str, dict[str, object]]
) -> tuple[list[str], list[str]]:
    """Requirements for micropip: the project wheel and its 'app' extra, all from the lock;
    and the lock names to load: convert's own and these (the project too)."""
    from packaging.requirements import Requirement

    reqs: list[str] = []
    names = list(CONVERT_INSTALLS)
    if project_meta is not None and wheel is not None:
        reqs.append(f"{project_meta['name']} @ {wheel.resolve().as_uri()}")
        names.append(canonical(str(project_meta["name"])))
        extras = cast("dict[str, list[str]]", project_meta.get("optional-dependencies", {}))
        for line in extras.get("app", []):
            req = Requirement(line)
            key = canonical(req.name)
            if key in ("panel", "bokeh"):
                continue  # convert adds these itself, pinned by panel_version
            if key not in lock or not req.specifier.contains(str(lock[key]["version"]), True):
                raise AssetError(f"missing asset {line}: the app extra needs it, the lock lacks it")
            reqs.append(f"{req.name}{req.specifier}")
            names.append(key)
    return reqs, list(dict.fromkeys(names))


def convert(
    app: Path, out: Path, requirements: list[str], project: Path | None, prerender: bool = True
) -> None:
    from panel.io.convert import convert_apps

    if project is not None:
        # The prerender runs the app here: it must import the project's packages.
        sys.path.insert(0, str(project))
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(project), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
    convert_apps(
        [str(app)],
        dest_path=out,
        runtime="pyodide-worker",
        requirements=requirements,
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
