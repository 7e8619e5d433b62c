"""Narration placeholders on either engine: engine/lab/play/vllm/narration.py (vLLM) and
engine/lab/play/sglang/narration.py (SGLang) name what a template may use at a step; here,
once for both, how ``{name.attr[i]:spec}`` is filled, how ids are written (``a, b and
c``, ``.count``, ``[i]``), a request's prompt counts, and a described step's sentences."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar

PLACEHOLDER = re.compile(
    r"\{(?P<name>[A-Za-z_][\w-]*)(?P<attr>(?:\.\w+)*)(?:\[(?P<index>-?\d+)\])?"
    r"(?::(?P<spec>[^{}]+))?\}"
)

Id = TypeVar("Id")


def _resolve(match: re.Match[str], context: dict[str, Any]) -> str:
    if match["name"] not in context:
        return match[0]  # not a placeholder of ours
    value = context[match["name"]]
    try:
        for attr in match["attr"].split(".")[1:]:
            value = getattr(value, attr)
        if match["index"] is not None:
            value = value[int(match["index"])]
        return format(value, match["spec"] or "")
    except (AttributeError, IndexError, ValueError, TypeError):
        return match[0]  # left visible, and the narration tests reject it


def fill_placeholders(template: str, context: dict[str, Any]) -> str:
    """``template`` with each placeholder whose name is in ``context`` filled; anything
    else in braces (a JSON body, say) is left alone."""
    return PLACEHOLDER.sub(lambda m: _resolve(m, context), template)


def join_words(labels: Sequence[str], empty: str) -> str:
    """``a``, ``a and b``, ``a, b and c``; ``empty`` when there is none."""
    if not labels:
        return empty
    if len(labels) == 1:
        return labels[0]
    return ", ".join(labels[:-1]) + " and " + labels[-1]


def id_runs(ids: Iterable[int], downwards: bool = False) -> list[tuple[int, ...]]:
    """``ids``, the order kept, as runs of three consecutive ids or more, counting up (or,
    with ``downwards``, down too), and single ids: a pair reads better as two ids."""
    runs: list[list[int]] = []
    for i in ids:
        run = runs[-1] if runs else []
        step = i - run[-1] if run else 0
        direction = run[-1] - run[-2] if len(run) > 1 else (step if downwards else 1)
        if run and step == direction and abs(step) == 1:
            run.append(i)
        else:
            runs.append([i])
    pieces: list[tuple[int, ...]] = []
    for run in runs:
        pieces.extend([(i,) for i in run] if len(run) < 3 else [tuple(run)])
    return pieces


class LabelList(Generic[Id]):
    """Ids a narration names: ``.count``, ``[i]`` (the i-th one's label) and, as text,
    the labels joined (``empty`` for none); a subclass says how one id is labelled."""

    empty = "none"

    def __init__(self, ids: Iterable[Id]) -> None:
        self.ids = tuple(ids)

    def label(self, item: Id) -> str:
        return str(item)

    @property
    def count(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> str:
        return self.label(self.ids[index])

    def __iter__(self) -> Iterator[Id]:
        return iter(self.ids)

    def __str__(self) -> str:
        return join_words([self.label(item) for item in self.ids], self.empty)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class PromptRecord(Protocol):
    @property
    def num_prompt_tokens(self) -> int: ...

    @property
    def num_tokens(self) -> int: ...


class PromptCounts:
    """A request's prompt, as both engines' narrations count it: ``{R.prompt_tokens}``,
    ``{R.num_tokens}``, ``{R.hit_tokens}``, ``{R.missed_tokens}``; a subclass says
    where its snapshot record keeps the cached tokens (negative: none yet)."""

    view: PromptRecord  # the request's snapshot record

    @property
    def _cached_tokens(self) -> int:
        raise NotImplementedError

    @property
    def prompt_tokens(self) -> int:
        return self.view.num_prompt_tokens

    @property
    def num_tokens(self) -> int:
        return self.view.num_tokens

    @property
    def hit_tokens(self) -> int:
        return max(self._cached_tokens, 0)

    @property
    def missed_tokens(self) -> int:
        """Prompt tokens the cache did not supply: the prefill."""
        return self.view.num_prompt_tokens - self.hit_tokens


# a step's fact -> its sentence, or the sentences for one item and for several
FactSentences = dict[str, str | tuple[str, str]]


def fact_sentences(facts: object, sentences: FactSentences) -> list[str]:
    """A sentence for each of the step's facts named in ``sentences`` that is not empty,
    in their order."""
    said = []
    for name, text in sentences.items():
        items = getattr(facts, name)
        if items:
            said.append(text if isinstance(text, str) else text[0 if len(items) == 1 else 1])
    return said
