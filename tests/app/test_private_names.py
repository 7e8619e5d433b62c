"""Every private Panel or Bokeh name the app and the builder use is listed in
docs/private-names.md, and every patch of Panel's worker too: a name or patch added
without its row (and its why) fails here, and so does a row left for a name gone.

A private name is one with a leading underscore that Panel or Bokeh defines, used by
the app's Python (app/, build.py, the worker shim) in one of three ways: imported from
panel or bokeh; overridden in a class whose Panel or Bokeh base defines it (a method or
a class attribute); or read off an object when the app defines no such name itself.
"""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path

import bokeh
import panel

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "private-names.md"
LIBRARIES = ("panel", "bokeh")
WORKER_SHIM = ROOT / "app" / "static_site" / "shims" / "worker_shim.py"


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@cache
def library_text() -> str:
    """Panel's and Bokeh's Python source, all of it."""
    return "\n".join(
        path.read_text(encoding="utf-8")
        for package in (panel, bokeh)
        for path in Path(package.__file__).parent.rglob("*.py")
        if "tests" not in path.parts
    )


@cache
def in_libraries(name: str) -> bool:
    """Whether Panel's or Bokeh's own code names ``name`` (as a definition or a use)."""
    return re.search(rf"\b{re.escape(name)}\b", library_text()) is not None


def app_files() -> list[Path]:
    return [*sorted((ROOT / "app").rglob("*.py")), ROOT / "build.py"]


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def class_body_names(node: ast.ClassDef) -> list[str]:
    names: list[str] = []
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(item.name)
        elif isinstance(item, ast.Assign):
            names += [t.id for t in item.targets if isinstance(t, ast.Name)]
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.append(item.target.id)
    return [name for name in names if private(name)]


def subclasses(cls: type) -> list[type]:
    found = [cls]
    for sub in cls.__subclasses__():
        found += subclasses(sub)
    return found


def overrides(path: Path, node: ast.ClassDef, name: str) -> bool:
    """Whether a Panel or Bokeh base of the class (or of a class it is mixed into) defines
    ``name``: the app's class overrides it."""
    cls = getattr(importlib.import_module(module_name(path)), node.name)
    return any(
        name in vars(base)
        for family in subclasses(cls)
        for base in family.__mro__[1:]
        if base.__module__.split(".")[0] in LIBRARIES
    )


@cache
def library_modules(tree: ast.Module) -> frozenset[str]:
    """The names a module binds to Panel's or Bokeh's modules or objects by importing."""
    return frozenset(
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
        if ((getattr(node, "module", None) or alias.name).split(".")[0] in LIBRARIES)
    )


def on_library_module(tree: ast.Module, node: ast.Attribute) -> bool:
    """Whether ``node`` is an attribute of an imported Panel or Bokeh name."""
    base = node.value
    while isinstance(base, ast.Attribute):
        base = base.value
    return isinstance(base, ast.Name) and base.id in library_modules(tree)


def used_names(files: list[Path]) -> dict[str, set[str]]:
    """Each private Panel or Bokeh name ``files`` use -> the files that use it."""
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in files}
    own: set[str] = set()  # what the app defines or assigns itself
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if not on_library_module(tree, node):  # (one set on Panel's is a patch)
                    own.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
    for path, tree in trees.items():  # (every class's subclasses exist, for `overrides`)
        if path != WORKER_SHIM and any(isinstance(n, ast.ClassDef) for n in tree.body):
            importlib.import_module(module_name(path))
    used: dict[str, set[str]] = {}
    for path, tree in trees.items():
        where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in LIBRARIES:
                for alias in node.names:
                    if private(alias.name):
                        used.setdefault(alias.name, set()).add(where)
            elif isinstance(node, ast.ClassDef) and path != WORKER_SHIM:
                for name in class_body_names(node):
                    if overrides(path, node, name):
                        used.setdefault(name, set()).add(where)
            elif (
                isinstance(node, ast.Attribute)
                and private(node.attr)
                and (
                    (isinstance(node.ctx, ast.Load) and node.attr not in own)
                    or (isinstance(node.ctx, ast.Store) and on_library_module(tree, node))
                )
                and in_libraries(node.attr)
            ):
                used.setdefault(node.attr, set()).add(where)
    return used


