"""Differential check: random workloads through vLLM 0.33.0's real Scheduler and ours.

Runs under a Python that can import vLLM (not the project's own environment), e.g.

    /tmp/vllm-venv/bin/python tests/fidelity/vllm_differential.py --cases 2000 --seed 0

Each case draws a pool, a block size, a token budget and a stream of requests
(shared prefixes, cache salts, arrivals spread over steps, aborts, prefix-cache
resets), then drives both schedulers step by step with the same stand-in model
(one sampled token per request whose scheduled tokens reach its end) and compares
their whole state after every step. The first difference is printed with the
case's parameters; the exit status is 1 if any case differed.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

MAX_MODEL_LEN = 4096
LORA_NAMES = ("sql", "chat")
MAX_STEPS = 400


@dataclass
class Arrival:
    step: int
    request_id: str
    prompt: list[int]
    max_tokens: int
    cache_salt: str | None
    prompt_logprobs: int | None = None
    lora_name: str | None = None  # its adapter id and path follow from the name


@dataclass
class Case:
    seed: int
    block_size: int
    num_gpu_blocks: int
    max_num_batched_tokens: int | None  # None: neither side is given one (the defaults)
    max_num_seqs: int | None
    arrivals: list[Arrival]
    # step -> request ids to abort before that step's schedule()
    aborts: dict[int, list[str]] = field(default_factory=dict)
    # step -> reset_running_requests flag of a reset before that step's schedule()
    resets: dict[int, bool] = field(default_factory=dict)


def make_case(seed: int) -> Case:
    rng = random.Random(seed)
    block_size = rng.randint(1, 16)
    num_requests = rng.choice([rng.randint(1, 10), rng.randint(10, 30)])
    documents = [
        [rng.randrange(1, 1000) for _ in range(rng.randint(1, 6 * block_size))] for _ in range(3)
    ]
    arrivals = []
    step = 0
    for index in range(num_requests):
        prompt = list(rng.choice(documents)) if rng.random() < 0.7 else []
        prompt += [rng.randrange(1, 1000) for _ in range(rng.randint(0, 3 * block_size))]
        if not prompt:
            prompt = [rng.randrange(1, 1000)]
        salt = rng.choice(["a", "b"]) if rng.random() < 0.15 else None
        logprobs = 1 if rng.random() < 0.05 else None
        arrivals.append(Arrival(step, f"r{index}", prompt, rng.randint(1, 24), salt, logprobs))
        step += rng.choice([0, 0, 1, 2, 5])
    longest = max(len(a.prompt) + a.max_tokens for a in arrivals)
    # Small pools: from "the longest request barely fits" to a few of them.
    blocks_needed = -(-longest // block_size) + 1
    num_gpu_blocks = rng.randint(max(2, blocks_needed // 2), blocks_needed * 3)
    max_num_batched_tokens = rng.choice([rng.randint(1, 16), rng.randint(8, 64), 8192])
    max_num_seqs = rng.choice([min(128, max_num_batched_tokens), rng.randint(1, 4)])
    max_num_seqs = min(max_num_seqs, max_num_batched_tokens)
    # LoRA adapters from a draw of their own, so each seed keeps the workload it
    # had before they were compared: a request under an adapter shares blocks only
    # with requests under the same one (the name and path enter every block's hash).
    lora_rng = random.Random(f"lora-{seed}")
    for arrival in arrivals:
        if lora_rng.random() < 0.2:
            arrival.lora_name = lora_rng.choice(LORA_NAMES)
    case = Case(seed, block_size, num_gpu_blocks, max_num_batched_tokens, max_num_seqs, arrivals)
    # Some cases give neither side a budget, so the defaults are compared too
    # (SchedulerConfig's); a draw of its own, as for LoRA. Their requests come at
    # once, longer, into a pool that holds them all: the token budget is what
    # limits a step.
    defaults_rng = random.Random(f"defaults-{seed}")
    if defaults_rng.random() < 0.1:
        case.max_num_batched_tokens = case.max_num_seqs = None
        for arrival in arrivals:
            arrival.step = 0
            extra = defaults_rng.randint(100, 300)
            arrival.prompt += [defaults_rng.randrange(1, 1000) for _ in range(extra)]
        case.num_gpu_blocks = 2 + sum(
            -(-(len(a.prompt) + a.max_tokens) // block_size) for a in arrivals
        )
    for _ in range(rng.choice([0, 0, 1, 2])):
        victim = rng.choice(arrivals)
        case.aborts.setdefault(victim.step + rng.randint(0, 8), []).append(victim.request_id)
    for _ in range(rng.choice([0, 0, 1, 2])):
        case.resets[rng.randint(0, step + 10)] = rng.random() < 0.5
    return case


def budgets(case: Case) -> dict[str, int]:
    """The scheduler's budgets as keyword arguments: none where the case takes the defaults."""
    named = {
        "max_num_batched_tokens": case.max_num_batched_tokens,
        "max_num_seqs": case.max_num_seqs,
    }
    return {name: value for name, value in named.items() if value is not None}


