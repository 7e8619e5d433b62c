"""Blocks, the free block queue and block hashing (vLLM's ``v1/core/kv_cache_utils.py``).

Standard library only, so the same file runs in CPython and in Pyodide.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NewType

from engine.vllm.multimodal import get_mm_features_in_window
from engine.vllm.prompt_embeds import tensor_data

if TYPE_CHECKING:
    from engine.vllm.request import Request

# A block hash is the digest of (parent hash, the block's token ids, extra keys).
BlockHash = NewType("BlockHash", bytes)
# The map's key: a block hash followed by the 4-byte big-endian KV-cache group id.
BlockHashWithGroupId = NewType("BlockHashWithGroupId", bytes)
# What KV events carry: by default the low 64 bits of the digest, as vLLM sends them.
ExternalBlockHash = bytes | int

HashFunction = Callable[[Any], bytes]

DEFAULT_NONE_HASH_SEED = "vllm-none-hash"


def sha256(obj: Any) -> bytes:
    """vLLM's default hash function: SHA-256 over the input's pickle.

    Pickle output for the types a hash input holds (bytes, ints, strings, None and
    tuples of them) is the same on every CPython, the browser's included, so these
    digests are byte for byte the ones vLLM computes for the same blocks.
    """
    return hashlib.sha256(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)).digest()


def init_none_hash(hash_fn: HashFunction, seed: str = DEFAULT_NONE_HASH_SEED) -> None:
    """Set NONE_HASH, the parent hash of every chain's first block.

    vLLM derives it from a fixed seed for cryptographic hashes, so independent
    processes (here: CPython and the browser) agree on every block hash.
    """
    global NONE_HASH
    NONE_HASH = BlockHash(hash_fn(seed))


NONE_HASH: BlockHash = BlockHash(sha256(DEFAULT_NONE_HASH_SEED))


def hash_block_tokens(
    hash_function: HashFunction,
    parent_block_hash: BlockHash | None,
    curr_block_token_ids: Sequence[int],
    extra_keys: tuple[Any, ...] | None = None,
) -> BlockHash:
    """Hash one full block, chained to its parent: equal prefixes give equal hashes.

    Lookups trust the hash and never re-check the tokens, so a collision would
    be a false hit; SHA-256 (the default) makes one practically impossible.
    """
    if not parent_block_hash:
        parent_block_hash = NONE_HASH
    return BlockHash(hash_function((parent_block_hash, tuple(curr_block_token_ids), extra_keys)))


def make_block_hash_with_group_id(block_hash: BlockHash, group_id: int) -> BlockHashWithGroupId:
    return BlockHashWithGroupId(block_hash + group_id.to_bytes(4, "big", signed=False))


def get_block_hash(key: BlockHashWithGroupId) -> BlockHash:
    return BlockHash(key[:-4])


def maybe_convert_block_hash(block_hash: BlockHash, use_int: bool = True) -> ExternalBlockHash:
    """KV events carry the low 64 bits of the digest as an int unless told otherwise."""
    if use_int:
        return int.from_bytes(block_hash[-8:], "big")
    return block_hash


def _gen_mm_extra_hash_keys(
    request: Request, start_token_idx: int, end_token_idx: int, start_mm_idx: int
) -> tuple[list[Any], int]:
    """One ``("mm", identifier, offset)`` per multimodal item the block reaches, and the
    index of the item the next block starts looking from.

    The offset is where the item starts relative to the block's first token: negative
    when the item began in an earlier block, so the same image at another position gives
    other keys even where the placeholder tokens are the same.
    """
    extra_keys: list[Any] = []
    mm_features = request.mm_features
    if not mm_features:
        return extra_keys, start_mm_idx
    last_pos = mm_features[-1].mm_position
    if last_pos.offset + last_pos.length <= start_token_idx:
        # Past every item (late prefill, decode): nothing to look at.
        return extra_keys, start_mm_idx
    if start_mm_idx < 0:
        # A negative index counts from the last item, as in vLLM.
        start_mm_idx += len(mm_features)

    curr_mm_idx = start_mm_idx
    while curr_mm_idx < len(mm_features):
        position = mm_features[curr_mm_idx].mm_position
        item_end = position.offset + position.length
        if end_token_idx <= position.offset:
            break  # the block ends before this item
        if start_token_idx >= item_end:
            curr_mm_idx += 1  # the block starts after this item
            continue
        extra_keys.append(
            ("mm", mm_features[curr_mm_idx].identifier, position.offset - start_token_idx)
        )
        if end_token_idx < item_end:
            break  # the item goes on into the next block, which starts from it
        curr_mm_idx += 1  # the item ends here; the next one may start in this block too
    return extra_keys, curr_mm_idx


def _gen_lora_extra_hash_keys(request: Request) -> list[tuple[str, str, str]]:
    """The adapter's name and path: re-pointing a name at other weights changes the key."""
    if request.lora_name is None or request.lora_path is None:
        return []
    return [("lora", request.lora_name, request.lora_path)]


