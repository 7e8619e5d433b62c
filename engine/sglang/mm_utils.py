"""How SGLang keeps two images apart in a tree keyed by token ids (SGLang 0.5.23's
``srt/managers/mm_utils.py`` ``pad_mm_tokens`` and the pad values of
``srt/managers/schedule_batch.py``'s ``MultimodalDataItem``).

Before a multimodal request reaches the radix cache, the scheduler replaces each item's
placeholder tokens with "pad values" derived from the item's hash, so the same image
gives the same ids and another image other ids: the tree then tells them apart by
token ids alone, with no extra key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

# Pad values start above every text token id (a vocabulary larger than this is refused).
MM_PAD_SHIFT_VALUE = 1_000_000
_MM_IDENTITY_BYTES = 32
_MM_WIDE_PAD_TAG = b"sglang-mm-wide-pad-v1"
# Keeps MM_PAD_SHIFT_VALUE plus a sentinel below 2**63, an int64 token id.
_MM_WIDE_PAD_MASK = (1 << 62) - 1


def _compute_pad_values(identity: bytes) -> tuple[int, ...]:
    """Four wide sentinels from the item's identity: SHA-256 of a tag and the identity,
    cut into four 62-bit numbers, each above the vocabulary."""
    digest = hashlib.sha256(_MM_WIDE_PAD_TAG + identity).digest()
    return tuple(
        MM_PAD_SHIFT_VALUE + (int.from_bytes(digest[i : i + 8], "big") & _MM_WIDE_PAD_MASK)
        for i in range(0, _MM_IDENTITY_BYTES, 8)
    )


@dataclass
class MultimodalDataItem:
    """One image (or clip) of a request: its placeholder spans, inclusive at both ends,
    and the pad values its identity gives."""

    modality: str
    offsets: list[tuple[int, int]]
    identity: bytes | None = None
    pad_values: tuple[int, ...] | None = field(default=None)

    def set_identity(self, identity: bytes) -> None:
        if len(identity) != _MM_IDENTITY_BYTES:
            raise ValueError(
                f"multimodal identity must be {_MM_IDENTITY_BYTES} bytes, got {len(identity)}"
            )
        self.identity = bytes(identity)
        self.pad_values = _compute_pad_values(self.identity)

    def padding_sequence(self, length: int) -> list[int]:
        """The pad values repeated over ``length`` tokens."""
        assert self.pad_values is not None
        repeats, remainder = divmod(length, len(self.pad_values))
        return list(self.pad_values) * repeats + list(self.pad_values[:remainder])


def pad_mm_tokens(input_ids: Sequence[int], mm_items: Sequence[MultimodalDataItem]) -> list[int]:
    """The ids with every item's spans replaced by its padding (a copy: the input stays)."""
    padded = list(input_ids)
    for item in mm_items:
        for start, end in item.offsets:
            end = min(end + 1, len(padded))  # a span cut by truncation pads what is left
            if start < end:
                padded[start:end] = item.padding_sequence(end - start)
    return padded
