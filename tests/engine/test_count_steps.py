"""count_steps: the length of a timeline without recording it (the playground's other modes)."""

from __future__ import annotations

import pytest

from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.vllm.timeline import build_timeline, count_steps


@pytest.mark.parametrize("name", scenario_names())
def test_count_steps_is_the_last_step_of_every_built_in_timeline(name: str) -> None:
    scenario = load_scenario(name)
    for mode in scenario.modes:
        built = build_timeline(scenario, mode, trace=False)
        assert count_steps(scenario, mode) == len(built.steps) - 1


def test_count_steps_stops_where_the_timeline_stops() -> None:
    data = {
        "pool": {"num_gpu_blocks": 60, "block_size": 64},
        "steps": [
            {"do": "add_request", "id": "A", "prompt": "1..8", "max_tokens": 3000},
            {"do": "run_until_idle"},
        ],
    }
    scenario = scenario_from_dict(data)
    built = build_timeline(scenario, "default", trace=False)
    assert count_steps(scenario, "default") == len(built.steps) - 1 == 2_000
