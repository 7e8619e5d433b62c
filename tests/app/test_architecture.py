"""docs/architecture.md lists the code that carries a step from the click to the pixels:
the list names real files, with their real line counts and total."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"


def listed() -> tuple[dict[str, int], int]:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- step-path -->")[1].split("<!-- /step-path -->")[0]
    files = {m[0]: int(m[1]) for m in re.findall(r"^\| (app/\S+) \| (\d+) \|", table, re.M)}
    (total,) = re.findall(r"^\| \*\*total\*\* \| \*\*(\d+)\*\* \|", table, re.M)
    return files, int(total)


def test_the_step_path_is_listed_with_its_real_line_counts() -> None:
    files, total = listed()
    assert len(files) >= 10
    real = {name: len((ROOT / name).read_text(encoding="utf-8").splitlines()) for name in files}
    assert files == real
    assert total == sum(real.values())


def test_the_step_path_names_every_part_of_the_stepping_page_that_moves_a_step() -> None:
    files, _ = listed()
    for needed in ("player.js", "deck_slot.js", "code_panel.js", "sender.py", "bundle.py"):
        assert any(name.endswith(needed) for name in files), needed
