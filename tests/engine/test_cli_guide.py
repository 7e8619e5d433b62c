"""`python -m engine` names every engine, mode and command, and quotes little back.

--list and --help are where a terminal user finds SGLang, the modes and the other
commands; a message that refuses a value quotes at most ~80 characters of it.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from engine.lab.cli.main import main
from engine.lab.play.scenario import MODES, SGLANG_MODES, load_scenario, scenario_names


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            status = main(list(args), out=out)
        except SystemExit as leaving:  # argparse's --help
            status = int(leaving.code or 0)
    return status, out.getvalue(), err.getvalue()


def test_the_list_gives_each_scenario_every_engine_it_plays_on() -> None:
    status, out, _ = run("--list")
    assert status == 0
    scenarios = out.partition("\n\n")[0]
    lines = dict(line.split(maxsplit=1) for line in scenarios.splitlines())
    assert list(lines) == list(scenario_names())
    for name, line in lines.items():
        assert f"vLLM modes: {', '.join(load_scenario(name).modes)}" in line
        on_sglang = "sglang" in load_scenario(name).engines
        assert ("SGLang modes: " in line) == on_sglang, line
    assert "SGLang modes: fcfs, lpm" in lines["queue-order"]


@pytest.mark.parametrize("asked", [("--list",), ("--help",)])
def test_list_and_help_name_every_engine_mode_and_command(asked: tuple[str, ...]) -> None:
    status, out, _ = run(*asked)
    assert status == 0
    text = " ".join(out.split())
    for word in ("vllm", "sglang", "both", *MODES, *SGLANG_MODES):
        assert word in text, word
    for command in (
        "--scenario",
        "--file",
        "--list",
        "--workload",
        "--trace",
        "--fleet",
        "--hash-cost",
    ):
        assert command in text, command


def test_engine_both_on_a_scenario_is_refused_with_why() -> None:
    status, out, err = run("--scenario", "shared-prefix", "--engine", "both")
    assert status == 2 and not out
    assert err.count("\n") == 1
    assert "one engine at a time" in err and "--engine vllm then --engine sglang" in err


@pytest.mark.parametrize(
    "args",
    [
        ("--scenario", "x" * 100_000),
        ("--engine", "y" * 100_000),
        ("--scenario", "reset", "--mode", "z" * 100_000),
    ],
    ids=["scenario", "engine", "mode"],
)
def test_a_message_quotes_at_most_80_characters_of_a_value(args: tuple[str, ...]) -> None:
    status, _, err = run(*args)
    assert status == 2
    assert err.count("\n") == 1 and len(err) < 600, err[:200]
    assert "100,000 characters" in err