def next_token(num_tokens: int) -> int:
    from engine.vllm.core import greedy_token

    return greedy_token(range(num_tokens))


class Ours:
    def __init__(self, case: Case) -> None:
        from engine.vllm.core import EngineCore
        from engine.vllm.scheduler import Scheduler

        self.scheduler = Scheduler(
            case.num_gpu_blocks,
            case.block_size,
            **budgets(case),
            enable_kv_cache_events=True,
        )
        self.core = EngineCore(self.scheduler)
        self.pool = self.scheduler.kv_cache_manager.block_pool
        self.step_stats: Any = None
        self.step_events: list[dict[str, Any]] = []
        self.output_ids: dict[str, list[str]] = {}

    def add(self, arrival: Arrival) -> None:
        from engine.vllm.request import Request

        self.scheduler.add_request(
            Request(
                arrival.request_id,
                arrival.prompt,
                max_tokens=arrival.max_tokens,
                block_hasher=self.scheduler.request_block_hasher,
                cache_salt=arrival.cache_salt,
                prompt_logprobs=arrival.prompt_logprobs,
                lora_name=arrival.lora_name,
                lora_int_id=lora_int_id(arrival.lora_name),
                lora_path=lora_path(arrival.lora_name),
            )
        )

    def abort(self, request_ids: list[str]) -> list[str]:
        from engine.vllm.request import RequestStatus

        done = self.scheduler.finish_requests(request_ids, RequestStatus.FINISHED_ABORTED)
        return [r.request_id for r in done]

    def reset(self, reset_running_requests: bool) -> bool:
        return self.scheduler.reset_prefix_cache(reset_running_requests)

    def step(self) -> list[tuple[str, int]]:
        preempted_before = set(self.scheduler.reset_preempted_req_ids)
        output = self.core.step().scheduler_output
        self.output_ids = {
            # vLLM's default (V2) model runner gets resumed requests as new ones.
            "admitted": sorted(output.scheduled_new_req_ids + output.scheduled_resumed_req_ids),
            # vLLM's output names every request preempted since the last schedule().
            "preempted": sorted(preempted_before | set(output.preempted_req_ids)),
            "finished": sorted(output.finished_req_ids),
        }
        # vLLM hands out the prefix-cache counters at the end of every update,
        # and publishes the step's KV events there.
        self.step_stats = self.scheduler.make_stats()
        self.step_events = [event_dict(e) for e in self.scheduler.kv_cache_manager.take_events()]
        return list(output.num_scheduled_tokens.items())

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished_requests()

    def snapshot(self) -> dict[str, Any]:
        return scheduler_snapshot(self, self.scheduler.kv_cache_manager.req_to_blocks)


