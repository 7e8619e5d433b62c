"""Default and preempt run vLLM 0.33.0's reset_prefix_cache; keep runs the proposed one."""

from __future__ import annotations

import inspect

import pytest

from engine.lab.scenario import load_scenario
from engine.lab.timeline import build_timeline
from engine.lab.variants import CHANGES, PROPOSED, RELEASED, FunctionRef, counterpart
from engine.vllm.block_pool import BlockPool, KeepModeBlockPool

RELEASED_REF = FunctionRef("engine/vllm/block_pool.py", "BlockPool.reset_prefix_cache")
PROPOSED_REF = FunctionRef("engine/vllm/block_pool.py", "KeepModeBlockPool.reset_prefix_cache")


def test_the_released_reset_has_the_released_signature() -> None:
    assert list(inspect.signature(BlockPool.reset_prefix_cache).parameters) == ["self"]
    assert inspect.signature(BlockPool.reset_prefix_cache).return_annotation == "bool"
    assert "allow_used_blocks" in inspect.signature(KeepModeBlockPool.reset_prefix_cache).parameters


@pytest.mark.parametrize("mode", ["default", "preempt"])
def test_default_and_preempt_run_the_released_reset(mode: str) -> None:
    timeline = build_timeline(load_scenario("reset"), mode)
    step = timeline.steps[1]
    names = [t.qualname for t in step.code]
    assert "BlockPool.reset_prefix_cache" in names
    assert "KeepModeBlockPool.reset_prefix_cache" not in names
    assert step.focus is not None and step.focus.qualname == "BlockPool.reset_prefix_cache"
    source = timeline.source(step.focus.file).splitlines()
    assert source[step.focus.start_line - 1].strip() == "def reset_prefix_cache(self) -> bool:"


def test_keep_runs_the_proposed_reset() -> None:
    step = build_timeline(load_scenario("reset"), "keep").steps[1]
    names = [t.qualname for t in step.code]
    assert "KeepModeBlockPool.reset_prefix_cache" in names
    assert "BlockPool.reset_prefix_cache" not in names


def test_the_change_is_registered_by_reference_and_labelled() -> None:
    [change] = [c for c in CHANGES if c.new == PROPOSED_REF]
    assert change.old == RELEASED_REF
    assert (change.old_label, change.new_label) == (RELEASED, PROPOSED)
    assert RELEASED == "vLLM 0.33.0 (released)"
    proposed = counterpart(PROPOSED_REF)
    assert proposed is not None and proposed.other == RELEASED_REF and proposed.other_is_old
    released = counterpart(RELEASED_REF)
    assert released is not None and released.label == RELEASED and released.other is None


def test_every_pre_fix_variant_uses_the_registry() -> None:
    registered = {ref.qualname for c in CHANGES for ref in (c.old, c.new)}
    assert {
        "SchedulerWithoutKeepFix._should_reset_aux_output",
        "SimpleCPUOffloadSchedulerWithoutFix._process_store_completion",
        "reset_prefix_cache_without_flag_check",
    } <= registered
