"""Differential check: random workloads through SGLang 0.5.23's real scheduling pieces and
our ``engine.sglang.scheduler.Scheduler``, step by step.

Runs under a Python that can import SGLang (see tests/fidelity/sglang-venv.md), e.g.

    /tmp/sglang-venv/bin/python tests/fidelity/sglang_scheduler_differential.py --cases 500 --seed 0

What is SGLang's own code here (nothing of it is stubbed or copied): the runtime context
is published from a default ``ServerArgs(model_path="dummy", device="cpu")`` as SGLang's
tests do (``runtime_context.publish``); the tree is a real ``RadixCache`` (built from
``CacheInitParams`` as ``create_simulated`` does, but with the real pools, which its
``checkpoint`` needs); the pools are the real ``TokenToKVPoolAllocator`` /
``PagedTokenToKVPoolAllocator`` (no KV tensors: ``kvcache`` None) and a real
``ReqToTokenPool`` on CPU; requests are real ``Req`` objects (``SamplingParams`` with
``max_new_tokens``, normalized without a tokenizer); the waiting queue is ordered by the
real ``SchedulePolicy.calc_priority`` (fcfs or lpm); admission is the real ``PrefillAdder``
with ``add_one_req`` after ``Req.init_next_round_input``; the prefill batch is a real
``ScheduleBatch`` (``init_new`` + ``prepare_for_extend``, which runs the real
``alloc_for_extend`` and writes the rows); results go through the real
``Req.update_finish_state``, ``checkpoint_kv_cache`` and ``release_kv_cache``; the running
batch is a real ``ScheduleBatch`` (``merge_batch``, ``filter_batch``, ``check_decode_mem``,
``retract_decode`` with the real ``release_req``, ``prepare_for_decode`` with the real
decode allocation); ``new_token_ratio`` is the real ``NewTokenRatioTracker``.

What is glue, transcribed from ``managers/scheduler.py`` because ``Scheduler`` itself
cannot be built without a model, a tokenizer, ZMQ sockets and a TP worker: the order of
calls of one ``event_loop_normal`` iteration (merge of the last prefill batch,
``_get_new_batch_prefill_raw``'s early returns, its admission loop and ``batch_is_full``
updates, ``update_running_batch``, the idle reset of ``new_token_ratio``), and the
appending of each sampled token (the stand-in model: token ``50_000 + sequence length``,
as ours). The SGLang side runs with chunked prefill off (``rem_chunk_tokens`` None), no
LoRA, no priority scheduling, the default schedule and retraction settings.

Each case draws a page size (1, 4 or 16), a schedule policy (fcfs or lpm), an eviction
policy (lru in half the cases; lfu, fifo, mru, filo, priority, slru; the server's
``radix_eviction_policy``, which the waiting-prefix refresh reads, is overridden to match),
a pool from just above the largest request's need to a few requests' worth (so admission
stops on ``NO_TOKEN`` and decodes retract), sometimes a small ``max_prefill_tokens`` (so
admission stops on ``OTHER``), and requests sharing prefixes (some under an
``extra_key``) in one of four shapes: a burst, a stream of long outputs, a long queue (30
to 80 requests, so that fcfs's every-32nd-call refresh fires more than once) and long
outputs of one length arriving a step or two apart (so that decodes retract).
After every step it compares: which batch ran; for a prefill, the candidates tried with
each ``add_one_req`` verdict, the admitted requests in order and the budget left
(``rem_total_tokens``, ``cur_rem_tokens``, ``rem_input_tokens``, the two offsets); the
retracted and aborted requests; ``new_token_ratio``; the waiting queue, running batch and
finished requests in order; every request's outputs, prefix, protected length and KV row;
the allocator's free lists in order; and the whole tree (keys, values, lock refs, access
and creation stamps, hit counts, priorities, evictable leaves) with its sizes.

Not compared: ``batch_is_full`` itself (SGLang keeps it on the running batch object, which
the next merge may replace; only its effect, admission tried or not, is compared).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import random
import sys
import types
import warnings
from array import array
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
warnings.filterwarnings("ignore")

import torch  # noqa: E402
from sglang.srt.runtime_context import (  # noqa: E402
    SpawnRanks,
    get_memory,
    publish,
    reset_context,
)
from sglang.srt.server_args import ServerArgs  # noqa: E402

reset_context()
publish(
    ServerArgs(model_path="dummy", device="cpu", disable_overlap_schedule=True),
    role="test",
    ranks=SpawnRanks(world_rank=0, dp_rank=None),
)

import sglang.srt.managers.schedule_policy as sg_policy  # noqa: E402
import sglang.srt.mem_cache.radix_cache as sg_radix  # noqa: E402
from sglang.srt.managers.schedule_batch import Req as SgReq  # noqa: E402
from sglang.srt.managers.schedule_batch import ScheduleBatch  # noqa: E402
from sglang.srt.managers.scheduler_components.new_token_ratio_tracker import (  # noqa: E402
    NewTokenRatioTracker as SgTracker,
)
from sglang.srt.mem_cache.allocator.paged import PagedTokenToKVPoolAllocator  # noqa: E402
from sglang.srt.mem_cache.allocator.token import TokenToKVPoolAllocator  # noqa: E402
from sglang.srt.mem_cache.cache_init_params import CacheInitParams  # noqa: E402
from sglang.srt.mem_cache.common import checkpoint_kv_cache, release_kv_cache  # noqa: E402
from sglang.srt.mem_cache.memory_pool import ReqToTokenPool  # noqa: E402
from sglang.srt.sampling.sampling_params import SamplingParams  # noqa: E402
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm  # noqa: E402

import engine.sglang.scheduler as our_scheduler  # noqa: E402
from engine.sglang.allocator import make_allocator  # noqa: E402
from engine.sglang.radix_cache import RadixCache  # noqa: E402
from engine.sglang.schedule_policy import AddReqResult, PrefillAdder  # noqa: E402
from tests.fidelity.sglang_differential import dump as tree_dump  # noqa: E402

FIRST_GENERATED_TOKEN_ID = our_scheduler.FIRST_GENERATED_TOKEN_ID
EVICTION_POLICIES = ("lru",) * 6 + ("lfu", "fifo", "mru", "filo", "priority", "slru")
MODEL_CONFIG = types.SimpleNamespace(
    vocab_size=10**9, is_encoder_decoder=False, context_len=1 << 16, hf_config=None
)


class Clock:
    """A strictly increasing stand-in for time.monotonic(): no two stamps tie."""

    def __init__(self) -> None:
        self.ticks = itertools.count(1)

    def __call__(self) -> float:
        return float(next(self.ticks))


class RecordingAdder(PrefillAdder):
    """Our PrefillAdder, recording itself and each verdict (the model builds its own)."""

    last: RecordingAdder | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tried: list[tuple[str, str]] = []
        self.budget = budget(self)
        RecordingAdder.last = self

    def add_one_req(self, req: Any) -> AddReqResult:
        res = super().add_one_req(req)
        self.tried.append((req.rid, res.name))
        self.budget = budget(self)  # as admission left it, before the batch allocates
        return res


our_scheduler.PrefillAdder = RecordingAdder  # type: ignore[misc]


class RecordingScheduler(our_scheduler.Scheduler):
    """Our scheduler, recording the step's prefill batch and decode batch."""

    def schedule(self) -> list[Any]:
        admitted = super().schedule()
        self.seen_admitted = list(admitted)
        return admitted

    def update_running_batch(self, batch: list[Any]) -> list[Any]:
        decoded = super().update_running_batch(batch)
        self.seen_decoded = list(decoded)  # the finished leave the list itself later
        return decoded


