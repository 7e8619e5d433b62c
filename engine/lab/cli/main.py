"""``python -m engine``: list the scenarios, or play one in the terminal step by step."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Any, TextIO, TypeVar

from engine.lab.cli import fleet as fleet_cli
from engine.lab.cli import traces as trace_cli
from engine.lab.cli import workload as workload_cli
from engine.lab.cli.sglang.step_text import render_sglang_step
from engine.lab.cli.step_text import step_text
from engine.lab.cli.vllm.step_text import render_step
from engine.lab.play.scenario import (
    MODES,
    SGLANG_MODES,
    Scenario,
    ScenarioError,
    load_scenario,
    scenario_names,
    sglang_refusal,
    validate_sglang,
)
from engine.lab.play.scenario_file import read_toml, scenario_from_dict
from engine.lab.play.sglang.timeline import SGLangTimeline, build_sglang_timeline
from engine.lab.play.timeline import TimelineRecord
from engine.lab.play.vllm.timeline import Timeline, build_timeline
from engine.lab.shared import hash_cost
from engine.lab.shared.quoting import shorten_quotes


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m engine",
        description=_wrapped(
            "Play a scenario step by step on vLLM 0.33.0's prefix cache or on SGLang "
            "0.5.23's radix cache (--engine); or run a workload (--workload), replay a "
            "request trace (--trace), time the block hash (--hash-cost)."
        ),
        epilog=_wrapped(ENGINES_LINE, COMMANDS_LINE),
        formatter_class=argparse.RawDescriptionHelpFormatter,  # no break in an option's name
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="list the scenarios with each engine's modes, then the engines and commands",
    )
    parser.add_argument(
        "--workload",
        metavar="PRESET",
        help="run a workload preset untraced and print its per-step series ('list' lists "
        "the presets; --workload NAME --help lists its knobs)",
    )
    parser.add_argument(
        "--trace",
        metavar="FILE",
        help="replay a request trace (JSON lines: timestamp, input_length, output_length, "
        "hash_ids) through the prefix cache; --trace FILE --help lists its options",
    )
    parser.add_argument("--scenario", default="reset", help="scenario name (default: reset)")
    parser.add_argument(
        "--engine",
        default="vllm",
        help="vllm (default) or sglang: the model a scenario plays on (--list says which "
        "scenarios play on SGLang; a scenario file lists its engines); --workload and "
        "--trace also take both",
    )
    parser.add_argument(
        "--file", default=None, help="play a scenario file (the content/scenarios TOML format)"
    )
    parser.add_argument(
        "--mode",
        default=None,
        help="vLLM: default, preempt, keep or first-chunk; SGLang: its schedule policy, "
        "fcfs or lpm (the scenario lists its modes)",
    )
    parser.add_argument("--num-blocks", type=int, default=None, help="override the pool size")
    parser.add_argument("--block-size", type=int, default=None, help="override the block size")
    parser.add_argument(
        "--page-size", type=int, default=None, help="SGLang: override the page size"
    )
    parser.add_argument(
        "--num-slots", type=int, default=None, help="SGLang: override the pool's KV slots"
    )
    parser.add_argument("--json", action="store_true", help="print the whole timeline as JSON")
    parser.add_argument("--no-trace", action="store_true", help="do not record the code that ran")
    parser.add_argument(
        "--pause", action="store_true", help="wait for Enter between steps (interactive)"
    )
    parser.add_argument(
        "--hash-cost",
        action="store_true",
        help="time vLLM's block hash in this Python and exit (--hash-cost --help: its options)",
    )
    return parser.parse_args(argv)


# The engines, their modes and the commands, as --help's epilog and --list's last lines.
ENGINES_LINE = (
    f"Engines: vllm (vLLM 0.33.0; modes {', '.join(MODES)}) and sglang (SGLang 0.5.23's "
    f"model; modes are its schedule policies, {', '.join(SGLANG_MODES)}): "
    "--scenario NAME --engine sglang --mode lpm."
)
COMMANDS_LINE = (
    "Commands: --scenario NAME or --file FILE (a scenario), --list, "
    "--workload list|PRESET [--engine vllm|sglang|both], --trace FILE [--engine "
    "vllm|sglang|both] [--timed], --fleet --trace FILE|--workload PRESET --replicas N "
    "--router NAME [--engine vllm|sglang|both], --hash-cost; each with --help for its options."
)


def _chosen_scenario(args: argparse.Namespace) -> Scenario:
    """``--file`` (a playground scenario, as the browser plays it) or ``--scenario``."""
    if args.file is not None:  # a pool override is checked against the playground's limits
        data = read_toml(args.file)
        changes = {"num_gpu_blocks": args.num_blocks, "block_size": args.block_size}
        pool = {**data.get("pool", {}), **{k: v for k, v in changes.items() if v is not None}}
        return scenario_from_dict({**data, "pool": pool})
    return load_scenario(args.scenario)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # A fleet has knobs of its own: engine/lab/cli/fleet.py parses them.
    if "--fleet" in argv:
        return fleet_cli.main(argv, out)
    # Workloads have knobs of their own: engine/lab/cli/workload.py parses them.
    if any(arg == "--workload" or arg.startswith("--workload=") for arg in argv):
        return workload_cli.main(argv, out)
    # Request traces too: engine/lab/cli/traces.py.
    if any(arg == "--trace" or arg.startswith("--trace=") for arg in argv):
        return trace_cli.main(argv, out)
    # And the hashing cost: engine/lab/shared/hash_cost.py.
    if "--hash-cost" in argv:
        return hash_cost.main(argv, out)
    args = parse_args(argv)
    if args.engine not in ("vllm", "sglang"):
        print(f"error: {engine_refusal(args.engine)}", file=sys.stderr)
        return 2
    if args.list:
        for name in scenario_names(args.engine):
            print(f"{name:18} {_listed(load_scenario(name), args.engine)}", file=out)
        print(f"\n{_wrapped(ENGINES_LINE, COMMANDS_LINE)}", file=out)
        return 0
    if args.engine == "sglang":
        return _play(args, out, _sglang_timeline, _sglang_title, render_sglang_step)
    return _play(args, out, _vllm_timeline, lambda t: f"{t.title} [{t.mode}]", render_step)


def _wrapped(*paragraphs: str) -> str:
    return "\n".join(textwrap.fill(p, 79, break_on_hyphens=False) for p in paragraphs)


def engine_refusal(engine: str) -> str:
    """Why ``--engine`` cannot play a scenario: ``both`` (a scenario's steps are one
    engine's calls, played one engine at a time), or no engine of that name."""
    if engine == "both":
        return (
            "--engine both: a scenario plays on one engine at a time (its steps and "
            "narration are one engine's); play it twice, --engine vllm then --engine "
            "sglang (--list marks the scenarios that play on both). --workload and "
            "--trace take --engine both."
        )
    return shorten_quotes(f"--engine {engine!r}: not an engine; vllm or sglang")


def _listed(scenario: Scenario, engine: str) -> str:
    """A scenario's title and its modes: SGLang's alone with ``--engine sglang``, else
    each engine's it plays on."""
    if engine == "sglang":
        return f"{scenario.title} (SGLang modes: {', '.join(scenario.sglang.modes)})"
    modes = f"vLLM modes: {', '.join(scenario.modes)}"
    if "sglang" in scenario.engines:
        modes += f"; SGLang modes: {', '.join(scenario.sglang.modes)}"
    return f"{scenario.title} ({modes})"


TimelineT = TypeVar("TimelineT", bound=TimelineRecord)


def _play(
    args: argparse.Namespace,
    out: TextIO,
    build: Callable[[argparse.Namespace], TimelineT],
    title: Callable[[TimelineT], str],
    render: Callable[[TimelineT, Any], list[str]],
) -> int:
    """Either engine's timeline of the chosen scenario, printed as JSON or step by step
    under its title; a scenario that cannot play is one line, and exit status 2."""
    try:
        timeline = build(args)
    except ScenarioError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(timeline.to_json(), file=out)
        return 0
    print(title(timeline), file=out)
    for step in timeline.steps:
        print("\n".join(step_text(timeline, step, render(timeline, step))), file=out)
        if args.pause and step.index < len(timeline) - 1:
            input("-- Enter for the next step --")
    return 0


def _vllm_timeline(args: argparse.Namespace) -> Timeline:
    scenario = _chosen_scenario(args).with_pool(args.num_blocks, args.block_size)
    if "vllm" not in scenario.engines:
        raise ScenarioError(
            f"scenario {scenario.name!r} does not run on vLLM (it plays on "
            f"{', '.join(scenario.engines)} only: --engine {scenario.engines[0]})"
        )
    return build_timeline(scenario, args.mode or scenario.modes[0], trace=not args.no_trace)


def _sglang_timeline(args: argparse.Namespace) -> SGLangTimeline:
    """``--engine sglang``: the chosen scenario with the SGLang overrides, checked for
    SGLang and played on SGLang 0.5.23's model."""
    scenario = _chosen_scenario(args).with_pool(args.num_blocks, args.block_size)
    refusal = sglang_refusal(scenario)
    if refusal is not None:
        raise ScenarioError(refusal)
    changes = {"page_size": args.page_size, "num_slots": args.num_slots}
    changes = {k: v for k, v in changes.items() if v is not None}
    if changes:
        options = dataclasses.replace(scenario.sglang, **changes)
        scenario = dataclasses.replace(scenario, sglang=options)
        validate_sglang(scenario)
    mode = args.mode or scenario.sglang.modes[0]
    return build_sglang_timeline(scenario, mode, trace=not args.no_trace)


def _sglang_title(timeline: SGLangTimeline) -> str:
    return (
        f"{timeline.title} [SGLang 0.5.23, {timeline.mode}, page size {timeline.page_size}, "
        f"{timeline.num_slots} KV slots, {timeline.eviction_policy} eviction]"
    )
