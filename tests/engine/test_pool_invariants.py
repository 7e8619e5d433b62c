"""Property-based tests: the pool's invariants hold after every operation, whatever the order."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from engine.vllm.block_pool import BlockPool
from engine.vllm.kv_cache_manager import KeepModeKVCacheManager, cdiv
from engine.vllm.kv_cache_utils import get_block_hash, get_request_block_hasher, sha256
from engine.vllm.request import Request, RequestStatus

BLOCK_SIZE = 2
NUM_BLOCKS = 12
# Few distinct prompts over a small alphabet, so hits, shared prefixes and
# duplicate keys are common.
prompts = st.lists(st.integers(0, 2), min_size=1, max_size=12)


def pool_state(pool: BlockPool) -> dict[str, Any]:
    """Everything observable about the pool, for before/after comparisons."""
    return {
        "ref_cnts": [b.ref_cnt for b in pool.blocks],
        "hashes": [b.block_hash for b in pool.blocks],
        "queue": [b.block_id for b in pool.free_block_queue.get_all_free_blocks()],
        "map": [(k, [b.block_id for b in v]) for k, v in pool.cached_block_hash_to_block.items()],
    }


def check_free_queue_is_exactly_the_unreferenced_blocks(pool: BlockPool) -> None:
    queue = pool.free_block_queue
    forward = queue.get_all_free_blocks()
    ids = [b.block_id for b in forward]
    assert len(ids) == len(set(ids)) == queue.num_free_blocks
    expected = {b.block_id for b in pool.blocks if b.ref_cnt == 0 and not b.is_null}
    assert set(ids) == expected
    # the backward links agree with the forward ones
    backward = []
    block = queue.fake_free_list_tail.prev_free_block
    while block is not None and block is not queue.fake_free_list_head:
        backward.append(block.block_id)
        block = block.prev_free_block
    assert backward == ids[::-1]


def check_map_and_block_hashes_agree(pool: BlockPool) -> None:
    in_map = set()
    for key, blocks in pool.cached_block_hash_to_block.items():
        assert blocks, "an empty entry stayed in the map"
        for block in blocks:
            assert block.block_hash == key
            in_map.add(block.block_id)
    hashed = {b.block_id for b in pool.blocks if b.block_hash is not None}
    assert hashed == in_map


def check_null_block_is_never_queued_or_hashed(pool: BlockPool) -> None:
    null = pool.null_block
    assert null.block_id == 0 and null.is_null
    assert null.block_hash is None
    assert null not in pool.free_block_queue.get_all_free_blocks()


def check_pool(pool: BlockPool) -> None:
    """The pool's own invariants, whoever drives it."""
    check_free_queue_is_exactly_the_unreferenced_blocks(pool)
    check_map_and_block_hashes_agree(pool)
    check_null_block_is_never_queued_or_hashed(pool)


