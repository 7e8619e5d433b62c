"""Default and preempt run vLLM 0.33.0's reset_prefix_cache; keep runs the proposed one."""

from __future__ import annotations

import ast
import inspect

import pytest

from engine.lab.play.line_tracer import FunctionTrace
from engine.lab.play.scenario import load_scenario
from engine.lab.play.vllm.timeline import build_timeline
from engine.lab.play.vllm.variants import (
    BEFORE_FIX,
    CHANGES,
    PROPOSED,
    RELEASED,
    FunctionRef,
    counterpart,
)
from engine.vllm.aux_output import AuxOutputSchedulerConnector
from engine.vllm.block_pool import BlockPool, KeepModeBlockPool
from engine.vllm.scheduler import Scheduler

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


# -- every function on the reset's path: vLLM 0.33.0's in default and preempt modes ------

# The reset's path in vLLM 0.33.0 and each function's parameters there.
RELEASED_PATH = {
    "EngineCore.reset_prefix_cache": ["self", "reset_running_requests", "reset_connector"],
    "Scheduler.reset_prefix_cache": ["self", "reset_running_requests", "reset_connector"],
    "KVCacheManager.reset_prefix_cache": ["self"],
    "BlockPool.reset_prefix_cache": ["self"],
}


def parameters(source: str, trace: FunctionTrace) -> list[str]:
    """The parameters of the traced function, read off its source as the panel shows it."""
    [node] = [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.FunctionDef)
        and n.lineno <= trace.last_line <= (n.end_lineno or 0)
        and n.name == trace.qualname.rpartition(".")[2]
    ]
    return [a.arg for a in node.args.args]


@pytest.mark.parametrize("mode", ["default", "preempt"])
def test_default_and_preempt_run_vllms_reset_at_every_layer_labelled_released(mode: str) -> None:
    timeline = build_timeline(load_scenario("reset"), mode)
    step = timeline.steps[1]
    resets = [t for t in step.code if t.qualname.endswith(".reset_prefix_cache")]
    assert [t.qualname for t in resets] == list(RELEASED_PATH)
    for trace in resets:
        source = timeline.source(trace.file)
        assert parameters(source, trace) == RELEASED_PATH[trace.qualname]
        start, end = trace.start_line, trace.end_line
        assert "keep" not in "\n".join(source.splitlines()[start - 1 : end])
        variant = counterpart(FunctionRef(trace.file, trace.qualname))
        assert variant is not None, trace.qualname
        assert (variant.label, variant.other) == (RELEASED, None), trace.qualname


def test_keep_runs_the_proposed_reset_at_every_layer_shown_against_vllms() -> None:
    timeline = build_timeline(load_scenario("reset"), "keep")
    resets = [t for t in timeline.steps[1].code if t.qualname.endswith(".reset_prefix_cache")]
    assert [t.qualname for t in resets] == [f"KeepMode{name}" for name in RELEASED_PATH]
    for trace, released in zip(resets, RELEASED_PATH, strict=True):
        variant = counterpart(FunctionRef(trace.file, trace.qualname))
        assert variant is not None and variant.label == PROPOSED
        assert variant.other == FunctionRef(trace.file, released) and variant.other_is_old
        assert variant.other_label == RELEASED


def test_vllms_scheduler_reset_resets_the_aux_output_whenever_it_succeeds() -> None:
    signature = inspect.signature(Scheduler.reset_prefix_cache)
    assert {n: p.default for n, p in signature.parameters.items() if n != "self"} == {
        "reset_running_requests": False,
        "reset_connector": False,
    }
    assert not hasattr(Scheduler, "_should_reset_aux_output")
    scheduler = Scheduler(10, 4, aux_output_connector=AuxOutputSchedulerConnector())
    assert scheduler.aux_output_connector is not None
    before = scheduler.aux_output_connector.generation
    assert scheduler.reset_prefix_cache(reset_connector=True) is True  # no connector: a success
    assert scheduler.aux_output_connector.generation == before + 1


# Method names vLLM 0.33.0 has among the functions a change pairs.
VLLM_0_33_METHODS = {"reset_prefix_cache", "_process_store_completion"}


def test_a_label_that_names_vllm_0_33_sits_only_on_code_it_has() -> None:
    for change in CHANGES:
        for ref, label in ((change.old, change.old_label), (change.new, change.new_label)):
            if label in (RELEASED, BEFORE_FIX):
                assert ref.qualname.rpartition(".")[2] in VLLM_0_33_METHODS, ref
            else:
                assert "not in vLLM 0.33.0" in label or "(proposed)" in label, ref


def test_each_function_is_in_one_change_at_most() -> None:
    refs = [ref for c in CHANGES for ref in (c.old, c.new)]
    assert len(refs) == len(set(refs))
