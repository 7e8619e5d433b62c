"""The block key's four extra items as vLLM 0.33.0 builds them (``generate_block_hash_extra_keys``
in ``v1/core/kv_cache_utils.py``): LoRA, the multimodal items, the cache salt, the prompt
embeddings, in that order. Hand-made placements; tests/fidelity checks random ones
against vLLM's own code."""

from __future__ import annotations

import hashlib
import struct

from engine.vllm.kv_cache_utils import (
    generate_block_hash_extra_keys,
    get_request_block_hasher,
    sha256,
    to_event_extra_keys,
)
from engine.vllm.multimodal import MultiModalFeatureSpec, PlaceholderRange
from engine.vllm.prompt_embeds import PromptEmbeds
from engine.vllm.request import Request

BS = 4


def image(identifier: str, offset: int, length: int) -> MultiModalFeatureSpec:
    return MultiModalFeatureSpec(None, "image", identifier, PlaceholderRange(offset, length))


def request(*items: MultiModalFeatureSpec, tokens: int = 16, **kwargs: object) -> Request:
    hasher = get_request_block_hasher(BS, sha256)
    return Request("r", [9] * tokens, block_hasher=hasher, mm_features=items, **kwargs)  # type: ignore[arg-type]


def keys_per_block(req: Request) -> list[tuple[object, ...] | None]:
    keys, mm_idx = [], 0
    for start in range(0, req.num_tokens - BS + 1, BS):
        block_keys, mm_idx = generate_block_hash_extra_keys(req, start, start + BS, mm_idx)
        keys.append(block_keys)
    return keys


def test_an_image_inside_a_block_marks_only_the_blocks_it_reaches() -> None:
    # Tokens 6..9: starts inside block 1 (offset 2), ends inside block 2 (offset -2).
    assert keys_per_block(request(image("cat", 6, 4))) == [
        None,
        (("mm", "cat", 2),),
        (("mm", "cat", -2),),
        None,
    ]


def test_a_block_wholly_inside_an_image_carries_its_negative_offset() -> None:
    assert keys_per_block(request(image("cat", 2, 12))) == [
        (("mm", "cat", 2),),
        (("mm", "cat", -2),),
        (("mm", "cat", -6),),
        (("mm", "cat", -10),),
    ]


def test_two_items_in_one_block_both_count_in_order() -> None:
    keys = keys_per_block(request(image("cat", 4, 1), image("dog", 6, 3)))
    assert keys == [None, (("mm", "cat", 0), ("mm", "dog", 2)), (("mm", "dog", -2),), None]


def test_same_text_other_image_shares_only_the_blocks_before_it() -> None:
    cat, dog = request(image("cat", 6, 4)), request(image("dog", 6, 4))
    assert cat.block_hashes[0] == dog.block_hashes[0]
    assert all(a != b for a, b in zip(cat.block_hashes[1:], dog.block_hashes[1:], strict=True))


def test_same_image_at_another_position_shares_nothing_from_there_on() -> None:
    here, there = request(image("cat", 6, 4)), request(image("cat", 5, 4))
    assert here.block_hashes[0] == there.block_hashes[0]
    # Block 3 lies after the image in both, yet the chain carries the difference on.
    assert all(a != b for a, b in zip(here.block_hashes[1:], there.block_hashes[1:], strict=True))


def test_same_image_same_place_hits_every_block() -> None:
    assert request(image("cat", 6, 4)).block_hashes == request(image("cat", 6, 4)).block_hashes


def test_hashing_goes_on_from_the_right_item_as_tokens_arrive() -> None:
    """Blocks hashed a few at a time (decode) get the keys of blocks hashed at once."""
    items = (image("cat", 3, 6), image("dog", 13, 2))
    whole = request(*items, tokens=20)
    grown = request(*items, tokens=5)
    for _ in range(15):
        grown.append_output_token_ids(9)
    assert grown.block_hashes == whole.block_hashes


def test_the_four_items_come_in_vllms_order() -> None:
    rows = [(1.0, 2.0)] * 8
    req = request(
        image("cat", 1, 2),
        tokens=8,
        cache_salt="s",
        lora_name="sql",
        prompt_embeds=PromptEmbeds(rows),
        prompt_is_token_ids=[True] * 8,
    )
    digest = hashlib.sha256(struct.pack("<8f", *[1.0, 2.0] * 4)).digest()
    first, _ = generate_block_hash_extra_keys(req, 0, BS, 0)
    assert first == (
        ("lora", "sql", "/adapters/sql"),
        ("mm", "cat", 1),
        ("cache_salt", "s"),
        ("prompt_embeds", digest),
    )
    assert to_event_extra_keys([first]) == (("sql", ("cat", 1), "s", digest),)


def test_embedded_positions_hold_token_zero_and_the_embeddings_tell_them_apart() -> None:
    mask = [True] * 4 + [False] * 4 + [True] * 4

    def embedded(value: float) -> Request:
        rows = [(0.0,)] * 4 + [(value,)] * 4 + [(0.0,)] * 4
        return request(tokens=12, prompt_embeds=PromptEmbeds(rows), prompt_is_token_ids=mask)

    one, two = embedded(0.5), embedded(0.25)
    assert one.all_token_ids[4:8] == [0, 0, 0, 0] == two.all_token_ids[4:8]
    assert one.block_hashes[0] == two.block_hashes[0]
    assert one.block_hashes[1] != two.block_hashes[1]
    # A block of plain tokens still carries the digest of its rows of zeros.
    zeros = hashlib.sha256(bytes(16)).digest()
    assert generate_block_hash_extra_keys(one, 0, 4, 0)[0] == (("prompt_embeds", zeros),)


def test_a_generated_block_carries_the_digest_of_no_embeddings() -> None:
    req = request(
        tokens=4, prompt_embeds=PromptEmbeds([(1.0,)] * 4), prompt_is_token_ids=[False] * 4
    )
    req.append_output_token_ids([5, 5, 5, 5])
    empty = hashlib.sha256(b"").digest()
    assert generate_block_hash_extra_keys(req, 4, 8, 0)[0] == (("prompt_embeds", empty),)
