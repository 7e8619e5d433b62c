"""Request traces replayed in order on SGLang's model beside vLLM's, and the paper's gap as
numbers: small traces worked out by hand, SGLang's real allocator against the slot
counter, the unlimited replays against what the ids say, and the CLI's --engine."""

from __future__ import annotations

import json

import pytest

from engine.lab.traces.paper_gap import paper_gap, reuse_from_ids
from engine.lab.traces.replay import capacities_for
from engine.lab.traces.request_trace import TraceEntry, read_trace
from engine.lab.traces.sglang.replay import (
    SlotCounter,
    hit_rate_curve_sglang,
    replay_in_order_sglang,
)
from engine.lab.traces.vllm.replay import HashedTrace, replay_in_order
from engine.sglang.allocator import make_allocator
from tests.engine.test_trace_replay import (
    CONVERSATION,
    ROWS,
    needs_real_trace,
    random_trace,
    run,
    trace,
    write,
)

B = 512


def sglang_hits(entries: list[TraceEntry], capacity: int, page_size: int = 1) -> list[int]:
    replay = replay_in_order_sglang(entries, capacity, page_size, per_request=True)
    return [r.hits for r in replay.per_request]


def vllm_hits(entries: list[TraceEntry], capacity: int) -> list[int]:
    replay = replay_in_order(HashedTrace.of(entries), capacity, per_request=True)
    return [r.hits for r in replay.per_request]


def test_sglang_reuses_a_partial_last_unit_to_the_token() -> None:
    entries = trace((700, [1, 2]), (700, [1, 2]), (1000, [1, 2]), (1200, [1, 2, 3]))
    # The cap: one token (the last is computed); vLLM's: the partial block is never cached.
    assert sglang_hits(entries, 100 * B) == [0, 699, 700, 1000]
    # The last one's unit 1 is whole, but was seen before only in part: never cached.
    assert vllm_hits(entries, 100 * B) == [0, 512, 512, 512]
    # With SGLang's page size set to the trace's 512 it counts as vLLM does.
    assert sglang_hits(entries, 100 * B, page_size=B) == [0, 512, 512, 512]


def test_the_cap_costs_sglang_one_token_and_a_page_at_page_size_512() -> None:
    entries = trace((1024, [1, 2]), (1024, [1, 2]), (1025, [1, 2, 3]))
    replay = replay_in_order_sglang(entries, 100 * B, per_request=True)
    assert [(r.hits, r.uncapped_hits) for r in replay.per_request] == [
        (0, 0),
        (1023, 1024),
        (1024, 1024),
    ]
    paged = replay_in_order_sglang(entries, 100 * B, page_size=B, per_request=True)
    assert [(r.hits, r.uncapped_hits) for r in paged.per_request] == [
        (0, 0),
        (512, 1024),
        (1024, 1024),
    ]


def test_sglang_evicts_a_whole_leaf_where_vllm_evicts_one_block() -> None:
    # A is one leaf of 2,048 tokens. B needs 1,000 slots and 800 are free: SGLang evicts
    # the least recently used leaf whole (all of A), vLLM only A's deepest block, so A
    # again hits nothing on SGLang and three blocks on vLLM.
    entries = trace((2048, [1, 2, 3, 4]), (1000, [9, 10]), (2048, [1, 2, 3, 4]))
    sglang = replay_in_order_sglang(entries, 2848, per_request=True)
    assert [r.hits for r in sglang.per_request] == [0, 0, 0]
    assert [r.evictions for r in sglang.per_request] == [0, 2048, 1000]  # tokens
    assert vllm_hits(entries, 2848) == [0, 0, 3 * B]


def test_a_request_sglang_can_never_admit_is_a_skipped_miss() -> None:
    # Admission wants the prompt, one output token and a page strictly below the pool
    # (schedule_policy.py:1412, prefill_budget.py:129): 1100 + 1 + 1 = 1102 < 1102 does not
    # hold, < 1103 does.
    entries = trace((600, [1, 2]), (1100, [1, 2, 3]), (600, [1, 2]))
    replay = replay_in_order_sglang(entries, 1102, per_request=True)
    assert [r.skipped for r in replay.per_request] == [False, True, False]
    assert (replay.skipped_requests, replay.skipped_tokens, replay.queries) == (1, 1100, 1200)
    assert replay.hits == 599 and replay.engine == "sglang"
    assert replay_in_order_sglang(entries, 1103).skipped_requests == 0


