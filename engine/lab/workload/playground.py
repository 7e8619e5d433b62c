"""A lab run as a playground scenario, and the code of its playground address.

A run's actions are written as playground data (the ``content/scenarios`` format) by
``playground_data``: each request with its prompt as ranges of token ids, the reset with
its flags, and a run of engine steps as one ``step`` with a count, which takes as many
timeline steps; ``playground_code_of`` checks it against the playground's own limits and
packs it into an address. The workload lab's run is the scenario its step view plays
(``workload_scenario``), so timeline step i of the playground is timeline step i of the
lab's step view; a fleet's replica uses the same two (engine/lab/fleet/playground.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from engine.lab.play import playground_code
from engine.lab.play.scenario import Action, ScenarioError
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.workload.workload import (
    MAX_SCENARIO_BLOCKS,
    Workload,
    fits_a_scenario,
    workload_scenario,
)


def token_ranges(tokens: tuple[int, ...]) -> str:
    """Token ids as the playground writes a prompt: ``"1..256, 1000000..1000063"``."""
    parts: list[str] = []
    start = 0
    for index in range(1, len(tokens) + 1):
        if index == len(tokens) or tokens[index] != tokens[index - 1] + 1:
            first, last = tokens[start], tokens[index - 1]
            parts.append(str(first) if first == last else f"{first}..{last}")
            start = index
    return ", ".join(parts)


def _action_data(action: Action) -> dict[str, Any]:
    if action.kind == "add_request":
        assert action.request is not None
        spec = action.request
        data: dict[str, Any] = {
            "do": "add_request",
            "id": spec.request_id,
            "prompt": token_ranges(spec.prompt_token_ids),
            "max_tokens": spec.max_tokens,
        }
        if spec.cache_salt is not None:
            data["cache_salt"] = spec.cache_salt
        return data
    if action.kind == "reset_prefix_cache":
        return {
            "do": "reset_prefix_cache",
            "reset_running_requests": bool(action.reset_running_requests),
            "keep_running_requests": bool(action.keep_running_requests),
        }
    return {"do": action.kind}


def playground_data(
    title: str, summary: str, pool: dict[str, int], actions: Sequence[Action]
) -> dict[str, Any]:
    """Actions as playground data (consecutive steps as one ``step`` with a count)."""
    steps: list[dict[str, Any]] = []
    for action in actions:
        if action.kind == "step" and steps and steps[-1]["do"] == "step":
            steps[-1]["count"] = steps[-1].get("count", 1) + 1
        else:
            steps.append(_action_data(action))
    return {"title": title, "summary": summary, "pool": pool, "steps": steps}


def playground_code_of(data: dict[str, Any]) -> str:
    """The ``?playground=`` code of playground data. Raises ScenarioError saying why when
    the playground cannot take it (its own limits, or too long an address)."""
    scenario_from_dict(data)  # the playground's own limits (e.g. block_size)
    try:
        return playground_code.encode(data)
    except ScenarioError:
        raise ScenarioError("its requests would make too long an address") from None


def workload_playground_data(workload: Workload, num_steps: int) -> dict[str, Any]:
    """The first ``num_steps`` engine steps of the workload as playground data."""
    scenario, _ = workload_scenario(workload, num_steps)
    return playground_data(
        f"Workload lab run: {workload.requests:,} requests",
        (
            f"{workload.requests:,} requests of {workload.prompt_tokens:,} prompt tokens "
            f"({workload.shared_tokens:,} shared), {workload.output_tokens:,} output tokens "
            f"each, salt {workload.salt}, from the workload lab."
        ),
        {
            "num_gpu_blocks": workload.num_gpu_blocks,
            "block_size": workload.block_size,
            "max_num_batched_tokens": workload.max_num_batched_tokens,
        },
        scenario.script,
    )


def check_drawable_pool(num_gpu_blocks: int, whose: str = "its pool") -> None:
    """Raise ScenarioError when the pool is more blocks than the playground draws."""
    if num_gpu_blocks > MAX_SCENARIO_BLOCKS:
        raise ScenarioError(
            f"{whose} has {num_gpu_blocks:,} blocks; the playground draws "
            f"pools of at most {MAX_SCENARIO_BLOCKS} block by block"
        )


def too_much_to_record(requests: int, num_steps: int) -> str:
    """Why a run that fits no scenario (``scenario_fits``) does not open."""
    plural = "" if requests == 1 else "s"
    return (
        f"{requests:,} request{plural} over {num_steps:,} engine steps are too "
        "much to record step by step (the playground takes a few dozen short requests)"
    )


@lru_cache(maxsize=8)
def workload_playground_code(workload: Workload, num_steps: int) -> str:
    """The ``?playground=`` code of the run's scenario. Raises ScenarioError saying
    why when the run is too large for the playground."""
    check_drawable_pool(workload.num_gpu_blocks)
    if not fits_a_scenario(workload, num_steps):
        raise ScenarioError(too_much_to_record(workload.requests, num_steps))
    return playground_code_of(workload_playground_data(workload, num_steps))
