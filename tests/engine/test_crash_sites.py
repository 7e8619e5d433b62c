"""Keep mode's two crash sites, each without and with its fix, asserted on the timelines."""

from __future__ import annotations

import dataclasses
import io

import pytest

from engine.lab.cli.main import main
from engine.lab.play.scenario import load_scenario, parse_scenario
from engine.lab.play.vllm.snapshot import Snapshot
from engine.lab.play.vllm.timeline import ENGINE_DEAD_RESULT, Step, Timeline, build_timeline

STORED_BLOCKS = (1, 2, 3)  # B's prompt blocks, copied to CPU blocks 1 to 3


def play(name: str) -> Timeline:
    return build_timeline(load_scenario(name), "keep")


def step_of(timeline: Timeline, key: str) -> Step:
    return next(s for s in timeline.steps if s.narration_key == key)


def ref_cnts(snapshot: Snapshot, block_ids: tuple[int, ...]) -> list[int]:
    return [snapshot.block(b).ref_cnt for b in block_ids]


def cpu_ref_cnts(snapshot: Snapshot, block_ids: tuple[int, ...]) -> list[int]:
    assert snapshot.offload is not None
    return [snapshot.offload.cpu_blocks[b].ref_cnt for b in block_ids]


@pytest.mark.parametrize("name", ["keep-offload-crash", "keep-offload-fixed"])
def test_the_store_holds_a_second_ref_across_the_reset_which_clears_the_hash(name: str) -> None:
    t = play(name)
    started = step_of(t, "store_starts").snapshot
    assert started.offload is not None
    [store] = started.offload.stores_in_flight
    assert (store.gpu_block_ids, store.cpu_block_ids) == (STORED_BLOCKS, STORED_BLOCKS)
    assert ref_cnts(started, STORED_BLOCKS) == [2, 2, 2]  # B + the store
    assert cpu_ref_cnts(started, STORED_BLOCKS) == [1, 1, 1]
    assert all(started.block(b).block_hash is not None for b in STORED_BLOCKS)

    after_reset = step_of(t, "reset").snapshot
    assert after_reset.offload is not None
    assert after_reset.offload.stores_in_flight == started.offload.stores_in_flight
    assert ref_cnts(after_reset, STORED_BLOCKS) == [2, 2, 2]
    assert all(after_reset.block(b).block_hash is None for b in STORED_BLOCKS)
    assert after_reset.hash_map == ()


def test_without_the_fix_the_store_completion_asserts_and_the_engine_core_dies() -> None:
    t = play("keep-offload-crash")
    crash = step_of(t, "store_completes")
    assert crash.result == "AssertionError: assert primary_hash is not None"
    assert crash.snapshot.engine_dead
    error = [line for line in crash.snapshot.logs if line.level == "ERROR"]
    assert len(error) == 1 and error[0].logger == "vllm.v1.engine.core"
    # vLLM's own line (logger.exception), then the traceback: no sentence added
    assert error[0].message.startswith("EngineCore encountered a fatal error.\nTraceback")
    assert error[0].message.endswith("\nAssertionError")
    # the code panel shows the real pre-fix code, stopped on the assertion
    assert crash.focus is not None
    assert crash.focus.qualname == "SimpleCPUOffloadSchedulerWithoutFix._process_store_completion"
    source = t.source(crash.focus.file).splitlines()
    assert source[crash.focus.last_line - 1].strip() == "assert primary_hash is not None"
    # the refs were never released, and nothing reached the CPU map
    assert ref_cnts(crash.snapshot, STORED_BLOCKS) == [2, 2, 2]
    assert cpu_ref_cnts(crash.snapshot, STORED_BLOCKS) == [1, 1, 1]


def test_after_the_crash_nothing_runs_and_the_state_is_frozen() -> None:
    t = play("keep-offload-crash")
    crash_index = step_of(t, "store_completes").index
    frozen = t.steps[crash_index].snapshot
    later = t.steps[crash_index + 1 :]
    assert len(later) >= 2
    for step in later:
        assert step.result == ENGINE_DEAD_RESULT
        assert step.code == () and step.focus is None
        assert step.snapshot.logs == () and step.snapshot.events == ()
        assert step.snapshot == dataclasses.replace(frozen, logs=())
    assert "C" not in {r.request_id for r in t.steps[-1].snapshot.requests}


def test_with_the_fix_nothing_is_stored_on_cpu_and_both_refs_are_released() -> None:
    t = play("keep-offload-fixed")
    done = step_of(t, "store_completes")
    assert done.result == "scheduled B: 1 token"
    assert not done.snapshot.engine_dead
    offload = done.snapshot.offload
    assert offload is not None
    assert offload.stores_in_flight == ()
    assert offload.cpu_hash_map == ()
    assert all(offload.cpu_blocks[b].block_hash is None for b in STORED_BLOCKS)
    assert cpu_ref_cnts(done.snapshot, STORED_BLOCKS) == [0, 0, 0]
    assert ref_cnts(done.snapshot, STORED_BLOCKS) == [1, 1, 1]  # B's own ref only
    assert offload.cpu_free_queue[:3] == STORED_BLOCKS  # no hash: reused first
    assert done.focus is not None  # the scenario points the code panel at the fixed code
    assert done.focus.qualname == "SimpleCPUOffloadScheduler._process_store_completion"
    fixed_source = t.source(done.focus.file).splitlines()
    assert "continue" in {fixed_source[line - 1].strip().split()[0] for line in done.focus.lines}
    assert not any(line.level == "ERROR" for line in t.logs_until(len(t) - 1))