@pytest.mark.parametrize(("seed", "page_size"), [(1, 1), (2, 16), (4, 1), (5, 64)])
def test_the_calls_made_directly_replay_as_sglangs_scheduler_and_allocator(
    seed: int, page_size: int
) -> None:
    entries = random_trace(seed, requests=150)
    for capacity in (6 * B, 30 * B):
        direct = replay_in_order_sglang(entries, capacity, page_size, per_request=True)
        assert direct.evictions > 0
        for allocator in (None, make_allocator):
            for via_scheduler in (False, True):
                other = replay_in_order_sglang(
                    entries,
                    capacity,
                    page_size,
                    per_request=True,
                    allocator=allocator,
                    via_scheduler=via_scheduler,
                )
                assert other.per_request == direct.per_request
                assert other.row() | {"seconds": 0} == direct.row() | {"seconds": 0}


def test_the_slot_counter_gives_back_whole_pages() -> None:
    pool = SlotCounter(100, page_size=16)
    assert pool.available_size() == 96 and pool.alloc(32) == [0] * 32
    pool.free_segment([0] * 20, start_pos=0)  # a partial last page comes back whole
    assert pool.available_size() == 96 and pool.alloc(112) is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_unlimited_replays_find_what_the_ids_say_and_the_gap_adds_up(seed: int) -> None:
    entries = random_trace(seed)
    whole = capacities_for(entries)[-1]
    matched = reuse_from_ids(entries).matched
    sglang = replay_in_order_sglang(entries, whole, per_request=True)
    vllm = replay_in_order(HashedTrace.of(entries), whole, per_request=True)
    assert sglang.evictions == vllm.evictions == 0
    # To the token on SGLang (less its one-token cap), to the block on vLLM.
    assert [r.uncapped_hits for r in sglang.per_request] == matched
    assert [r.hits for r in sglang.per_request] == [
        min(m, e.input_length - 1) for m, e in zip(matched, entries, strict=True)
    ]
    assert [r.uncapped_hits for r in vllm.per_request] == [m // B * B for m in matched]
    vllm_64 = replay_in_order(HashedTrace.of(entries, 64), whole)
    assert vllm_64.uncapped_hits == sum(m // 64 * 64 for m in matched)
    for replay in (vllm, sglang, vllm_64):
        gap = paper_gap(entries, replay, 0.5)
        assert gap.paper_tokens == round(0.5 * replay.prompt_tokens)
        assert (
            gap.hits + gap.cap_tokens + gap.granularity_tokens + gap.beyond_trace_tokens
            == gap.paper_tokens
        )
        # What the engine lost to its block size, as measured, is what the ids say.
        assert gap.granularity_tokens == gap.partial_last_unit_tokens + gap.partial_earlier_tokens
        assert gap.reusable_tokens == sum(matched)
    vllm_gap, sglang_gap = paper_gap(entries, vllm, 0.5), paper_gap(entries, sglang, 0.5)
    assert sglang_gap.granularity_tokens == 0 < vllm_gap.granularity_tokens
    # Every partial last unit here has a new id: found only as a whole unit seen in part.
    assert vllm_gap.partial_last_unit_tokens == 0 < vllm_gap.partial_earlier_tokens
    assert sglang_gap.cap_tokens == sum(
        m == e.input_length for m, e in zip(matched, entries, strict=True)
    )


def test_the_gap_by_hand_and_only_for_a_whole_replay() -> None:
    # Unit 2 grows: 300 tokens, then 400 (its first 300 found: in its own partial last
    # unit), then whole (its first 400 found: in a unit seen before only in part).
    entries = trace((1324, [1, 2, 3]), (1424, [1, 2, 3]), (1536, [1, 2, 3]), (512, [1]))
    replay = replay_in_order(HashedTrace.of(entries), 100 * B)
    gap = paper_gap(entries, replay, 0.75)
    assert reuse_from_ids(entries).matched == [0, 1324, 1424, 512]
    assert (gap.hits, gap.cap_tokens) == (1024 + 1024, 512)  # the last one: one block, capped
    assert (gap.partial_last_unit_tokens, gap.partial_earlier_tokens) == (300, 400)
    assert gap.granularity_tokens == 700 and gap.paper_tokens == round(0.75 * 4796)
    assert gap.beyond_trace_tokens == gap.paper_tokens - 3260
    assert gap.id_ratio == 7 / 10 and gap.to_dict()["cap_rate"] == 512 / 4796
    assert paper_gap(entries, replay, None).beyond_trace_tokens is None
    with pytest.raises(ValueError, match="nothing evicted"):
        paper_gap(entries, replay_in_order(HashedTrace.of(entries), 3 * B), 0.75)


@needs_real_trace
def test_on_the_real_trace_both_curves_grow_and_meet_at_the_top() -> None:
    entries = read_trace(CONVERSATION, limit=800)
    capacities = capacities_for(entries)
    hashed = HashedTrace.of(entries)
    points = [(replay_in_order(hashed, c), replay_in_order_sglang(entries, c)) for c in capacities]
    for engine in (0, 1):
        rates = [pair[engine].hit_rate for pair in points]
        assert rates == sorted(rates) and rates[0] < rates[-1]
    vllm, sglang = points[-1]
    assert vllm.evictions == sglang.evictions == 0
    matched = reuse_from_ids(entries).matched
    assert sglang.uncapped_hits == sum(matched) >= vllm.uncapped_hits


# -- the CLI -----------------------------------------------------------------------------------

SHARED_PARTIAL: list[dict[str, object]] = [
    {"timestamp": 0, "input_length": 1200, "output_length": 5, "hash_ids": [1, 2, 3]},
    {"timestamp": 10, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 3]},
]


def test_cli_both_engines_a_csv_line_per_capacity_per_engine(tmp_path: object) -> None:
    path = write(tmp_path, SHARED_PARTIAL)  # type: ignore[arg-type]
    status, text = run("--trace", path, "--engine", "both", "--capacity-tokens", "2048", "9000")
    lines = text.splitlines()
    assert status == 0 and len(lines) == 5 and lines[0].startswith("engine,capacity_tokens,")
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=True)) for line in lines[1:]]
    assert [(r["engine"], r["capacity_tokens"], r["hits"]) for r in rows] == [
        ("vllm", "2048", "1024"),
        ("sglang", "2048", "1099"),
        ("vllm", "9000", "1024"),
        ("sglang", "9000", "1099"),
    ]
    assert rows[1]["block_size"] == "1"
    status, text = run("--trace", path, "--engine", "sglang", "--capacity-tokens", "9000")
    assert status == 0 and text.splitlines()[0].startswith("capacity_tokens,")


