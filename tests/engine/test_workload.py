"""The workload lab's engine side: the seed's four experiments and the survival story,
asserted on the series the lab draws and the CLI prints."""

from __future__ import annotations

import gc
import io
import json
import subprocess
import sys
import weakref
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine.lab.cli.main import main
from engine.lab.play.scenario import MODES
from engine.lab.play.vllm.snapshot import block_state
from engine.lab.play.vllm.timeline import build_timeline
from engine.lab.workload.presets import load_preset, preset_names
from engine.lab.workload.run import COLUMNS
from engine.lab.workload.vllm.runner import WorkloadRunner, pool_usage, run_workload
from engine.lab.workload.workload import (
    SALT_POLICIES,
    Workload,
    WorkloadError,
    fits_a_scenario,
    problems,
    workload_scenario,
)
from engine.vllm.kv_cache_utils import KVCacheBlock
from engine.vllm.kv_events import BlockRemoved

# 50 requests of a 512-token system prompt plus 64 tokens of their own: quick to run.
SMALL = Workload(requests=50, shared_tokens=512, unique_tokens=64, output_tokens=4)


def test_shared_prefix_hit_rate_is_the_shared_fraction_less_the_first_cold_miss() -> None:
    run = run_workload(load_preset("shared-prefix").workload)
    workload = run.workload
    summary = run.summary()
    # Tolerance: the first request's cold miss costs 1/requests of the shared fraction.
    tolerance = workload.shared_fraction / workload.requests + 1e-9
    assert summary["hit_rate"] == pytest.approx(workload.shared_fraction, abs=tolerance)
    assert summary["hit_rate"] < workload.shared_fraction
    assert run.request_hits[0] == 0
    assert set(run.request_hits[1:]) == {workload.shared_tokens}  # 2,000 = 125 whole blocks


@pytest.mark.parametrize("knobs", [{"salt": "per-request"}, {"prepend_token": True}])
def test_a_fresh_salt_or_a_prepended_token_gives_exactly_zero_hits(
    knobs: dict[str, object],
) -> None:
    run = run_workload(SMALL.replace(**knobs))
    assert sum(run.series["hits"]) == 0
    assert run.summary()["queries"] > 0
    assert set(run.request_hits) == {0}
    # The same requests without it hit the shared prompt.
    assert sum(run_workload(SMALL).series["hits"]) > 0


def test_one_fixed_salt_misses_only_on_the_first_requests_blocks() -> None:
    salted = run_workload(SMALL.replace(salt="fixed"))
    assert salted.request_hits[0] == 0
    assert set(salted.request_hits[1:]) == {SMALL.shared_tokens}
    assert salted.series["hits"] == run_workload(SMALL).series["hits"]


def test_a_salt_per_user_misses_once_per_user() -> None:
    run = run_workload(SMALL.replace(salt="per-user", users=5))
    assert run.request_hits[:5] == [0] * 5
    assert set(run.request_hits[5:]) == {SMALL.shared_tokens}


def test_the_survival_fraction_falls_as_churn_rises() -> None:
    """Longer outputs: the running requests take more blocks while a victim waits."""
    base = load_preset("preemption-survival").workload
    runs = [run_workload(base.replace(output_tokens=n)) for n in (32, 128, 512)]
    fractions = [run.summary()["survival_fraction"] for run in runs]
    assert all(run.summary()["preemptions"] > 0 for run in runs)
    assert fractions[0] > fractions[1] > fractions[2]
    last = runs[-1].series
    assert last["survival_fraction"][-1] == pytest.approx(
        sum(last["preempted_hits"]) / sum(last["preempted_queries"])
    )


def test_a_small_pool_evicts_but_keeps_the_shared_prompt() -> None:
    run = run_workload(load_preset("small-pool").workload)
    summary = run.summary()
    assert summary["evictions"] > 0
    assert summary["later_requests_min_hits"] == run.workload.shared_tokens
    assert fits_a_scenario(run.workload, run.num_steps)  # the lab can show its steps


