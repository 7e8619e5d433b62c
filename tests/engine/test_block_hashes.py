"""Block hashes are vLLM's own, byte for byte.

vLLM 0.33.0 hashes a block with its default algorithm, ``sha256`` in
``vllm/utils/hashing.py``: SHA-256 over ``pickle.dumps((parent, tokens, extra_keys))``,
with the chain's first parent ``NONE_HASH = sha256("vllm-none-hash")``. The expected
digests below were printed by that module itself (loaded from the 0.33.0 wheel, its
cbor2 and xxhash imports stubbed), for the same inputs. Saved links and goldens carry
these hashes, and CPython and the browser must agree on every one.
"""

from engine.vllm.kv_cache_utils import (
    NONE_HASH,
    get_request_block_hasher,
    hash_block_tokens,
    sha256,
)
from engine.vllm.request import Request


def test_none_hash_is_vllms() -> None:
    assert NONE_HASH.hex() == "066b1e8987e027138e98701c46128929378935f9b6cd1549105ae6b4f0d71198"


def test_chained_block_hashes_are_vllms() -> None:
    first = hash_block_tokens(sha256, None, list(range(16)))
    salted = hash_block_tokens(sha256, first, [7] * 16, (("cache_salt", "u1"),))
    lora = hash_block_tokens(
        sha256, salted, [0, 1, 2], (("lora", "a", "/adapters/a"), ("cache_salt", "x"))
    )
    assert first.hex() == "fe8fa5dda3210d0ca2031e37cbe3b001186773cd1c710beb2d45fcb51d434798"
    assert salted.hex() == "7653f004d16a1798b2e5492ea3f45e4be9b3a97dc6cf65f72a50e67939e670e4"
    assert lora.hex() == "2137088205b5ac09406dc9eaffd4e1f610db8d3c6fb56fc942df0ad7e787cf80"


def test_request_block_hasher_gives_vllms_hashes() -> None:
    """Extra keys as vLLM builds them: ("lora", name, path) on every block, the salt on
    the first block only."""
    hasher = get_request_block_hasher(4, sha256)
    plain = Request("a", list(range(10)), max_tokens=4, block_hasher=hasher)
    salted = Request(
        "b", list(range(10)), max_tokens=4, block_hasher=hasher, cache_salt="s", lora_name="l"
    )
    assert [h.hex() for h in plain.block_hashes] == [
        "9da1c53089c000ad1a79a77c143b68dda00e2a85315bc1f690bbd03ba4a195dd",
        "1c9b6c0620e875631f1c5395ed56f2243aa113f88fc842f04fbb0654074b8d43",
    ]
    assert [h.hex() for h in salted.block_hashes] == [
        "f39478792d1ee95b36fe4a329e6f4d2ca001855c2a70b3bb5ed7608d8f8d13e4",
        "6ede8ec254b46c0af3b2333951f77dac019606c2b98a404d17689eae09d3e3e1",
    ]
