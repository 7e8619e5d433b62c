"""The layers import one way. The models of vLLM and SGLang (engine/vllm/, engine/sglang/)
import nothing from the lab (engine/lab/), which reads them. The folders of app/ import one
way, read from the code: no folder reaches itself through another. Renderers (app/render/)
are pure: they import no Panel and nothing from data/, page/, views/ or components/, and
take data; components import no viewer; viewers write no HTML of their own."""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import app.components
import app.render
import engine.sglang
import engine.vllm

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


def imports_in(package: object) -> dict[str, set[str]]:
    """Every module each file of the package names in an import statement, at any depth
    (a function's own import too)."""
    found: dict[str, set[str]] = {}
    for path in sorted(Path(package.__path__[0]).glob("*.py")):  # type: ignore[attr-defined]
        names = found.setdefault(path.name, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(f"{p}.") for p in packages)


def test_the_models_of_vllm_and_sglang_import_nothing_from_the_lab() -> None:
    # The lab reads the model and registers its variants (engine/lab/play/vllm/variants.py).
    for package in (engine.vllm, engine.sglang):
        loaded = imported_by(modules_of(package))
        assert not [name for name in loaded if within(name, ("engine.lab",))], package.__name__
        named = {
            f: sorted(n for n in ns if within(n, ("engine.lab",)))
            for f, ns in imports_in(package).items()
        }
        assert not any(named.values()), named


def folder_of(module: str) -> str | None:
    """The folder of app/ a module name is in (app.views.panels -> views), or None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "app" else None


def folder_imports() -> dict[str, dict[str, set[str]]]:
    """Folder -> folder it imports -> the files that do: read from every file of app/'s
    folders (a function's own import too), no module list kept by hand."""
    graph: dict[str, dict[str, set[str]]] = {}
    for path in sorted((ROOT / "app").glob("*/**/*.py")):
        folder = path.relative_to(ROOT / "app").parts[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            for name in names:
                other = folder_of(name)
                if other is not None and other != folder:
                    graph.setdefault(folder, {}).setdefault(other, set()).add(path.name)
    return graph


def cycles(graph: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """Every folder that can reach itself, with the path that does."""
    found = []
    for start in sorted(graph):
        paths = [[start]]
        while paths:
            path = paths.pop()
            for nxt in sorted(graph.get(path[-1], {})):
                if nxt == start:
                    found.append([*path, start])
                elif nxt not in path:
                    paths.append([*path, nxt])
    return found


def test_the_folders_of_app_import_one_way() -> None:
    graph = folder_imports()
    assert graph, "no imports found: the graph is read from the wrong place"
    assert cycles(graph) == []


def test_the_cycle_check_sees_two_folders_importing_each_other() -> None:
    graph = {"data": {"render": {"bundle.py"}}, "render": {"data": {"pool.py"}}}
    assert cycles(graph) == [["data", "render", "data"], ["render", "data", "render"]]
    assert cycles({"data": {"render": {"bundle.py"}}}) == []


def test_renderers_import_nothing_from_data_page_or_views() -> None:
    # A renderer takes plain data and returns HTML: it runs without a page, a state or a
    # timeline store, and a test calls it with its data.
    named = folder_imports().get("render", {})
    assert not {"data", "page", "views", "components"} & set(named), named
    loaded = imported_by(modules_of(app.render))
    assert not [n for n in loaded if folder_of(n) in {"data", "page", "views", "components"}]


def test_renderers_import_no_panel_viewer_or_component() -> None:
    loaded = imported_by(modules_of(app.render))
    assert not {"panel", "param", "bokeh"} & loaded
    assert not any(name.startswith(("app.views", "app.components")) for name in loaded)


def test_components_import_no_viewer() -> None:
    assert not any(name.startswith("app.views") for name in imported_by(modules_of(app.components)))


# An HTML element's opening or closing tag inside a string.
HTML_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*[\s>/]")


def html_in(path: Path) -> list[str]:
    """Each string of the file (f-strings' parts too, docstrings aside) holding an HTML
    tag, with its line: a function or method anywhere in the file that writes HTML."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return sorted(
        {
            f"{path.name}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and HTML_TAG.search(node.value)
        }
    )


def test_viewers_leave_html_to_the_renderers() -> None:
    # A function of plain data that returns HTML is a renderer: it lives in app/render/,
    # where it runs without Panel and a test can call it without a page. Methods too.
    written = [
        where for path in sorted((ROOT / "app" / "views").glob("*.py")) for where in html_in(path)
    ]
    assert written == []


def test_the_html_check_sees_a_method_writing_html(tmp_path: Path) -> None:
    viewer = tmp_path / "viewer.py"
    viewer.write_text(
        'class V:\n    """A <b>docstring</b> may show HTML."""\n\n'
        "    def show(self, n: int) -> None:\n        self.text = f'<p>{n}</p>'\n"
    )
    assert html_in(viewer) == ["viewer.py:5"]


def test_the_top_of_app_holds_the_entry_point_and_the_layers_folders_only() -> None:
    top = ROOT / "app"
    files = sorted(p.name for p in top.iterdir() if p.is_file())
    assert files == ["__init__.py", "main.py"]
    folders = {p.name for p in top.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == {
        "data",  # timelines, bundle, lab runs, address: no Panel, no HTML
        "render",  # (data, step) -> HTML
        "components",  # the browser's side: .py + .js + .css
        "views",  # Panel viewers: state -> components
        "page",  # layout, the page's head
        "style",  # the theme and stylesheet files every drawing layer uses
        "playground",
        "static_site",  # the builder
        "host",  # CPython or Pyodide, gc, logging
    }
