"""The Python the static site ships: the project's wheel holds what the page imports and
reads, not the request traces, which the site ships beside it (site/traces/) and the page
fetches only when asked (app/data/trace_lab.py); and what the app imports only for some
addresses (a lab's page) is compiled with what it imports at start, as are the methods of
its dataclasses (app/host/dataclass_code.py)."""

from __future__ import annotations

import zipfile

from app.static_site.bytecode import imported_sources
from app.static_site.layout import APP_SCRIPT, DATACLASS_CODE, LAZY_IMPORTS, ROOT
from app.static_site.wheels import project_files
from tests.site.conftest import SiteTarget


def test_the_wheel_leaves_the_traces_to_the_sites_own_folder() -> None:
    files = project_files(ROOT, ["app", "content", "engine"])
    assert "content/scenarios/reset.toml" in files
    assert "content/traces/LICENSE-APACHE" not in files
    assert [name for name in files if name.startswith("content/traces/")] == []


def test_what_a_labs_page_imports_later_is_compiled_too() -> None:
    at_start = imported_sources(ROOT / APP_SCRIPT, ROOT)
    with_lab = imported_sources(ROOT / APP_SCRIPT, ROOT, LAZY_IMPORTS)
    assert at_start is not None and with_lab is not None
    assert "bokeh/plotting/__init__.py" not in at_start  # (the lab's charts alone use it)
    assert "bokeh/plotting/__init__.py" in with_lab
    assert at_start < with_lab


def test_the_wheel_carries_the_code_of_the_apps_dataclass_methods(built_site: SiteTarget) -> None:
    wheel = next((built_site.out / "pyodide").glob("prefix_cache_lab-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        # (about 670 methods, the lab's included: 0.76 MB marshalled)
        assert zf.getinfo(DATACLASS_CODE).file_size > 300_000
