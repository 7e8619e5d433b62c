"""A narration template read sentence by sentence: which of the step's requests a
sentence names, and which of the step's lists it fills. A sentence about one request
names that request's blocks (or slots, or nodes) from its own facts (``{B.allocated}``),
never from the step's lists (``{allocated}``), which hold every request's."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z{(\"])")
PLACEHOLDER = re.compile(r"\{[^{}]*\}")
LIST_NAME = re.compile(r"\{(\w+)(?=[}\[:.])")


def sentences(template: str) -> list[str]:
    return [s for s in SENTENCE_END.split(" ".join(template.split())) if s]


def named_requests(sentence: str, request_ids: Iterable[str]) -> set[str]:
    """The request ids a sentence writes out (in its words, not its placeholders)."""
    words = PLACEHOLDER.sub(" ", sentence)
    return {r for r in request_ids if re.search(rf"(?<![\w-]){re.escape(r)}(?![\w-])", words)}


def step_lists_about_one_request(
    template: str, request_ids: Iterable[str], step_lists: Iterable[str]
) -> Iterator[tuple[str, str, list[str]]]:
    """(request, sentence, the step-wide lists it fills) for each sentence that names
    exactly one of the step's requests and fills a step-wide list."""
    ids, lists = list(request_ids), set(step_lists)
    for sentence in sentences(template):
        named = named_requests(sentence, ids)
        filled = [m for m in LIST_NAME.findall(sentence) if m in lists]
        if len(named) == 1 and filled:
            yield next(iter(named)), sentence, filled