class Real:
    def __init__(self, case: Case) -> None:
        from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
        from vllm.config.kv_events import KVEventsConfig
        from vllm.utils.hashing import get_hash_fn_by_name
        from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
        from vllm.v1.core.sched.scheduler import Scheduler
        from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
        from vllm.v1.structured_output import StructuredOutputManager

        model_config = ModelConfig(
            model=fake_model_dir(),
            skip_tokenizer_init=True,
            dtype="float16",
            max_model_len=MAX_MODEL_LEN,
        )
        scheduler_config = SchedulerConfig(
            **budgets(case),
            max_model_len=MAX_MODEL_LEN,
            is_encoder_decoder=False,
            async_scheduling=False,
        )
        cache_config = CacheConfig(block_size=case.block_size)
        vllm_config = VllmConfig(
            model_config=model_config,
            scheduler_config=scheduler_config,
            cache_config=cache_config,
            device_config=DeviceConfig(device="cpu"),
            kv_events_config=KVEventsConfig(enable_kv_cache_events=True, publisher="null"),
        )
        import torch

        kv_cache_config = KVCacheConfig(
            num_blocks=case.num_gpu_blocks,
            kv_cache_tensors=[],
            kv_cache_groups=[
                KVCacheGroupSpec(
                    ["layer"],
                    FullAttentionSpec(
                        block_size=case.block_size,
                        num_kv_heads=1,
                        head_size=1,
                        dtype=torch.float32,
                    ),
                )
            ],
        )
        cache_config.num_gpu_blocks = case.num_gpu_blocks
        self.scheduler = Scheduler(
            vllm_config=vllm_config,
            kv_cache_config=kv_cache_config,
            log_stats=True,
            structured_output_manager=StructuredOutputManager(vllm_config),
            block_size=case.block_size,
        )
        hash_fn = get_hash_fn_by_name(cache_config.prefix_caching_hash_algo)
        init_none_hash(hash_fn)
        self.block_hasher = get_request_block_hasher(case.block_size, hash_fn)
        self.pool = self.scheduler.kv_cache_manager.block_pool
        self.manager = self.scheduler.kv_cache_manager.coordinator.single_type_managers[0]
        self.step_stats: Any = None
        self.step_events: list[dict[str, Any]] = []
        self.published: list[Any] = []
        self.scheduler.kv_event_publisher.publish = self.published.append
        self.output_ids: dict[str, list[str]] = {}

    def add(self, arrival: Arrival) -> None:
        from vllm.lora.request import LoRARequest
        from vllm.sampling_params import SamplingParams
        from vllm.v1.request import Request

        lora_request = (
            LoRARequest(
                arrival.lora_name, lora_int_id(arrival.lora_name), lora_path(arrival.lora_name)
            )
            if arrival.lora_name
            else None
        )

        self.scheduler.add_request(
            Request(
                request_id=arrival.request_id,
                prompt_token_ids=list(arrival.prompt),
                sampling_params=SamplingParams(
                    max_tokens=arrival.max_tokens,
                    ignore_eos=True,
                    prompt_logprobs=arrival.prompt_logprobs,
                ),
                pooling_params=None,
                cache_salt=arrival.cache_salt,
                block_hasher=self.block_hasher,
                arrival_time=0.0,
                lora_request=lora_request,
            )
        )

    def abort(self, request_ids: list[str]) -> list[str]:
        from vllm.v1.request import RequestStatus

        done = self.scheduler.finish_requests(request_ids, RequestStatus.FINISHED_ABORTED)
        return [r.request_id for r in done]

    def reset(self, reset_running_requests: bool) -> bool:
        return self.scheduler.reset_prefix_cache(reset_running_requests)

    def step(self) -> list[tuple[str, int]]:
        from vllm.v1.outputs import ModelRunnerOutput

        output = self.scheduler.schedule()
        req_ids = list(output.num_scheduled_tokens)
        sampled = []
        for req_id in req_ids:
            request = self.scheduler.requests[req_id]
            done = request.num_computed_tokens >= request.num_tokens
            sampled.append([next_token(request.num_tokens)] if done else [])
        model_output = ModelRunnerOutput(
            req_ids=req_ids,
            req_id_to_index={r: i for i, r in enumerate(req_ids)},
            sampled_token_ids=sampled,
        )
        self.output_ids = {
            "admitted": sorted(
                [r.req_id for r in output.scheduled_new_reqs]
                + list(output.scheduled_cached_reqs.resumed_req_ids)
            ),
            "preempted": sorted(output.preempted_req_ids),
            "finished": sorted(output.finished_req_ids),
        }
        outputs = self.scheduler.update_from_output(output, model_output)
        self.step_stats = outputs[0].scheduler_stats.prefix_cache_stats
        self.step_events = [event_dict(e) for batch in self.published for e in batch.events]
        self.published.clear()
        return list(output.num_scheduled_tokens.items())

    def has_unfinished(self) -> bool:
        return self.scheduler.get_num_unfinished_requests() > 0

    def snapshot(self) -> dict[str, Any]:
        return scheduler_snapshot(self, self.manager.req_to_blocks)