def table_names(heading: str) -> list[str]:
    """The first cell's name of each row of the table under ``heading`` in the docs."""
    text = DOCS.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"docs/private-names.md has no section {heading!r}"
    rows = [line for line in match[1].splitlines() if line.startswith("| `")]
    names = [re.match(r"\| `([^`]+)`", row)[1] for row in rows]  # type: ignore[index]
    return [name.rsplit(".", 1)[-1] for name in names]


PRIVATE = "Private Panel and Bokeh names"
DOCUMENTED = "Underscored, but Panel's documented API"
WORKER_PATCHES = "Patches of Panel's worker"
WORKAROUND = "Panel's write race (a workaround, gone with the bug)"


def test_every_private_name_the_app_uses_has_its_row() -> None:
    used = used_names(app_files())
    listed = table_names(PRIVATE) + table_names(WORKAROUND)
    documented = table_names(DOCUMENTED)
    assert len(listed) == len(set(listed)), "a name listed twice"
    unlisted = {name: sorted(where) for name, where in used.items() if name not in listed}
    unlisted = {name: where for name, where in unlisted.items() if name not in documented}
    assert unlisted == {}, "private Panel/Bokeh names used but not in docs/private-names.md"
    assert sorted(set(listed) - set(used)) == [], "rows for names the app no longer uses"
    assert sorted(set(documented) - set(used)) == []


def test_an_unlisted_private_name_is_caught(tmp_path: Path) -> None:
    """The counting itself: an import, a read and an override of Panel's private names."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from panel.io.pyodide import _link_docs_worker\n"
        "from panel.io.state import state\n"
        "import panel.io.document as panel_document\n\n"
        "state._thread_id\n"
        "panel_document._WRITE_FUTURES = {}\n",
        encoding="utf-8",
    )
    used = used_names([*app_files(), probe])
    assert used["_link_docs_worker"] == {"probe.py"}
    assert used["_thread_id"] == {"probe.py"}
    assert used["_WRITE_FUTURES"] == {"probe.py"}  # set on Panel's module: a patch, a use
    # An override: at_once.py's inputs override Panel's _priority_changes (a class
    # attribute, given by a mixin).
    assert "app/components/at_once.py" in used_names(app_files())["_priority_changes"]


def worker_patches(source: str) -> list[str]:
    """What a worker shim assigns on a Panel or Bokeh module or object (a monkey-patch)."""
    tree = ast.parse(source)
    panel_names = library_modules(tree)
    patched: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and on_library_module(tree, target):
                    patched.append(ast.unparse(target))
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "setattr":
            target = node.args[0] if node.args else None
            if isinstance(target, ast.Name) and target.id in panel_names:
                patched.append(ast.unparse(node))
    return patched


def test_every_patch_of_panels_worker_has_its_row() -> None:
    patched = worker_patches(WORKER_SHIM.read_text(encoding="utf-8"))
    listed = table_names(WORKER_PATCHES)
    assert sorted(name.rsplit(".", 1)[-1] for name in patched) == sorted(listed)
    assert len(listed) <= 2  # issue 42: at most 2 patches of Panel's worker


def test_a_patch_of_panels_worker_is_caught() -> None:
    shim = (
        "import panel.io.pyodide as _pn_pyodide\n"
        "from panel.io.state import state\n"
        "import pyodide.ffi\n\n"
        "_pn_pyodide.init_doc = lambda: None\n"
        "state.location.search = ''\n"
        "setattr(_pn_pyodide, '_link_docs_worker', None)\n"
        "pyodide.ffi.jsnull = object()  # (not Panel's)\n"
    )
    assert worker_patches(shim) == [
        "_pn_pyodide.init_doc",
        "state.location.search",
        "setattr(_pn_pyodide, '_link_docs_worker', None)",
    ]
