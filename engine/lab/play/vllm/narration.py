"""Narration templates filled from a step's own data, so a text cannot name a block it did not see.

A scenario's narration may say ``{allocated}`` or ``{B.blocks}`` instead of writing
block ids, and ``{C.hit_tokens}`` instead of a count. Every placeholder is looked up
in the step's facts (what the pool did during the step) and its snapshot (the
state after it):

- ids, in the pool's order, written ``#5``, ``#2, #3 and #6`` or, for a run, ``#1 to #8``:
  ``allocated``,
  ``hit``, ``cached``, ``evicted``, ``freed``, ``freed_to_head``, ``freed_to_tail``,
  ``released`` (lost a reference, still held), ``cleared`` (hash dropped by a reset),
  ``taken_and_freed`` (handed out and back within the step), ``free_queue``, ``held``;
  each has ``.count`` and ``[i]`` (``{free_queue[0]}`` is the head);
- counts: ``num_free``, ``num_held`` (held blocks, the null block left out),
  ``num_used`` (blocks not in the free queue, the null block included),
  ``map_size`` (keys in the map), ``usable`` (blocks minus the null block),
  ``block_size``, ``num_gpu_blocks``, and ``stats.hits``, ``stats.queries``,
  ``stats.preempted_hits``, ``stats.preempted_queries``, ``stats.resets``;
- per request, by its id: ``{B.blocks}``, ``{B.num_blocks}``, ``{B.prompt_tokens}``,
  ``{B.num_tokens}``, ``{B.computed}``, ``{B.hit_tokens}``, ``{B.missed_tokens}``,
  ``{B.hit_blocks}``,
  ``{B.full_blocks}`` (its hashed blocks), ``{B.prompt_full_blocks}``,
  ``{B.unhashed_tokens}`` (prompt tokens past the last full block), ``{B.preemptions}``,
  ``{B.sequence_blocks}`` (blocks its whole sequence, ``num_tokens``, fills),
  and ``{B.saturation.redundant_tflops}`` (with ``.rate``, ``.achieved_tflops``,
  ``.peak_tflops``, ``.mfu_percent``, ``.saturating_rate``): the seed's load recomputing B's hit
  (engine/lab/shared/prefill_cost.py).

- with CPU offload: ``num_cpu_blocks``, ``cpu_map_size``, ``cpu_free_queue``, ``cpu_held``
  and, while
  a store is in flight, ``store.event``, ``store.gpu_blocks``, ``store.cpu_blocks``
  (CPU ids read ``CPU #1``); with auxiliary outputs: ``aux.scheduler_generation``,
  ``aux.worker_generation``, ``aux.outputs_in_flight``.

A format spec works as in Python: ``{D.prompt_tokens:,}`` gives ``2,200``.
Anything else in braces (a JSON body, say) is left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.lab.play.vllm.facts import StepFacts
from engine.lab.play.vllm.snapshot import ChainLink, RequestRecord, Snapshot
from engine.lab.shared.placeholders import (
    FactSentences,
    LabelList,
    PromptCounts,
    fact_sentences,
    fill_placeholders,
    id_runs,
    join_words,
)
from engine.lab.shared.prefill_cost import SEED_REQUESTS_PER_SECOND, Saturation

FACT_LISTS = (
    "allocated",
    "hit",
    "cached",
    "evicted",
    "freed",
    "freed_to_head",
    "freed_to_tail",
    "released",
    "cleared",
    "taken_and_freed",
)


def block_label(block_id: int) -> str:
    """A physical block, as every narration writes it: ``#4`` (``#0`` is the null block)."""
    return f"#{block_id}"


class BlockIds(LabelList[int]):
    """Physical block ids, written as ``#2, #3 and #4`` (``CPU #1`` in the CPU pool)."""

    def __init__(self, ids: Iterable[int], pool: str = "") -> None:
        super().__init__(ids)
        self.prefix = f"{pool} " if pool else ""

    def label(self, item: int) -> str:
        return self.prefix + block_label(item)

    def __str__(self) -> str:
        return join_words(
            [self.prefix + _run_label(run) for run in id_runs(self.ids, downwards=True)], "no block"
        )


