"""The docs' example of driving the model as vLLM's BlockPool is driven runs as shown
(docs/fidelity.md, "From Python")."""

from __future__ import annotations

import re
from pathlib import Path

FIDELITY = Path(__file__).resolve().parents[2] / "docs" / "fidelity.md"


def test_the_block_pool_example_runs_and_shows_vllms_free_order() -> None:
    text = FIDELITY.read_text(encoding="utf-8")
    example = re.search(r"```python\n(from engine\.vllm\.block_pool.*?)```", text, re.S)
    assert example is not None, "docs/fidelity.md's BlockPool example is gone"
    *statements, last = example.group(1).strip().splitlines()
    scope: dict[str, object] = {}
    exec("\n".join(statements), scope)  # the repo's own docs
    shown = last.split("#")[0].strip()
    assert eval(shown, scope) == [3, 4, 5, 6, 7, 8, 9, 2, 1]
    assert "[3, 4, ..., 9, 2, 1]" in last  # what the docs say it gives
