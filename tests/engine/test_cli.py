"""The terminal player's wording: tokens where it means tokens, hashes as the pool labels them."""

from __future__ import annotations

import io
import re

from engine.lab.cli.main import main


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
    assert dict(labels) == {"1": "52a7f1", "2": "f46029", "3": "dc09f9", "4": "279a84"}
    stored = [line for line in start.splitlines() if line.startswith("event:")]
    assert "'block_hashes': ['52a7f1']" in stored[0]
    assert "'block_hashes': ['f46029', 'dc09f9', '279a84']" in stored[1]


def test_a_hash_no_block_holds_is_marked_and_the_mark_explained() -> None:
    # keep-offload-fixed: the block cached after the keep reset names a parent whose
    # hash the reset cleared, so no block holds it any more.
    text = play("--scenario", "keep-offload-fixed", "--mode", "keep", "--no-trace")
    steps = text.split("== step ")
    marked = [s for s in steps if "'parent_block_hash': '~" in s]
    assert marked and all("(~: a hash that no block holds any more" in s for s in marked)
    unmarked = [s for s in steps if "event:" in s and "'~" not in s]
    assert unmarked and not any("(~:" in s for s in unmarked)
