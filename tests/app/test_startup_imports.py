"""A page that is not the lab's starts without the lab's modules: the static site's Python
imports them only for a lab's address (app/main.py, app/views/lab_link.py), which kept
about 0.4 s off its start in Pyodide (docs/performance.md). The collector, held while the
app's modules are imported (app/host/gc_startup.py), is on again once the app runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The lab's own views, runs and charts (Bokeh's plotting API is only theirs).
LAB_ONLY = (
    "app.data.lab",
    "app.data.fleet_lab",
    "app.data.trace_lab",
    "app.views.lab",
    "app.views.lab_charts",
    "app.views.fleet_lab",
    "app.views.trace_lab",
    "engine.lab.fleet",
    "engine.lab.traces",
    "bokeh.plotting",
)
# main.py as the static site runs it, for a page's address.
SCRIPT = """
import sys
import panel as pn
from bokeh.document import Document
pn.state.curdoc = Document()
pn.state.location.search = sys.argv[1]
import app.main
import gc
print("\\n".join(sys.modules))
print(f"collector-on={gc.isenabled()} frozen={gc.get_freeze_count() > 0}")
"""


def modules_at(query: str) -> set[str]:
    ran = subprocess.run(
        [sys.executable, "-c", SCRIPT, query], capture_output=True, text=True, cwd=ROOT
    )
    assert ran.returncode == 0, ran.stderr
    return set(ran.stdout.split())


@pytest.mark.parametrize("query", ["", "?scenario=reset", "?scenario=reset&mode=keep&embed=1"])
def test_pages_without_the_lab_do_not_import_it(query: str) -> None:
    assert sorted(set(LAB_ONLY) & modules_at(query)) == []


def test_the_labs_page_imports_it() -> None:
    assert "app.views.lab" in modules_at("?lab=shared-prefix")


@pytest.mark.parametrize("query", ["", "?scenario=reset", "?lab=shared-prefix"])
def test_the_collector_is_on_once_the_app_runs(query: str) -> None:
    assert {"collector-on=True", "frozen=True"} <= modules_at(query)
