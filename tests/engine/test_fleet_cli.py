"""``python -m engine --fleet``: a CSV line per point of the sweep, JSON, the process
pool, and bad input as one line with exit status 2."""

from __future__ import annotations

import io
import json

import pytest

from engine.lab.cli.main import main
from engine.lab.fleet.result import ROW_COLUMNS

TRACE = "content/traces/conversation_trace.jsonl.gz"


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(["--fleet", *argv], out), out.getvalue()


def test_a_sweep_prints_a_line_per_point_in_order() -> None:
    code, text = run(
        "--trace", TRACE, "--requests", "200", "--replicas", "1", "4",
        "--router", "round-robin", "prefix-aware", "--capacity-tokens", "5000000",
    )  # fmt: skip
    assert code == 0
    header, *lines = text.splitlines()
    assert header.split(",") == list(ROW_COLUMNS)
    rows = [dict(zip(ROW_COLUMNS, line.split(","), strict=True)) for line in lines]
    assert [(r["router"], r["replicas"]) for r in rows] == [
        ("round-robin", "1"),
        ("round-robin", "4"),
        ("prefix-aware", "1"),
        ("prefix-aware", "4"),
    ]
    rate = {(r["router"], r["replicas"]): float(r["hit_rate"]) for r in rows}
    # one replica: every router is the same replay; nothing is evicted, so one replica
    # holds every prefix; four split round-robin's, the prefix-aware router's less
    assert rate["round-robin", "1"] == rate["prefix-aware", "1"]
    assert rate["round-robin", "4"] < rate["prefix-aware", "4"] <= rate["round-robin", "1"]


def test_jobs_run_the_points_in_processes_with_the_same_figures() -> None:
    args = ("--trace", TRACE, "--requests", "150", "--replicas", "1", "2", "--json")
    code, alone = run(*args)
    code_pool, pooled = run(*args, "--jobs", "2")
    assert code == code_pool == 0
    drop = {"seconds"}
    one = [{k: v for k, v in p.items() if k not in drop} for p in json.loads(alone)]
    two = [{k: v for k, v in p.items() if k not in drop} for p in json.loads(pooled)]
    assert one == two and len(one) == 2 and one[1]["per_replica"][1]["requests"] == 75


def test_a_workload_with_time_on_sglang() -> None:
    code, text = run(
        "--workload", "shared-prefix", "--engine", "sglang", "--replicas", "2", "--json"
    )
    assert code == 0
    (point,) = json.loads(text)
    assert point["mode"] == "timed" and point["requests"] == 200 and point["completed"]
    assert len(point["series"]["load"]) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--trace", "missing.jsonl"), "error: [Errno 2] No such file or directory"),
        (("--trace", TRACE, "--replicas", "0"), "must be between 1 and 16, not 0"),
        (("--trace", TRACE, "--router", "random"), "must be one of round-robin"),
        (("--workload", "shared-prefix", "--timed"), "are for --trace"),
        (("--workload", "nope"), "unknown workload 'nope'"),
        (("--trace", TRACE, "--capacity-tokens", "100"), "holds no 512-token block"),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code, _ = run(*argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