def scheduler_snapshot(side: Any, req_to_blocks: dict[str, Any]) -> dict[str, Any]:
    """What is compared after a step, read the same way from either side (the two
    schedulers keep their requests, queues and pool under the same names)."""
    scheduler = side.scheduler
    return {
        "output_ids": side.output_ids,
        "waiting": [r.request_id for r in scheduler.waiting],
        "running": [r.request_id for r in scheduler.running],
        "requests": {
            r.request_id: (r.status.name, r.num_computed_tokens, r.num_tokens, r.num_preemptions)
            for r in scheduler.requests.values()
        },
        "block_ids": {
            req_id: [b.block_id for b in blocks]
            for req_id, blocks in req_to_blocks.items()
            if blocks
        },
        "block_hashes": {
            r.request_id: [bytes(h) for h in r.block_hashes] for r in scheduler.requests.values()
        },
        **pool_snapshot(side.pool),
        "stats": stats_tuple(side.step_stats),
        "events": side.step_events,
    }


def lora_int_id(name: str | None) -> int | None:
    return LORA_NAMES.index(name) + 1 if name else None


def lora_path(name: str | None) -> str | None:
    return f"/adapters/{name}" if name else None


# Every field a KV event of either side carries, read by name (vLLM's are msgspec
# structs with lists, ours frozen dataclasses with tuples).
EVENT_FIELDS = (
    "block_hashes",
    "parent_block_hash",
    "token_ids",
    "block_size",
    "lora_id",
    "medium",
    "lora_name",
    "extra_keys",
    "group_idx",
)


def event_dict(event: Any) -> dict[str, Any]:
    shown: dict[str, Any] = {"type": type(event).__name__}
    for name in EVENT_FIELDS:
        if hasattr(event, name):
            value = getattr(event, name)
            if isinstance(value, list | tuple):
                value = [list(v) if isinstance(v, list | tuple) else v for v in value]
            shown[name] = value
    return shown


def pool_snapshot(pool: Any) -> dict[str, Any]:
    return {
        "free_queue": [b.block_id for b in pool.free_block_queue.get_all_free_blocks()],
        "ref_cnt": [b.ref_cnt for b in pool.blocks],
        "block_hash": [None if b.block_hash is None else bytes(b.block_hash) for b in pool.blocks],
        "hash_map": [
            (bytes(key), [blocks.block_id] if hasattr(blocks, "block_id") else list(blocks))
            for key, blocks in pool.cached_block_hash_to_block._cache.items()
        ],
    }


def stats_tuple(stats: Any) -> tuple[int, ...]:
    return (
        stats.requests,
        stats.queries,
        stats.hits,
        stats.preempted_requests,
        stats.preempted_queries,
        stats.preempted_hits,
        int(stats.reset),
    )


_FAKE_MODEL = Path("/tmp/pcl-fake-model")


