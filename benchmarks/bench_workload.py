"""Workload speed: a whole untraced run, and its pool operations replayed on vLLM's BlockPool.

Run: python benchmarks/bench_workload.py [--requests 2000] [--prompt 1000] [--shared 0]
[--repeat 3] [--vllm /path/to/vllm/src] [--hash-only] [--engine vllm|sglang|both].
The workload is --requests requests of --prompt tokens (the first --shared of them the
same for every request), 16 output tokens, on a 20,000-block pool of block size 16, all
arriving at once.

Prints, as Markdown for the README: the run's wall time (median), requests/s, the
pool operations it made (get_new_blocks, touch, free_blocks, cache_full_blocks) per
second of the run; then the same operation sequence replayed on this project's
BlockPool alone and, when --vllm points at vLLM 0.33.0's source, on vLLM's own
BlockPool (its imports outside the pool are stubbed: nothing of them runs with
events and metrics off). The replay also checks that both pools hand out the same
block ids. Figures, not assertions. Under Pyodide (benchmarks/bench_workload_node.mjs)
only the first part runs. --hash-only times only building the requests, which hashes
every full block of their prompts. --engine sglang times the same run on SGLang's model
(engine/lab/workload/sglang/runner.py, a pool of the same 320,000 tokens); --engine both times
both, interleaved, and prints their requests per second side by side (then the pool
replay, which is vLLM's, is left out).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.lab.workload.run import WorkloadRun
from engine.lab.workload.sglang.runner import run_sglang_workload
from engine.lab.workload.vllm.runner import WorkloadRunner, run_workload
from engine.lab.workload.workload import Workload
from engine.vllm.block_pool import BlockPool

POOL_OPERATIONS = ("get_new_blocks", "touch", "free_blocks", "cache_full_blocks")


def bench_workload(requests: int, prompt: int, shared: int) -> Workload:
    return Workload(
        requests=requests,
        shared_tokens=shared,
        unique_tokens=prompt - shared,
        output_tokens=16,
        num_gpu_blocks=20_000,
        block_size=16,
    )


@dataclass(frozen=True)
class Operation:
    name: str
    args: tuple[Any, ...]


def record_operations(workload: Workload) -> list[Operation]:
    """Run the workload once, recording every pool operation with block ids, not blocks."""
    runner = WorkloadRunner(workload)
    pool = runner.scheduler.kv_cache_manager.block_pool
    recorded: list[Operation] = []

    def wrap(name: str) -> Callable[..., Any]:
        original = getattr(pool, name)

        def recording(*args: Any, **kwargs: Any) -> Any:
            if name == "get_new_blocks":
                result = original(*args, **kwargs)
                recorded.append(Operation(name, (args[0], [b.block_id for b in result])))
                return result
            if name == "cache_full_blocks":
                request = kwargs["request"]
                num_full = kwargs["num_full_blocks"]
                recorded.append(
                    Operation(
                        name,
                        (
                            [b.block_id for b in kwargs["blocks"][:num_full]],
                            list(request.block_hashes[:num_full]),
                            kwargs["num_cached_blocks"],
                            num_full,
                            kwargs["block_size"],
                        ),
                    )
                )
                return original(*args, **kwargs)
            blocks = list(args[0])
            recorded.append(Operation(name, ([b.block_id for b in blocks],)))
            return original(blocks)

        return recording

    for name in POOL_OPERATIONS:
        setattr(pool, name, wrap(name))
    runner.advance()
    return recorded


class _Request:
    """What cache_full_blocks reads from a request when events are off."""

    def __init__(self, block_hashes: list[Any]) -> None:
        self.block_hashes = block_hashes


def replay(pool: Any, operations: list[Operation]) -> tuple[float, list[list[int]]]:
    """Play the operations on a fresh pool; the seconds taken and the ids it handed out."""
    blocks = pool.blocks
    handed_out: list[list[int]] = []
    start = time.perf_counter()
    for op in operations:
        if op.name == "get_new_blocks":
            handed_out.append([b.block_id for b in pool.get_new_blocks(op.args[0])])
        elif op.name == "touch":
            pool.touch([blocks[i] for i in op.args[0]])
        elif op.name == "free_blocks":
            pool.free_blocks([blocks[i] for i in op.args[0]])
        else:
            ids, hashes, num_cached, num_full, block_size = op.args
            pool.cache_full_blocks(
                request=_Request(hashes),
                blocks=[blocks[i] for i in ids],
                num_cached_blocks=num_cached,
                num_full_blocks=num_full,
                block_size=block_size,
                kv_cache_group_id=0,
            )
    return time.perf_counter() - start, handed_out


def load_vllm_block_pool(source: Path) -> Any:
    """vLLM 0.33.0's BlockPool from its source, with the modules it imports but does not
    use here stubbed (they need torch and the rest of vLLM)."""

    class Anything:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return Anything()

        def __getattr__(self, name: str) -> Any:
            return Anything()

    def stub(name: str, **attributes: Any) -> None:
        module = types.ModuleType(name)
        module.__getattr__ = lambda _name: Anything()  # type: ignore[method-assign]
        module.__dict__.update(attributes)
        sys.modules[name] = module

    sys.path.insert(0, str(source))
    stub("vllm.logger", init_logger=logging.getLogger)
    stub("vllm.utils.math_utils", cdiv=lambda a, b: -(-a // b))
    for name in (
        "vllm.config",
        "vllm.multimodal",
        "vllm.multimodal.utils",
        "vllm.utils",
        "vllm.utils.hashing",
        "vllm.v1.kv_cache_interface",
        "vllm.v1.kv_cache_spec_registry",
        "vllm.v1.request",
        "vllm.v1.utils",
        "vllm.v1.metrics",
        "vllm.v1.metrics.stats",
        "vllm.distributed",
        "vllm.distributed.kv_events",
    ):
        stub(name)
    from vllm.v1.core.block_pool import BlockPool as VllmBlockPool  # type: ignore[import-not-found]

    return VllmBlockPool


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=2_000)
    parser.add_argument("--prompt", type=int, default=1_000)
    parser.add_argument("--shared", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--vllm", type=Path, default=None, help="vLLM's source (the src folder)")
    parser.add_argument("--run-only", action="store_true", help="only time the run (Pyodide)")
    parser.add_argument(
        "--hash-only", action="store_true", help="only time building the requests (hashing)"
    )
    parser.add_argument("--engine", choices=("vllm", "sglang", "both"), default="vllm")
    args = parser.parse_args(argv)
    workload = bench_workload(args.requests, args.prompt, args.shared)
    if args.engine != "vllm" and not args.hash_only:
        engines_side_by_side(workload, args.engine, args.repeat)
        return
    if args.hash_only:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            WorkloadRunner(workload).prepare(args.requests)
            times.append(time.perf_counter() - start)
        blocks = args.requests * (args.prompt // workload.block_size)
        seconds = statistics.median(times)
        print(
            f"| hashing {args.requests:,} prompts (median of {args.repeat}) | {seconds:.2f} s, "
            f"{seconds / blocks * 1e6:.1f} µs per block |"
        )
        return

    times, cpu_times = [], []
    for _ in range(args.repeat):
        start, cpu_start = time.perf_counter(), time.process_time()
        run = run_workload(workload)
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    seconds = statistics.median(times)
    print(
        f"| workload | {args.requests:,} requests of {args.prompt:,} tokens "
        f"({args.shared:,} shared), {workload.num_gpu_blocks:,} blocks of "
        f"{workload.block_size} |\n|---|---|"
    )
    print(f"| Python | {sys.version.split()[0]} on {sys.platform} |")
    # CPU time as well: on a shared machine the wall time also counts other processes'
    # turns. Pyodide has no process clock (it reads 0), so there it is left out.
    cpu = statistics.median(cpu_times)
    cpu_text = f", {cpu:.2f} s CPU" if cpu else ""
    print(
        f"| run (median of {args.repeat}) | {seconds:.2f} s wall{cpu_text}, "
        f"{run.num_steps} engine steps |"
    )
    print(f"| requests/s | {args.requests / seconds:,.0f} |")
    if args.run_only:
        return

    operations = record_operations(workload)
    print(
        f"| pool operations | {len(operations):,} ({len(operations) / seconds:,.0f}/s of the run) |"
    )
    pools: dict[str, Callable[[], Any]] = {
        "this BlockPool": lambda: BlockPool(workload.num_gpu_blocks, True, 16)
    }
    if args.vllm is not None:
        try:
            vllm_pool_class = load_vllm_block_pool(args.vllm)
        except Exception as error:  # a source tree the stubs do not fit: say so, no traceback
            print(f"| vLLM's BlockPool | cannot load from {args.vllm}: {error!r} |")
        else:
            pools["vLLM 0.33.0's BlockPool"] = lambda: vllm_pool_class(
                workload.num_gpu_blocks, True, 16
            )
    # Interleaved, so both pools see the same load on a busy machine.
    replays: dict[str, list[float]] = {name: [] for name in pools}
    handed_out: dict[str, list[list[int]]] = {}
    for _ in range(args.repeat):
        for name, make_pool in pools.items():
            took, handed_out[name] = replay(make_pool(), operations)
            replays[name].append(took)
    medians = {name: statistics.median(times) for name, times in replays.items()}
    for name, took in medians.items():
        print(
            f"| replayed on {name} (median) | {took:.3f} s, {len(operations) / took:,.0f} ops/s |"
        )
    if len(pools) == 2:
        ours, theirs = medians.values()
        ids = list(handed_out.values())
        same = "the same block ids" if ids[0] == ids[1] else "DIFFERENT block ids"
        print(f"| this pool / vLLM's pool, time | {ours / theirs:.2f}x; both handed out {same} |")


ENGINE_RUNS: dict[str, tuple[str, Callable[[Workload], WorkloadRun]]] = {
    "vllm": ("vLLM 0.33.0", run_workload),
    "sglang": ("SGLang 0.5.23", run_sglang_workload),
}


def engines_side_by_side(workload: Workload, engine: str, repeat: int) -> None:
    """The whole run on one engine or both (interleaved, so both see the same load)."""
    engines = list(ENGINE_RUNS) if engine == "both" else [engine]
    times: dict[str, list[float]] = {name: [] for name in engines}
    cpu_times: dict[str, list[float]] = {name: [] for name in engines}
    runs: dict[str, WorkloadRun] = {}
    for _ in range(repeat):
        for name in engines:
            start, cpu_start = time.perf_counter(), time.process_time()
            runs[name] = ENGINE_RUNS[name][1](workload)
            times[name].append(time.perf_counter() - start)
            cpu_times[name].append(time.process_time() - cpu_start)
    shared = workload.shared_tokens
    print(
        f"| {workload.requests:,} requests of {workload.prompt_tokens:,} tokens ({shared:,} "
        f"shared), {workload.num_gpu_blocks * workload.block_size:,} tokens of pool | "
        + " | ".join(ENGINE_RUNS[name][0] for name in engines)
        + " |"
    )
    print("|---|" + "---|" * len(engines))
    rows: dict[str, list[str]] = {
        f"whole run, Python {sys.version.split()[0]} (median of {repeat})": [],
        "requests/s": [],
        "engine steps": [],
        "hit rate": [],
    }
    for name in engines:
        seconds, cpu = statistics.median(times[name]), statistics.median(cpu_times[name])
        cpu_text = f", {cpu:.2f} s CPU" if cpu else ""  # Pyodide's process clock reads 0
        values = list(rows.values())
        values[0].append(f"{seconds:.2f} s wall{cpu_text}")
        values[1].append(f"{workload.requests / seconds:,.0f}")
        values[2].append(f"{runs[name].num_steps:,}")
        values[3].append(f"{runs[name].summary()['hit_rate']:.1%}")
    for label, values in rows.items():
        print(f"| {label} | " + " | ".join(values) + " |")


if __name__ == "__main__":
    main()
