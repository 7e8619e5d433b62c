"""What a router is given about a request: its size, its time, and, computed only when
a router asks, its block hashes (as the replicas' KV events carry them) and its prompt
as the pieces SGLang's router's tree holds."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from functools import cached_property

from engine.lab.traces.request_trace import TRACE_BLOCK_TOKENS, TraceEntry
from engine.sglang.kv_events import hash_str_to_int64, page_hashes
from engine.vllm.kv_cache_utils import BlockHash, maybe_convert_block_hash

Pieces = tuple[Sequence[Hashable], Sequence[int]]


class RouteRequest:
    """Request ``index`` as a router sees it."""

    def __init__(
        self,
        index: int,
        num_tokens: int,
        time_ms: float,
        hashes: Callable[[], list[int]],
        pieces: Callable[[], Pieces],
    ) -> None:
        self.index = index
        self.num_tokens = num_tokens
        self.time_ms = time_ms
        self._hashes = hashes
        self._pieces = pieces

    @cached_property
    def block_hashes(self) -> list[int]:
        """The prompt's full blocks' (pages') hashes, as the replicas' events carry them."""
        return self._hashes()

    @cached_property
    def pieces(self) -> Pieces:
        return self._pieces()


def vllm_hashes(block_hashes: Sequence[BlockHash]) -> Callable[[], list[int]]:
    """vLLM's block hashes as its events carry them (the low 64 bits)."""
    return lambda: [int(maybe_convert_block_hash(h)) for h in block_hashes]


def sglang_hashes(tokens: Callable[[], Sequence[int]], page_size: int) -> Callable[[], list[int]]:
    """SGLang's full pages' chained hashes, as its events carry them."""

    def hashes() -> list[int]:
        token_ids = tokens()
        whole = len(token_ids) // page_size * page_size
        return [hash_str_to_int64(h) for h in page_hashes(token_ids[:whole], None, page_size)]

    return hashes


def trace_pieces(entry: TraceEntry) -> Callable[[], Pieces]:
    """A trace prompt as its 512-token units: each id at its place; a partial last unit
    keyed with its length."""

    def pieces() -> Pieces:
        ids: list[Hashable] = list(entry.hash_ids)
        weights = [TRACE_BLOCK_TOKENS] * len(ids)
        tail = entry.input_length - (len(ids) - 1) * TRACE_BLOCK_TOKENS
        if tail != TRACE_BLOCK_TOKENS:
            ids[-1] = (ids[-1], tail)
            weights[-1] = tail
        return ids, weights

    return pieces


def token_pieces(tokens: Callable[[], Sequence[int]]) -> Callable[[], Pieces]:
    """A prompt as its token ids, one token each."""

    def pieces() -> Pieces:
        token_ids = tokens()
        return token_ids, [1] * len(token_ids)

    return pieces
