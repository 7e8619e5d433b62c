"""Prompt embeddings without torch: a request's ``prompt_embeds`` tensor and the bytes vLLM
hashes from it (``tensor_data`` of vLLM's ``v1/utils.py``).

In vLLM a prompt given partly as embeddings carries one float row per prompt position
(rows of zeros where the position is a token) and a mask saying which positions are
tokens. Here a row is a tuple of floats stored as float32, so the bytes of a slice are
the bytes a float32 torch tensor of the same rows holds on a little-endian machine.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence


class PromptEmbeds:
    """A 2-D float32 tensor stand-in: ``len()`` rows of ``hidden_size`` floats, sliced by row."""

    __slots__ = ("_rows", "hidden_size")

    def __init__(self, rows: Sequence[Sequence[float]]) -> None:
        widths = {len(row) for row in rows}
        if len(widths) > 1:
            raise ValueError("every row of prompt embeddings needs the same hidden size")
        self.hidden_size = widths.pop() if widths else 0
        self._rows = tuple(tuple(float(x) for x in row) for row in rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: slice) -> PromptEmbeds:
        rows = self._rows[index]
        return PromptEmbeds(rows) if rows else _empty(self)

    def rows(self) -> tuple[tuple[float, ...], ...]:
        return self._rows


def _empty(like: PromptEmbeds) -> PromptEmbeds:
    # A slice past the last row is an empty tensor: it hashes as zero bytes.
    empty = PromptEmbeds(())
    empty.hidden_size = like.hidden_size
    return empty


def tensor_data(tensor: PromptEmbeds) -> bytes:
    """The tensor's raw bytes, row after row: what vLLM feeds SHA-256 for a block's embeddings."""
    flat = [x for row in tensor.rows() for x in row]
    return struct.pack(f"<{len(flat)}f", *flat)
