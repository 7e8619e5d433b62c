"""Bad input gets a one-line message naming the problem, never a traceback."""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import pytest

from engine.lab.cli.main import main
from engine.lab.play.scenario import ScenarioError, load_scenario, parse_scenario
from engine.lab.play.vllm.timeline import build_timeline


def scenario_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "pool": {"num_gpu_blocks": 10, "block_size": 4},
        "steps": [{"do": "add_request", "id": "A", "prompt": "1..8"}, {"do": "step"}],
    }
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (scenario_data(pool={"num_gpu_blocks": 1}), "num_gpu_blocks must be at least 2"),
        (scenario_data(pool={"block_size": 0}), "block_size must be at least 1, not 0"),
        (scenario_data(pool={"block_size": "4"}), "block_size must be a whole number"),
        (scenario_data(modes=["fast"]), "unknown mode 'fast'"),
        (scenario_data(steps=[{"do": "explode"}]), "unknown action 'explode'"),
        (scenario_data(steps=[{"do": "add_request", "prompt": "1..4"}]), "add_request needs an id"),
        (
            scenario_data(steps=[{"do": "add_request", "id": "A", "prompt": "4..1"}]),
            "range '4..1' is empty",
        ),
        (
            scenario_data(steps=[{"do": "add_request", "id": "A", "prompt": "x"}]),
            "'x' is not a token id",
        ),
        (
            scenario_data(steps=[{"do": "add_request", "id": "A", "prompt": "1..100"}]),
            "request 'A' needs 25 blocks (100 tokens at block_size 4) but the pool has only 9",
        ),
        (
            scenario_data(
                steps=[
                    {"do": "add_request", "id": "A", "prompt": "1..4"},
                    {"do": "add_request", "id": "A", "prompt": "1..4"},
                ]
            ),
            "request id 'A' is used twice",
        ),
        (scenario_data(steps=[{"do": "abort", "id": "Z"}]), "abort names request 'Z'"),
    ],
)
def test_impossible_scenarios_are_refused_with_the_reason(
    data: dict[str, Any], message: str
) -> None:
    with pytest.raises(ScenarioError) as error:
        parse_scenario("custom", data)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_unknown_scenario_and_mode() -> None:
    with pytest.raises(ScenarioError, match=r"unknown scenario .nope. \(one of .*reset"):
        load_scenario("nope")
    with pytest.raises(ScenarioError, match="unknown mode 'fast' for scenario 'reset'"):
        build_timeline(load_scenario("reset"), "fast")


def test_pool_overrides_are_checked() -> None:
    scenario = load_scenario("reset")
    with pytest.raises(ScenarioError, match="pool has only 3 usable blocks"):
        scenario.with_pool(num_gpu_blocks=4)
    assert scenario.with_pool(num_gpu_blocks=40).num_gpu_blocks == 40


def test_both_reset_flags_give_vllms_value_error_as_the_step_result() -> None:
    data = scenario_data(
        steps=[
            {
                "do": "reset_prefix_cache",
                "reset_running_requests": True,
                "keep_running_requests": True,
            },
        ]
    )
    timeline = build_timeline(parse_scenario("custom", data), "default")
    assert timeline.steps[1].result == (
        "ValueError: reset_running_requests and keep_running_requests cannot both be True"
    )
    assert timeline.steps[1].snapshot.blocks == timeline.steps[0].snapshot.blocks


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scenario", "nope"], "error: unknown scenario 'nope'"),
        (["--mode", "fast"], "error: unknown mode 'fast'"),
        (["--num-blocks", "1"], "error: num_gpu_blocks must be at least 2"),
        (["--block-size", "0"], "error: block_size must be at least 1"),
        (["--num-blocks", "4"], "error: reset setup #3: request 'B' needs 5 blocks"),
    ],
)
def test_cli_reports_bad_input_in_one_line_and_exits_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv, out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.startswith(message)
    assert err.count("\n") == 1 and "Traceback" not in err


def test_cli_plays_and_lists() -> None:
    out = io.StringIO()
    assert main(["--mode", "keep"], out=out) == 0
    text = out.getvalue()
    assert "reset_prefix_cache(keep_running_requests=True) -> True" in text
    assert "INFO vllm.v1.core.block_pool: Successfully reset prefix cache" in text
    listing = io.StringIO()
    assert main(["--list"], out=listing) == 0
    assert listing.getvalue().startswith("reset")


def test_cli_json_is_the_timeline() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "engine", "--mode", "preempt", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    expected = build_timeline(load_scenario("reset"), "preempt")
    assert result.stdout.strip() == expected.to_json()
