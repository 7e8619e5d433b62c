"""Workloads on SGLang's model (engine/lab/workload/sglang/runner.py): the seed's three
experiments, the columns, and ``python -m engine --workload ... --engine``."""

from __future__ import annotations

import io
import json

import pytest

from engine.lab.cli.main import main
from engine.lab.workload.presets import load_preset
from engine.lab.workload.run import COLUMNS
from engine.lab.workload.sglang import runner as workload_sglang
from engine.lab.workload.sglang.runner import NO_MEANING_ON_SGLANG, pool_slots, run_sglang_workload
from engine.lab.workload.vllm.runner import run_workload
from engine.lab.workload.workload import Workload
from engine.sglang.scheduler import MAX_PREFILL_TOKENS

SMALL = Workload(requests=40, shared_tokens=512, unique_tokens=64, output_tokens=4)


def first_batch(workload: Workload) -> int:
    """How many cold requests SGLang's first prefill batch takes with every request
    waiting: the first, then each while its prompt is below the budget left."""
    left, count = MAX_PREFILL_TOKENS, 0
    while count < workload.requests and left > 0 and (not count or workload.prompt_tokens < left):
        left -= workload.prompt_tokens
        count += 1
    return count


def test_shared_prefix_all_at_once_misses_on_the_whole_first_prefill_batch() -> None:
    # fcfs (SGLang's default) has no in-batch sharing: every request of the first
    # prefill batch computes the shared prompt; every later one reuses all of it.
    workload = load_preset("shared-prefix").workload
    run = run_sglang_workload(workload)
    cold = first_batch(workload)
    assert cold == 7  # 7 x 2,200 tokens of a 16,384-token budget
    assert run.request_hits[:cold] == [0] * cold
    assert set(run.request_hits[cold:]) == {workload.shared_tokens}
    expected = (workload.requests - cold) * workload.shared_tokens
    assert run.summary()["hits"] == expected
    assert run.summary()["hit_rate"] == expected / (workload.requests * workload.prompt_tokens)
    # vLLM caches a block when it is allocated, so its first step shares it already.
    assert run_workload(workload).summary()["hit_rate"] > run.summary()["hit_rate"]


@pytest.mark.parametrize("shared_tokens", [2_000, 2_008])
def test_shared_prefix_one_request_a_step_reuses_to_the_token(shared_tokens: int) -> None:
    # One arrival per step: only the first request is cold on either engine. SGLang
    # (page size 1) reuses the whole shared prompt, vLLM its whole blocks only.
    workload = load_preset("shared-prefix").workload.replace(
        requests=60, arrival=1, shared_tokens=shared_tokens
    )
    sglang, vllm = run_sglang_workload(workload), run_workload(workload)
    later = workload.requests - 1
    assert sglang.request_hits == [0] + [shared_tokens] * later
    assert sglang.summary()["hit_rate"] == pytest.approx(
        workload.shared_fraction * later / workload.requests, rel=1e-12
    )
    assert sglang.summary()["hit_rate"] >= vllm.summary()["hit_rate"]
    whole_blocks = shared_tokens // workload.block_size * workload.block_size
    assert set(vllm.request_hits[1:]) == {whole_blocks}
    if shared_tokens % workload.block_size:
        assert sglang.summary()["hit_rate"] > vllm.summary()["hit_rate"]


@pytest.mark.parametrize("preset", ["fresh-salt", "prepend-token"])
def test_a_fresh_salt_or_a_prepended_token_gives_zero_hits(preset: str) -> None:
    workload = load_preset(preset).workload
    run = run_sglang_workload(workload)
    assert run.completed and run.summary()["queries"] == workload.requests * workload.prompt_tokens
    assert sum(run.series["hits"]) == 0 and set(run.request_hits) == {0}
    # The preset's comparison (no salt, no token) hits the shared prompt.
    compare = load_preset(preset).compare_workload()
    assert compare is not None and run_sglang_workload(compare).summary()["hits"] > 0


