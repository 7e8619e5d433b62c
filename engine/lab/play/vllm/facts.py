"""What the GPU block pool did during one step, block by block, in the order it happened.

A snapshot shows the state after a step; it cannot show a block that was taken
from the free queue and given back within the same step (it looks untouched).
The recorder watches the pool's own entry points, so the narration can name
such blocks and a test can insist that it does. It is lab machinery, like the
tracer: it wraps one pool instance and changes nothing the pool does.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.lab.play.line_tracer import untraced
from engine.vllm.block_pool import BlockPool
from engine.vllm.kv_cache_utils import KVCacheBlock


@dataclass(frozen=True)
class StepFacts:
    """Block ids per kind of pool operation, each in the order the pool did it."""

    allocated: tuple[int, ...] = ()  # handed out by get_new_blocks (ref_cnt 0 -> 1)
    hit: tuple[int, ...] = ()  # touched as a cache hit (ref_cnt + 1)
    cached: tuple[int, ...] = ()  # given a hash by cache_full_blocks
    evicted: tuple[int, ...] = ()  # lost their hash when handed out (or by evict_blocks)
    freed_to_head: tuple[int, ...] = ()  # reached ref_cnt 0 without a hash
    freed_to_tail: tuple[int, ...] = ()  # reached ref_cnt 0 with a hash
    released: tuple[int, ...] = ()  # lost a reference but are still held by another request
    cleared: tuple[int, ...] = ()  # lost their hash in a successful reset_prefix_cache
    # (operation, block id) in order, so "taken, then freed" can be told from "freed, then taken"
    order: tuple[tuple[str, int], ...] = ()

    @property
    def freed(self) -> tuple[int, ...]:
        return tuple(b for op, b in self.order if op in ("freed_to_head", "freed_to_tail"))

    @property
    def taken_and_freed(self) -> tuple[int, ...]:
        """Blocks handed out and back in the free queue before the step ended, in the
        order they were handed out (a narration reads a list as the order of taking)."""
        taken: list[int] = []
        freed: set[int] = set()
        for op, block_id in self.order:
            if op == "allocated":
                taken.append(block_id)
                freed.discard(block_id)
            elif op.startswith("freed"):
                freed.add(block_id)
        return tuple(dict.fromkeys(b for b in taken if b in freed))


@dataclass
class _Record:
    order: list[tuple[str, int]] = field(default_factory=list)

    def add(self, op: str, blocks: Iterable[KVCacheBlock]) -> None:
        self.order.extend((op, b.block_id) for b in blocks if not b.is_null)

    def facts(self) -> StepFacts:
        def ids(op: str) -> tuple[int, ...]:
            return tuple(b for o, b in self.order if o == op)

        kinds = [f for f in StepFacts.__dataclass_fields__ if f != "order"]
        return StepFacts(**{kind: ids(kind) for kind in kinds}, order=tuple(self.order))


def _hashed(blocks: Iterable[KVCacheBlock]) -> set[int]:
    """Ids of the blocks that have a hash, read without the tracer seeing it:
    the code panel shows what the engine ran, not what the recorder looked at."""
    with untraced():
        return {b.block_id for b in blocks if b.block_hash is not None}


class PoolRecorder:
    """Wraps one BlockPool's entry points on the instance; ``take()`` hands out a step's facts."""

    def __init__(self, pool: BlockPool) -> None:
        self.pool = pool
        self._record = _Record()
        self._wrap("get_new_blocks", self._after_get_new_blocks)
        self._wrap("touch", self._around_touch)
        self._wrap("cache_full_blocks", self._around_cache_full_blocks)
        self._wrap("_maybe_evict_cached_block", self._after_evict)
        self._wrap("free_blocks", self._around_free_blocks)
        self._wrap("reset_prefix_cache", self._around_reset)

    def take(self) -> StepFacts:
        facts, self._record = self._record.facts(), _Record()
        return facts

    def _wrap(self, name: str, around: Callable[..., Any]) -> None:
        original = getattr(self.pool, name)
        # The call's arguments by name, defaults filled in, as Signature.bind gives
        # them, without its cost (a wrapped method runs dozens of times a step).
        parameters = inspect.signature(original).parameters
        names = tuple(parameters)
        defaults = {n: p.default for n, p in parameters.items() if p.default is not p.empty}

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if len(args) > len(names) or not kwargs.keys() <= parameters.keys():
                raise TypeError(f"{name}() got arguments it does not take")
            arguments = {**defaults, **dict(zip(names, args, strict=False)), **kwargs}
            return around(original, arguments)

        setattr(self.pool, name, wrapper)

    def _after_get_new_blocks(self, original: Callable[..., Any], args: dict[str, Any]) -> Any:
        blocks = original(**args)
        self._record.add("allocated", blocks)
        return blocks

    def _around_touch(self, original: Callable[..., Any], args: dict[str, Any]) -> Any:
        blocks = list(args["blocks"])
        result = original(blocks)
        self._record.add("hit", blocks)
        return result

    def _around_cache_full_blocks(self, original: Callable[..., Any], args: dict[str, Any]) -> Any:
        blocks = args["blocks"]
        before = _hashed(blocks)
        result = original(**args)
        after = _hashed(blocks)
        self._record.add("cached", [b for b in blocks if b.block_id in after - before])
        return result

    def _after_evict(self, original: Callable[..., Any], args: dict[str, Any]) -> Any:
        evicted = original(**args)
        if evicted:
            self._record.add("evicted", [args["block"]])
        return evicted

    def _around_free_blocks(self, original: Callable[..., Any], args: dict[str, Any]) -> Any:
        blocks = list(args["ordered_blocks"])
        hashed = _hashed(blocks)
        result = original(blocks)
        for block in blocks:
            if block.is_null:
                continue
            if block.ref_cnt == 0:
                to_tail = block.block_id in hashed and self.pool.enable_caching
                op = "freed_to_tail" if to_tail else "freed_to_head"
            else:
                op = "released"
            self._record.add(op, [block])
        return result

    def _around_reset(self, original: Callable[..., Any], args: dict[str, Any]) -> Any:
        hashed = _hashed(self.pool.blocks)
        succeeded = original(**args)
        if succeeded:
            self._record.add("cleared", [b for b in self.pool.blocks if b.block_id in hashed])
        return succeeded
