"""Narration templates for SGLang timelines, filled from the step's own data.

The SGLang counterpart of engine/lab/play/vllm/narration.py: a text says ``{inserted}`` or
``{S2.hit_tokens}``, never a node id, a slot or a count by hand. Placeholders:

- node ids, written ``n3`` or ``n3, n5 and n7`` (the root is ``the root``):
  ``inserted`` (nodes an insert added), ``split`` (nodes a split made: the upper part
  of a cut node), ``split_children`` (the nodes cut: they keep the rest),
  ``evicted``, ``evictable_leaves``, ``locked`` (nodes with lock_ref > 0, the root
  left out), ``nodes`` (every node but the root); each has ``.count`` and ``[i]``;
- slots, written ``slot 5`` or ``slots 1 to 22`` (``pages 3 and 4`` with pages):
  ``allocated``, ``freed``, ``taken_and_freed`` (handed out and back within the step),
  ``free_slots`` (the allocator's order: the front is taken first), ``evicted_slots``;
- counts: ``num_free``, ``num_slots``, ``page_size``, ``num_nodes``, ``tree_tokens``,
  ``evictable_size``, ``protected_size``, ``evicted_tokens`` (this step),
  ``stats.queries``, ``stats.hits``, ``stats.evicted_tokens``, ``stats.evicted_nodes``,
  ``stats.splits``, ``stats.resets``;
- requests: ``admitted`` (this step's prefill batch), ``sat_out`` (the running requests a
  prefill step did not decode), ``decoded`` (this step's decode batch), ``finished``,
  ``retracted`` (this step, in the order retracted), ``waiting``, ``running`` (now, the
  waiting queue in its order), written ``S1 and S2``;
  ``new_token_ratio`` (after this step's retraction, written ``1.0000``; none: empty);
- per request, by its id: ``{S2.hit_tokens}`` (its matched prefix at admission),
  ``{S2.missed_tokens}``, ``{S2.prompt_tokens}``, ``{S2.num_tokens}``,
  ``{S2.output_tokens}`` (generated so far), ``{S2.max_new_tokens}``,
  ``{S2.slots}`` (its row of KV slots), ``{S2.node}`` (where its last match ended),
  ``{S2.path}`` (the nodes from the root to there), ``{S2.walk}`` and
  ``{S2.walk_tokens}`` (this step's admission match: the nodes it walked and the
  tokens it matched), ``{S2.matched}`` (what lpm ranks it by), ``{S2.position}``
  (1-based, in the waiting queue), ``{S2.extra_key}``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.lab.play.sglang.facts import SGLangStepFacts, Walk
from engine.lab.play.sglang.snapshot import ROOT_ID, SGLangRequestRecord, SGLangSnapshot
from engine.lab.shared.placeholders import (
    FactSentences,
    LabelList,
    PromptCounts,
    fact_sentences,
    fill_placeholders,
    id_runs,
    join_words,
)


def node_label(node_id: int) -> str:
    return "the root" if node_id == ROOT_ID else f"n{node_id}"


class NodeList(LabelList[int]):
    """Node ids, written ``n3, n5 and n7``."""

    empty = "no node"

    def label(self, item: int) -> str:
        return node_label(item)


class SlotList(LabelList[int]):
    """KV slots, written ``slot 5``, ``slots 1 to 22`` or ``slots 3, 4 and 9 to 12``;
    with pages (``page_size > 1``) as pages: ``page 3``, ``pages 3 to 5``. ``.count``
    counts the slots; ``[i]`` is the i-th slot or page."""

    def __init__(self, slots: Iterable[int], page_size: int = 1) -> None:
        super().__init__(slots)
        self.page_size = page_size

    @property
    def units(self) -> tuple[int, ...]:
        if self.page_size == 1:
            return self.ids
        return tuple(dict.fromkeys(s // self.page_size for s in self.ids))

    def __getitem__(self, index: int) -> str:
        word = "slot" if self.page_size == 1 else "page"
        return f"{word} {self.units[index]}"

    def __str__(self) -> str:
        word = "slot" if self.page_size == 1 else "page"
        units = self.units
        if not units:
            return f"no {word}"
        parts = [
            f"{run[0]} to {run[-1]}" if len(run) > 1 else str(run[0]) for run in id_runs(units)
        ]
        return f"{word}{'s' if len(units) > 1 else ''} " + join_words(parts, "")


class RequestList(LabelList[str]):
    """Request ids, written ``S1 and S2`` (``none``)."""


@dataclass(frozen=True)
class SGLangRequestFacts(PromptCounts):
    view: SGLangRequestRecord
    snapshot: SGLangSnapshot
    facts: SGLangStepFacts

    @property
    def _cached_tokens(self) -> int:
        return self.view.hit_tokens

    @property
    def output_tokens(self) -> int:
        return self.view.num_output_tokens

    @property
    def max_new_tokens(self) -> int:
        return self.view.max_new_tokens

    @property
    def slots(self) -> SlotList:
        return SlotList(self.view.kv_row, self.snapshot.page_size)

    @property
    def node(self) -> NodeList:
        return NodeList([] if self.view.last_node is None else [self.view.last_node])

    @property
    def path(self) -> NodeList:
        last = self.view.last_node
        known = {n.node_id for n in self.snapshot.nodes}
        return NodeList(self.snapshot.path(last) if last in known and last is not None else ())

    def _walk(self) -> Walk | None:
        walks = self.facts.walks_of(self.view.request_id, "admit")
        return walks[-1] if walks else None

    @property
    def walk(self) -> NodeList:
        walk = self._walk()
        return NodeList(walk.path if walk else ())

    @property
    def walk_tokens(self) -> int:
        walk = self._walk()
        return walk.matched_tokens if walk else 0

    @property
    def matched(self) -> int:
        return self.view.num_matched_prefix_tokens

    @property
    def position(self) -> int:
        return self.snapshot.waiting.index(self.view.request_id) + 1

    @property
    def extra_key(self) -> str:
        return str(self.view.extra_key)


def sglang_narration_context(facts: SGLangStepFacts, snapshot: SGLangSnapshot) -> dict[str, Any]:
    """Every name an SGLang narration template may use at this step."""
    page = snapshot.page_size
    context: dict[str, Any] = {
        r.request_id: SGLangRequestFacts(r, snapshot, facts) for r in snapshot.requests
    }
    context.update(
        inserted=NodeList(facts.inserted),
        split=NodeList(facts.split_nodes),
        split_children=NodeList(s.child for s in facts.splits),
        evicted=NodeList(facts.evicted),
        evictable_leaves=NodeList(snapshot.evictable_leaves),
        locked=NodeList(n.node_id for n in snapshot.nodes if n.lock_ref and n.node_id != ROOT_ID),
        nodes=NodeList(n.node_id for n in snapshot.nodes if n.node_id != ROOT_ID),
        allocated=SlotList(facts.allocated, page),
        freed=SlotList(facts.freed, page),
        taken_and_freed=SlotList(facts.taken_and_freed, page),
        free_slots=SlotList(snapshot.free_slots, page),
        evicted_slots=SlotList((s for e in facts.evictions for s in e.slots), page),
        num_free=len(snapshot.free_slots),
        num_slots=snapshot.num_slots,
        page_size=page,
        num_nodes=len(snapshot.nodes) - 1,
        tree_tokens=snapshot.tree_tokens,
        evictable_size=snapshot.evictable_size,
        protected_size=snapshot.protected_size,
        evicted_tokens=facts.evicted_tokens,
        stats=snapshot.counters,
        admitted=RequestList(facts.admitted),
        sat_out=RequestList(facts.sat_out),
        decoded=RequestList(facts.decoded),
        finished=RequestList(facts.finished),
        retracted=RequestList(facts.retraction.retracted if facts.retraction else ()),
        new_token_ratio=f"{facts.retraction.new_ratio:.4f}" if facts.retraction else "",
        waiting=RequestList(snapshot.waiting),
        running=RequestList(snapshot.running),
    )
    return context


def fill_sglang_narration(template: str, facts: SGLangStepFacts, snapshot: SGLangSnapshot) -> str:
    return fill_placeholders(template, sglang_narration_context(facts, snapshot))


# What the tree and the pool did, one sentence a kind, after what the batch did.
TREE_SENTENCES: FactSentences = {
    "splits": "A match ended inside a node, so it was split: {split} is new.",
    "allocated": "Handed out from the front of the free list: {allocated}.",
    "inserted": "Inserted into the tree: {inserted}.",
    "evictions": "Evicted {evicted} ({evicted_tokens} tokens), leaves first: {evicted_slots} "
    "went back to the pool.",
    "finished": "{finished} finished and unlocked its path.",
    "taken_and_freed": "{taken_and_freed} were taken and freed within this step.",
}


def describe_sglang_step(
    facts: SGLangStepFacts, before: SGLangSnapshot | None, after: SGLangSnapshot
) -> str:
    """A template for a step nobody wrote a text for: one sentence per kind of thing
    the tree and the pool did."""
    if before is None:
        return (
            "An empty radix tree (only the root) over a pool of {num_slots} KV slots "
            "(page size {page_size}); {num_free} are free."
        )
    known = {r.request_id for r in before.requests}
    arrived = [r for r in after.requests if r.request_id not in known]
    sentences = [
        f"{r.request_id} arrived with {r.num_prompt_tokens:,} prompt tokens"
        + (f' under extra_key "{r.extra_key}"' if r.extra_key is not None else "")
        + "; it waits: nothing is matched until a step schedules it."
        for r in arrived
    ]
    if facts.admitted:
        hits = after.counters.hits - before.counters.hits
        queries = after.counters.queries - before.counters.queries
        sentences.append(
            f"Admitted {{admitted}}: {hits:,} of {queries:,} prompt tokens were in the tree."
        )
    if facts.sat_out:
        sentences.append(
            "This step ran that prefill batch alone: {sat_out} did not decode (SGLang decodes "
            "only in a step that admits nothing)."
        )
    if facts.retraction is not None:
        sentences.append(
            "Nothing was admitted, so the running batch was to decode, but it could not get "
            "its slots: {retracted} went back to the waiting queue, their slots freed and not "
            "cached; new_token_ratio is now {new_token_ratio}."
        )
    if facts.decoded:
        sentences.append(
            "The rest decoded: {decoded}."
            if facts.retraction is not None
            else "Nothing was admitted, so the running batch decoded: {decoded}."
        )
    sentences += fact_sentences(facts, TREE_SENTENCES)
    return " ".join(sentences) or "The tree and the pool did not change."
