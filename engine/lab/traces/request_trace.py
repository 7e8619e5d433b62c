"""Request traces (Mooncake's format): read one, and give its prompts token ids and block hashes.

A trace is JSON lines, one request a line::

    {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}

``timestamp`` is the arrival in ms; ``hash_ids`` has one id per 512 prompt tokens (the last
may cover a partial unit). Equal ids at the same positions from the start mean a shared
prefix. No token ids are released, so this module derives them:

- unit ``u`` of a prompt (tokens ``512u`` to ``512u + 511``) with id ``h`` is a first token
  ``256 + pair(h, u)`` (``pair`` is Cantor's pairing, one-to-one) followed by 511 filler
  tokens ``1..255, 0, 1, ...`` (the token's offset in the unit, mod 256);
- the prompt is its units in order, cut to ``input_length``: a partial last unit is the
  first tokens of that unit, so at block size 512 it is a partial block that vLLM never
  caches, and at a smaller block size its full blocks are cached like any others.

So equal id prefixes give equal token prefixes, and units with different ids (or at
different positions) differ in their first token. vLLM's block hashes are chained, so every
block after a difference differs too, whatever the block size: the cache sees exactly the
sharing the ids describe.

``PromptHashes`` computes vLLM's block hashes of these prompts (vLLM's own
``hash_block_tokens`` over the derived tokens, as the request block hasher would), each
distinct prefix block once, for any block size; they do not depend on the pool, so a curve
over many capacities hashes once.

Standard library only.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.lab.shared.quoting import shorten_quotes
from engine.vllm.kv_cache_utils import BlockHash, hash_block_tokens, sha256

# Tokens per hash id in the trace format (Mooncake's block size).
TRACE_BLOCK_TOKENS = 512
FIRST_TOKEN_BASE = 256  # unit first tokens start here; fillers are 0..255
FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
# The filler of every unit, and of a whole prompt at once (sliced, then first tokens set).
_FILLER = [offset % 256 for offset in range(TRACE_BLOCK_TOKENS)]
_long_filler = _FILLER * 2
_UNIT_TAIL = tuple(_FILLER[1:])  # a whole unit after its first token


def _filler(length: int) -> list[int]:
    """The filler of a prompt's first ``length`` tokens (a slice of one kept list)."""
    global _long_filler
    if length > len(_long_filler):
        _long_filler = _FILLER * -(-length // TRACE_BLOCK_TOKENS)
    return _long_filler[:length]


class TraceError(ValueError):
    """A trace that cannot be read: ``line`` (1-based, 0 for the file as a whole) and
    ``field`` name where; the message says both and why."""

    def __init__(self, line: int, field: str | None, why: str) -> None:
        where = f"line {line}" if line else "trace"
        message = f"{where}: {field}: {why}" if field else f"{where}: {why}"
        super().__init__(shorten_quotes(message))
        self.line = line
        self.field = field


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One request of a trace, as read (``line`` is its line in the file, 1-based)."""

    line: int
    timestamp: int
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]


def pair(hash_id: int, position: int) -> int:
    """Cantor's pairing: a different number for every (hash id, position)."""
    total = hash_id + position
    return total * (total + 1) // 2 + position


def unit_first_token(hash_id: int, position: int) -> int:
    return FIRST_TOKEN_BASE + pair(hash_id, position)


def prompt_token_ids(entry: TraceEntry) -> list[int]:
    """The prompt's derived token ids, ``input_length`` of them."""
    tokens = _filler(entry.input_length)
    for position, hash_id in enumerate(entry.hash_ids):
        # unit_first_token(hash_id, position), inlined: two calls a unit were a fifth of
        # building a prompt
        total = hash_id + position
        tokens[position * TRACE_BLOCK_TOKENS] = (
            FIRST_TOKEN_BASE + total * (total + 1) // 2 + position
        )
    return tokens


@lru_cache(maxsize=1)
def prompt_tuple(entry: TraceEntry) -> tuple[int, ...]:
    """The prompt's derived token ids as a tuple (a radix tree's key takes it as it is),
    the last prompt's kept: a fleet's router and then the replica it chose ask for the
    same prompt in turn, and it is derived once."""
    return tuple(prompt_token_ids(entry))


def token_range(hash_ids: Sequence[int], start: int, end: int) -> list[int]:
    """Tokens ``start`` to ``end - 1`` of a prompt with these ids (not cut to its length)."""
    offset = start % TRACE_BLOCK_TOKENS
    tokens = _filler(offset + end - start)[offset:]
    for position in range(-(-start // TRACE_BLOCK_TOKENS), -(-end // TRACE_BLOCK_TOKENS)):
        tokens[position * TRACE_BLOCK_TOKENS - start] = unit_first_token(
            hash_ids[position], position
        )
    return tokens


# -- reading ---------------------------------------------------------------------------------


def read_trace(path: str | Path, limit: int | None = None) -> list[TraceEntry]:
    """The trace's requests in file order (``.gz`` files are decompressed; the first
    ``limit`` only, if given). Raises TraceError for the first bad line, OSError if the
    file cannot be read."""
    return parse_trace_bytes(Path(path).read_bytes(), limit)


def parse_trace_bytes(data: bytes, limit: int | None = None) -> list[TraceEntry]:
    """A trace file's bytes (JSON lines, or gzipped: a learner's upload too) read as
    ``read_trace`` reads a file."""
    try:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        text = data.decode("utf-8")
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise TraceError(0, None, f"not a readable text file ({error})") from None
    return parse_trace(text.splitlines(), limit)


def parse_trace(lines: Iterable[str], limit: int | None = None) -> list[TraceEntry]:
    """Parse JSON lines (blank lines are skipped). Timestamps must not go backwards."""
    entries: list[TraceEntry] = []
    for entry in _entries(lines):
        if entries and entry.timestamp < entries[-1].timestamp:
            raise TraceError(
                entry.line,
                "timestamp",
                f"{entry.timestamp} is earlier than line {entries[-1].line}'s "
                f"{entries[-1].timestamp} (sort the trace by arrival)",
            )
        entries.append(entry)
        if limit is not None and len(entries) >= limit:
            break
    if not entries:
        raise TraceError(0, None, "no requests (one JSON object a line)")
    return entries


def _entries(lines: Iterable[str]) -> Iterator[TraceEntry]:
    for number, text in enumerate(lines, start=1):
        if text.strip():
            yield parse_line(text, number)


def parse_line(text: str, line: int) -> TraceEntry:
    """One line of a trace, checked; a TraceError names the line and the field."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise TraceError(line, None, f"not JSON ({error.msg})") from None
    if not isinstance(data, dict):
        raise TraceError(line, None, f"a JSON object is expected, not {type(data).__name__}")
    for name in FIELDS:
        if name not in data:
            raise TraceError(line, name, "missing")
    timestamp = _whole(data, "timestamp", line, minimum=0)
    input_length = _whole(data, "input_length", line, minimum=1)
    output_length = _whole(data, "output_length", line, minimum=0)
    hash_ids = data["hash_ids"]
    if not isinstance(hash_ids, list) or not all(_is_whole(h) and h >= 0 for h in hash_ids):
        raise TraceError(line, "hash_ids", "must be a list of whole numbers >= 0")
    units = math.ceil(input_length / TRACE_BLOCK_TOKENS)
    if len(hash_ids) != units:
        raise TraceError(
            line,
            "hash_ids",
            f"{len(hash_ids)} ids, but input_length {input_length} needs {units} "
            f"(one per {TRACE_BLOCK_TOKENS} tokens, the last may be partial)",
        )
    return TraceEntry(line, timestamp, input_length, output_length, tuple(hash_ids))


def _is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _whole(data: dict[str, Any], name: str, line: int, minimum: int) -> int:
    value = data[name]
    if not _is_whole(value):
        raise TraceError(line, name, f"must be a whole number, not {json.dumps(value)}")
    if value < minimum:
        raise TraceError(line, name, f"must be at least {minimum}, not {value}")
    return int(value)


# -- block hashes ----------------------------------------------------------------------------


class PromptHashes:
    """vLLM's block hashes of every prompt of a trace at one block size, each distinct
    prefix block hashed once.

    Block ``j`` ends in unit ``u = ((j + 1) * block_size - 1) // 512``; its tokens and every
    token before it are decided by the ids up to ``u``. Id prefixes are numbered in a trie
    (``(prefix number, id) -> prefix number``), so block ``j`` of two prompts whose id
    prefixes up to ``u`` agree is hashed once. Only full blocks are hashed, as vLLM's request
    block hasher does.
    """

    def __init__(self, block_size: int) -> None:
        if block_size < 1:
            raise ValueError("block_size must be at least 1")
        self.block_size = block_size
        self._prefixes: dict[tuple[int, int], int] = {}
        self._hashes: dict[tuple[int, int], BlockHash] = {}

    @property
    def num_hashed(self) -> int:
        """Distinct blocks hashed so far."""
        return len(self._hashes)

    def prefix_ids(self, hash_ids: Sequence[int]) -> list[int]:
        """Each unit's prefix number: equal numbers mean equal ids up to that unit."""
        prefixes = self._prefixes
        numbers: list[int] = []
        number = 0  # the empty prefix
        for hash_id in hash_ids:
            key = (number, hash_id)
            found = prefixes.get(key)
            if found is None:
                found = prefixes[key] = len(prefixes) + 1
            numbers.append(found)
            number = found
        return numbers

    def block_hashes(self, entry: TraceEntry) -> list[BlockHash]:
        """The hashes of the prompt's full blocks, as vLLM's request block hasher gives them."""
        block_size = self.block_size
        if block_size == TRACE_BLOCK_TOKENS:
            return self._unit_block_hashes(entry)
        numbers = self.prefix_ids(entry.hash_ids)
        known = self._hashes
        hashes: list[BlockHash] = []
        parent: BlockHash | None = None
        for index in range(entry.input_length // block_size):
            end = (index + 1) * block_size
            key = (numbers[(end - 1) // TRACE_BLOCK_TOKENS], index)
            block_hash = known.get(key)
            if block_hash is None:
                tokens = token_range(entry.hash_ids, end - block_size, end)
                block_hash = known[key] = hash_block_tokens(sha256, parent, tokens, None)
            hashes.append(block_hash)
            parent = block_hash
        return hashes

    def _unit_block_hashes(self, entry: TraceEntry) -> list[BlockHash]:
        """``block_hashes`` when a block is a unit (the trace's own 512, the default): the
        same hashes, without the general path's token slices: the unit's tokens are made as a
        tuple at once (vLLM's hash then takes it as it is)."""
        prefixes, known = self._prefixes, self._hashes
        hashes: list[BlockHash] = []
        parent: BlockHash | None = None
        number = 0  # the empty prefix
        for position, hash_id in enumerate(entry.hash_ids[: entry.input_length // 512]):
            key = (number, hash_id)
            found = prefixes.get(key)
            if found is None:
                found = prefixes[key] = len(prefixes) + 1
            number = found
            block_key = (number, position)
            block_hash = known.get(block_key)
            if block_hash is None:
                # Concatenated: twice as fast as unpacking into a new tuple.
                tokens = (unit_first_token(hash_id, position),) + _UNIT_TAIL  # noqa: RUF005
                block_hash = known[block_key] = hash_block_tokens(sha256, parent, tokens, None)
            hashes.append(block_hash)
            parent = block_hash
        return hashes

    def all_block_hashes(self, entries: Iterable[TraceEntry]) -> list[list[BlockHash]]:
        return [self.block_hashes(entry) for entry in entries]