def test_pool_usage_counts_every_block_in_its_state() -> None:
    runner = WorkloadRunner(SMALL.replace(num_gpu_blocks=120, arrival=3))
    assert not runner.scheduler.kv_cache_manager.block_pool.enable_kv_cache_events
    while not runner.done:
        runner.advance(1)
        pool = runner.scheduler.kv_cache_manager.block_pool
        states = Counter(block_state(block) for block in pool.blocks)
        counts = (states["held"], states["free-cached"], states["free-empty"])
        assert pool_usage(runner.scheduler) == counts
        assert last_row_usage(runner) == counts
    run = runner.result()
    assert sum(run.series["evictions"]) > 0  # a small pool evicts
    assert run.series["finished"][-1] == SMALL.requests


def last_row_usage(runner: WorkloadRunner) -> tuple[int, int, int]:
    series = runner.series
    return (
        series["held_blocks"][-1],
        series["free_cached_blocks"][-1],
        series["free_empty_blocks"][-1],
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    requests=st.integers(1, 12),
    arrival=st.integers(0, 3),
    shared_tokens=st.integers(0, 40),
    unique_tokens=st.integers(1, 24),
    output_tokens=st.integers(1, 12),
    num_gpu_blocks=st.integers(12, 60),
    block_size=st.sampled_from([2, 4, 8]),
    salt=st.sampled_from(SALT_POLICIES),
    prepend_token=st.booleans(),
    reset_step=st.integers(0, 8),
    reset_mode=st.sampled_from(MODES),
)
def test_the_counted_pool_usage_equals_a_scan_after_every_step(**knobs: Any) -> None:
    """The series' held / free-cached / free-empty counts are kept incrementally; across
    preemptions, evictions, duplicate hits and resets in every mode they equal a scan."""
    workload = Workload(users=3, max_num_batched_tokens=64, **knobs)
    assume(not problems(workload))
    runner = WorkloadRunner(workload, enable_kv_cache_events=True)
    while not runner.done and runner.step < 400:
        runner.advance(1)
        assert last_row_usage(runner) == pool_usage(runner.scheduler)
        # Evictions are counted with KV events off; here they are on, and agree.
        removed = [
            event
            for event in runner.scheduler.kv_cache_manager.take_events()
            if isinstance(event, BlockRemoved)
        ]
        assert runner.series["evictions"][-1] == sum(len(e.block_hashes) for e in removed)


def test_a_big_pool_never_evicts_and_prefill_shrinks_by_the_hits() -> None:
    run = run_workload(SMALL)
    summary = run.summary()
    assert summary["evictions"] == 0
    assert summary["prefill_tokens_without_cache"] - summary["prefill_tokens"] == summary["hits"]


def test_arrival_per_step_adds_that_many_requests_before_each_step() -> None:
    run = run_workload(SMALL.replace(arrival=7))
    assert run.series["arrived"][:8] == [7, 14, 21, 28, 35, 42, 49, 50]


@pytest.mark.parametrize(
    ("mode", "outcome", "hits_after"),
    [
        ("keep", 1, 0),  # hashes gone, the running requests keep going
        ("default", 0, SMALL.shared_tokens),  # refused: requests hold blocks
        ("preempt", 1, SMALL.shared_tokens),  # the victims come back first and re-cache it
    ],
)
def test_a_reset_in_each_mode_at_a_chosen_step(mode: str, outcome: int, hits_after: int) -> None:
    workload = SMALL.replace(arrival=10, output_tokens=32, reset_step=3, reset_mode=mode)
    run = run_workload(workload)
    resets = run.series["reset"]
    assert resets[2] == outcome
    assert resets[:2] + resets[3:] == [None] * (run.num_steps - 1)
    assert run.request_hits[20] == hits_after  # the first request added before step 3
    # Only preempt mode re-admits victims of the reset.
    assert (sum(run.series["preempted_queries"]) > 0) == (mode == "preempt")


