"""Which of the model's functions are two versions of one, and how each is labelled.

The model of vLLM (``engine/vllm/``) holds both versions of every function that
keep mode changes, as real code the engine runs: vLLM 0.33.0's, as released, and
the proposed one (in a ``KeepMode...`` subclass), or the code before a fix and
after it. The model does not know about this registry: the lab reads the model
and pairs the versions here, by reference. The code panel shows the version
that ran as a diff against the other one, and labels each side, so a learner
always knows which code is vLLM's and which is not.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.lab.play.line_tracer import source_file
from engine.vllm import api_server
from engine.vllm.api_server import EngineCoreClient, KeepModeEngineCoreClient
from engine.vllm.block_pool import BlockPool, KeepModeBlockPool
from engine.vllm.core import EngineCore, KeepModeEngineCore
from engine.vllm.kv_cache_manager import KeepModeKVCacheManager, KVCacheManager
from engine.vllm.kv_offload import SimpleCPUOffloadScheduler, SimpleCPUOffloadSchedulerWithoutFix
from engine.vllm.scheduler import KeepModeScheduler, Scheduler, SchedulerWithoutKeepFix

RELEASED = "vLLM 0.33.0 (released)"
PROPOSED = "proposed (not in vLLM 0.33.0)"
BEFORE_FIX = "before the fix (as in vLLM 0.33.0)"
KEEP_BEFORE_FIX = "keep mode before its fix (proposed, not in vLLM 0.33.0)"
WITH_FIX = "keep mode's fix (proposed, not in vLLM 0.33.0)"


@dataclass(frozen=True)
class FunctionRef:
    """Where a function's source is: repo-relative file and qualified name."""

    file: str
    qualname: str

    @classmethod
    def of(cls, function: Callable[..., Any]) -> FunctionRef:
        return cls(source_file(sys.modules[function.__module__]), function.__qualname__)


@dataclass(frozen=True)
class Change:
    old: FunctionRef  # the code before the change
    new: FunctionRef  # the code after it
    old_label: str
    new_label: str
    # True: the old code is itself the lesson (a bug that was fixed), so it is
    # shown as a diff too. False: it is plain released code, shown as it is.
    diff_old: bool


@dataclass(frozen=True)
class Counterpart:
    """What the code panel needs about a traced function that is part of a change."""

    label: str  # what this version is
    other: FunctionRef | None  # the version to diff against; None: no diff
    other_label: str
    other_is_old: bool


def released_and_proposed(released: Callable[..., Any], proposed: Callable[..., Any]) -> Change:
    """vLLM 0.33.0's function and keep mode's proposed version of it; the released
    one is shown as it is, the proposed one as a diff against it."""
    return Change(FunctionRef.of(released), FunctionRef.of(proposed), RELEASED, PROPOSED, False)


def fix(
    before: Callable[..., Any], after: Callable[..., Any], before_label: str, after_label: str
) -> Change:
    """The code before a fix and after it; both are shown as diffs."""
    return Change(FunctionRef.of(before), FunctionRef.of(after), before_label, after_label, True)


CHANGES: tuple[Change, ...] = (
    # Keep mode's flag, from the API server's client down to the pool.
    released_and_proposed(
        EngineCoreClient.reset_prefix_cache, KeepModeEngineCoreClient.reset_prefix_cache
    ),
    released_and_proposed(EngineCore.reset_prefix_cache, KeepModeEngineCore.reset_prefix_cache),
    released_and_proposed(Scheduler.reset_prefix_cache, KeepModeScheduler.reset_prefix_cache),
    released_and_proposed(
        KVCacheManager.reset_prefix_cache, KeepModeKVCacheManager.reset_prefix_cache
    ),
    released_and_proposed(BlockPool.reset_prefix_cache, KeepModeBlockPool.reset_prefix_cache),
    # Keep mode's two fixes, each against the code before it.
    fix(
        SchedulerWithoutKeepFix._should_reset_aux_output,
        KeepModeScheduler._should_reset_aux_output,
        KEEP_BEFORE_FIX,
        WITH_FIX,
    ),
    fix(
        SimpleCPUOffloadSchedulerWithoutFix._process_store_completion,
        SimpleCPUOffloadScheduler._process_store_completion,
        BEFORE_FIX,
        WITH_FIX,
    ),
    # The HTTP handler's own check of keep mode's flags.
    fix(
        api_server.reset_prefix_cache_without_flag_check,
        api_server.reset_prefix_cache,
        "without the flag check (proposed)",
        "with the flag check (proposed)",
    ),
)


def scheduler_class(keep_mode: bool, keep_mode_fixes: bool = True) -> type[Scheduler]:
    """vLLM 0.33.0's Scheduler, or keep mode's (with or without its aux-output fix)."""
    if not keep_mode:
        return Scheduler
    return KeepModeScheduler if keep_mode_fixes else SchedulerWithoutKeepFix


def engine_core(scheduler: Scheduler) -> EngineCore:
    """The EngineCore of the scheduler's build."""
    if isinstance(scheduler, KeepModeScheduler):
        return KeepModeEngineCore(scheduler)
    return EngineCore(scheduler)


def reset_prefix_cache(
    engine: EngineCore, reset_running_requests: bool, keep_running_requests: bool
) -> bool:
    """Reset through the engine's own build: vLLM 0.33.0's EngineCore has no keep flag."""
    if isinstance(engine, KeepModeEngineCore):
        return engine.reset_prefix_cache(
            reset_running_requests, keep_running_requests=keep_running_requests
        )
    if keep_running_requests:
        raise TypeError("a reset that keeps running requests needs keep mode's build")
    return engine.reset_prefix_cache(reset_running_requests)


def counterpart(function: FunctionRef) -> Counterpart | None:
    """The label of a traced function that is part of a change, and what to diff it against."""
    for change in CHANGES:
        if function == change.new:
            return Counterpart(change.new_label, change.old, change.old_label, True)
        if function == change.old:
            other = change.new if change.diff_old else None
            return Counterpart(change.old_label, other, change.new_label, False)
    return None