def _gen_prompt_embeds_extra_hash_keys(
    request: Request, start_token_idx: int, end_token_idx: int
) -> list[tuple[str, bytes]]:
    """The SHA-256 digest of the block's rows of prompt embeddings, once per block range.

    Every block of a request with embeddings gets one, even a block of plain tokens (its
    rows are zeros) and a block of generated tokens (no rows: the digest of no bytes).
    """
    if request.prompt_embeds is None:
        return []
    block_range = (start_token_idx, end_token_idx)
    embeds_hash = request._prompt_embeds_per_block_hashes.get(block_range)
    if embeds_hash is None:
        block_prompt_embeds = request.prompt_embeds[start_token_idx:end_token_idx]
        embeds_hash = hashlib.sha256(tensor_data(block_prompt_embeds)).digest()
        request._prompt_embeds_per_block_hashes[block_range] = embeds_hash
    return [("prompt_embeds", embeds_hash)]


def generate_block_hash_extra_keys(
    request: Request, start_token_idx: int, end_token_idx: int, start_mm_idx: int
) -> tuple[tuple[Any, ...] | None, int]:
    """What changes a block's KV besides its token ids (None when nothing does), and the
    multimodal index the next block starts from.

    vLLM's order: LoRA, the multimodal items, the cache salt (first block only), the
    prompt embeddings.
    """
    mm_extra_keys, new_start_mm_idx = _gen_mm_extra_hash_keys(
        request, start_token_idx, end_token_idx, start_mm_idx
    )
    lora_extra_keys = _gen_lora_extra_hash_keys(request)
    cache_salt_keys: list[tuple[str, str]] = (
        [("cache_salt", request.cache_salt)] if start_token_idx == 0 and request.cache_salt else []
    )
    prompt_embeds_keys = _gen_prompt_embeds_extra_hash_keys(request, start_token_idx, end_token_idx)
    extra_keys: list[Any] = [
        *lora_extra_keys,
        *mm_extra_keys,
        *cache_salt_keys,
        *prompt_embeds_keys,
    ]
    return (tuple(extra_keys) if extra_keys else None), new_start_mm_idx


def to_event_extra_keys(
    extra_keys: Sequence[tuple[Any, ...] | None],
) -> tuple[tuple[Any, ...] | None, ...] | None:
    """The extra keys as a BlockStored event publishes them: untagged, one entry per block.

    The hash input tags each key with its source (``("cache_salt", salt)``); the event
    keeps the shape its consumers parse: the bare value (the LoRA's name, the salt, the
    embeddings' digest), and a multimodal item as ``(identifier, offset)``.
    """
    if not extra_keys:
        return None
    return tuple(
        None if keys is None else tuple(key[1:] if key[0] == "mm" else key[1] for key in keys)
        for keys in extra_keys
    )


def get_request_block_hasher(
    block_size: int, hash_function: HashFunction
) -> Callable[[Request], list[BlockHash]]:
    """Return a function that hashes a request's new *full* blocks, chaining on."""

    def request_block_hasher(request: Request) -> list[BlockHash]:
        start_token_idx = len(request.block_hashes) * block_size
        if start_token_idx + block_size > request.num_tokens:
            return []
        # Going on from a later block: start from the first item that block may reach.
        curr_mm_idx = 0
        mm_features = request.mm_features
        if start_token_idx > 0 and mm_features:
            last_mm_pos = mm_features[-1].mm_position
            if last_mm_pos.offset + last_mm_pos.length > start_token_idx:
                curr_mm_idx, _ = get_mm_features_in_window(
                    mm_features, start_token_idx, start_token_idx + block_size
                )
        prev_block_hash = request.block_hashes[-1] if request.block_hashes else None
        new_block_hashes: list[BlockHash] = []
        while start_token_idx + block_size <= request.num_tokens:
            end_token_idx = start_token_idx + block_size
            extra_keys, curr_mm_idx = generate_block_hash_extra_keys(
                request, start_token_idx, end_token_idx, curr_mm_idx
            )
            block_tokens = request.all_token_ids[start_token_idx:end_token_idx]
            block_hash = hash_block_tokens(hash_function, prev_block_hash, block_tokens, extra_keys)
            new_block_hashes.append(block_hash)
            prev_block_hash = block_hash
            start_token_idx = end_token_idx
        return new_block_hashes

    return request_block_hasher


