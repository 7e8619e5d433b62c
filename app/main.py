"""Entry point: `panel serve app/main.py`, and what `panel convert` turns into the static site."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import panel as pn
from bokeh.settings import settings

try:
    import app  # noqa: F401  (installed, or in Pyodide)
except ImportError:  # `panel serve app/main.py` from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.host.gc_startup import freeze_imported_objects, hold_collections

hold_collections()  # until the app's modules are imported and frozen (gc_startup.py)
from app.data.url import lab_engine, lab_link, parse_link  # noqa: E402
from app.host.local_assets import serve_panel_assets_locally  # noqa: E402
from app.host.runtime import in_pyodide, page_query  # noqa: E402
from app.host.write_race import fix_panels_write_race  # noqa: E402
from app.page.layout import PAGE_CSS, PAGE_TEMPLATE, App  # noqa: E402
from app.views.lab_link import LAB_PAGE_CSS  # noqa: E402

logging.basicConfig(level=logging.INFO)
# No IDE signatures: building them for every Panel class costs Pyodide ~0.1 s at start.
# The lab's page layout is global CSS (app/views/lab_page.css); it applies to the lab only.
pn.extension(notifications=False, apply_signatures=False, global_css=[PAGE_CSS, LAB_PAGE_CSS])
# Bokeh's diagnostics (close-match suggestions for a missing attribute) ran difflib each
# time Panel looked up a component's data property on its outer model (6-9% of a
# playground edit's Python side in a profile).
settings.perform_error_diagnostics.set_value(False)
freeze_imported_objects()  # see app/host/gc_startup.py


def current_query() -> str:
    """The page's query string, in `panel serve` and in Pyodide alike."""
    in_worker = page_query()
    if in_worker is not None:
        return in_worker
    location = pn.state.location
    if location is not None and location.search:
        return str(location.search)
    args = pn.state.session_args or {}
    pairs = [
        f"{k}={v[0].decode() if isinstance(v[0], bytes) else v[0]}" for k, v in args.items() if v
    ]
    return "?" + "&".join(pairs) if pairs else ""


if pn.state.curdoc is not None:  # a page being served or converted (not an import)
    serve_panel_assets_locally(pn.state.curdoc)
    if not in_pyodide():
        fix_panels_write_race()
    # Panel takes a string and extends its base template with it (Bokeh types a Template).
    pn.state.curdoc.template = PAGE_TEMPLATE  # type: ignore[assignment]
lab_preset = lab_link(current_query())
if lab_preset is None:
    # (in Pyodide the static site's early page holds the builder's document)
    simulator = App(link=parse_link(current_query()), prebuilt=in_pyodide())
    simulator.servable(title="Prefix Cache Lab · BlockPool")
else:
    # Only the lab's pages import the lab (its views and charts: about 0.4 s in Pyodide).
    from app.views.lab import open_lab

    lab_view = open_lab(lab_preset, lab_engine(current_query()))
    lab_view.serve("Prefix Cache Lab · Workload lab")
