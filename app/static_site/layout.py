"""Where things are: the project, the app, the site and its folders."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the project's checkout
APP_SCRIPT = Path("app/main.py")
SITE_DIR = Path("site")
INDEX_HTML = "index.html"
EARLY_DIR = "early"  # every address's page before Python (the `pages` measure)
BOKEH_CDN = "https://cdn.bokeh.org/bokeh/release/"
PANEL_CDN = "https://cdn.holoviz.org/panel/"
LOCAL_BOKEH = "cdn/bokeh/release/"
LOCAL_PANEL = "cdn/panel/"
# Bundled Panel assets the page may ask for at run time (themes are always used).
PANEL_BUNDLED_KEEP = ("theme",)
# Parts of the project the page never imports: left out of the wheel it ships. The traces
# are the site's own files (traces.py), which the page fetches when asked: in the wheel
# they were 0.75 MB more for every page to load and unpack before Python starts.
NOT_SHIPPED = ("app/static_site/", "content/traces/")
# What the app imports only for some addresses (app/main.py: the lab's pages): compiled
# with what it imports at start, so those pages do not compile Bokeh's plotting in Pyodide.
LAZY_IMPORTS = ("app.views.lab",)
# The code of the app's dataclass methods, in the project's wheel (app/host/dataclass_code.py).
DATACLASS_CODE = "app/host/dataclass_code.marshal"
