"""Workloads: many requests played untraced through the engine, measured step by step.

A ``Workload`` is a handful of knobs (how many requests, how they arrive, a shared
system prompt plus a unique part, the output length, the pool, the cache policy,
an optional reset). A runner (workload/run.py; vllm/runner.py plays it on the same
``Scheduler`` and ``EngineCore`` the timelines use, sglang/runner.py on SGLang's model)
plays it without tracing or snapshots, and records one row per engine step: the
prefix-cache counters, pool usage, evictions, preemptions and prefill work. Presets
(presets.py) live in ``content/workloads/*.toml``.

Standard library only, like the rest of the engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, get_args

from engine.lab.play.scenario import (
    DEFAULT_MAX_NUM_BATCHED_TOKENS,
    MODES,
    Action,
    Mode,
    RequestSpec,
    Scenario,
    reset_flags,
)
from engine.lab.shared.quoting import shorten_quotes
from engine.vllm.kv_cache_manager import cdiv

SaltPolicy = Literal["none", "fixed", "per-user", "per-request"]
SALT_POLICIES: tuple[SaltPolicy, ...] = get_args(SaltPolicy)

MAX_REQUESTS = 2_000
MAX_POOL_BLOCKS = 20_000
MAX_BLOCK_SIZE = 1_024
MAX_PROMPT_TOKENS = 32_768
MAX_OUTPUT_TOKENS = 4_096
MAX_BATCHED_TOKENS = 65_536
# Every token of every request is hashed and scheduled: this bounds a run's work.
MAX_TOTAL_TOKENS = 5_000_000
# A run that has not finished by then is stopped (it cannot happen with checked knobs).
MAX_STEPS = 1_000_000

# Token ids: the shared prompt is 1..S; each request's unique part and its prepended
# token come from ranges of their own, so no two requests share them by accident.
UNIQUE_TOKEN_BASE = 1_000_000
PREPEND_TOKEN_BASE = 900_000_000
FIXED_SALT = "lab-fixed-salt"


class WorkloadError(ValueError):
    """A knob that cannot be used; ``knob`` names it, the message says why."""

    def __init__(self, knob: str, message: str) -> None:
        super().__init__(shorten_quotes(message))
        self.knob = knob


@dataclass(frozen=True)
class Workload:
    """The knobs of a run. Field names are the knob names (CLI and presets)."""

    requests: int = 200
    arrival: int = 0  # requests added before each engine step; 0: all before the first
    shared_tokens: int = 2_000  # the system prompt every request starts with
    unique_tokens: int = 200  # each request's own part, after the shared one
    output_tokens: int = 16  # max_tokens: tokens each request generates
    num_gpu_blocks: int = 20_000
    block_size: int = 16
    max_num_batched_tokens: int = DEFAULT_MAX_NUM_BATCHED_TOKENS
    salt: SaltPolicy = "none"
    users: int = 10  # for salt = "per-user": request i belongs to user i % users
    prepend_token: bool = False  # one per-request token in front of the prompt
    reset_step: int = 0  # reset_prefix_cache before this engine step; 0: never
    reset_mode: Mode = "default"

    @property
    def prompt_tokens(self) -> int:
        return int(self.prepend_token) + self.shared_tokens + self.unique_tokens

    @property
    def total_tokens(self) -> int:
        """Every token of every request: each is hashed and scheduled, so this is a
        run's work."""
        return self.requests * (self.prompt_tokens + self.output_tokens)

    @property
    def shared_fraction(self) -> float:
        """The share of each prompt that other requests could have cached."""
        return self.shared_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def replace(self, **knobs: Any) -> Workload:
        """These knobs changed, checked: a wrong name or type raises WorkloadError."""
        return workload_from_knobs(knobs, base=self)

    def knobs(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def prompt_key(self) -> tuple[Any, ...]:
        """The knobs ``prompt``, ``cache_salt`` and the block hashes read: two workloads
        with the same key give request i the same prompt block hashes."""
        users = self.users if self.salt == "per-user" else None
        knobs = (self.prepend_token, self.shared_tokens, self.unique_tokens, self.block_size)
        return (*knobs, self.salt, users)

    def cache_salt(self, index: int) -> str | None:
        if self.salt == "fixed":
            return FIXED_SALT
        if self.salt == "per-user":
            return f"user-{index % self.users}"
        if self.salt == "per-request":
            return f"request-{index}"
        return None

    def prompt(self, index: int) -> list[int]:
        tokens = [PREPEND_TOKEN_BASE + index] if self.prepend_token else []
        tokens.extend(_system_prompt(self.shared_tokens))
        first = UNIQUE_TOKEN_BASE + index * self.unique_tokens
        tokens.extend(range(first, first + self.unique_tokens))
        return tokens


@lru_cache(maxsize=4)
def _system_prompt(num_tokens: int) -> tuple[int, ...]:
    """The shared prompt's token ids, made once: every request's prompt then holds the
    same int objects (no new ones per request), and comparing two prompts' shared
    parts (engine/lab/workload/prompt_hashes.py) finds them identical without comparing values."""
    return tuple(range(1, num_tokens + 1))


KNOB_TYPES: dict[str, type] = {
    "requests": int,
    "arrival": int,
    "shared_tokens": int,
    "unique_tokens": int,
    "output_tokens": int,
    "num_gpu_blocks": int,
    "block_size": int,
    "max_num_batched_tokens": int,
    "salt": str,
    "users": int,
    "prepend_token": bool,
    "reset_step": int,
    "reset_mode": str,
}
assert set(KNOB_TYPES) == {f.name for f in dataclasses.fields(Workload)}

# knob -> (lowest, highest) for the whole-number knobs
KNOB_RANGES: dict[str, tuple[int, int]] = {
    "requests": (1, MAX_REQUESTS),
    "arrival": (0, MAX_REQUESTS),
    "shared_tokens": (0, MAX_PROMPT_TOKENS),
    "unique_tokens": (0, MAX_PROMPT_TOKENS),
    "output_tokens": (1, MAX_OUTPUT_TOKENS),
    "num_gpu_blocks": (2, MAX_POOL_BLOCKS),
    "block_size": (1, MAX_BLOCK_SIZE),
    "max_num_batched_tokens": (1, MAX_BATCHED_TOKENS),
    "users": (1, MAX_REQUESTS),
    "reset_step": (0, MAX_STEPS),
}


def workload_from_knobs(knobs: Mapping[str, Any], base: Workload | None = None) -> Workload:
    """A workload from knob values (a preset's table, the CLI, the app), checked."""
    workload = typed_workload(knobs, base)
    validate(workload)
    return workload


def typed_workload(knobs: Mapping[str, Any], base: Workload | None = None) -> Workload:
    """A workload from knob values whose names and types are checked, ranges not yet
    (``problems`` then lists every knob out of range at once)."""
    for name, value in knobs.items():
        kind = KNOB_TYPES.get(name)
        if kind is None:
            raise WorkloadError(name, f"unknown knob {name!r} (one of {', '.join(KNOB_TYPES)})")
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            wanted = {int: "a whole number", bool: "true or false", str: "text"}[kind]
            raise WorkloadError(name, f"{name} must be {wanted}, not {value!r}")
    return dataclasses.replace(base or Workload(), **knobs)


def problems(workload: Workload) -> dict[str, str]:
    """Every knob that cannot be used, with the reason (empty: the workload can run)."""
    found: dict[str, str] = {}
    for name, (low, high) in KNOB_RANGES.items():
        value = getattr(workload, name)
        if not low <= value <= high:
            found[name] = f"{name} must be between {low:,} and {high:,}, not {value:,}"
    if workload.salt not in SALT_POLICIES:
        found["salt"] = f"salt must be one of {', '.join(SALT_POLICIES)}, not {workload.salt!r}"
    if workload.reset_mode not in MODES:
        found["reset_mode"] = (
            f"reset_mode must be one of {', '.join(MODES)}, not {workload.reset_mode!r}"
        )
    if found:
        return found
    if workload.prompt_tokens < 1:
        found["shared_tokens"] = "the prompt is empty: give shared_tokens or unique_tokens"
    elif workload.prompt_tokens > MAX_PROMPT_TOKENS:
        found["unique_tokens"] = (
            f"the prompt has {workload.prompt_tokens:,} tokens, more than {MAX_PROMPT_TOKENS:,}"
        )
    total = workload.total_tokens
    if total > MAX_TOTAL_TOKENS:
        found["requests"] = (
            f"{workload.requests:,} requests of {workload.prompt_tokens + workload.output_tokens:,}"
            f" tokens is {total:,} tokens, more than {MAX_TOTAL_TOKENS:,}"
        )
    # The last sampled token is never computed, so it needs no slot (as for scenarios).
    num_tokens = workload.prompt_tokens + workload.output_tokens - 1
    needed = cdiv(num_tokens, workload.block_size)
    usable = workload.num_gpu_blocks - 1
    if num_tokens >= 1 and needed > usable:
        found["num_gpu_blocks"] = (
            f"a request needs {needed:,} blocks ({num_tokens:,} tokens at block_size "
            f"{workload.block_size}) but the pool has only {usable:,} usable blocks"
        )
    return found


def validate(workload: Workload) -> None:
    """Raise WorkloadError for the first knob that cannot be used."""
    for knob, message in problems(workload).items():
        raise WorkloadError(knob, message)


# -- the same run as a scenario, for the step view ----------------------------------

# A run this small can be played as a scenario, a complete snapshot per action: every
# snapshot holds every request's block chain, so the work grows with actions x blocks.
MAX_SCENARIO_BLOCKS = 400
MAX_SCENARIO_WORK = 40_000  # actions x the requests' blocks


def scenario_fits(num_gpu_blocks: int, num_actions: int, request_blocks: int) -> bool:
    """Whether a scenario of ``num_actions`` actions over requests of ``request_blocks``
    blocks in all, on a pool of ``num_gpu_blocks``, is small enough to be played (about a
    second here) and drawn block by block."""
    work = num_actions * request_blocks
    return num_gpu_blocks <= MAX_SCENARIO_BLOCKS and work <= MAX_SCENARIO_WORK


def fits_a_scenario(workload: Workload, num_steps: int) -> bool:
    """Whether ``num_steps`` engine steps of the workload fit a scenario (``scenario_fits``)."""
    blocks_per_request = cdiv(workload.prompt_tokens + workload.output_tokens, workload.block_size)
    return scenario_fits(
        workload.num_gpu_blocks,
        workload.requests + num_steps,
        workload.requests * blocks_per_request,
    )


def workload_scenario(workload: Workload, num_steps: int) -> tuple[Scenario, list[int]]:
    """The workload's first ``num_steps`` engine steps as a scenario: its arrivals,
    its reset and its steps, as actions. Also returns, for each engine step, the
    index of the timeline step that shows the state after it (timeline step 0 is
    the empty engine)."""
    actions: list[Action] = []
    after_step: list[int] = []
    count = workload.arrival or workload.requests
    arrived = 0
    for step in range(1, num_steps + 1):
        for index in range(arrived, min(workload.requests, arrived + count)):
            spec = RequestSpec(
                request_id=f"req-{index}",
                prompt_token_ids=tuple(workload.prompt(index)),
                max_tokens=workload.output_tokens,
                cache_salt=workload.cache_salt(index),
            )
            actions.append(Action("add_request", "add", request=spec))
            arrived += 1
        if step == workload.reset_step:
            flags = reset_flags(Action("reset_prefix_cache", "reset"), workload.reset_mode)
            actions.append(
                Action(
                    "reset_prefix_cache",
                    "reset",
                    reset_running_requests=flags["reset_running_requests"],
                    keep_running_requests=flags["keep_running_requests"],
                )
            )
        actions.append(Action("step", "step"))
        after_step.append(len(actions))
    scenario = Scenario(
        name="workload",
        title="Workload lab run",
        summary="",
        order=0,
        modes=("default",),
        num_gpu_blocks=workload.num_gpu_blocks,
        block_size=workload.block_size,
        max_num_batched_tokens=workload.max_num_batched_tokens,
        setup=(),
        script=tuple(actions),
        narration={"": {}},
    )
    return scenario, after_step
