"""What SGLang's tree and slot pool did during one step, in the order it happened.

The SGLang counterpart of engine/lab/play/vllm/facts.py: a snapshot shows the tree after
a step, not the walks that matched it, the node a split made, the leaves evicted or
the slots taken and given back within the step. The recorder wraps one model's
entry points on the instances (the tree, its allocator, the scheduler and its
policy) and changes nothing they do; engine/sglang knows nothing of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.lab.play.line_tracer import untraced
from engine.lab.play.sglang.snapshot import NodeIds
from engine.sglang.radix_cache import InsertResult, MatchResult, RadixCache, RadixKey, TreeNode
from engine.sglang.scheduler import Req, Scheduler

# Why the tree was walked: the lpm policy sizing up the waiting queue, admission
# matching a request, or a request's sequence going into the tree (insert, then the
# checkpoint's match of what it inserted).
Phase = str
PHASES = ("priority", "admit", "insert", "checkpoint")


@dataclass(frozen=True)
class Walk:
    """One walk down the tree: a ``match_prefix`` or an ``insert``."""

    phase: Phase
    request_id: str | None
    key_tokens: int  # the key it was given (before page alignment)
    matched_tokens: int  # match: the prefix found; insert: what was cached already
    path: tuple[int, ...]  # the nodes it ended on, from the root's child down
    split: int | None  # the node a split made during this walk (its new upper part)
    new_node: int | None = None  # insert: the node it added for the rest of the key


@dataclass(frozen=True)
class Split:
    node: int  # the new node: the first ``tokens`` tokens of ``child``'s old key
    child: int  # the node that was cut; it keeps the rest and hangs under ``node``
    tokens: int
    phase: Phase


@dataclass(frozen=True)
class Eviction:
    node: int
    tokens: int
    slots: tuple[int, ...]  # the slots it gave back


@dataclass(frozen=True)
class Retraction:
    """A decode that could not get its pages (``Scheduler.retract_decode``)."""

    retracted: tuple[str, ...]  # in the order retracted (back to the waiting queue so)
    aborted: tuple[str, ...]  # the last one, when even it alone did not fit
    tokens_gained: int  # free slots after, less free slots before
    old_ratio: float  # new_token_ratio before
    new_ratio: float  # and after


@dataclass(frozen=True)
class SGLangStepFacts:
    walks: tuple[Walk, ...] = ()
    splits: tuple[Split, ...] = ()
    inserted: tuple[int, ...] = ()  # nodes an insert added
    evictions: tuple[Eviction, ...] = ()
    allocated: tuple[int, ...] = ()  # slots handed out, in order
    freed: tuple[int, ...] = ()  # slots given back to the pool (evictions included)
    admitted: tuple[str, ...] = ()  # requests admitted, in order (the prefill batch)
    # a prefill step: the running requests it left waiting (SGLang runs a prefill batch
    # or a decode batch, never both: managers/scheduler.py:3992-4004)
    sat_out: tuple[str, ...] = ()
    decoded: tuple[str, ...] = ()  # a decode step: the batch that got a token, in order
    finished: tuple[str, ...] = ()
    retraction: Retraction | None = None
    # ("allocated" or "freed", slot) in order, so "taken, then freed" can be told
    # from "freed, then taken"
    order: tuple[tuple[str, int], ...] = ()

    @property
    def forward_mode(self) -> str | None:
        """The batch the step ran: "prefill", "decode" or None (no batch)."""
        if self.admitted:
            return "prefill"
        return "decode" if self.decoded else None

    @property
    def evicted(self) -> tuple[int, ...]:
        return tuple(e.node for e in self.evictions)

    @property
    def evicted_tokens(self) -> int:
        return sum(e.tokens for e in self.evictions)

    @property
    def split_nodes(self) -> tuple[int, ...]:
        return tuple(s.node for s in self.splits)

    @property
    def taken_and_freed(self) -> tuple[int, ...]:
        """Slots handed out and then given back within the step, in the order handed out
        (a slot freed by an eviction and then handed out is not one of them)."""
        taken: list[int] = []
        freed: set[int] = set()
        for op, slot in self.order:
            if op == "allocated":
                taken.append(slot)
                freed.discard(slot)
            else:
                freed.add(slot)
        return tuple(dict.fromkeys(s for s in taken if s in freed))

    def walks_of(self, request_id: str, phase: Phase | None = None) -> tuple[Walk, ...]:
        return tuple(
            w
            for w in self.walks
            if w.request_id == request_id and (phase is None or w.phase == phase)
        )


@dataclass
class _Record:
    walks: list[Walk] = field(default_factory=list)
    splits: list[Split] = field(default_factory=list)
    inserted: list[int] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    allocated: list[int] = field(default_factory=list)
    freed: list[int] = field(default_factory=list)
    admitted: list[str] = field(default_factory=list)
    sat_out: list[str] = field(default_factory=list)
    decoded: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    retraction: Retraction | None = None
    order: list[tuple[str, int]] = field(default_factory=list)

    def facts(self) -> SGLangStepFacts:
        return SGLangStepFacts(
            walks=tuple(self.walks),
            splits=tuple(self.splits),
            inserted=tuple(self.inserted),
            evictions=tuple(self.evictions),
            allocated=tuple(self.allocated),
            freed=tuple(self.freed),
            admitted=tuple(self.admitted),
            sat_out=tuple(self.sat_out),
            decoded=tuple(self.decoded),
            finished=tuple(self.finished),
            retraction=self.retraction,
            order=tuple(self.order),
        )


class TreeRecorder:
    """Wraps one model's entry points; ``take()`` hands out a step's facts.

    ``on_admitted`` is told of each schedule's admitted requests before anything else
    happens to them (their ``prefix_len`` is still the hit at admission)."""

    def __init__(
        self,
        scheduler: Scheduler,
        ids: NodeIds,
        on_admitted: Callable[[list[Req]], None],
    ) -> None:
        self.scheduler = scheduler
        self.cache: RadixCache = scheduler.tree_cache
        self.ids = ids
        self.on_admitted = on_admitted
        self._record = _Record()
        self._phase: Phase = "admit"
        self._request: str | None = None  # the request a checkpoint or insert is for
        self._queue: list[str | None] = []  # requests whose matches come next, in order
        self._split_in_walk: int | None = None
        self._in_split = False
        ids.mark_root(self.cache.root_node)
        wrap = self._wrap
        wrap(self.cache, "match_prefix", self._around_match)
        wrap(self.cache, "insert", self._around_insert)
        wrap(self.cache, "_split_node", self._around_split)
        wrap(self.cache, "_new_node", self._around_new_node)
        wrap(self.cache, "_delete_leaf", self._around_delete_leaf)
        wrap(self.cache, "reset", self._around_reset)
        wrap(scheduler.allocator, "alloc", self._around_alloc)
        wrap(scheduler.allocator, "free", self._around_free)
        wrap(scheduler.allocator, "free_segment", self._around_free)
        wrap(scheduler.policy, "calc_priority", self._around_calc_priority)
        wrap(scheduler, "schedule", self._around_schedule)
        wrap(scheduler, "checkpoint", self._around_checkpoint)
        wrap(scheduler, "release_kv_cache", self._around_release)
        wrap(scheduler, "retract_decode", self._around_retract)
        wrap(scheduler, "process_batch_result_prefill", self._around_prefill)
        wrap(scheduler, "process_batch_result_decode", self._around_decode)

    def take(self) -> SGLangStepFacts:
        facts, self._record = self._record.facts(), _Record()
        return facts

    @staticmethod
    def _wrap(target: object, name: str, around: Callable[..., Any]) -> None:
        original = getattr(target, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return around(original, *args, **kwargs)

        setattr(target, name, wrapper)

    # ---- the tree ----

    def _path(self, node: TreeNode) -> tuple[int, ...]:
        path: list[int] = []
        current: TreeNode | None = node
        while current is not None and current is not self.cache.root_node:
            path.append(self.ids.of(current))
            current = current.parent
        return tuple(reversed(path))

    def _next_request(self) -> str | None:
        return self._queue.pop(0) if self._queue else None

    def _around_match(self, original: Callable[..., MatchResult], key: RadixKey) -> MatchResult:
        request = self._request if self._phase == "checkpoint" else self._next_request()
        self._split_in_walk = None
        result = original(key)
        with untraced():
            self._record.walks.append(
                Walk(
                    phase=self._phase,
                    request_id=request,
                    key_tokens=len(key),
                    matched_tokens=result.device_prefix_len,
                    path=self._path(result.last_device_node),
                    split=self._split_in_walk,
                )
            )
        return result

    def _around_insert(
        self, original: Callable[..., InsertResult], key: RadixKey, *args: Any, **kwargs: Any
    ) -> InsertResult:
        phase, self._phase = self._phase, "insert"
        self._split_in_walk = None
        before = len(self._record.inserted)
        try:
            result = original(key, *args, **kwargs)
        finally:
            self._phase = phase
        with untraced():
            added = self._record.inserted[before:]
            self._record.walks.append(
                Walk(
                    phase="insert",
                    request_id=self._request,
                    key_tokens=len(key),
                    matched_tokens=result.prefix_len,
                    path=self._path(result.last_device_node),
                    split=self._split_in_walk,
                    new_node=added[-1] if added else None,
                )
            )
        return result

    def _around_split(
        self, original: Callable[..., TreeNode], key: RadixKey, child: TreeNode, split_len: int
    ) -> TreeNode:
        self._in_split = True
        try:
            new_node = original(key, child, split_len)
        finally:
            self._in_split = False
        with untraced():
            node_id = self.ids.of(new_node)
            self._record.splits.append(Split(node_id, self.ids.of(child), split_len, self._phase))
            self._split_in_walk = node_id
        return new_node

    def _around_new_node(
        self, original: Callable[..., TreeNode], *args: Any, **kwargs: Any
    ) -> TreeNode:
        node = original(*args, **kwargs)
        node_id = self.ids.of(node)  # numbered as it is built
        if not self._in_split:
            self._record.inserted.append(node_id)
        return node

    def _around_delete_leaf(self, original: Callable[..., None], node: TreeNode) -> None:
        with untraced():
            eviction = Eviction(self.ids.of(node), len(node.key), tuple(node.value or ()))
        original(node)
        self._record.evictions.append(eviction)

    def _around_reset(self, original: Callable[..., None]) -> None:
        original()
        self.ids.mark_root(self.cache.root_node)

    # ---- the slot pool ----

    def _free_slots(self) -> list[int]:
        with untraced():
            return list(self.scheduler.allocator.all_free_slots())

    def _around_alloc(self, original: Callable[..., list[int] | None], need: int) -> Any:
        slots = original(need)
        if slots is not None:
            self._record.allocated.extend(slots)
            self._record.order.extend(("allocated", s) for s in slots)
        return slots

    def _around_free(self, original: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        before = set(self._free_slots())
        original(*args, **kwargs)
        freed = [s for s in self._free_slots() if s not in before]
        self._record.freed.extend(freed)
        self._record.order.extend(("freed", s) for s in freed)

    # ---- the scheduler ----

    def _around_calc_priority(self, original: Callable[..., Any], queue: list[Req]) -> Any:
        phase, self._phase = self._phase, "priority"
        # lpm matches every waiting request once, in queue order, before it sorts
        self._queue = [r.rid for r in queue]
        try:
            return original(queue)
        finally:
            self._phase = phase
            # admission then matches them in the sorted order, until one does not fit
            self._queue = [r.rid for r in queue]

    def _around_schedule(self, original: Callable[..., list[Req]]) -> list[Req]:
        self._phase = "admit"
        admitted = original()
        self._queue = []
        self._record.admitted.extend(r.rid for r in admitted)
        self.on_admitted(admitted)
        return admitted

    def _around_prefill(self, original: Callable[..., list[Req]], batch: list[Req]) -> list[Req]:
        with untraced():
            # the running batch holds the prefill batch already (Scheduler.schedule)
            prefilling = {id(r) for r in batch}
            self._record.sat_out.extend(
                r.rid for r in self.scheduler.running if id(r) not in prefilling
            )
        return original(batch)

    def _around_decode(self, original: Callable[..., list[Req]], batch: list[Req]) -> list[Req]:
        self._record.decoded.extend(r.rid for r in batch)
        return original(batch)

    def _around_checkpoint(self, original: Callable[..., None], req: Req, up_to: int) -> None:
        phase, self._phase = self._phase, "checkpoint"
        request, self._request = self._request, req.rid
        try:
            original(req, up_to)
        finally:
            self._phase, self._request = phase, request

    def _around_release(
        self, original: Callable[..., None], req: Req, *, checkpoint: bool = True
    ) -> None:
        if checkpoint:  # a retracted request's KV is released without caching it
            self._record.finished.append(req.rid)
        request, self._request = self._request, req.rid
        try:
            original(req, checkpoint=checkpoint)
        finally:
            self._request = request

    def _around_retract(
        self, original: Callable[..., tuple[list[Req], float, list[Req]]], batch: list[Req]
    ) -> tuple[list[Req], float, list[Req]]:
        with untraced():
            available = self.scheduler.allocator.available_size()
            old_ratio = self.scheduler.new_token_ratio_tracker.current
        retracted, new_ratio, kept = original(batch)
        with untraced():
            gone = {id(r) for r in retracted} | {id(r) for r in kept}
            self._record.retraction = Retraction(
                retracted=tuple(r.rid for r in retracted),
                aborted=tuple(r.rid for r in batch if id(r) not in gone),
                tokens_gained=self.scheduler.allocator.available_size() - available,
                old_ratio=old_ratio,
                new_ratio=new_ratio,
            )
        return retracted, new_ratio, kept
