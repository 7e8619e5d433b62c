"""Golden timelines: every scenario in every mode, step by step, as the learner sees it.

The goldens leave out the engine's source text and line numbers (the trace tests
cover those), so editing a comment in the engine does not churn them. After an
intended behaviour change, regenerate with ``PCL_UPDATE_GOLDENS=1 pytest tests/engine``
and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from engine.scenario import load_scenario, scenario_names
from engine.timeline import Timeline, build_timeline

GOLDENS = Path(__file__).parent / "goldens"
CASES = [(name, mode) for name in scenario_names() for mode in load_scenario(name).modes]


def golden_view(timeline: Timeline) -> dict[str, Any]:
    return {
        "scenario": timeline.scenario,
        "mode": timeline.mode,
        "steps": [
            {
                "label": step.label,
                "result": step.result,
                "narration_key": step.narration_key,
                "functions": [trace.qualname for trace in step.code],
                "focus": step.focus.qualname if step.focus else None,
                "snapshot": step.snapshot.to_dict(),
            }
            for step in timeline.steps
        ],
    }


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_timeline_matches_golden(name: str, mode: str) -> None:
    # through JSON, as the goldens are stored: tuples become lists
    actual = json.loads(json.dumps(golden_view(build_timeline(load_scenario(name), mode))))
    path = GOLDENS / f"{name}-{mode}.json"
    if os.environ.get("PCL_UPDATE_GOLDENS") == "1":
        path.write_text(json.dumps(actual, indent=1) + "\n", encoding="utf-8")
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert actual == expected


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_timeline_json_is_deterministic(name: str, mode: str) -> None:
    scenario = load_scenario(name)
    first, second = build_timeline(scenario, mode), build_timeline(scenario, mode)
    assert first.to_json() == second.to_json()
    assert json.loads(first.to_json())["steps"][0]["index"] == 0


def test_every_golden_belongs_to_a_case() -> None:
    assert sorted(p.stem for p in GOLDENS.glob("*.json")) == sorted(f"{n}-{m}" for n, m in CASES)
