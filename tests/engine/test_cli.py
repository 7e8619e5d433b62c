"""The terminal player's wording: tokens where it means tokens, hashes as the pool labels them."""

from __future__ import annotations

import io
import re

from engine.lab.cli import main


def play(*args: str) -> str:
    out = io.StringIO()
    assert main(list(args), out=out) == 0
    return out.getvalue()


def test_computed_counts_are_tokens() -> None:
    text = play("--scenario", "reset", "--mode", "default")
    assert "request B: RUNNING, computed 12/13 tokens, blocks [2, 3, 4], preemptions 0" in text
    assert not re.search(r"computed \d+/\d+ blocks", text)


def test_event_hashes_carry_the_pools_labels() -> None:
    text = play("--scenario", "reset", "--mode", "default")
    start = text.split("== step 1")[0]
    pool = next(line for line in start.splitlines() if line.startswith("pool:"))
    labels = re.findall(r"\[(\d+) r\d+ ([0-9a-f]{6}) ", pool)
    assert dict(labels) == {"1": "ab823d", "2": "a264b7", "3": "f90530", "4": "b5da0c"}
    stored = [line for line in start.splitlines() if line.startswith("event:")]
    assert "'block_hashes': ['ab823d']" in stored[0]
    assert "'block_hashes': ['a264b7', 'f90530', 'b5da0c']" in stored[1]
