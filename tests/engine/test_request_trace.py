"""Request traces read and checked; prompt token ids and block hashes derived from hash_ids."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from engine.lab.traces.request_trace import (
    TRACE_BLOCK_TOKENS,
    PromptHashes,
    TraceEntry,
    TraceError,
    parse_line,
    parse_trace,
    prompt_token_ids,
    read_trace,
    token_range,
)
from engine.vllm.kv_cache_utils import get_request_block_hasher, sha256
from engine.vllm.request import Request

GOOD = [
    {"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": list(range(14))},
    {"timestamp": 5, "input_length": 512, "output_length": 0, "hash_ids": [0]},
    {"timestamp": 5, "input_length": 1, "output_length": 3, "hash_ids": [99]},
]


def lines(rows: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(row) for row in rows]


def entry(input_length: int, hash_ids: list[int], timestamp: int = 0) -> TraceEntry:
    return TraceEntry(1, timestamp, input_length, 1, tuple(hash_ids))


def test_a_good_trace_reads_line_by_line_and_gzipped(tmp_path: Path) -> None:
    text = "\n".join(lines(GOOD[:1])) + "\n\n" + "\n".join(lines(GOOD[1:])) + "\n"
    plain = tmp_path / "trace.jsonl"
    plain.write_text(text)
    zipped = tmp_path / "trace.jsonl.gz"
    zipped.write_bytes(gzip.compress(text.encode()))
    for path in (plain, zipped):
        entries = read_trace(path)
        assert [e.line for e in entries] == [1, 3, 4]  # the blank line counts
        assert entries[0] == TraceEntry(1, 0, 6955, 52, tuple(range(14)))
        assert read_trace(path, limit=2) == entries[:2]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"timestamp": "7"}, 'line 2: timestamp: must be a whole number, not "7"'),
        ({"timestamp": -1}, "line 2: timestamp: must be at least 0, not -1"),
        ({"input_length": 0, "hash_ids": []}, "line 2: input_length: must be at least 1, not 0"),
        ({"input_length": True}, "line 2: input_length: must be a whole number, not true"),
        ({"output_length": 1.5}, "line 2: output_length: must be a whole number, not 1.5"),
        ({"hash_ids": "0"}, "line 2: hash_ids: must be a list of whole numbers >= 0"),
        ({"hash_ids": [0, -4]}, "line 2: hash_ids: must be a list of whole numbers >= 0"),
        (
            {"hash_ids": [0, 1]},
            "line 2: hash_ids: 2 ids, but input_length 512 needs 1 (one per 512 tokens, "
            "the last may be partial)",
        ),
        ({"input_length": 513}, "line 2: hash_ids: 1 ids, but input_length 513 needs 2"),
        ({"timestamp": None}, "line 2: timestamp: must be a whole number, not null"),
    ],
)
def test_a_bad_field_gets_one_message_with_its_line(change: dict[str, Any], message: str) -> None:
    bad = {**GOOD[1], **change}
    with pytest.raises(TraceError) as caught:
        parse_trace(lines([GOOD[0], bad, GOOD[2]]))
    assert str(caught.value).startswith(message)
    assert caught.value.line == 2
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("field", ["timestamp", "input_length", "output_length", "hash_ids"])
def test_a_missing_field_is_named(field: str) -> None:
    row = {k: v for k, v in GOOD[1].items() if k != field}
    with pytest.raises(TraceError, match=f"^line 3: {field}: missing$"):
        parse_trace(["", lines(GOOD)[0], json.dumps(row)])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "line 1: not JSON (Expecting property name enclosed in double quotes)"),
        ("[1, 2]", "line 1: a JSON object is expected, not list"),
    ],
)
def test_a_line_that_is_not_an_object(text: str, message: str) -> None:
    with pytest.raises(TraceError) as caught:
        parse_line(text, 1)
    assert str(caught.value) == message


def test_timestamps_must_not_go_backwards_and_a_trace_must_hold_a_request() -> None:
    late, early = {**GOOD[1], "timestamp": 9}, {**GOOD[1], "timestamp": 3}
    with pytest.raises(TraceError, match=r"^line 2: timestamp: 3 is earlier than line 1's 9"):
        parse_trace(lines([late, early]))
    with pytest.raises(TraceError, match=r"^trace: no requests"):
        parse_trace(["", "  "])


def test_a_file_that_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(b"\x1f\x8b" + b"\x00" * 20)
    with pytest.raises(TraceError, match=r"^trace: not a readable text file"):
        read_trace(path)


def test_equal_id_prefixes_give_equal_token_prefixes_and_differ_right_after() -> None:
    a = entry(3 * 512 + 100, [7, 8, 9, 10])
    b = entry(4 * 512, [7, 8, 11, 12])
    c = entry(2 * 512, [8, 7])  # the same ids, other positions
    ta, tb, tc = prompt_token_ids(a), prompt_token_ids(b), prompt_token_ids(c)
    assert (len(ta), len(tb)) == (a.input_length, b.input_length)
    assert ta[:1024] == tb[:1024]
    assert ta[1024] != tb[1024]  # the first token of the unit whose id differs
    assert ta[:512] != tc[:512] and ta[512:1024] != tc[512:1024]
    # The partial last unit is the first tokens of that unit.
    assert ta[3 * 512 :] == token_range(a.hash_ids, 3 * 512, 4 * 512)[:100]


@pytest.mark.parametrize("block_size", [1, 16, 64, 100, 512, 1024])
def test_block_hashes_are_vllms_over_the_derived_tokens(block_size: int) -> None:
    entries = [
        entry(2500, [1, 2, 3, 20, 21]),
        entry(2560, [1, 2, 4, 22, 23]),
        entry(700, [1, 5]),
        entry(2100, [1, 2, 3, 6, 7]),
        entry(300, [9]),
    ]
    hashes = PromptHashes(block_size)
    hasher = get_request_block_hasher(block_size, sha256)
    for e in entries:
        request = Request("r", prompt_token_ids(e), block_hasher=hasher)
        assert hashes.block_hashes(e) == request.block_hashes
    first, second = hashes.block_hashes(entries[0]), hashes.block_hashes(entries[1])
    shared = 2 * TRACE_BLOCK_TOKENS // block_size  # the blocks inside the shared ids
    assert first[:shared] == second[:shared]
    assert len(first) > shared  # the block after the shared ids differs
    assert first[shared] != second[shared]


def test_a_shared_prefix_is_hashed_once() -> None:
    hashes = PromptHashes(512)
    hashes.all_block_hashes([entry(2048, [1, 2, 3, 4]), entry(2048, [1, 2, 3, 5])])
    assert hashes.num_hashed == 5
