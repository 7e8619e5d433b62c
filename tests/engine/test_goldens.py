"""Golden timelines: every scenario in every mode, step by step, as the learner sees it.

The goldens leave out the engine's source text and line numbers (the trace tests
cover those), so editing a comment in the engine does not churn them. After an
intended behaviour change, regenerate with ``PCL_UPDATE_GOLDENS=1 pytest tests/engine``
and review the diff.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.vllm.timeline import Timeline, build_timeline

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


DIGEST_SCRIPT = """
import sys
from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.vllm.timeline import build_timeline
for name in scenario_names():
    scenario = load_scenario(name)
    for mode in scenario.modes:
        print(name, mode, build_timeline(scenario, mode).digest())
"""


def find_python(version: str) -> str | None:
    """An interpreter of that version that really runs (pyenv shims may not)."""
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(
        str(p) for p in Path.home().glob(f".pyenv/versions/{version}.*/bin/python3")
    )
    for candidate in candidates:
        if (
            candidate
            and not subprocess.run(
                [candidate, "-c", "import sys"], capture_output=True, check=False
            ).returncode
        ):
            return candidate
    return None


def run_on_python(version: str, script: str) -> str:
    """What ``script`` prints on that Python, with this checkout's engine (skips the test
    where that Python is not installed)."""
    interpreter = find_python(version)
    if interpreter is None:
        pytest.skip(f"no Python {version} here")
    root = Path(__file__).resolve().parents[2]
    return subprocess.run(
        [interpreter, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(root)},
    ).stdout


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_timeline_json_is_byte_identical_on_other_pythons(version: str) -> None:
    """Pyodide runs Python 3.12; CPython 3.12 and 3.13 must agree with this one too.

    Line events differ between versions (3.12 inlines comprehensions); the tracer
    normalises them to statements, and this is the check that it does.
    """
    other = run_on_python(version, DIGEST_SCRIPT).split("\n")
    ours = [
        f"{name} {mode} {build_timeline(load_scenario(name), mode).digest()}"
        for name, mode in CASES
    ]
    assert [line for line in other if line] == ours