def _run_label(run: tuple[int, ...]) -> str:
    """``#4`` or, for three ids or more, ``#4 to #9`` (``#9 to #4`` when freed downwards)."""
    if len(run) == 1:
        return block_label(run[0])
    return f"{block_label(run[0])} to #{run[-1]}"


@dataclass(frozen=True)
class RequestFacts(PromptCounts):
    view: RequestRecord
    block_size: int

    @property
    def _cached_tokens(self) -> int:
        return self.view.num_cached_tokens

    @property
    def blocks(self) -> BlockIds:
        return BlockIds(self.view.block_ids)

    @property
    def num_blocks(self) -> int:
        return len(self.view.block_ids)

    @property
    def computed(self) -> int:
        return self.view.num_computed_tokens

    @property
    def hit_blocks(self) -> int:
        return self.hit_tokens // self.block_size

    @property
    def full_blocks(self) -> int:
        return len(self.view.chain)

    @property
    def prompt_full_blocks(self) -> int:
        return self.view.num_prompt_tokens // self.block_size

    @property
    def unhashed_tokens(self) -> int:
        return self.view.num_prompt_tokens % self.block_size

    @property
    def sequence_blocks(self) -> int:
        """Blocks the request's whole sequence fills, the last one partial or not."""
        return -(-self.view.num_tokens // self.block_size)

    @property
    def preemptions(self) -> int:
        return self.view.num_preemptions

    @property
    def saturation(self) -> Saturation:
        """The seed's load: what recomputing this request's hit would cost per second."""
        return Saturation(SEED_REQUESTS_PER_SECOND, self.hit_tokens)


@dataclass(frozen=True)
class StoreFacts:
    """The first CPU offload store in flight."""

    event: int
    gpu_blocks: BlockIds
    cpu_blocks: BlockIds


def narration_context(facts: StepFacts, snapshot: Snapshot, block_size: int) -> dict[str, Any]:
    """Every name a narration template may use at this step."""
    context: dict[str, Any] = {r.request_id: RequestFacts(r, block_size) for r in snapshot.requests}
    context.update({name: BlockIds(getattr(facts, name)) for name in FACT_LISTS})
    context.update(
        free_queue=BlockIds(snapshot.free_queue),
        held=BlockIds(b.block_id for b in snapshot.blocks if b.state == "held"),
        num_free=len(snapshot.free_queue),
        num_held=sum(b.state == "held" for b in snapshot.blocks),
        num_used=len(snapshot.blocks) - len(snapshot.free_queue),
        map_size=len(snapshot.hash_map),
        usable=len(snapshot.blocks) - 1,
        num_gpu_blocks=len(snapshot.blocks),
        block_size=block_size,
        stats=snapshot.stats,
    )
    if snapshot.aux_output is not None:
        context["aux"] = snapshot.aux_output
    if snapshot.offload is not None:
        offload = snapshot.offload
        context.update(
            num_cpu_blocks=len(offload.cpu_blocks),
            cpu_map_size=len(offload.cpu_hash_map),
            cpu_free_queue=BlockIds(offload.cpu_free_queue, "CPU"),
            cpu_held=BlockIds((b.block_id for b in offload.cpu_blocks if b.state == "held"), "CPU"),
        )
        if offload.stores_in_flight:
            store = offload.stores_in_flight[0]
            context["store"] = StoreFacts(
                store.store_event,
                BlockIds(store.gpu_block_ids),
                BlockIds(store.cpu_block_ids, "CPU"),
            )
    return context


def fill_narration(template: str, facts: StepFacts, snapshot: Snapshot, block_size: int) -> str:
    return fill_placeholders(template, narration_context(facts, snapshot, block_size))


# What the pool did, one sentence a kind, in the words the written texts use.
POOL_SENTENCES: FactSentences = {
    "hit": "Cache hits on {hit}: touched, so ref_cnt goes up.",
    "allocated": "Handed out from the head of the free queue: {allocated}.",
    "evicted": (
        "{evicted} lost its old hash when handed out (evicted, BlockRemoved).",
        "{evicted} lost their old hash when handed out (evicted, BlockRemoved).",
    ),
    "cached": "Became full and cached: {cached}.",
    "released": "{released} lost a reference; another request still holds it.",
    "freed_to_head": "Freed without a hash, to the head of the free queue: {freed_to_head}.",
    "freed_to_tail": (
        "Freed with its hash, to the tail (still cached): {freed_to_tail}.",
        "Freed with their hashes, to the tail (still cached): {freed_to_tail}.",
    ),
    "taken_and_freed": (
        "{taken_and_freed} was taken and freed within this step.",
        "{taken_and_freed} were taken and freed within this step.",
    ),
    "cleared": "The reset cleared the hash of {cleared}; the map is empty.",
}


def describe_step(facts: StepFacts, before: Snapshot | None, after: Snapshot) -> str:
    """A narration template for a step nobody wrote a text for (a playground's): one
    sentence per kind of thing the pool did, in the words the written texts use."""
    if before is None:
        return (
            "A pool of {usable} usable blocks of {block_size} tokens ({num_gpu_blocks} with "
            "the null block #0): {num_held} held, {num_free} in the free queue."
        )
    arrivals = [_arrival(record) for record in _arrived(before, after)]
    sentences: list[str] = []
    queries = after.stats.queries - before.stats.queries
    if queries:
        hits = after.stats.hits - before.stats.hits
        sentences.append(f"{hits:,} of {queries:,} looked-up prompt tokens hit the cache.")
    sentences += fact_sentences(facts, POOL_SENTENCES)
    if arrivals and not sentences:
        sentences.append(
            "The pool did not change: blocks are handed out when a step schedules a request."
        )
    return " ".join(arrivals + sentences) or "The pool did not change."


def _arrived(before: Snapshot, after: Snapshot) -> list[RequestRecord]:
    """The requests the step added (an add_request step's)."""
    known = {record.request_id for record in before.requests}
    return [record for record in after.requests if record.request_id not in known]


def _extra_keys(link: ChainLink) -> list[tuple[object, ...]]:
    """A block's extra hash keys, as the snapshot wrote them (repr of each tuple)."""
    if not link.extra_keys:
        return []
    try:
        keys = ast.literal_eval(f"[{link.extra_keys}]")
    except (ValueError, SyntaxError):
        return []
    return [key for key in keys if isinstance(key, tuple) and key]


def _arrival(record: RequestRecord) -> str:
    """What arrived and what was hashed on arrival, under which salt or LoRA: the
    request's own snapshot record (its prompt, its chain and the chain's extra keys)."""
    hashed = len(record.chain)
    blocks = "1 full block" if hashed == 1 else f"{hashed:,} full blocks"
    text = f"{record.request_id} arrived with {record.num_prompt_tokens:,} prompt tokens"
    if not hashed:
        text += ": no full block, so nothing was hashed"
    else:
        keys = _extra_keys(record.chain[0])
        salt = next((k[1] for k in keys if k[0] == "cache_salt" and len(k) > 1), None)
        lora = next((k[1] for k in keys if k[0] == "lora" and len(k) > 1), None)
        under = []
        if salt is not None:
            under.append(f'cache_salt "{salt}"')
        if lora is not None:
            under.append(f'LoRA "{lora}"')
        text += f"; {blocks} hashed on arrival"
        text += f", under {' and '.join(under)}" if under else ", with no salt or LoRA"
    if record.skip_reading_prefix_cache:
        text += "; it skips the cache lookup (it wants prompt logprobs)"
    return text + f". Its status: {record.status.lower()}."