def test_the_zero_hit_check_fails_when_the_salt_is_not_mapped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A deliberately broken mapping: the salt dropped, not made the extra_key.
    monkeypatch.setattr(workload_sglang, "extra_key", lambda workload, index: None)
    assert sum(run_sglang_workload(SMALL.replace(salt="per-request")).series["hits"]) > 0


def test_a_fixed_salt_or_a_salt_per_user_keeps_reuse_within_the_namespace() -> None:
    one_a_step = SMALL.replace(arrival=1)
    plain = run_sglang_workload(one_a_step)
    fixed = run_sglang_workload(one_a_step.replace(salt="fixed"))
    assert fixed.request_hits == plain.request_hits
    users = run_sglang_workload(one_a_step.replace(salt="per-user", users=4))
    # each user's first request is cold, the rest reuse the shared prompt
    assert users.request_hits == [0] * 4 + [SMALL.shared_tokens] * (SMALL.requests - 4)


def test_every_column_and_the_pool_adds_up_to_the_vllm_pools_tokens() -> None:
    workload = load_preset("small-pool").workload
    run = run_sglang_workload(workload)
    assert set(run.series) == set(COLUMNS) and run.completed
    assert pool_slots(workload) == workload.num_gpu_blocks * workload.block_size
    for column in NO_MEANING_ON_SGLANG:
        assert set(run.series[column]) == {None}
    assert run.summary()["preemptions"] is None
    usage = ("held_blocks", "free_cached_blocks", "free_empty_blocks")
    for row in zip(*(run.series[column] for column in usage), strict=True):
        assert sum(row) == pool_slots(workload)
    assert sum(run.series["evictions"]) > 0  # the small pool evicts
    assert run.series["finished"][-1] == workload.requests
    # at the end nothing is held: every slot is free or in the tree, unlocked
    assert run.last("held_blocks") == 0


def test_a_reset_is_refused_while_requests_wait_or_run() -> None:
    # SGLang's flush_cache needs an idle server; a workload's step always has a
    # request waiting or running (its arrivals come before the reset).
    for knobs in ({"reset_step": 2}, {"arrival": 1, "output_tokens": 1, "reset_step": 5}):
        run = run_sglang_workload(SMALL.replace(**knobs))
        assert [v for v in run.series["reset"] if v is not None] == [0]
        assert (
            run.series["hits"]
            == run_sglang_workload(SMALL.replace(**{**knobs, "reset_step": 0})).series["hits"]
        )


def _cli(args: list[str]) -> str:
    out = io.StringIO()
    assert main(["--workload", "small-pool", *args], out=out) == 0
    return out.getvalue()


def test_cli_both_engines_as_csv_with_an_engine_column() -> None:
    lines = _cli(["--engine", "both"]).splitlines()
    assert lines[0] == "engine," + ",".join(COLUMNS)
    engines = [line.split(",", 1)[0] for line in lines[1:]]
    assert engines == sorted(engines, key=["vllm", "sglang"].index)
    for engine in ("vllm", "sglang"):
        alone = _cli(["--engine", engine]).splitlines()[1:]
        assert [line.split(",", 1)[1] for line in lines[1:] if line.startswith(engine + ",")] == (
            alone
        )
    assert _cli([]) == _cli(["--engine", "vllm"])


def test_cli_both_engines_as_json() -> None:
    both = json.loads(_cli(["--engine", "both", "--json"]))
    assert set(both) == {"vllm", "sglang"}
    assert both["sglang"]["engine"] == "sglang" and "engine" not in both["vllm"]
    assert both["sglang"] == json.loads(_cli(["--engine", "sglang", "--json"]))
    assert both["sglang"]["summary"]["preemptions"] is None
    assert set(both["sglang"]["series"]) == set(COLUMNS)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--workload", "small-pool", "--engine", "trt"], "invalid choice: 'trt'"),
        (["--engine", "sglang", "--scenario", "reset"], "'reset' does not run on SGLang"),
        (["--engine", "both"], "a scenario plays on one engine at a time"),
    ],
)
def test_cli_a_bad_engine_is_one_line_and_exit_2(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = main(args, out=io.StringIO())
    except SystemExit as stop:
        status = stop.code  # type: ignore[assignment]
    assert status == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1
