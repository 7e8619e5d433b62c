"""The browser components' ES modules are .js files beside them, local imports inlined."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app.components.address_bar import AddressBar
from app.components.esm import inline_imports
from app.components.start_page import StartPage
from app.components.step_page import StepPage

COMPONENTS = [
    AddressBar,
    StartPage,
    StepPage,
]


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.__name__)
def test_module_is_a_file_beside_its_component(component: type) -> None:
    # A path (not code) in `_esm` is what lets `panel serve --dev` reload the module.
    path = component._esm_path(compiled=False)
    assert path is not None, f"{component.__name__}._esm names no file"
    module_file = Path(__import__(component.__module__, fromlist=["_"]).__file__)
    assert Path(path).parent == module_file.parent
    module = component._render_esm()
    assert "export function render" in module
    # A browser cannot resolve a relative import from the blob: URL Panel loads.
    assert not re.search(r"^import .* from '\.", module, re.M)


def test_a_file_imported_twice_is_inlined_once(tmp_path: Path) -> None:
    (tmp_path / "shared.js").write_text("export const SHARED = 1\n")
    (tmp_path / "middle.js").write_text(
        "import { SHARED } from './shared.js'\nexport const MIDDLE = SHARED + 1\n"
    )
    (tmp_path / "top.js").write_text(
        "import { SHARED } from './shared.js'\nimport { MIDDLE } from './middle.js'\n"
        "export function render() { return SHARED + MIDDLE }\n"
    )
    module = inline_imports(tmp_path / "top.js")
    assert module.count("const SHARED = 1") == 1
    assert module.index("SHARED = 1") < module.index("MIDDLE = SHARED + 1") < module.index("render")
    assert "import" not in module


def test_a_renamed_import_is_refused(tmp_path: Path) -> None:
    (tmp_path / "shared.js").write_text("export const SHARED = 1\n")
    (tmp_path / "top.js").write_text(
        "import { SHARED as OTHER } from './shared.js'\nexport function render() { return OTHER }\n"
    )
    with pytest.raises(ValueError, match="renamed import"):
        inline_imports(tmp_path / "top.js")


def test_a_namespace_import_keeps_its_names_to_itself(tmp_path: Path) -> None:
    # Every part of the stepping page exports `render`: each must stay its own.
    (tmp_path / "shared.js").write_text("export const SHARED = 1\n")
    (tmp_path / "a.js").write_text(
        "import { SHARED } from './shared.js'\nconst X = 2\n"
        "export function render() { return SHARED + X }\n"
    )
    (tmp_path / "b.js").write_text(
        "import { SHARED } from './shared.js'\nconst X = 3\n"
        "export function render() { return SHARED * X }\nexport const B = 4\n"
    )
    (tmp_path / "top.js").write_text(
        "import * as a from './a.js'\nimport * as b from './b.js'\n"
        "export function render() { return [a.render(), b.render(), b.B] }\n"
    )
    module = inline_imports(tmp_path / "top.js")
    assert module.count("const SHARED = 1") == 1
    assert "return { render }" in module and "return { render, B }" in module
    assert module.index("SHARED = 1") < module.index("const a = ")
    assert not re.search(r"^(import|export const X)", module, re.M)
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node to run the module")
    (tmp_path / "run.mjs").write_text(module + "\nconsole.log(JSON.stringify(render()))\n")
    ran = subprocess.run([node, str(tmp_path / "run.mjs")], capture_output=True, text=True)
    assert ran.stdout.strip() == "[3,3,4]", ran.stderr
