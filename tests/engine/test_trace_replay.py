"""Request traces replayed through the engine: small traces worked out by hand, the plain
LRU floor, the curve on a slice of the real trace (skipped without it), and the CLI. With
time: test_trace_timed.py."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest

from engine.lab.cli.main import main
from engine.lab.traces.replay import lru_floor, paper_comparison, slice_entries, trace_name_of
from engine.lab.traces.request_trace import TraceEntry, TraceError, read_trace
from engine.lab.traces.vllm.replay import (
    HashedTrace,
    default_capacities,
    hit_rate_curve,
    replay_in_order,
    replay_unlimited,
)

B = 512
TRACES = Path(__file__).resolve().parents[2] / "content" / "traces"
CONVERSATION = TRACES / "conversation_trace.jsonl.gz"
needs_real_trace = pytest.mark.skipif(not CONVERSATION.exists(), reason="no content/traces")


def trace(*requests: tuple[int, list[int]], gap_ms: int = 0) -> list[TraceEntry]:
    """(input_length, hash_ids) per request, one line each, ``gap_ms`` apart."""
    return [
        TraceEntry(i + 1, i * gap_ms, length, 4, tuple(ids))
        for i, (length, ids) in enumerate(requests)
    ]


def hits_of(entries: list[TraceEntry], capacity: int, block_size: int = B) -> list[int]:
    replay = replay_in_order(HashedTrace.of(entries, block_size), capacity, per_request=True)
    return [r.hits for r in replay.per_request]


def test_a_partial_last_block_is_never_cached() -> None:
    entries = trace((700, [1, 2]), (700, [1, 2]), (1000, [1, 2]))
    assert hits_of(entries, 100 * B) == [0, 512, 512]
    # At block size 100 the partial unit's full blocks are cached: 600 of 700 tokens.
    assert hits_of(entries, 100 * B, block_size=100) == [0, 600, 700]


def test_vllm_caps_a_hit_at_all_but_the_last_token() -> None:
    entries = trace((1024, [1, 2]), (1024, [1, 2]), (1025, [1, 2, 3]))
    replay = replay_in_order(HashedTrace.of(entries), 100 * B, per_request=True)
    assert [r.hits for r in replay.per_request] == [0, 512, 1024]
    assert [r.uncapped_hits for r in replay.per_request] == [0, 1024, 1024]
    assert (replay.hits, replay.uncapped_hits, replay.queries) == (1536, 2048, 3073)


def test_freed_blocks_are_reused_and_evicted_deepest_first() -> None:
    # Three usable blocks. A fills them; B needs two, so evicts A's two deepest blocks.
    # C (= A) then hits A's first block only, takes B's freed partial block (empty, so
    # reused first) and evicts B's full one; D (= B) misses. With the head of the chain
    # evicted first C would hit nothing; with freed blocks not reusable B could not run.
    entries = trace((1536, [1, 2, 3]), (612, [9, 10]), (1536, [1, 2, 3]), (612, [9, 10]))
    replay = replay_in_order(HashedTrace.of(entries), 3 * B, per_request=True)
    assert [r.hits for r in replay.per_request] == [0, 0, 512, 0]
    assert [r.evictions for r in replay.per_request] == [0, 2, 1, 2]
    assert replay.num_gpu_blocks == 4  # three usable and the null block


def test_a_freed_partial_block_is_reused_first() -> None:
    # Two usable blocks: A caches block [1] and frees its partial block to the head of
    # the free queue, so B (one block) takes that one and [1] survives for C.
    entries = trace((600, [1, 2]), (300, [5]), (600, [1, 3]))
    assert hits_of(entries, 2 * B) == [0, 0, 512]


def test_a_request_larger_than_the_pool_is_a_skipped_miss() -> None:
    entries = trace((600, [1, 2]), (1100, [1, 2, 3]), (600, [1, 2]))
    replay = replay_in_order(HashedTrace.of(entries), 2 * B, per_request=True)
    assert [r.skipped for r in replay.per_request] == [False, True, False]
    assert (replay.skipped_requests, replay.skipped_tokens) == (1, 1100)
    assert replay.queries == 1200  # the counters see admitted requests only
    assert replay.hit_rate == 512 / 2300  # the skipped tokens are misses


def random_trace(seed: int, requests: int = 300) -> list[TraceEntry]:
    """Conversations that grow turn by turn (prefix-unique ids, as Mooncake's are), some
    prompts whole blocks long, so the cap matters."""
    rng = random.Random(seed)
    next_id = 0
    conversations: list[list[int]] = []
    entries = []
    for i in range(requests):
        if conversations and rng.random() < 0.7:
            ids = rng.choice(conversations)
        else:
            ids = []
            conversations.append(ids)
        for _ in range(rng.randint(1, 4)):
            ids.append(next_id)
            next_id += 1
        length = len(ids) * B - (0 if rng.random() < 0.3 else rng.randint(1, B - 1))
        entries.append(TraceEntry(i + 1, i, length, 8, tuple(ids)))
    return entries


@pytest.mark.parametrize("seed", [1, 2])
def test_the_plain_lru_floor_agrees_with_the_engine(seed: int) -> None:
    entries = random_trace(seed)
    hashed = HashedTrace.of(entries)
    whole_blocks = sum(e.input_length % B == 0 for e in entries)
    for capacity in (8 * B, 40 * B, 200 * B, hashed.whole_trace_capacity):
        engine, floor = replay_in_order(hashed, capacity), lru_floor(entries, capacity)
        assert floor.skipped_requests == engine.skipped_requests
        assert floor.uncapped_hits == engine.uncapped_hits
        # Only where the cap recomputes a cached last block do the two keep different copies.
        assert abs(floor.hits - engine.hits) <= B * whole_blocks
    unlimited = replay_in_order(hashed, hashed.whole_trace_capacity)
    assert lru_floor(entries, hashed.whole_trace_capacity).hits == unlimited.hits
    assert unlimited.evictions == 0


@needs_real_trace
def test_on_the_real_trace_the_floor_agrees_and_the_hit_rate_grows_with_capacity() -> None:
    entries = read_trace(CONVERSATION, limit=1500)
    hashed = HashedTrace.of(entries)
    capacities = default_capacities(hashed)
    assert len(capacities) == 8 and capacities[-1] == hashed.whole_trace_capacity
    assert capacities[0] < hashed.prompt_tokens / len(entries)  # less than one prompt
    points = list(hit_rate_curve(hashed, capacities))
    rates = [p.hit_rate for p in points]
    assert rates == sorted(rates) and rates[0] < rates[-1]
    assert points[-1].evictions == 0
    whole_blocks = sum(e.input_length % B == 0 for e in entries)
    for point in points[2::2]:
        floor = lru_floor(entries, point.capacity_tokens)
        assert abs(floor.hits - point.hits) <= B * whole_blocks


def test_the_curve_yields_point_by_point_and_stops() -> None:
    hashed = HashedTrace.of(random_trace(3, requests=600))
    capacities = [4 * B, 50 * B, hashed.whole_trace_capacity]
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) >= 5  # asked before each replay and every 256 requests

    points = list(hit_rate_curve(hashed, capacities, stop=stop))
    assert [(p.capacity_tokens, p.completed, p.requests) for p in points] == [
        (4 * B, True, 600),
        (50 * B, False, 256),
    ]


def test_the_paper_comparison_is_numbers() -> None:
    hashed = HashedTrace.of(random_trace(4, requests=50))
    unlimited = replay_unlimited(hashed)
    assert unlimited.evictions == 0 and unlimited.hit_rate > 0.3
    name = trace_name_of("/x/conversation_trace.jsonl.gz")
    assert name == "conversation"
    data = paper_comparison(name, unlimited)
    assert data["paper_cache_ratio"] == 0.40
    assert data["difference"] == pytest.approx(unlimited.hit_rate - 0.40)
    assert paper_comparison("mine", unlimited)["difference"] is None


def test_a_slice_by_count_and_by_time() -> None:
    entries = trace(*[(600, [i, i + 1]) for i in range(10)], gap_ms=100)
    assert len(slice_entries(entries, requests=4)) == 4
    assert [e.timestamp for e in slice_entries(entries, until_ms=250)] == [0, 100, 200]
    window = slice_entries(entries, window_ms=(300, 700))
    assert [e.timestamp for e in window] == [300, 400, 500, 600]
    assert [e.timestamp for e in slice_entries(entries, 2, window_ms=(300, 700))] == [300, 400]
    with pytest.raises(TraceError, match="the slice holds no request"):
        slice_entries(entries, window_ms=(5_000, 6_000))


# -- the CLI -----------------------------------------------------------------------------------


def write(tmp_path: Path, rows: list[dict[str, object]]) -> str:
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


ROWS: list[dict[str, object]] = [
    {"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 3]},
    {"timestamp": 10, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 4]},
]


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


def test_cli_prints_a_csv_line_per_capacity(tmp_path: Path) -> None:
    path = write(tmp_path, ROWS)
    status, text = run("--trace", path, "--capacity-tokens", "1024", "10240")
    lines = text.splitlines()
    assert status == 0 and len(lines) == 3
    header = lines[0].split(",")
    first, second = (dict(zip(header, line.split(","), strict=True)) for line in lines[1:])
    assert (first["skipped_requests"], first["hits"]) == ("2", "0")
    assert (second["hits"], second["hit_rate"], second["queries"]) == ("1024", "0.465455", "2200")


def test_cli_per_request_json_and_timed(tmp_path: Path) -> None:
    path = write(tmp_path, ROWS)
    status, text = run("--trace", path, "--capacity-tokens", "10240", "--per-request")
    assert status == 0 and text.splitlines()[2].startswith("10240,1,2,10,1100,1024,1024,0,0,")
    status, text = run("--trace", path, "--json", "--block-size", "64")
    data = json.loads(text)
    assert status == 0 and data["points"][-1]["capacity_tokens"] == data["whole_trace_capacity"]
    assert data["unlimited"]["paper_cache_ratio"] is None  # not one of the paper's traces
    status, text = run("--trace", path, "--timed", "--capacity-tokens", "4096", "--step-ms", "5")
    assert status == 0 and text.startswith("time_ms,step,")


def test_cli_a_bad_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, [ROWS[0], {**ROWS[1], "output_length": -2}])
    assert run("--trace", path)[0] == 2
    message = "line 2: output_length: must be at least 0, not -2"
    assert capsys.readouterr().err == f"error: {path}: {message}\n"
    assert run("--trace", str(tmp_path / "missing.jsonl"))[0] == 2
    assert len(capsys.readouterr().err.splitlines()) == 1
    assert run("--trace", write(tmp_path, ROWS), "--capacity-tokens", "100")[0] == 2
    assert capsys.readouterr().err == "error: capacity 100 holds no 512-token block\n"
    with pytest.raises(SystemExit) as caught:
        run("--trace", path, "--capacity-tokens", "0")
    assert caught.value.code == 2
    assert len(capsys.readouterr().err.splitlines()) == 1
