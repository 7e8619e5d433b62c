"""The playground's engine side: text tokenizer, file loader and its limits, TOML export,
the address code, `python -m engine --file`, and random scripts keeping the pool's invariants."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
import tomllib
import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from engine.lab.cli.main import main
from engine.lab.play import playground_code, toml_writer
from engine.lab.play.scenario import (
    MODES,
    ScenarioError,
    mode_effect,
    scenario_data,
    scenario_names,
)
from engine.lab.play.scenario_file import load_scenario_file, parse_toml, scenario_from_dict
from engine.lab.play.timeline import MAX_TIMELINE_STEPS
from engine.lab.play.vllm.timeline import _Run, build_timeline, count_steps
from engine.lab.shared.tokenizer import tokenize
from tests.engine import test_pool_invariants as pool_checks


def playground(*steps: dict[str, Any], **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"pool": {"num_gpu_blocks": 16, "block_size": 4}, "steps": list(steps)}
    data.update(changes)
    return data


SHARED = "You are a helpful assistant. Answer in one line."


# -- tokenizer -----------------------------------------------------------------
def test_text_prompts_with_a_shared_beginning_share_a_token_prefix() -> None:
    first = tokenize(SHARED + " What is a block?")
    second = tokenize(SHARED + " Why cache prefixes?")
    shared = len(tokenize(SHARED))
    assert shared == 11  # 9 words and 2 punctuation marks
    assert first[:shared] == second[:shared]
    assert first[shared] != second[shared]


def test_tokenizer_is_stable_and_ignores_only_whitespace() -> None:
    assert tokenize("a  b\n\tc") == tokenize("a b c")
    assert tokenize("Hi") != tokenize("hi")  # case is kept
    assert tokenize("hello") == (1_000_000 + 0x2CF24DBA % 1_000_000,)  # SHA-256 of b"hello"
    assert tokenize("   ") == ()


def test_text_prompts_hit_the_cache_in_the_engine() -> None:
    data = playground(
        {"do": "add_request", "id": "A", "prompt_text": SHARED + " What is a block?"},
        {"do": "step"},
        {"do": "add_request", "id": "B", "prompt_text": SHARED + " Why cache prefixes?"},
        {"do": "step"},
    )
    timeline = build_timeline(scenario_from_dict(data), "default", trace=False)
    assert timeline.steps[-1].snapshot.stats.hits == 8  # two full blocks of 4 of the 11 shared


# -- new actions ---------------------------------------------------------------
def test_step_count_and_run_until_idle_take_one_timeline_step_per_engine_step() -> None:
    data = playground(
        {"do": "add_request", "id": "A", "prompt": "1..8", "max_tokens": 5},
        {"do": "step", "count": 2},
        {"do": "run_until_idle"},
        {"do": "run_until_idle"},  # already idle: one step that schedules nothing
    )
    timeline = build_timeline(scenario_from_dict(data), "default", trace=False)
    labels = [step.label for step in timeline.steps]
    assert labels[2:4] == ["step()", "step()"]
    assert labels[4:] == ["step() until idle"] * 4
    assert timeline.steps[-2].result == "scheduled A: 1 token; finished A"
    assert timeline.steps[-1].result == "scheduled nothing"


def test_run_until_idle_stops_at_the_step_limit() -> None:
    data = playground(
        {"do": "add_request", "id": "A", "prompt": "1", "max_tokens": 5000},
        {"do": "run_until_idle"},
        pool={"num_gpu_blocks": 100, "block_size": 64},
    )
    timeline = build_timeline(scenario_from_dict(data), "default", trace=False)
    assert len(timeline.steps) == 1 + MAX_TIMELINE_STEPS


# -- loader --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "message"),
    [
        (playground(pool={"num_gpu_blocks": 1}), "pool.num_gpu_blocks must be from 2 to 10,000"),
        (playground(pool={"num_gpu_blocks": 10_001}), "pool.num_gpu_blocks must be from 2 to"),
        (playground(pool={"block_size": 65}), "pool.block_size must be from 1 to 64, not 65"),
        (playground(pool={"blocks": 4}), "pool: unknown key 'blocks'"),
        (playground(pool=[1]), "pool must be a table"),
        (playground(stepz=[]), "the scenario: unknown key 'stepz'"),
        (playground(steps={"do": "step"}), "steps must be a list of actions"),
        (playground("step"), "steps #1 must be a table"),
        (playground({"do": "step", "cuont": 2}), "steps #1: unknown key 'cuont'"),
        (playground(*[{"do": "step"}] * 501), "501 actions is more than 500"),
        (playground(*[{"do": "step", "count": 1000}] * 3), "3,000 engine steps is more than 2,000"),
        (playground({"do": "step", "count": 0}), "count must be a whole number from 1 to 2000"),
        (playground({"do": "add_request", "id": "A", "prompt": "1..x"}), "'1..x' is not a range"),
        (playground({"do": "add_request", "id": "A", "prompt": [1.5]}), "1.5 is not a token id"),
        (
            playground({"do": "add_request", "id": "A", "prompt": "1..200"}),
            "request 'A' needs 50 blocks (200 tokens at block_size 4) but the pool has only 15",
        ),
        (
            playground({"do": "add_request", "id": "A", "prompt_text": " ,"[0]}),
            "prompt_text has no words",
        ),
        (
            playground({"do": "add_request", "id": "A", "prompt": "1", "prompt_text": "hi"}),
            "give prompt or prompt_text, not both",
        ),
        (
            playground({"do": "http_reset", "reset_running_requests": True}),
            "http_reset does not use reset_running_requests (it takes query, check_flags)",
        ),
        (playground({"do": "step", "id": "A"}), "step does not use id (it takes count)"),
        (playground({"do": "run_until_idle", "count": 2}), "run_until_idle does not use count"),
        (
            playground({"do": "reset_prefix_cache", "query": "x"}),
            "reset_prefix_cache does not use query",
        ),
        (
            playground({"do": "add_request", "id": "A", "prompt": "1", "cache_salt": 3}),
            "cache_salt must be text",
        ),
        (playground(title="\ud800"), "text that is not valid Unicode"),
        (playground(modes="keep"), "modes must be a list"),
        (playground(narration={"start": 3}), "narration.start must be text"),
        ([1, 2], "the scenario must be a table"),
    ],
)
def test_bad_playground_data_is_refused_with_a_line_naming_the_field(
    data: Any, message: str
) -> None:
    with pytest.raises(ScenarioError) as caught:
        scenario_from_dict(data)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_playground_without_modes_can_be_played_in_every_mode() -> None:
    assert scenario_from_dict(playground()).modes == MODES


def test_bad_toml_and_unreadable_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="not valid TOML"):
        parse_toml("[pool\n")
    with pytest.raises(ScenarioError, match=r"nested too deeply|not valid TOML"):
        parse_toml("x = " + "[" * 100_000)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(ScenarioError, match="is not UTF-8 text"):
        load_scenario_file(binary)
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario_file(tmp_path / "missing.toml")


# -- TOML export ---------------------------------------------------------------
@pytest.mark.parametrize("name", scenario_names())
def test_every_built_in_scenario_exports_to_toml_that_reads_back_the_same(name: str) -> None:
    data = scenario_data(name)
    text = toml_writer.dumps(data)
    assert tomllib.loads(text) == data
    assert scenario_from_dict(tomllib.loads(text)) == scenario_from_dict(data)


toml_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
toml_scalar = st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1), toml_text)
toml_value = st.one_of(toml_scalar, st.lists(toml_scalar, max_size=4))


@given(
    st.dictionaries(
        toml_text,
        st.one_of(
            toml_value,
            st.dictionaries(toml_text, toml_value, max_size=3),
            st.lists(st.dictionaries(toml_text, toml_value, max_size=3), min_size=1, max_size=3),
        ),
        max_size=5,
    )
)
def test_toml_writer_round_trips_any_data_of_the_format(data: dict[str, Any]) -> None:
    assert tomllib.loads(toml_writer.dumps(data)) == data


# -- the address code ----------------------------------------------------------
def test_a_code_reopens_exactly_the_scenario() -> None:
    data = scenario_data("reset")
    code = playground_code.encode(data)
    assert playground_code.decode(code) == data
    assert len(code) < 4000 and code.isascii()  # narration included


def _raw_code(payload: bytes) -> str:
    return "p1." + base64.urlsafe_b64encode(zlib.compress(payload)).decode().rstrip("=")


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("", "must start with 'p1.'"),
        ("p1.abc$", "characters outside"),
        ("p1." + "A" * 20_000, "longer than 16,000 characters"),
        ("p1.AAAA", "damaged"),
        (_raw_code(b"[1, 2]"), "does not hold a scenario"),
        (_raw_code(b"\xff"), "damaged"),
        (_raw_code(b"1" * 10_000), "damaged"),  # an int past Python's digit limit
        (_raw_code(b"[" * 200_000), "nested too deeply|damaged"),
        (_raw_code(b" " * 10_000_000), "unpacks to more than"),  # a zip bomb
        (_raw_code(b'{"a": 1}')[:-6], "cut short|damaged"),
    ],
)
def test_a_hostile_code_gets_one_line(code: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as caught:
        playground_code.decode(code)
    assert "\n" not in str(caught.value)


def test_a_playground_too_large_for_an_address_is_refused() -> None:
    data = playground(*[{"do": "add_request", "id": f"R{i}", "prompt": [i]} for i in range(500)])
    noise = b"".join(hashlib.sha256(bytes([i, j])).digest() for i in range(40) for j in range(16))
    data["title"] = base64.b64encode(noise).decode()  # 27,000 characters that do not compress
    with pytest.raises(ScenarioError, match="too large for an address"):
        playground_code.encode(data)


# -- CLI -----------------------------------------------------------------------
def test_cli_plays_a_file_to_the_same_timeline_the_app_builds(tmp_path: Path) -> None:
    data = playground(
        {"do": "add_request", "id": "A", "prompt": "1..12", "max_tokens": 3},
        {"do": "step"},
        {"do": "add_request", "id": "B", "prompt": ["1..8", 40, 41]},
        {"do": "reset_prefix_cache", "keep_running_requests": True},
        {"do": "run_until_idle"},
    )
    path = tmp_path / "my.toml"
    path.write_text(toml_writer.dumps(data))
    out = io.StringIO()
    assert main(["--file", str(path), "--mode", "keep", "--json"], out=out) == 0
    built = build_timeline(
        scenario_from_dict(playground_code.decode(playground_code.encode(data))), "keep"
    )
    assert out.getvalue().strip() == built.to_json()


def test_cli_refuses_a_bad_file_with_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[pool]\nnum_gpu_blocks = 1\n")
    run = subprocess.run(
        [sys.executable, "-m", "engine", "--file", str(path)], capture_output=True, text=True
    )
    assert run.returncode == 2
    assert run.stderr == "error: pool.num_gpu_blocks must be from 2 to 10,000, not 1\n"
    path.write_text("[pool]\nnum_gpu_blocks = 10\n")
    err = io.StringIO()
    with mock.patch("sys.stderr", err):
        assert main(["--file", str(path), "--num-blocks", "20000"]) == 2
    assert err.getvalue() == "error: pool.num_gpu_blocks must be from 2 to 10,000, not 20,000\n"


# -- random playground scripts keep the pool's invariants ------------------------
REQUEST_INVARIANTS = (  # they assume a pool of pool_checks.NUM_BLOCKS blocks
    pool_checks.PoolMachine.held_blocks_match_the_requests,
    pool_checks.PoolMachine.hashed_blocks_hold_the_hash_of_their_position,
)


@st.composite
def playground_scripts(draw: st.DrawFn) -> dict[str, Any]:
    num_blocks = draw(st.sampled_from([2, 5, pool_checks.NUM_BLOCKS]))
    block_size = draw(st.integers(1, 4))
    usable_tokens = (num_blocks - 1) * block_size
    steps: list[dict[str, Any]] = []
    ids: list[str] = []
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["add", "add", "step", "steps", "idle", "reset", "abort"]))
        if kind == "add":
            length = draw(st.integers(1, usable_tokens))
            max_tokens = draw(st.integers(1, usable_tokens - length + 1))
            # few distinct tokens, so hits and shared prefixes are common
            prompt = draw(st.sampled_from([f"1..{length}", ([1, 2] * length)[:length]]))
            ids.append(f"R{len(ids)}")
            steps.append(
                {"do": "add_request", "id": ids[-1], "prompt": prompt, "max_tokens": max_tokens}
                | ({"cache_salt": "s"} if draw(st.booleans()) else {})
            )
        elif kind == "step":
            steps.append({"do": "step"})
        elif kind == "steps":
            steps.append({"do": "step", "count": draw(st.integers(1, 4))})
        elif kind == "idle":
            steps.append({"do": "run_until_idle"})
        elif kind == "reset":
            flag = draw(
                st.sampled_from(
                    [{}, {"reset_running_requests": True}, {"keep_running_requests": False}]
                )
            )
            steps.append({"do": "reset_prefix_cache"} | flag)
        elif ids:
            steps.append({"do": "abort", "id": draw(st.sampled_from(ids))})
    return playground(*steps, pool={"num_gpu_blocks": num_blocks, "block_size": block_size})


@settings(max_examples=60, deadline=None)
@given(data=playground_scripts(), mode=st.sampled_from(MODES))
def test_random_playground_scripts_keep_the_pools_invariants_at_every_step(
    data: dict[str, Any], mode: str
) -> None:
    checked_steps = 0
    real_snapshot = _Run.snapshot

    def checked_snapshot(run: _Run, logs: Any) -> Any:
        nonlocal checked_steps
        manager = run.scheduler.kv_cache_manager
        machine = SimpleNamespace(
            pool=manager.block_pool, manager=manager, running=list(run.scheduler.running)
        )
        pool_checks.check_pool(manager.block_pool)
        if len(manager.block_pool.blocks) == pool_checks.NUM_BLOCKS:
            for check in REQUEST_INVARIANTS:
                check(machine)
        checked_steps += 1
        return real_snapshot(run, logs)

    with mock.patch.object(_Run, "snapshot", checked_snapshot):
        timeline = build_timeline(scenario_from_dict(data), mode, trace=False)
    assert checked_steps == len(timeline.steps)
    assert json.loads(timeline.to_json())["scenario"].startswith("playground-")


@settings(max_examples=40, deadline=None)
@given(data=playground_scripts())
def test_modes_with_the_same_effect_play_the_same_steps(data: dict[str, Any]) -> None:
    """What the step controls count a mode by (app/playground/store.py last_step)."""
    scenario = scenario_from_dict(data)
    by_effect: dict[object, list[str]] = {}
    for mode in scenario.modes:
        by_effect.setdefault(mode_effect(scenario, mode), []).append(mode)
    assert len(by_effect) >= 2  # first-chunk checks admission otherwise
    for modes in by_effect.values():
        first, *others = (build_timeline(scenario, mode, trace=False) for mode in modes)
        for other in others:
            assert [step.snapshot for step in other.steps] == [s.snapshot for s in first.steps]
            assert [step.result for step in other.steps] == [s.result for s in first.steps]
        assert {count_steps(scenario, mode) for mode in modes} == {len(first.steps) - 1}


def test_a_reset_of_the_learners_mode_gives_each_mode_its_own_effect() -> None:
    scenario = scenario_from_dict(playground({"do": "reset_prefix_cache"}))
    effects = {mode_effect(scenario, mode) for mode in scenario.modes}
    assert len(effects) == len(scenario.modes) == 4


def test_an_add_request_step_says_what_arrived_and_what_was_hashed_under_which_salt() -> None:
    steps = [
        {"do": "add_request", "id": "A", "prompt": "1..12", "cache_salt": "u1"},
        {"do": "add_request", "id": "B", "prompt": "1..9", "lora_name": "sql"},
        {"do": "add_request", "id": "C", "prompt": "1..3"},
        {"do": "add_request", "id": "D", "prompt": "1..8", "prompt_logprobs": 1},
    ]
    timeline = build_timeline(scenario_from_dict(playground(*steps)), "default", trace=False)
    texts = [timeline.narration_text(step) for step in timeline.steps[1:]]
    records = {r.request_id: r for r in timeline.steps[-1].snapshot.requests}
    assert [len(records[id].chain) for id in "ABCD"] == [3, 2, 0, 2]  # the data says
    assert texts[0].startswith(
        'A arrived with 12 prompt tokens; 3 full blocks hashed on arrival, under cache_salt "u1".'
    )
    assert '2 full blocks hashed on arrival, under LoRA "sql"' in texts[1]
    assert "C arrived with 3 prompt tokens: no full block, so nothing was hashed" in texts[2]
    assert "with no salt or LoRA; it skips the cache lookup (it wants prompt logprobs)" in texts[3]
    assert all("Its status: waiting." in text for text in texts)
    assert all("The pool did not change: blocks are handed out when a step" in t for t in texts)