def budget(adder: Any) -> tuple[Any, ...]:
    return (
        adder.rem_total_tokens,
        adder.memory_budget.remaining_current,
        adder.rem_input_tokens,
        adder.memory_budget.total_offset,
        adder.memory_budget.current_offset,
    )


class SgSide:
    """SGLang's real pieces, called in the order one ``event_loop_normal`` iteration calls
    them (managers/scheduler.py:3894-4004, 4079-4300, 4459-4552)."""

    def __init__(
        self,
        size: int,
        page_size: int,
        policy: str,
        max_prefill_tokens: int,
        rows: int,
        eviction_policy: str,
    ) -> None:
        if page_size == 1:
            self.allocator: Any = TokenToKVPoolAllocator(size, torch.float16, "cpu", None, False)
        else:
            self.allocator = PagedTokenToKVPoolAllocator(
                size, page_size, torch.float16, "cpu", None, False
            )
        self.req_to_token_pool = ReqToTokenPool(rows, 4096, "cpu", False)
        self.tree_cache = sg_radix.RadixCache(
            CacheInitParams(
                disable=False,
                req_to_token_pool=self.req_to_token_pool,
                token_to_kv_pool_allocator=self.allocator,
                page_size=page_size,
                eviction_policy=eviction_policy,
            )
        )
        self.page_size = page_size
        self.policy = sg_policy.SchedulePolicy(policy, self.tree_cache, False, False, False)
        self.max_prefill_tokens = max_prefill_tokens
        self.tracker = SgTracker.from_config()
        self.waiting_queue: list[Any] = []
        self.running_batch = ScheduleBatch(reqs=[], batch_is_full=False)
        self.last_batch: Any = None
        self.finished: list[Any] = []
        self.aborted: list[Any] = []
        self.step_record: dict[str, Any] = {}

    def add_request(self, rid: str, prompt: list[int], max_new: int, extra: str | None) -> None:
        params = SamplingParams(max_new_tokens=max_new)
        params.normalize(None)
        req = SgReq(rid, "", array("q", prompt), params, extra_key=extra)
        self.waiting_queue.append(req)

    def _new_batch(self, reqs: list[Any]) -> Any:
        return ScheduleBatch.init_new(
            reqs,
            self.req_to_token_pool,
            self.allocator,
            self.tree_cache,
            MODEL_CONFIG,
            False,
            SpeculativeAlgorithm.NONE,
        )

    def get_new_batch_prefill(self, running_batch: Any) -> Any:
        """_get_new_batch_prefill_raw (scheduler.py:4079-4330), chunked prefill off."""
        if running_batch.is_empty():
            running_batch.batch_is_full = False
        if running_batch.batch_is_full or len(self.waiting_queue) == 0:
            return None
        self.policy.calc_priority(self.waiting_queue, running_batch)
        adder = sg_policy.PrefillAdder(
            self.page_size,
            self.tree_cache,
            self.allocator,
            running_batch,
            self.tracker.current,
            self.max_prefill_tokens,
            None,
        )
        tried = []
        for req in self.waiting_queue:
            if adder.budget_state() == sg_policy.AddReqResult.OTHER:
                break
            req.init_next_round_input(self.tree_cache)
            res = adder.add_one_req(req, has_chunked_req=False, truncation_align_size=None)
            tried.append((req.rid, res.name))
            if res != sg_policy.AddReqResult.CONTINUE:
                if res == sg_policy.AddReqResult.NO_TOKEN:
                    running_batch.batch_is_full = len(adder.can_run_list) > 0 or (
                        not running_batch.is_empty()
                    )
                break
        self.step_record["tried"] = tried
        self.step_record["budget"] = budget(adder)
        can_run_list = adder.can_run_list
        if not can_run_list:
            return None
        can_run_set = set(can_run_list)
        self.waiting_queue = [x for x in self.waiting_queue if x not in can_run_set]
        new_batch = self._new_batch(can_run_list)
        new_batch.prepare_for_extend()
        return new_batch

    def update_running_batch(self, batch: Any) -> Any:
        """scheduler.py:4459-4552 (non-overlap: nothing finishing in flight)."""
        initial_bs = batch.batch_size()
        if not batch.check_decode_mem():
            retracted, new_token_ratio, reqs_to_abort = batch.retract_decode()
            self.tracker.current = new_token_ratio
            self.step_record["retracted"] = [r.rid for r in retracted]
            self.step_record["aborted"] = [r.rid for r in reqs_to_abort]
            self.aborted.extend(reqs_to_abort)
            self.waiting_queue.extend(retracted)  # _add_request_to_queue
        else:
            self.tracker.decay_step()
        if batch.batch_size() < initial_bs:
            batch.batch_is_full = False
        if batch.is_empty():
            return batch
        batch.prepare_for_decode()
        return batch

    def step(self) -> None:
        self.step_record = {"kind": None, "tried": [], "retracted": [], "aborted": []}
        running_batch = self.running_batch
        last_batch = self.last_batch
        # get_next_batch_to_run: merge the last prefill batch (scheduler.py:3932-3968)
        if last_batch is not None and last_batch.forward_mode.is_extend():
            last_bs = last_batch.batch_size()
            last_batch.filter_batch()
            if last_batch.batch_size() < last_bs:
                running_batch.batch_is_full = False
            if not last_batch.is_empty():
                if running_batch.is_empty():
                    running_batch = last_batch
                else:
                    running_batch.merge_batch(last_batch)
        running_bs = running_batch.batch_size()
        running_batch.filter_batch()
        if running_batch.batch_size() < running_bs:
            running_batch.batch_is_full = False
        self.running_batch = running_batch
        new_batch = self.get_new_batch_prefill(running_batch)
        if new_batch is not None:
            self.step_record["kind"] = "prefill"
            self.step_record["admitted"] = [r.rid for r in new_batch.reqs]
            self.last_batch = new_batch
            self.process_prefill(new_batch)
            return
        self.step_record["admitted"] = []
        ret = None
        if not running_batch.is_empty():
            decode_batch = self.update_running_batch(running_batch)
            ret = decode_batch if decode_batch is not None and not decode_batch.is_empty() else None
        self.last_batch = ret
        if ret is None:
            if not self.waiting_queue and self.running_batch.is_empty():
                self.tracker.reset()  # on_idle (scheduler.py:5318)
            return
        self.step_record["kind"] = "decode"
        self.process_decode(ret)

    def _sample(self, req: Any) -> None:
        req.output_ids.append(
            FIRST_GENERATED_TOKEN_ID + len(req.origin_input_ids) + len(req.output_ids)
        )
        req.update_finish_state()

    def process_prefill(self, batch: Any) -> None:
        """batch_result_processor.py:307-394."""
        for req in batch.reqs:
            self._sample(req)
            if req.finished():
                release_kv_cache(req, self.tree_cache, checkpoint=True)
                self.finished.append(req)
            else:
                checkpoint_kv_cache(req, self.tree_cache)

    def process_decode(self, batch: Any) -> None:
        """batch_result_processor.py:1006-1046 (_handle_finish_state_updated_req)."""
        for req in batch.reqs:
            self._sample(req)
            if req.finished():
                release_kv_cache(req, self.tree_cache, checkpoint=True)
                self.finished.append(req)

    # ---- views ----

    def running(self) -> list[Any]:
        reqs = [r for r in self.running_batch.reqs if not r.finished()]
        last = self.last_batch
        if last is not None and last is not self.running_batch and last.forward_mode.is_extend():
            reqs += [r for r in last.reqs if not r.finished()]
        return reqs

    def free_slots(self) -> list[int]:
        a = self.allocator
        staged = a.release_pages.tolist() if a.release_pages is not None else []
        return [int(x) for x in a.free_pages.tolist() + staged]

    def req_view(self, req: Any) -> tuple[Any, ...]:
        row: list[int] = []
        if req.kv.req_pool_idx is not None:
            n = req.kv.kv_committed_len
            row = [int(x) for x in self.req_to_token_pool.req_to_token[req.kv.req_pool_idx, :n]]
        return (
            req.rid,
            len(req.output_ids),
            req.prefix_len,
            req.kv.cache_protected_len,
            row,
            req.retraction_count,
        )