def test_with_the_fix_a_block_cached_after_the_reset_is_stored_on_cpu() -> None:
    t = play("keep-offload-fixed")
    gpu_hash = step_of(t, "fill").snapshot.block(4).block_hash
    assert gpu_hash is not None
    started = step_of(t, "second_store").snapshot
    assert started.block(4).ref_cnt == 2
    done = step_of(t, "second_store_done").snapshot
    assert done.offload is not None
    [entry] = done.offload.cpu_hash_map
    assert entry.block_hash == gpu_hash
    assert done.offload.cpu_blocks[entry.block_ids[0]].ref_cnt == 0
    assert done.block(4).ref_cnt == 1


def test_without_the_fix_a_keep_reset_bumps_the_generation_and_the_next_step_crashes() -> None:
    t = play("keep-aux-crash")
    start = t.steps[0].snapshot.aux_output
    assert start is not None and start.outputs_in_flight == 1
    assert (start.scheduler_generation, start.worker_generation) == (0, 0)

    reset = step_of(t, "reset")
    assert reset.result == "True"
    assert reset.snapshot.aux_output is not None
    assert reset.snapshot.aux_output.scheduler_generation == 1
    assert "SchedulerWithoutKeepFix._should_reset_aux_output" in {t.qualname for t in reset.code}
    assert "AuxOutputSchedulerConnector.reset" in {t.qualname for t in reset.code}

    crash = step_of(t, "next_step")
    assert (
        crash.result == "AssertionError: auxiliary output generation changed with output in flight"
    )
    assert crash.snapshot.engine_dead
    assert crash.focus is not None
    assert crash.focus.qualname == "AuxOutputWorkerConnector.begin_step"
    assert crash.snapshot.aux_output is not None
    assert crash.snapshot.aux_output.worker_generation == 0
    assert all(s.result == ENGINE_DEAD_RESULT for s in t.steps[crash.index + 1 :])


def test_with_the_fix_keep_mode_leaves_the_generation_alone() -> None:
    t = play("keep-aux-fixed")
    reset = step_of(t, "reset")
    assert reset.result == "True"
    aux = reset.snapshot.aux_output
    assert aux is not None
    assert (aux.scheduler_generation, aux.worker_generation, aux.outputs_in_flight) == (0, 0, 1)
    names = {trace.qualname for trace in reset.code}
    assert "KeepModeScheduler._should_reset_aux_output" in names
    assert "AuxOutputSchedulerConnector.reset" not in names

    for step in t.steps[reset.index + 1 :]:
        assert not step.snapshot.engine_dead
        assert step.result is not None and not step.result.startswith("AssertionError")
    assert step_of(t, "next_step").snapshot.aux_output == aux  # consumed one, one new
    assert step_of(t, "drained").snapshot.aux_output == type(aux)(0, 0, 0)


def test_a_reset_with_nothing_in_flight_still_bumps_the_generation() -> None:
    t = play("keep-aux-fixed")
    idle = step_of(t, "idle_reset")
    assert idle.label == "reset_prefix_cache()" and idle.result == "True"
    assert idle.snapshot.aux_output is not None
    assert idle.snapshot.aux_output.scheduler_generation == 1
    after = step_of(t, "new_generation").snapshot.aux_output
    assert after is not None
    assert (after.scheduler_generation, after.worker_generation) == (1, 1)


def test_the_cli_prints_the_crash_as_a_result_and_succeeds() -> None:
    out = io.StringIO()
    assert main(["--scenario", "keep-offload-crash"], out=out) == 0
    text = out.getvalue()
    assert "-> AssertionError: assert primary_hash is not None" in text
    assert "engine core: DEAD" in text
    assert ENGINE_DEAD_RESULT in text


def test_engine_options_are_checked() -> None:
    base = {"pool": {"num_gpu_blocks": 10, "block_size": 4}, "steps": [{"do": "step"}]}
    with pytest.raises(ValueError, match=r"\[engine\]: unknown option 'offlaod'"):
        parse_scenario("custom", {**base, "engine": {"offlaod": True}})
    with pytest.raises(ValueError, match="keep_mode_fixes must be true or false"):
        parse_scenario("custom", {**base, "engine": {"keep_mode_fixes": "no"}})
    with pytest.raises(ValueError, match="num_cpu_blocks must be between 2"):
        parse_scenario("custom", {**base, "engine": {"offload": True, "num_cpu_blocks": 1}})
    with pytest.raises(ValueError, match="focus must be text"):
        parse_scenario("custom", {**base, "steps": [{"do": "step", "focus": 3}]})
    scenario = parse_scenario("custom", {**base, "engine": {"offload": True}})
    options = scenario.engine
    assert options.offload and options.keep_mode_fixes and not options.aux_output
    assert scenario.with_pool(num_gpu_blocks=20).engine == options
