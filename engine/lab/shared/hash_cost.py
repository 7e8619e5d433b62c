"""What hashing a block costs, measured in the Python that runs this (a server's, or
the browser's Pyodide): the chapter's "measure the hashing cost itself".

vLLM hashes every full block of every prompt when the request is built (one call of
`hash_block_tokens` per block, chained). Its default, ``sha256``, pickles the hash
input and hashes the bytes; the report splits the two, and puts Python's built-in
``hash`` of the same input beside them as the scale of a non-cryptographic hash.
vLLM's other options need packages this Python may not have (``cbor2``, ``xxhash``):
each is measured when importable and otherwise named with what it needs.

    python -m engine --hash-cost [--block-size N] [--blocks N]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from engine.vllm.kv_cache_utils import NONE_HASH, hash_block_tokens, sha256

# The lab's limits: enough blocks for a stable figure, few enough for a page's click.
MAX_BLOCKS = 20_000
MAX_BLOCK_SIZE = 64


@dataclass(frozen=True)
class HashCost:
    name: str
    what: str
    us_per_block: float | None  # None: this Python cannot run it
    missing: str = ""  # what it needs, when it cannot run


@dataclass(frozen=True)
class HashCostReport:
    block_size: int
    blocks: int
    costs: tuple[HashCost, ...]

    def cost(self, name: str) -> HashCost:
        return next(c for c in self.costs if c.name == name)


def _blocks(block_size: int, blocks: int) -> list[tuple[int, ...]]:
    return [tuple(range(i * block_size, (i + 1) * block_size)) for i in range(blocks)]


def _time_chain(hash_fn: Callable[[Any], bytes], token_blocks: list[tuple[int, ...]]) -> float:
    """Seconds to hash the blocks as one chain, as a request's block hasher does."""
    parent = NONE_HASH
    start = time.perf_counter()
    for tokens in token_blocks:
        parent = hash_block_tokens(hash_fn, parent, tokens, None)
    return time.perf_counter() - start


def _time_each(function: Callable[[Any], object], inputs: list[Any]) -> float:
    start = time.perf_counter()
    for item in inputs:
        function(item)
    return time.perf_counter() - start


def _optional(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def _best(seconds: Callable[[], float], repeat: int, blocks: int) -> float:
    """Microseconds per block, the fastest of `repeat` runs (the least disturbed)."""
    return min(seconds() for _ in range(repeat)) / blocks * 1e6


def _best_of(
    function: Callable[[Any], object], inputs: list[Any], repeat: int, blocks: int
) -> float:
    return _best(lambda: _time_each(function, inputs), repeat, blocks)


def measure_hash_cost(block_size: int = 16, blocks: int = 2_000, repeat: int = 3) -> HashCostReport:
    if not 1 <= block_size <= MAX_BLOCK_SIZE:
        raise ValueError(f"block size must be 1 to {MAX_BLOCK_SIZE}, not {block_size}")
    if not 1 <= blocks <= MAX_BLOCKS:
        raise ValueError(f"blocks must be 1 to {MAX_BLOCKS:,}, not {blocks}")
    token_blocks = _blocks(block_size, blocks)
    # The inputs sha256 sees: (parent hash, tokens, extra keys), parents from a real chain.
    inputs = []
    parent = NONE_HASH
    for tokens in token_blocks:
        inputs.append((parent, tokens, None))
        parent = hash_block_tokens(sha256, parent, tokens, None)
    pickled = [pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL) for item in inputs]

    costs = [
        HashCost(
            "sha256",
            "vLLM's default: SHA-256 over the pickled input",
            _best(lambda: _time_chain(sha256, token_blocks), repeat, blocks),
        ),
        HashCost(
            "pickle",
            "its first half: pickling (parent, tokens, extra keys)",
            _best(
                lambda: _time_each(
                    lambda item: pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL), inputs
                ),
                repeat,
                blocks,
            ),
        ),
        HashCost(
            "SHA-256",
            "its second half: SHA-256 of the pickled bytes",
            _best(
                lambda: _time_each(lambda data: hashlib.sha256(data).digest(), pickled),
                repeat,
                blocks,
            ),
        ),
        HashCost(
            "hash()",
            "Python's built-in hash of the same input, for scale (not a vLLM option)",
            _best(lambda: _time_each(hash, inputs), repeat, blocks),
        ),
    ]
    # vLLM's options that need a package: (name, what, package, the function given it).
    optional: list[tuple[str, str, str, Callable[[Any], Callable[[Any], object]]]] = [
        (
            "sha256_cbor",
            "SHA-256 over canonical CBOR",
            "cbor2",
            lambda cbor2: lambda item: hashlib.sha256(cbor2.dumps(item, canonical=True)).digest(),
        ),
        (
            "xxhash",
            "128-bit xxHash over the pickled input",
            "xxhash",
            lambda xxhash: (
                lambda item: xxhash.xxh3_128_digest(
                    pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
                )
            ),
        ),
    ]
    for name, what, package, make in optional:
        module = _optional(package)
        if module is None:
            costs.append(HashCost(name, what, None, package))
            continue
        costs.append(HashCost(name, what, _best_of(make(module), inputs, repeat, blocks)))
    return HashCostReport(block_size, blocks, tuple(costs))


def format_report(report: HashCostReport) -> list[str]:
    lines = [f"hashing cost per block of {report.block_size} tokens ({report.blocks:,} blocks)"]
    for cost in report.costs:
        shown = (
            f"{cost.us_per_block:8.2f} us"
            if cost.us_per_block is not None
            else f"needs the {cost.missing} package"
        )
        lines.append(f"  {cost.name:<12} {shown}  {cost.what}")
    return lines


def main(argv: Sequence[str], out: TextIO) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine --hash-cost")
    parser.add_argument("--hash-cost", action="store_true", required=True)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--blocks", type=int, default=2_000)
    args = parser.parse_args(argv)
    try:
        report = measure_hash_cost(args.block_size, args.blocks)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for line in format_report(report):
        print(line, file=out)
    return 0