def test_cli_both_engines_as_json_with_the_gap(tmp_path: object) -> None:
    path = write(tmp_path, ROWS)  # type: ignore[arg-type]
    status, text = run("--trace", path, "--engine", "both", "--json")
    data = json.loads(text)
    assert status == 0 and set(data) == {"vllm", "sglang"}
    assert data["sglang"]["engine"] == "sglang" and data["sglang"]["block_size"] == 1
    assert [p["capacity_tokens"] for p in data["sglang"]["points"]] == [
        p["capacity_tokens"] for p in data["vllm"]["points"]
    ]
    gap = data["sglang"]["unlimited"]["gap"]
    assert gap["reusable_tokens"] == 1024 and gap["granularity_tokens"] == 0
    args = (
        "--engine",
        "sglang",
        "--per-request",
        "--block-size",
        "16",
        "--capacity-tokens",
        "4096",
    )
    status, text = run("--trace", path, *args)
    assert status == 0 and text.splitlines()[2].startswith("4096,1,2,10,1100,1024,1024,0,0,")


def test_cli_sglang_bad_input_is_one_line_and_exit_2(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, ROWS)  # type: ignore[arg-type]
    args = ("--trace", path, "--engine", "sglang", "--block-size", "16", "--capacity-tokens", "8")
    assert run(*args)[0] == 2
    assert capsys.readouterr().err == "error: capacity 8 holds no 16-token page\n"
    with pytest.raises(SystemExit) as caught:
        run("--trace", path, "--engine", "lmdeploy")
    assert caught.value.code == 2 and len(capsys.readouterr().err.splitlines()) == 1


def test_sglang_evicts_the_least_recently_used_leaf() -> None:
    # A's second look-up makes B the older leaf: D's room comes from B, and A hits again
    # (the most recently used first would evict A).
    a, b, d = (1024, [1, 2]), (1024, [3, 4]), (600, [5, 6])
    replay = replay_in_order_sglang(trace(a, b, a, d, a, b), 2348, per_request=True)
    assert [r.hits for r in replay.per_request] == [0, 0, 1023, 0, 1023, 0]
    assert [r.evictions for r in replay.per_request][:4] == [0, 0, 0, 1024]


def test_the_sglang_curve_yields_point_by_point_and_stops() -> None:
    entries = random_trace(3, requests=600)
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) >= 5  # asked before each replay and every 256 requests

    points = list(hit_rate_curve_sglang(entries, [4 * B, 50 * B, 10**7], stop=stop))
    assert [(p.capacity_tokens, p.completed, p.requests) for p in points] == [
        (4 * B, True, 600),
        (50 * B, False, 256),
    ]