def fake_model_dir() -> str:
    """A config-only model directory: ModelConfig reads it offline, no weights needed."""
    _FAKE_MODEL.mkdir(exist_ok=True)
    # Written aside and renamed, so that runs in parallel never read half a file.
    scratch = _FAKE_MODEL / f"config.{os.getpid()}.json"
    scratch.write_text(
        '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,'
        ' "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 4,'
        ' "num_hidden_layers": 1, "vocab_size": 100000, "max_position_embeddings": 4096,'
        ' "torch_dtype": "float16", "rms_norm_eps": 1e-6}'
    )
    os.replace(scratch, _FAKE_MODEL / "config.json")
    return str(_FAKE_MODEL)


def first_difference(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    for key in a:
        if a[key] != b[key]:
            return f"{key}:\n  vllm: {a[key]}\n  ours: {b[key]}"
    return None


@dataclass
class Coverage:
    """What the cases exercised, so a clean run is known not to be a trivial one."""

    steps: int = 0
    preemptions: int = 0
    hit_tokens: int = 0
    evictions: int = 0
    resets_done: int = 0
    resets_refused: int = 0
    aborts: int = 0
    kv_events: int = 0
    lora_requests: int = 0

    def __str__(self) -> str:
        return ", ".join(f"{name} {value}" for name, value in vars(self).items())


def run_case(case: Case, coverage: Coverage) -> str | None:
    """None if both agree on every step, else a description of the first difference."""
    real, ours = Real(case), Ours(case)
    coverage.lora_requests += sum(a.lora_name is not None for a in case.arrivals)
    previous_hashes = pool_snapshot(ours.pool)["block_hash"]
    pending = list(case.arrivals)
    for step in range(MAX_STEPS):
        for side in (real, ours):
            for arrival in [a for a in pending if a.step <= step]:
                side.add(arrival)
        pending = [a for a in pending if a.step > step]
        events: list[Any] = []
        if step in case.aborts:
            aborted = (real.abort(case.aborts[step]), ours.abort(case.aborts[step]))
            events.append(("abort", case.aborts[step]))
            coverage.aborts += len(aborted[1])
            if aborted[0] != aborted[1]:
                return f"step {step}: finish_requests({case.aborts[step]}) finished {aborted}"
        if step in case.resets:
            flag = case.resets[step]
            results = (real.reset(flag), ours.reset(flag))
            events.append(("reset", flag, results))
            coverage.resets_done += results[1]
            coverage.resets_refused += not results[1]
            if results[0] != results[1]:
                return f"step {step}: reset_prefix_cache({flag}) returned {results}"
        if not pending and not real.has_unfinished() and not ours.has_unfinished():
            return None
        scheduled = (real.step(), ours.step())
        if scheduled[0] != scheduled[1]:
            vllm_side, our_side = scheduled
            return f"step {step} {events}: scheduled\n  vllm: {vllm_side}\n  ours: {our_side}"
        snapshot = ours.snapshot()
        difference = first_difference(real.snapshot(), snapshot)
        if difference:
            return f"step {step} {events} scheduled {scheduled[0]}: {difference}"
        coverage.steps += 1
        coverage.preemptions += snapshot["stats"][3]
        coverage.hit_tokens += snapshot["stats"][2] + snapshot["stats"][5]
        coverage.evictions += sum(
            old is not None and old != new
            for old, new in zip(previous_hashes, snapshot["block_hash"], strict=True)
        )
        coverage.kv_events += len(snapshot["events"])
        previous_hashes = snapshot["block_hash"]
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0, help="first case's seed")
    parser.add_argument("--stop-after", type=int, default=5, help="stop after this many failures")
    args = parser.parse_args()
    failures = 0
    coverage = Coverage()
    num_run = 0
    for seed in range(args.seed, args.seed + args.cases):
        num_run += 1
        case = make_case(seed)
        difference = run_case(case, coverage)
        if difference:
            failures += 1
            print(f"case seed={seed}: {case}\n{difference}\n", flush=True)
            if failures >= args.stop_after:
                break
    print(f"{num_run} cases from seed {args.seed}: {failures} differed ({coverage})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