@dataclass(eq=False, slots=True)
class KVCacheBlock:
    """One KV-cache block: who holds it (ref_cnt) and which prefix it stores (hash)."""

    block_id: int
    ref_cnt: int = 0
    # The key under which the block sits in the hash map, or None while it is
    # not a full cached block.
    _block_hash: BlockHashWithGroupId | None = None
    prev_free_block: KVCacheBlock | None = field(default=None, repr=False)
    next_free_block: KVCacheBlock | None = field(default=None, repr=False)
    is_null: bool = False

    @property
    def block_hash(self) -> BlockHashWithGroupId | None:
        return self._block_hash

    def set_block_hash(self, block_hash: BlockHashWithGroupId) -> None:
        assert self._block_hash is None, "The block already has a hash. This should not happen."
        self._block_hash = block_hash

    def reset_hash(self) -> None:
        self._block_hash = None


class FreeKVCacheBlockQueue:
    """The free blocks as a doubly linked list, so a cache hit leaves it in O(1).

    Eviction order: the head is reused first. Blocks start in id order. Freed
    blocks without a hash go to the head (they can never be hit, so reuse them
    first); freed blocks with a hash go to the tail, so the least recently freed
    cached block is evicted first. A request's blocks are freed tail-first, so
    within one request the deeper blocks (less likely to be shared) go first.
    """

    def __init__(self, blocks: list[KVCacheBlock]) -> None:
        self.num_free_blocks = len(blocks)
        # Sentinels with block_id -1 spare every operation its edge cases.
        self.fake_free_list_head = KVCacheBlock(block_id=-1)
        self.fake_free_list_tail = KVCacheBlock(block_id=-1)
        previous = self.fake_free_list_head
        for block in blocks:
            previous.next_free_block = block
            block.prev_free_block = previous
            previous = block
        previous.next_free_block = self.fake_free_list_tail
        self.fake_free_list_tail.prev_free_block = previous

    def popleft(self) -> KVCacheBlock:
        first = self.fake_free_list_head.next_free_block
        if first is None or first is self.fake_free_list_tail:
            raise ValueError("No free blocks available")
        self.remove(first)
        return first

    def popleft_n(self, n: int) -> list[KVCacheBlock]:
        """The first ``n`` free blocks, unlinked in one walk from the head (as vLLM
        does: a prompt of thousands of blocks takes them in one call)."""
        assert self.num_free_blocks >= n, f"Cannot pop {n} blocks from {self.num_free_blocks}"
        taken: list[KVCacheBlock] = []
        block = self.fake_free_list_head.next_free_block
        for _ in range(n):
            assert block is not None and block is not self.fake_free_list_tail
            taken.append(block)
            following = block.next_free_block
            block.prev_free_block = block.next_free_block = None
            block = following
        assert block is not None
        self.fake_free_list_head.next_free_block = block
        block.prev_free_block = self.fake_free_list_head
        self.num_free_blocks -= n
        return taken

    def remove(self, block: KVCacheBlock) -> None:
        prev_block, next_block = block.prev_free_block, block.next_free_block
        if prev_block is None or next_block is None:
            raise RuntimeError(f"remove() called on an invalid block: {block}")
        prev_block.next_free_block = next_block
        next_block.prev_free_block = prev_block
        block.prev_free_block = block.next_free_block = None
        self.num_free_blocks -= 1

    def _insert_after(self, anchor: KVCacheBlock, blocks: Iterable[KVCacheBlock]) -> None:
        """Link ``blocks`` in order right after ``anchor``."""
        after = anchor.next_free_block
        assert after is not None
        for block in blocks:
            anchor.next_free_block = block
            block.prev_free_block = anchor
            anchor = block
            self.num_free_blocks += 1
        anchor.next_free_block = after
        after.prev_free_block = anchor

    def append(self, block: KVCacheBlock) -> None:
        self.append_n([block])

    def append_n(self, blocks: Sequence[KVCacheBlock]) -> None:
        """Put ``blocks`` at the tail, keeping their order: they are evicted last."""
        last = self.fake_free_list_tail.prev_free_block
        assert last is not None
        self._insert_after(last, blocks)

    def prepend_n(self, blocks: Sequence[KVCacheBlock]) -> None:
        """Put ``blocks`` at the head, keeping their order: the first is reused first."""
        self._insert_after(self.fake_free_list_head, blocks)

    def get_all_free_blocks(self) -> list[KVCacheBlock]:
        """The free blocks from head (reused first) to tail."""
        result = []
        block = self.fake_free_list_head.next_free_block
        while block is not None and block is not self.fake_free_list_tail:
            result.append(block)
            block = block.next_free_block
        return result
