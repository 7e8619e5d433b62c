"""A multimodal item as a request carries it (vLLM's ``vllm/multimodal/inputs.py`` and the
window search of ``vllm/multimodal/utils.py``).

No pixels here: for the prefix cache an item is its identifier (the hash of its data) and
the run of placeholder tokens it fills in the prompt.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PlaceholderRange:
    """Where an item's placeholder tokens sit in the prompt: ``length`` tokens from ``offset``."""

    offset: int
    length: int

    def get_num_embeds(self) -> int:
        return self.length


@dataclass(frozen=True)
class MultiModalFeatureSpec:
    """One multimodal item of a request; a request keeps them sorted by placeholder offset.

    ``identifier`` is what the block key holds: in vLLM the hash of the item's data (with
    the LoRA's name in front when the adapter also changes the encoder), so the same image
    gets the same identifier in every request.
    """

    data: Any
    modality: str
    identifier: str
    mm_position: PlaceholderRange
    mm_hash: str | None = None


def get_mm_features_in_window(
    mm_features: Sequence[MultiModalFeatureSpec], start: int, end: int
) -> tuple[int, int]:
    """The indices ``(lo, hi)`` of the items that overlap tokens ``[start, end)``.

    Items are sorted and do not overlap, so their ends are sorted too: ``lo`` is the first
    item ending after ``start``, ``hi`` the first starting at or after ``end``.
    """
    lo = bisect.bisect_left(
        mm_features, start + 1, key=lambda f: f.mm_position.offset + f.mm_position.length
    )
    hi = bisect.bisect_left(mm_features, end, key=lambda f: f.mm_position.offset)
    return lo, hi
