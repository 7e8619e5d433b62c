"""A trace slice replayed with time (engine/lab/traces/timed.py): hand-written traces where
the arrival times decide the hits, on vLLM's scheduler and SGLang's, the limits, and the
CLI's ``--timed``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from engine.lab.cli.main import main
from engine.lab.traces.request_trace import TraceEntry
from engine.lab.traces.timed import (
    CANNOT_SHOW,
    TimedKnobs,
    TimedTraceRun,
    run_trace_timed,
    timed_result,
    timed_runner,
)
from engine.lab.workload.run import COLUMNS, WorkloadRun
from engine.lab.workload.workload import MAX_REQUESTS, WorkloadError

B = 16  # a small block size: these slices are small
A = (1, 2, 3)  # a prompt's hash ids (1100 tokens: two whole units and a partial one)


def entry(line: int, ms: int, ids: tuple[int, ...] = A, length: int = 1100, out: int = 5):
    return TraceEntry(line, ms, length, out, ids)


def twice(gap_ms: int) -> list[TraceEntry]:
    """The same prompt twice, ``gap_ms`` apart."""
    return [entry(1, 0), entry(2, gap_ms)]


def replay(entries: list[TraceEntry], engine: str, capacity: int = 400 * B) -> TimedTraceRun:
    block_size = B if engine == "vllm" else None  # SGLang: its default page size 1
    return run_trace_timed(entries, TimedKnobs(capacity, engine, block_size, step_ms=25))


@pytest.mark.parametrize(("engine", "hit"), [("vllm", 68 * B), ("sglang", 1099)])
def test_far_apart_the_second_request_hits_the_first_ones_prompt(engine: str, hit: int) -> None:
    run = replay(twice(10_000), engine)
    # vLLM: whole blocks (68 of 16); SGLang: to the token, all but the last.
    assert run.request_hits == [0, hit]
    assert max(run.series["running"]) == 1 and run.completed
    # The idle gap is jumped, not stepped through (10,000 ms would be 400 steps).
    assert run.num_steps < 20 and run.step_times_ms[-1] >= 10_000


def test_arriving_together_both_prefill_in_the_same_step() -> None:
    vllm, sglang = replay(twice(0), "vllm"), replay(twice(0), "sglang")
    assert vllm.series["running"][0] == sglang.series["running"][0] == 2
    # vLLM caches a block when it allocates it (before the step computes it), so the
    # second request, scheduled after the first in the same step, already finds it.
    assert vllm.request_hits == [0, 68 * B] and vllm.series["hits"][0] == 68 * B
    # SGLang puts a prompt in its tree after the step that prefilled it: nothing yet.
    assert sglang.request_hits == [0, 0]
    # One step (25 ms) later, SGLang's tree holds the first prompt.
    assert replay(twice(25), "sglang").request_hits == [0, 1099]


def test_on_vllm_time_decides_whether_a_prefix_survives_until_its_next_use() -> None:
    # A small pool (99 usable blocks); a prompt takes 69. The same two prompts and an
    # other one; only the times differ.
    together = [entry(1, 0), entry(2, 0), entry(3, 10_000, ids=(7, 8, 9))]
    apart = [entry(1, 0), entry(2, 5_000, ids=(7, 8, 9)), entry(3, 10_000)]
    hits_together = replay(together, "vllm", capacity=99 * B).request_hits
    hits_apart = replay(apart, "vllm", capacity=99 * B).request_hits
    assert hits_together[1] == 68 * B
    # Apart, the other prompt between them evicts most of the first one's blocks.
    assert hits_apart[2] < 68 * B / 2


def test_a_crowd_on_a_small_pool_runs_together_and_is_preempted_on_vllm() -> None:
    crowd = [entry(i + 1, 0, ids=(100 + i, 200 + i), length=700, out=300) for i in range(12)]
    vllm = run_trace_timed(crowd, TimedKnobs(200 * B, "vllm", B, step_ms=10))
    assert isinstance(vllm, WorkloadRun) and set(COLUMNS) <= set(vllm.series)
    assert max(vllm.series["running"]) > 1 and max(vllm.series["waiting"]) > 0
    summary = vllm.summary()
    assert summary["preemptions"] > 0 and vllm.completed
    assert vllm.last("survival_fraction") is not None
    # SGLang's modelled scheduler reserves the output at admission: no preemption.
    sglang = run_trace_timed(crowd, TimedKnobs(200 * B, "sglang", step_ms=10))
    assert sglang.summary()["preemptions"] is None and sglang.completed
    assert max(sglang.series["waiting"]) > 0


def test_a_request_that_can_never_fit_is_left_out_and_counted() -> None:
    entries = [
        entry(1, 0, length=600, ids=(1, 2)),
        entry(2, 5, length=5000, ids=tuple(range(10, 20))),
    ]
    entries.append(entry(3, 10, length=600, ids=(1, 2)))
    for engine in ("vllm", "sglang"):
        run = run_trace_timed(entries, TimedKnobs(4 * 512, engine))
        assert run.skipped_requests == 1 and run.completed
        assert run.summary()["requests"] == 2
    # Times count from the slice's first arrival, left out or not.
    late = [entries[1], entry(3, 300, length=600, ids=(1, 2))]
    assert run_trace_timed(late, TimedKnobs(4 * 512)).step_times_ms[:2] == [295.0, 320.0]


def test_stop_ends_the_replay_early() -> None:
    crowd = [entry(i + 1, i * 10, ids=(100 + i,), length=500, out=200) for i in range(10)]
    run = run_trace_timed(crowd, TimedKnobs(400 * B, "vllm", B), stop=lambda: True)
    assert not run.completed and 0 < run.num_steps < 200
    runner = timed_runner(crowd, TimedKnobs(400 * B, "sglang"))
    runner.advance(3)
    assert timed_result(runner).step_times_ms == [0.0, 25.0, 50.0]


def problems(entries: list[TraceEntry], capacity: int, **knobs: object) -> dict[str, str]:
    return TimedKnobs(capacity, **knobs).problems(entries)  # type: ignore[arg-type]


def test_too_large_a_slice_or_pool_is_refused_with_the_reason() -> None:
    many = [entry(i + 1, i) for i in range(MAX_REQUESTS + 1)]
    assert problems(many, 512 * 100)["requests"] == (
        "the slice has 2,001 requests, more than 2,000 (take fewer requests or a shorter window)"
    )
    long = [entry(i + 1, i, length=30_000, ids=tuple(range(59))) for i in range(200)]
    assert "6,001,000 tokens, more than 5,000,000" in problems(long, 51_200)["requests"]
    assert problems(twice(0), 3_000_000, block_size=16)["capacity_tokens"] == (
        "a capacity of 3,000,000 tokens is 187,500 blocks of 16, more than 20,000 "
        "(a larger block size or a smaller capacity)"
    )
    assert problems(twice(0), 100)["capacity_tokens"] == (
        "a capacity of 100 tokens holds no 512-token block"
    )
    assert "step_ms" in problems(twice(0), 51_200, step_ms=0)
    assert "block_size" in problems(twice(0), 51_200, block_size=2048)
    assert "engine" in problems(twice(0), 51_200, engine="lmdeploy")
    # SGLang counts slots (page size 1), up to the workload lab's largest SGLang pool.
    assert problems(twice(0), 3_000_000, engine="sglang") == {}
    assert "capacity_tokens" in problems(twice(0), 30_000_000, engine="sglang")
    with pytest.raises(WorkloadError) as caught:
        TimedKnobs(51_200).check(many)
    assert caught.value.knob == "requests"
    with pytest.raises(WorkloadError):
        run_trace_timed(twice(0), TimedKnobs(3_000_000, block_size=16))


# -- the CLI -----------------------------------------------------------------------------------

ROWS = [
    {"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 3]},
    {"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 3]},
    {"timestamp": 9_000, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 4]},
]


def write(tmp_path: Path, rows: list[dict[str, object]]) -> str:
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


def rows_of(text: str) -> list[dict[str, str]]:
    header, *lines = text.splitlines()
    return [dict(zip(header.split(","), line.split(","), strict=True)) for line in lines]


def test_cli_timed_prints_a_line_per_engine_step_and_says_what_it_cannot_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, ROWS)
    status, text = run(
        "--trace", path, "--timed", "--block-size", "16", "--capacity-tokens", "6400"
    )
    rows = rows_of(text)
    assert status == 0 and text.startswith("time_ms,step,arrived,running,")
    assert [r["step"] for r in rows] == [str(i) for i in range(1, len(rows) + 1)]
    assert (rows[0]["running"], rows[0]["hits"], rows[-1]["cumulative_hits"]) == (
        "2",
        "1088",
        "2112",
    )
    assert capsys.readouterr().err == f"note: {CANNOT_SHOW}\n"
    assert "no output tokens' content" in CANNOT_SHOW


def test_cli_timed_on_both_engines_csv_summary_and_json(tmp_path: Path) -> None:
    path = write(tmp_path, ROWS)
    args = ("--trace", path, "--timed", "--engine", "both", "--capacity-tokens", "6400")
    status, text = run(*args, "--block-size", "16")
    rows = rows_of(text)
    assert status == 0 and text.startswith("engine,time_ms,step,")
    assert {r["engine"] for r in rows} == {"vllm", "sglang"}
    status, text = run(*args, "--summary")
    summary = {r["engine"]: r for r in rows_of(text)}
    # Arriving together: vLLM's second request hits (blocks cached at allocation, whole
    # 512-token blocks here: 2 of them), SGLang's does not; the third hits two units on both.
    assert (summary["vllm"]["hits"], summary["sglang"]["hits"]) == ("2048", "1024")
    assert summary["sglang"]["block_size"] == "1" and summary["sglang"]["preemptions"] == ""
    status, text = run(*args, "--json", "--window-ms", "0:9000")
    data = json.loads(text)
    assert status == 0 and set(data) == {"vllm", "sglang"}
    assert data["sglang"]["cannot_show"] == CANNOT_SHOW
    assert data["vllm"]["summary"]["requests"] == 2  # the window left the third out
    series = data["vllm"]["series"]
    assert len(series["time_ms"]) == len(series["step"]) == data["vllm"]["summary"]["steps"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--window-ms", "9:3"), "argument --window-ms: must be A:B, whole ms with 0 <= A < B"),
        (("--step-ms", "0"), "argument --step-ms: must be a positive number of ms, not 0"),
        (("--capacity-tokens", "100", "200"), "--timed replays at one capacity"),
        (("--block-size", "16"), "vllm: a capacity of 3,000,000 tokens is 187,500 blocks of 16"),
        (("--window-ms", "50000:60000"), "the slice holds no request"),
        (("--per-request",), "--per-request is the in-order replay's"),
    ],
)
def test_cli_timed_bad_arguments_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    path = write(tmp_path, ROWS)
    try:
        status = run("--trace", path, "--timed", *args)[0]
    except SystemExit as stopped:  # argparse's own refusals
        status = int(stopped.code or 0)
    err = capsys.readouterr().err
    assert status == 2 and len(err.splitlines()) == 1
    assert err.startswith("error: ") and message in err


def test_cli_summary_goes_with_timed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--trace", write(tmp_path, ROWS), "--summary")[0] == 2
    assert capsys.readouterr().err == "error: --summary goes with --timed\n"
