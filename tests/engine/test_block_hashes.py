"""Block hashes are pinned byte for byte: a faster serialisation must not change one.

The values were computed before the hashing was sped up; CPython and the browser
must agree on every block hash, and saved links and goldens carry them.
"""

from engine.vllm.kv_cache_utils import (
    NONE_HASH,
    get_request_block_hasher,
    hash_block_tokens,
    sha256,
)
from engine.vllm.request import Request


def test_none_hash_is_pinned() -> None:
    assert NONE_HASH.hex() == "d1b754db3e6b6330d6e411ac28708c6ba65e5ce5eeea7bf43f562c534c1d3305"


def test_chained_block_hashes_are_pinned() -> None:
    first = hash_block_tokens(sha256, None, list(range(16)))
    salted = hash_block_tokens(sha256, first, [7] * 16, (("cache_salt", "u1"),))
    partial = hash_block_tokens(sha256, salted, [0, 1, 2], (("lora", "a"), ("cache_salt", "x")))
    assert first.hex() == "aca7ac1a73318d0d6046941d66fd20f34d118adba092a2a4469dcb483a02f2d6"
    assert salted.hex() == "2e8c46e0454f654afa27edfa287a74dd3aa33c17977988a7993a1e3dd69fae52"
    assert partial.hex() == "dded792a1da54fc22868b083d570d499725294c0067a7263be49325ed4c0afd1"


def test_every_kind_of_hash_input_serialises_as_before() -> None:
    mixed = (True, False, None, -5, b"ab", "\u00e9", [1, True])
    assert sha256(mixed).hex() == (
        "7fc77c99ff68ea02a358b9918d7a0eaff4545d0719e21ecef31e4d9262a6087d"
    )


def test_request_block_hasher_is_pinned() -> None:
    hasher = get_request_block_hasher(4, sha256)
    plain = Request("a", list(range(10)), max_tokens=4, block_hasher=hasher)
    salted = Request(
        "b", list(range(10)), max_tokens=4, block_hasher=hasher, cache_salt="s", lora_name="l"
    )
    assert [h.hex() for h in plain.block_hashes] == [
        "d59b5b6a88b41f144978e5b87a7a9c67be8de911a006dd457f66dd8fb20736ef",
        "6a29069c327bff526f5c6fff559c19091c36dab12840d2afd9d8ba5808cc96a9",
    ]
    assert [h.hex() for h in salted.block_hashes] == [
        "bd21cb9e62589bcddf0800c6a8840d62b90d7ec4b2fcc5b88553cafa203db015",
        "ddba7d79e88b649619f74fffe72d2d759ff4f6aea8307580858dcc02d10f49e9",
    ]