def our_req_view(req: Any) -> tuple[Any, ...]:
    return (
        req.rid,
        len(req.output_ids),
        req.prefix_len,
        req.cache_protected_len,
        list(req.kv_row),
        req.retraction_count,
    )


def our_free_slots(allocator: Any) -> list[int]:
    if allocator.page_size == 1:
        return list(allocator.free_pages) + list(allocator.release_pages)
    return list(allocator.free_pages) + list(allocator.staged_pages)


def dump(root: Any, evictable: set[Any]) -> list[Any]:
    """The tree as the tree differential dumps it, access and creation stamps by rank."""
    out = tree_dump(root, evictable)
    # the stamps by rank: only their order decides anything (the two sides read the
    # clock a different number of times outside the tree's walks, e.g. none in ours
    # where SGLang's matches an empty tree)
    rank = {t: i for i, t in enumerate(sorted({x for row in out for x in row[5:7]}))}
    return [(*row[:5], rank[row[5]], rank[row[6]], *row[7:]) for row in out]


def compare(diffs: list[str], name: str, a: Any, b: Any) -> None:
    if a != b:
        diffs.append(f"{name}\n  sglang {a}\n  ours   {b}")


def draw_case(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    page_size = rng.choice((1, 1, 4, 16))
    policy = rng.choice(("fcfs", "lpm"))
    eviction_policy = rng.choice(EVICTION_POLICIES)
    vocab = rng.choice((3, 7, 50))
    unit = page_size
    bases = [[rng.randrange(vocab) for _ in range(rng.randrange(1, 5) * unit)] for _ in range(3)]
    extra_keys = (None, None, None, "lora-a")
    # a stream: requests with long outputs arriving a few steps apart, so that later
    # prefills count the running ones at new_token_ratio and decodes must retract
    # many: a long queue over many steps, so that calc_priority runs often enough for
    # fcfs's waiting-prefix refresh to fire more than once (every 32nd call)
    # retract: long outputs of one length arriving a step or two apart into a pool a
    # little short of running them together
    shape = rng.choice(("burst", "burst", "stream", "many", "retract", "retract"))
    same_max_new = rng.randrange(12, 64)
    stream = shape != "burst"
    reqs = []
    for i in range(rng.randrange(30, 80) if shape == "many" else rng.randrange(2, 11)):
        prompt = list(rng.choice(bases)) if rng.random() < 0.8 else []
        if prompt and rng.random() < 0.3:
            prompt = prompt[: rng.randrange(len(prompt) + 1)]
        prompt += [rng.randrange(vocab) for _ in range(rng.randrange(1, 3 * unit + 4))]
        max_new = rng.choice((1, 2, 3, rng.randrange(1, 4 * unit + 8), rng.randrange(8, 64)))
        arrival = rng.choice((0, 0, rng.randrange(0, 12), rng.randrange(0, 40)))
        if stream:
            max_new = rng.randrange(12, 80)
            arrival = i * rng.randrange(1, 4)
            if shape == "retract":
                max_new = same_max_new + rng.randrange(0, 3)
                arrival = i * rng.randrange(1, 3)
            if shape == "many":
                max_new = rng.choice((1, 2, rng.randrange(1, 30)))
                arrival = rng.randrange(0, 200)
        reqs.append((arrival, f"r{i}", prompt, max_new, rng.choice(extra_keys)))
    # a pool just above the largest request's need alone (prompt + output + a page),
    # or room for a few of them, so that admission stops short and decodes retract
    need = max(len(p) + m for _, _, p, m, _ in reqs) + page_size
    total = sum(len(p) + m for _, _, p, m, _ in reqs)
    slack = rng.choice(
        (1, page_size, rng.randrange(1, max(2, total // 2)), rng.randrange(1, total))
    )
    if stream:
        slack = rng.randrange(need // 2, need + 1)
    if shape == "retract":
        slack = rng.randrange(same_max_new // 2, 2 * same_max_new)
    size = need + slack
    size = -(-size // page_size) * page_size
    max_prefill = rng.choice((16384, 16384, 16384, rng.randrange(1, 6) * unit * 4))
    return {
        "shape": shape,
        "page_size": page_size,
        "policy": policy,
        "eviction_policy": eviction_policy,
        "size": size,
        "max_prefill_tokens": max_prefill,
        "requests": reqs,
    }


def run_case(seed: int, max_steps: int) -> tuple[int, int, str | None]:
    case = draw_case(seed)
    # the server's --radix-eviction-policy, which the waiting-prefix refresh reads
    with get_memory().override(radix_eviction_policy=case["eviction_policy"]):
        return play_case(seed, case, max_steps)


def play_case(seed: int, case: dict[str, Any], max_steps: int) -> tuple[int, int, str | None]:
    page_size = case["page_size"]
    sg_clock, our_clock = Clock(), Clock()
    sg_radix.time = types.SimpleNamespace(monotonic=sg_clock, perf_counter=lambda: 0.0)
    sg = SgSide(
        case["size"],
        page_size,
        case["policy"],
        case["max_prefill_tokens"],
        rows=len(case["requests"]) + 2,
        eviction_policy=case["eviction_policy"],
    )
    our_alloc = make_allocator(case["size"], page_size)
    ours = RecordingScheduler(
        our_alloc,
        RadixCache(
            our_alloc,
            page_size=page_size,
            eviction_policy=case["eviction_policy"],
            clock=our_clock,
        ),
        schedule_policy=case["policy"],
        max_prefill_tokens=case["max_prefill_tokens"],
    )
    our_reqs: dict[str, Any] = {}
    retractions = 0
    for step in range(max_steps):
        for arrival, rid, prompt, max_new, extra in case["requests"]:
            if arrival == step:
                sg.add_request(rid, prompt, max_new, extra)
                req = our_scheduler.Req(rid, list(prompt), max_new, extra_key=extra)
                our_reqs[rid] = req
                ours.add_request(req)
        pending = any(arrival > step for arrival, *_ in case["requests"])
        busy = sg.waiting_queue or sg.running() or ours.waiting_queue or ours.running
        if not pending and not busy:
            return step, retractions, None
        RecordingAdder.last = None
        before_finished = len(ours.finished)
        before_waiting = {id(r) for r in ours.waiting_queue}
        ours.seen_admitted, ours.seen_decoded = [], []
        sg.step()
        ours.step()
        adder = RecordingAdder.last
        rec = sg.step_record
        ours_kind = "prefill" if ours.seen_admitted else "decode" if ours.seen_decoded else None
        ours_admitted = [r.rid for r in ours.seen_admitted]
        ours_retracted = [
            r.rid for r in ours.waiting_queue if id(r) not in before_waiting and r.retraction_count
        ]
        ours_aborted = [r.rid for r in ours.finished[before_finished:] if r.to_finish == "abort"]
        retractions += len(rec["retracted"])
        diffs: list[str] = []
        cmp = functools.partial(compare, diffs)

        sg_kind = rec["kind"]
        cmp("batch", sg_kind, ours_kind)
        cmp("add_one_req verdicts", rec["tried"], adder.tried if adder else [])
        cmp("admitted", rec["admitted"], ours_admitted)
        if "budget" in rec or adder is not None:
            cmp("budget", rec.get("budget"), adder.budget if adder else None)
        cmp("retracted", rec["retracted"], ours_retracted)
        cmp("aborted", rec["aborted"], ours_aborted)
        cmp("new_token_ratio", sg.tracker.current, ours.new_token_ratio_tracker.current)
        cmp("waiting", [r.rid for r in sg.waiting_queue], [r.rid for r in ours.waiting_queue])
        cmp("running", [r.rid for r in sg.running()], [r.rid for r in ours.running])
        cmp(
            "finished",
            [r.rid for r in sg.finished + sg.aborted],
            [r.rid for r in ours.finished if r.to_finish != "abort"]
            + [r.rid for r in ours.finished if r.to_finish == "abort"],
        )
        sg_all = {r.rid: r for r in sg.waiting_queue + sg.running() + sg.finished + sg.aborted}
        cmp(
            "requests",
            [sg.req_view(sg_all[rid]) for rid in sorted(sg_all)],
            [our_req_view(our_reqs[rid]) for rid in sorted(sg_all)],
        )
        cmp("free slots", sg.free_slots(), our_free_slots(our_alloc))
        sizes_sg = (
            sg.tree_cache.evictable_size(),
            sg.tree_cache.protected_size(),
            sg.tree_cache.total_size(),
        )
        tc = ours.tree_cache
        cmp("tree sizes", sizes_sg, (tc.evictable_size(), tc.protected_size(), tc.total_size()))
        cmp(
            "tree",
            dump(sg.tree_cache.root_node, sg.tree_cache.evictable_leaves),
            dump(tc.root_node, tc.evictable_leaves),
        )
        if diffs:
            params = {k: v for k, v in case.items() if k != "requests"}
            detail = "\n".join(diffs)
            return (
                step + 1,
                retractions,
                f"case seed={seed} {params}\n  requests (arrival, rid, prompt, max_new, "
                f"extra_key): {case['requests']}\nstep {step} ({sg_kind}):\n{detail}",
            )
    return max_steps, retractions, None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    total = differed = retracted = 0
    for case in range(args.cases):
        steps, retractions, failure = run_case(args.seed * 1_000_003 + case, args.steps)
        total += steps
        retracted += retractions
        if failure is not None:
            differed += 1
            if differed <= 3:
                print(failure)
    print(f"{args.cases} cases, {total} steps, {retracted} retractions, {differed} differed")
    return 1 if differed else 0


if __name__ == "__main__":
    sys.exit(main())
