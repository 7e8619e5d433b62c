"""The app's layers import one way: renderers (app/render/) are pure and import no Panel,
components (app/components/) and viewers (app/views/) import renderers, never the reverse;
components import no viewer; viewers write no HTML of their own."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import app.components
import app.render

ROOT = Path(__file__).resolve().parents[2]


def modules_of(package: object) -> list[str]:
    return [f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]  # type: ignore[attr-defined]


def imported_by(modules: list[str]) -> set[str]:
    """Every module a fresh interpreter holds after importing `modules`."""
    script = f"import sys, {', '.join(modules)}; print('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return set(out.stdout.split())


def test_renderers_import_no_panel_viewer_or_component() -> None:
    loaded = imported_by(modules_of(app.render))
    assert not {"panel", "param", "bokeh"} & loaded
    assert not any(name.startswith(("app.views", "app.components")) for name in loaded)


def test_components_import_no_viewer() -> None:
    assert not any(name.startswith("app.views") for name in imported_by(modules_of(app.components)))


def test_viewers_leave_html_to_the_renderers() -> None:
    # A function of plain data that returns HTML is a renderer: it lives in app/render/,
    # where it runs without Panel and a test can call it without a page.
    html_functions = [
        f"{path.name}:{node.name}"
        for path in sorted((ROOT / "app" / "views").glob("*.py"))
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef)
        and isinstance(node.returns, ast.Name | ast.Constant)
        and getattr(node.returns, "id", getattr(node.returns, "value", None)) == "str"
    ]
    assert html_functions == []
