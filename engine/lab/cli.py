"""``python -m engine``: list the scenarios, or play one in the terminal step by step."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Any, TextIO, TypeVar

from engine.lab import fleet_cli, hash_cost, trace_cli, workload_cli
from engine.lab.event_labels import event_hash_labels, event_label
from engine.lab.scenario import (
    Scenario,
    ScenarioError,
    load_scenario,
    scenario_names,
    sglang_refusal,
    validate_sglang,
)
from engine.lab.scenario_file import read_toml, scenario_from_dict
from engine.lab.sglang_cli import render_sglang_step
from engine.lab.sglang_timeline import SGLangTimeline, build_sglang_timeline
from engine.lab.snapshot import BlockRecord, EventRecord, HashMapEntry, Snapshot
from engine.lab.timeline import Step, StepRecord, Timeline, TimelineRecord, build_timeline

STATE_MARK = {"null": "null", "held": "held", "free-cached": "cached", "free-empty": "free"}


def _block_text(block: BlockRecord) -> str:
    label = block.hash_label or "-"
    return f"[{block.block_id} r{block.ref_cnt} {label} {STATE_MARK[block.state]}]"


def _map_text(entries: Sequence[HashMapEntry]) -> str:
    shown = [f"{e.hash_label}->{','.join(map(str, e.block_ids))}" for e in entries]
    return "cached_block_hash_to_block: {" + ", ".join(shown) + "}"


UNHELD_HASH_NOTE = (
    "  (~: a hash that no block holds any more, so it has no label in the pool; it is "
    "written with the first digits of the event's own 64-bit value instead)"
)


def _event_text(event: EventRecord, labels: dict[int, str]) -> str:
    """An event's fields, its hashes shown by the pool's labels for them."""
    fields = event.to_dict()
    for name in ("block_hashes", "parent_block_hash"):
        value = fields.get(name)
        if isinstance(value, list):
            fields[name] = [event_label(h, labels) for h in value]
        elif value is not None:
            fields[name] = event_label(value, labels)
    return f"event: {fields}"


def render_snapshot(snapshot: Snapshot, event_labels: dict[int, str] | None = None) -> list[str]:
    lines = ["pool:  " + " ".join(_block_text(b) for b in snapshot.blocks)]
    lines.append(
        "free_block_queue (head is reused first): " + " ".join(map(str, snapshot.free_queue))
    )
    lines.append(_map_text(snapshot.hash_map))
    for r in snapshot.requests:
        lines.append(
            f"request {r.request_id}: {r.status}, computed {r.num_computed_tokens}/{r.num_tokens} "
            f"tokens, blocks {list(r.block_ids)}, preemptions {r.num_preemptions}"
        )
    if snapshot.offload is not None:
        cpu = snapshot.offload
        lines.append("cpu pool: " + " ".join(_block_text(b) for b in cpu.cpu_blocks))
        lines.append("cpu " + _map_text(cpu.cpu_hash_map))
        for store in cpu.stores_in_flight:
            lines.append(
                f"store {store.store_event} in flight: gpu {list(store.gpu_block_ids)} -> "
                f"cpu {list(store.cpu_block_ids)}"
            )
    if snapshot.aux_output is not None:
        aux = snapshot.aux_output
        lines.append(
            f"aux output: generation scheduler {aux.scheduler_generation} / worker "
            f"{aux.worker_generation}, outputs in flight {aux.outputs_in_flight}"
        )
    if snapshot.engine_dead:
        lines.append("engine core: DEAD")
    s = snapshot.stats
    lines.append(
        f"stats: queries {s.queries} hits {s.hits} (preempted: {s.preempted_queries} / "
        f"{s.preempted_hits}) resets {s.resets}"
    )
    lines.extend(f"log: {line}" for line in snapshot.logs)
    events = [_event_text(event, event_labels or {}) for event in snapshot.events]
    lines.extend(events)
    if any("'~" in line for line in events):
        lines.append(UNHELD_HASH_NOTE)
    return lines


def render_step(timeline: Timeline, step: Step) -> list[str]:
    """What only vLLM's step shows: the state after it, its events' hashes labelled."""
    labels = event_hash_labels(timeline, step.index) if step.snapshot.events else {}
    return render_snapshot(step.snapshot, labels)


def step_text(timeline: TimelineRecord, step: StepRecord[Any, Any], body: list[str]) -> list[str]:
    """A step of either engine as lines of text: its line (index, action, result), its
    narration, ``body`` (what only that engine shows), then the code that ran."""
    head = f"== step {step.index} / {len(timeline) - 1}: {step.label}"
    if step.result is not None:
        head += f" -> {step.result}"
    lines = [head]
    narration = timeline.narration_text(step)
    if narration:
        lines.extend(textwrap.wrap(" ".join(narration.split()), 88))
    lines.extend(body)
    if step.focus is not None:
        ran = ", ".join(f"{t.qualname} ({len(t.lines)} lines)" for t in step.code)
        lines.append(f"code: {step.focus.file} line {step.focus.last_line}; ran {ran}")
    return lines


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m engine",
        description="Play a scenario of vLLM's prefix cache step by step.",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
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
        help="vllm or sglang: the model a scenario plays on (a scenario file lists its engines)",
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
    return parser.parse_args(argv)


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
    # A fleet has knobs of its own: engine/lab/fleet_cli.py parses them.
    if "--fleet" in argv:
        return fleet_cli.main(argv, out)
    # Workloads have knobs of their own: engine/lab/workload_cli.py parses them.
    if any(arg == "--workload" or arg.startswith("--workload=") for arg in argv):
        return workload_cli.main(argv, out)
    # Request traces too: engine/lab/trace_cli.py.
    if any(arg == "--trace" or arg.startswith("--trace=") for arg in argv):
        return trace_cli.main(argv, out)
    # And the hashing cost: engine/lab/hash_cost.py.
    if "--hash-cost" in argv:
        return hash_cost.main(argv, out)
    args = parse_args(argv)
    if args.engine not in ("vllm", "sglang"):
        print(
            f"error: --engine {args.engine}: a scenario plays on one engine at a time, "
            "vllm or sglang (--engine both is for --workload)",
            file=sys.stderr,
        )
        return 2
    if args.list:
        for name in scenario_names(args.engine):
            scenario = load_scenario(name)
            if args.engine == "sglang":
                modes = f"SGLang modes: {', '.join(scenario.sglang.modes)}"
            else:
                modes = f"modes: {', '.join(scenario.modes)}"
            print(f"{name:18} {scenario.title} ({modes})", file=out)
        return 0
    if args.engine == "sglang":
        return _play(args, out, _sglang_timeline, _sglang_title, render_sglang_step)
    return _play(args, out, _vllm_timeline, lambda t: f"{t.title} [{t.mode}]", render_step)


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