class PoolMachine(RuleBasedStateMachine):
    """Admission (first chunk only, as under chunked prefill), prefill, decode,
    free, resets and evictions, in any order; vLLM's defaults for admission."""

    full_sequence_must_fit = True
    watermark = 0.0

    def __init__(self) -> None:
        super().__init__()
        # keep mode's manager: its reset is vLLM 0.33.0's with the flag off, and keep's with it on
        self.manager = KeepModeKVCacheManager(NUM_BLOCKS, BLOCK_SIZE, watermark=self.watermark)
        self.pool = self.manager.block_pool
        self.hasher = get_request_block_hasher(BLOCK_SIZE, sha256)
        self.running: list[Request] = []
        self.count = 0

    @rule(prompt=prompts, salt=st.sampled_from([None, None, "u1"]), chunk=st.integers(1, 12))
    def admit(self, prompt: list[int], salt: str | None, chunk: int) -> None:
        self.count += 1
        request = Request(f"r{self.count}", prompt, block_hasher=self.hasher, cache_salt=salt)
        computed, num_computed = self.manager.get_computed_blocks(request)
        assert num_computed <= request.num_tokens - 1
        num_new_tokens = min(chunk, request.num_tokens - num_computed)
        before = pool_state(self.pool)
        new = self.manager.allocate_slots(
            request,
            num_new_tokens,
            num_computed,
            computed,
            full_sequence_must_fit=self.full_sequence_must_fit,
            has_scheduled_reqs=bool(self.running),
        )
        if new is None:
            assert pool_state(self.pool) == before, "a refused allocation changed the pool"
            return
        request.num_computed_tokens = num_computed + num_new_tokens
        request.status = RequestStatus.RUNNING
        self.running.append(request)
        if self.full_sequence_must_fit:
            # what the check promised: the rest of the prompt fits in the free blocks
            held = len(self.manager.req_to_blocks[request.request_id])
            assert self.pool.get_num_free_blocks() >= cdiv(request.num_tokens, BLOCK_SIZE) - held

    @precondition(lambda self: any(r.num_computed_tokens < r.num_tokens for r in self.running))
    @rule(data=st.data(), chunk=st.integers(1, 12))
    def prefill(self, data: st.DataObject, chunk: int) -> None:
        prefilling = [r for r in self.running if r.num_computed_tokens < r.num_tokens]
        request = data.draw(st.sampled_from(prefilling))
        num_new_tokens = min(chunk, request.num_tokens - request.num_computed_tokens)
        if self.manager.allocate_slots(request, num_new_tokens) is not None:
            request.num_computed_tokens += num_new_tokens

    @precondition(lambda self: any(r.num_computed_tokens == r.num_tokens for r in self.running))
    @rule(data=st.data())
    def decode(self, data: st.DataObject) -> None:
        decoding = [r for r in self.running if r.num_computed_tokens == r.num_tokens]
        request = data.draw(st.sampled_from(decoding))
        request.append_output_token_ids(data.draw(st.integers(0, 2)))
        if self.manager.allocate_slots(request, 1) is not None:
            request.num_computed_tokens += 1
        else:
            request._output_token_ids.pop()  # undo: keep the request consistent
            request._all_token_ids.pop()

    @precondition(lambda self: self.running)
    @rule(data=st.data())
    def free(self, data: st.DataObject) -> None:
        request = data.draw(st.sampled_from(self.running))
        self.running.remove(request)
        self.manager.free(request)

    @rule()
    def reset(self) -> None:
        before = pool_state(self.pool)
        held = before["ref_cnts"][1:] != [0] * (NUM_BLOCKS - 1)
        ok = self.manager.reset_prefix_cache()
        after = pool_state(self.pool)
        if ok:
            assert not held
            assert after["map"] == [] and after["queue"] == before["queue"]
        else:
            assert held
            assert after == before, "a refused reset changed the pool"

    @rule()
    def keep_reset(self) -> None:
        before = pool_state(self.pool)
        assert self.manager.reset_prefix_cache(allow_used_blocks=True)
        after = pool_state(self.pool)
        assert after["ref_cnts"] == before["ref_cnts"]
        assert after["queue"] == before["queue"]
        assert after["map"] == [] and set(after["hashes"]) == {None}

    @rule(block_ids=st.lists(st.integers(0, NUM_BLOCKS - 1), max_size=3))
    def evict(self, block_ids: list[int]) -> None:
        before = pool_state(self.pool)
        self.pool.evict_blocks(block_ids)
        after = pool_state(self.pool)
        assert after["ref_cnts"] == before["ref_cnts"]
        assert after["queue"] == before["queue"]

    @invariant()
    def pool_is_consistent(self) -> None:
        check_pool(self.pool)

    @invariant()
    def held_blocks_match_the_requests(self) -> None:
        refs = [0] * NUM_BLOCKS
        for request in self.running:
            for block in self.manager.req_to_blocks.get(request.request_id, []):
                refs[block.block_id] += 1
        assert refs[1:] == [b.ref_cnt for b in self.pool.blocks[1:]]

    @invariant()
    def hashed_blocks_hold_the_hash_of_their_position(self) -> None:
        # A cached block of a running request sits under that request's hash of
        # the same position: what a hit returns is the prefix it claims to be.
        for request in self.running:
            for position, block in enumerate(self.manager.req_to_blocks[request.request_id]):
                if block.block_hash is not None:
                    assert get_block_hash(block.block_hash) == request.block_hashes[position]


class PoolMachineFirstChunk(PoolMachine):
    """The admission check off: only the first chunk must fit."""

    full_sequence_must_fit = False


class PoolMachineWatermark(PoolMachine):
    """The check on, and 2 of the 12 blocks kept free for running requests."""

    watermark = 0.2


SETTINGS = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestPoolInvariants = PoolMachine.TestCase
TestPoolInvariants.settings = SETTINGS
TestPoolInvariantsFirstChunk = PoolMachineFirstChunk.TestCase
TestPoolInvariantsFirstChunk.settings = SETTINGS
TestPoolInvariantsWatermark = PoolMachineWatermark.TestCase
TestPoolInvariantsWatermark.settings = SETTINGS