def test_stopping_a_run_keeps_what_it_measured() -> None:
    run = run_workload(SMALL.replace(arrival=1), on_progress=lambda runner: False)
    assert not run.completed
    assert 0 < run.num_steps < SMALL.requests


@pytest.mark.parametrize(
    ("knobs", "knob", "message"),
    [
        ({"requests": 0}, "requests", "requests must be between 1 and 2,000, not 0"),
        ({"requests": 2001}, "requests", "requests must be between 1 and 2,000"),
        ({"num_gpu_blocks": 20_001}, "num_gpu_blocks", "between 2 and 20,000"),
        ({"block_size": 0}, "block_size", "block_size must be between 1 and"),
        (
            {"num_gpu_blocks": 100},
            "num_gpu_blocks",
            "a request needs 139 blocks (2,215 tokens at block_size 16) but the pool has only 99",
        ),
        ({"shared_tokens": 0, "unique_tokens": 0}, "shared_tokens", "the prompt is empty"),
        ({"salt": "random"}, "salt", "salt must be one of none, fixed, per-user, per-request"),
        ({"reset_mode": "turbo"}, "reset_mode", "reset_mode must be one of default"),
        ({"requests": "many"}, "requests", "requests must be a whole number, not 'many'"),
        ({"prepend_token": 1}, "prepend_token", "prepend_token must be true or false"),
        ({"speed": 3}, "speed", "unknown knob 'speed'"),
        (
            {"requests": 2000, "unique_tokens": 500},
            "requests",
            "2,000 requests of 2,516 tokens is 5,032,000 tokens, more than 5,000,000",
        ),
        ({"unique_tokens": 30_000, "shared_tokens": 3_000}, "unique_tokens", "more than 32,768"),
    ],
)
def test_bad_knobs_are_refused_naming_the_knob(
    knobs: dict[str, object], knob: str, message: str
) -> None:
    with pytest.raises(WorkloadError) as caught:
        Workload().replace(**knobs)
    assert caught.value.knob == knob
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_problems_lists_every_bad_knob_at_once() -> None:
    import dataclasses

    bad = dataclasses.replace(Workload(), requests=0, block_size=0, salt="x")
    assert set(problems(bad)) == {"requests", "block_size", "salt"}


def test_every_preset_states_its_outcome_with_the_engines_numbers() -> None:
    for name in preset_names():
        preset = load_preset(name)
        small = preset.workload.replace(requests=min(preset.workload.requests, 40))
        run = run_workload(small)
        compare_workload = preset.compare_workload(small)
        compare = run_workload(compare_workload) if compare_workload else None
        text = preset.expected_text(run, compare)
        assert "{" not in text and text, name
        if run.summary()["queries"]:
            assert f"{run.summary()['hit_rate']:.1%}" in text or "survival" in text, name


# -- the terminal form ----------------------------------------------------------------


def run_cli(*args: str) -> str:
    out = io.StringIO()
    assert main(["--workload", *args], out=out) == 0
    return out.getvalue()


def test_cli_lists_presets_one_per_line_name_first() -> None:
    lines = run_cli("list").splitlines()
    assert [line.split()[0] for line in lines] == list(preset_names())
    assert len(lines) >= 5


def test_cli_prints_the_series_as_csv_and_json() -> None:
    expected = run_workload(load_preset("fresh-salt").workload.replace(requests=12))
    csv_lines = run_cli("fresh-salt", "--requests", "12").splitlines()
    assert csv_lines[0] == ",".join(COLUMNS)
    assert len(csv_lines) == expected.num_steps + 1
    assert csv_lines[1].split(",")[COLUMNS.__len__() - 1] == ""  # no reset at step 1
    data = json.loads(run_cli("fresh-salt", "--requests", "12", "--json"))
    assert data["series"] == expected.series
    assert data["workload"]["requests"] == 12
    assert data["summary"]["hits"] == 0


