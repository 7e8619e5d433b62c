"""A lab run opened in the playground: its address holds the run's scenario, whose
timeline is the lab's step view, step for step."""

from __future__ import annotations

import pytest

from engine.lab.play import playground_code
from engine.lab.play.scenario import ScenarioError, parse_tokens
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.vllm.timeline import build_timeline
from engine.lab.workload.playground import token_ranges, workload_playground_code
from engine.lab.workload.presets import load_preset
from engine.lab.workload.vllm.runner import run_workload
from engine.lab.workload.workload import workload_scenario


@pytest.mark.parametrize(
    "tokens", [(1, 2, 3, 900_000_005, 7, 1_000_000, 1_000_001), (4,), (1, 2, 2, 3)]
)
def test_token_ranges_read_back_as_the_same_prompt(tokens: tuple[int, ...]) -> None:
    assert parse_tokens(token_ranges(tokens), "prompt") == tokens


@pytest.mark.parametrize(
    "knobs",
    [
        {},
        {"salt": "per-user", "users": 3, "prepend_token": True},
        {"requests": 12, "arrival": 0, "reset_step": 4, "reset_mode": "keep"},
    ],
)
def test_the_playground_code_plays_the_lab_step_view(knobs: dict[str, object]) -> None:
    workload = load_preset("small-pool").workload.replace(**knobs)
    run = run_workload(workload)
    code = workload_playground_code(workload, run.num_steps)
    playground = scenario_from_dict(playground_code.decode(code))
    lab_scenario, after_step = workload_scenario(workload, run.num_steps)
    lab = build_timeline(lab_scenario, "default", trace=False)
    played = build_timeline(playground, "default", trace=False)
    assert len(played.steps) == len(lab.steps) == after_step[-1] + 1
    assert [s.label for s in played.steps] == [s.label for s in lab.steps]
    for index in after_step:
        assert played.steps[index].snapshot == lab.steps[index].snapshot
    last = played.steps[-1].snapshot
    assert last.stats.hits == run.last("cumulative_hits")
    assert len(playground_code.decode(code)["steps"]) < len(lab_scenario.script)  # steps merged


@pytest.mark.parametrize(
    ("knobs", "reason"),
    [
        ({"num_gpu_blocks": 20_000}, "its pool has 20,000 blocks"),
        ({"requests": 200}, "200 requests over"),
        ({"block_size": 128, "shared_tokens": 256, "num_gpu_blocks": 40}, "block_size"),
    ],
)
def test_a_run_too_large_for_the_playground_says_why(knobs: dict[str, object], reason: str) -> None:
    workload = load_preset("small-pool").workload.replace(**knobs)
    with pytest.raises(ScenarioError, match=reason):
        workload_playground_code(workload, run_workload(workload).num_steps)
