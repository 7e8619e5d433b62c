"""A scenario request's multimodal items and prompt embeddings: read, checked, and made
into what vLLM's ``Request`` carries (``mm_features``, ``prompt_embeds`` and its mask).

In a file, ``mm_items`` is a list of tables and ``prompt_embeds`` a table::

    mm_items = [{identifier = "cat", offset = 8, length = 6}]
    prompt_embeds = {name = "notes", offset = 16, length = 4}

and in the playground's one-line form, ``mm_items=cat:8:6,dog:20:6`` and
``prompt_embeds=notes:16:4`` (identifier or name, offset, length). An item is its
identifier and its placeholder tokens (no pixels: the identifier stands for the hash
of the image's data); embeddings are rows made up from the name, the same rows for the
same name and length wherever they sit, which is all the block key sees of them.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.vllm.multimodal import MultiModalFeatureSpec, PlaceholderRange
from engine.vllm.prompt_embeds import PromptEmbeds

# Floats per embedding row: small, since only their bytes matter to the key.
HIDDEN_SIZE = 4
MM_FIELDS = ("identifier", "offset", "length")
EMBEDS_FIELDS = ("name", "offset", "length")


class ExtrasError(ValueError):
    """A bad item or run; the scenario parser passes the message on as its own error."""


@dataclass(frozen=True)
class TokenRun:
    """``length`` prompt tokens from ``offset``, named: an item's identifier or the
    embeddings' name."""

    name: str
    offset: int
    length: int

    @property
    def end(self) -> int:
        return self.offset + self.length

    def tokens_text(self) -> str:
        return f"tokens {self.offset}..{self.end - 1}"


def _runs(raw: Any, fields: tuple[str, str, str], key: str, where: str) -> list[TokenRun]:
    """Runs from a list of tables, one table, or the one-line form ``a:8:6, b:20:6``."""
    if isinstance(raw, str):
        tables: list[Any] = []
        for part in (p.strip() for p in raw.split(",")):
            name, *parts = part.split(":")
            if len(parts) != 2 or not name:
                raise ExtrasError(
                    f"{where}: {key} {part!r} is not {fields[0]}:offset:length, e.g. cat:8:6"
                )
            tables.append(dict(zip(fields, (name, *parts), strict=True)))
    else:
        tables = raw if isinstance(raw, list) else [raw]
    runs = []
    for table in tables:
        if not isinstance(table, Mapping) or set(table) != set(fields):
            raise ExtrasError(f"{where}: {key} needs {', '.join(fields)} in each entry")
        name = table[fields[0]]
        if not isinstance(name, str) or not name or any(c in name for c in ":,"):
            raise ExtrasError(f"{where}: {key}: {fields[0]} must be a name without : or ,")
        numbers: list[int] = []
        for field in ("offset", "length"):
            value: Any = table[field]
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                value = int(value)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ExtrasError(f"{where}: {key} {name!r}: {field} must be a whole number")
            numbers.append(value)
        runs.append(TokenRun(name, numbers[0], numbers[1]))
    return runs


def _check_run(run: TokenRun, what: str, num_tokens: int, where: str) -> None:
    if run.offset < 0:
        raise ExtrasError(f"{where}: {what} has a negative offset ({run.offset})")
    if run.length < 1:
        raise ExtrasError(f"{where}: {what} needs a length of at least 1, not {run.length}")
    if run.end > num_tokens:
        raise ExtrasError(
            f"{where}: {what} ({run.tokens_text()}) goes past the prompt's end "
            f"({num_tokens} tokens, the last is {num_tokens - 1})"
        )


def parse_mm_items(raw: Any, num_tokens: int, where: str) -> tuple[TokenRun, ...]:
    """The items sorted by offset, as vLLM keeps them; refused if one overlaps another,
    starts before the prompt or ends after it."""
    if raw is None:
        return ()
    items = sorted(_runs(raw, MM_FIELDS, "mm_items", where), key=lambda r: r.offset)
    for item in items:
        _check_run(item, f"the item {item.name!r}", num_tokens, where)
    for before, after in itertools.pairwise(items):
        if after.offset < before.end:
            raise ExtrasError(
                f"{where}: the items {before.name!r} ({before.tokens_text()}) and "
                f"{after.name!r} ({after.tokens_text()}) overlap"
            )
    return tuple(items)


def parse_prompt_embeds(raw: Any, num_tokens: int, where: str) -> TokenRun | None:
    if raw is None:
        return None
    if isinstance(raw, list):
        raise ExtrasError(f"{where}: prompt_embeds is one run of tokens, not a list")
    runs = _runs(raw, EMBEDS_FIELDS, "prompt_embeds", where)
    if len(runs) != 1:
        raise ExtrasError(f"{where}: prompt_embeds is one run of tokens, not {len(runs)}")
    _check_run(runs[0], "prompt_embeds", num_tokens, where)
    return runs[0]


def format_runs(value: Any, fields: tuple[str, str, str]) -> str:
    """The one-line form of a file's ``mm_items`` or ``prompt_embeds`` (a string stays)."""
    if isinstance(value, str):
        return value
    tables = value if isinstance(value, list) else [value]
    return ",".join(":".join(str(t.get(f, "")) for f in fields) for t in tables)


def mm_features(items: Sequence[TokenRun]) -> list[MultiModalFeatureSpec]:
    """vLLM's ``mm_features`` for the items: each an image with its identifier."""
    return [
        MultiModalFeatureSpec(None, "image", item.name, PlaceholderRange(item.offset, item.length))
        for item in items
    ]


def embedding_row(name: str, index: int) -> tuple[float, ...]:
    """Row ``index`` of the embeddings named ``name``: multiples of 1/8, exact in float32."""
    digest = hashlib.sha256(f"{name}:{index}".encode()).digest()
    return tuple((b - 128) / 8 for b in digest[:HIDDEN_SIZE])


def prompt_embeds(run: TokenRun, num_tokens: int) -> tuple[PromptEmbeds, list[bool]]:
    """vLLM's mixed-mode prompt: a row per position (zeros where a token is) and the mask
    of which positions are tokens."""
    zeros = (0.0,) * HIDDEN_SIZE
    rows = [
        embedding_row(run.name, p - run.offset) if run.offset <= p < run.end else zeros
        for p in range(num_tokens)
    ]
    mask = [not run.offset <= p < run.end for p in range(num_tokens)]
    return PromptEmbeds(rows), mask
