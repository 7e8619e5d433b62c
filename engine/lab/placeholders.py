"""What a narration placeholder is on either engine: the filling and the words.

engine/lab/narration.py (vLLM's pool) and engine/lab/sglang_narration.py (SGLang's
tree) each build the names a template may use at a step; here, once for both: how a
``{name.attr[i]:spec}`` placeholder is filled from those names, how a list of ids is
written (``a, b and c``, ``.count``, ``[i]``), a request's prompt counts, and the
sentences that describe a step nobody wrote a text for.
"""

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

    view: PromptRecord

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


# (a step's fact, the sentence when it names one id, the sentence when it names several
# or "" for the same one): the facts a described step names, in their order
FactSentences = tuple[tuple[str, str, str], ...]


def fact_sentences(facts: object, sentences: FactSentences) -> list[str]:
    """One sentence for each of the step's facts that is not empty."""
    said = []
    for name, one, several in sentences:
        items = getattr(facts, name)
        if items:
            said.append(one if len(items) == 1 or not several else several)
    return said