def test_cli_knobs_change_the_run() -> None:
    data = json.loads(
        run_cli("shared-prefix", "--requests", "5", "--salt", "fixed", "--prepend-token", "--json")
    )
    assert data["workload"]["salt"] == "fixed"
    assert data["workload"]["prepend_token"] is True
    assert data["summary"]["hits"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["shared-prefix", "--requests", "0"], "error: requests must be between 1 and 2,000"),
        (["nope"], "error: unknown workload 'nope'"),
        (["shared-prefix", "--requests", "x"], "error: argument --requests: invalid int"),
        (["shared-prefix", "--num-gpu-blocks", "50"], "error: a request needs 139 blocks"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "engine", "--workload", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1


def test_a_small_workload_played_as_a_scenario_shows_the_runs_numbers() -> None:
    """The step view's timeline and the lab's untraced run are the same run."""
    workload = SMALL.replace(
        requests=20, arrival=3, num_gpu_blocks=120, output_tokens=8, reset_step=4
    ).replace(reset_mode="keep")
    run = run_workload(workload)
    assert fits_a_scenario(workload, run.num_steps)
    scenario, after_step = workload_scenario(workload, run.num_steps)
    timeline = build_timeline(scenario, "default", trace=False)
    assert len(after_step) == run.num_steps
    for row, index in enumerate(after_step):
        snapshot = timeline.steps[index].snapshot
        assert snapshot.stats.queries == run.series["cumulative_queries"][row]
        assert snapshot.stats.hits == run.series["cumulative_hits"][row]
        states = Counter(block.state for block in snapshot.blocks)
        assert states["held"] == run.series["held_blocks"][row]
        assert states["free-cached"] == run.series["free_cached_blocks"][row]
    assert timeline.steps[after_step[3] - 1].label.startswith("reset_prefix_cache(")
    assert not fits_a_scenario(workload.replace(num_gpu_blocks=401), run.num_steps)
    assert not fits_a_scenario(workload.replace(requests=100), run.num_steps)


def test_requests_prepared_ahead_give_the_same_run() -> None:
    workload = SMALL.replace(arrival=4)
    runner = WorkloadRunner(workload)
    assert not runner.prepare(10)
    assert runner.prepare(1_000)
    runner.advance()
    assert runner.result().series == run_workload(workload).series


def blocks_alive() -> int:
    return sum(isinstance(o, KVCacheBlock) for o in gc.get_objects())


def test_a_released_run_frees_its_pool_without_the_cycle_collector() -> None:
    """A pool is a reference cycle; released, a dropped run's 20,000 blocks go at once
    instead of waiting for a full garbage collection (tens of ms in Pyodide)."""
    gc.collect()
    before = blocks_alive()  # other tests' pools still held (the lab's runs in progress)
    runner = WorkloadRunner(SMALL.replace(num_gpu_blocks=2_000))
    while not runner.done:
        runner.advance()
    run = runner.result()
    pool = weakref.ref(runner.scheduler.kv_cache_manager.block_pool)
    runner.release()
    runner.release()  # twice is once
    with pytest.raises(AssertionError, match="cannot advance"):
        runner._run_one_step()
    gc.disable()
    try:
        del runner
        assert pool() is None and blocks_alive() == before
    finally:
        gc.enable()
    assert run.series["finished"][-1] == SMALL.requests


def test_an_unreleased_run_waits_for_the_cycle_collector() -> None:
    """What release() is for: without it the dropped pool outlives its runner."""
    gc.collect()
    before = blocks_alive()
    runner = WorkloadRunner(SMALL.replace(num_gpu_blocks=2_000))
    runner.advance()
    pool = weakref.ref(runner.scheduler.kv_cache_manager.block_pool)
    gc.disable()
    try:
        del runner
        assert pool() is not None and blocks_alive() >= before + 2_000
    finally:
        gc.enable()
    gc.collect()
    assert pool() is None
