"""Two versions of one traced function, registered next to the code by reference.

A change pairs the code before it with the code after it; both are real
functions that the engine runs (in different scenarios or modes). The code
panel shows the version that ran as a diff against the other one, and labels
each side, so a learner always knows which code is vLLM's and which is not.

Register a change on the function that overrides the other one:

    @changes(BlockPool.reset_prefix_cache, old_label=RELEASED, new_label=PROPOSED)
    def reset_prefix_cache(self, allow_used_blocks: bool = False) -> bool: ...

    @changed_by(Scheduler._should_reset_aux_output, old_label=BEFORE_FIX, new_label=WITH_FIX)
    def _should_reset_aux_output(self, keep_running_requests: bool) -> bool: ...
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from engine.lab.trace import source_file

RELEASED = "vLLM 0.33.0 (released)"
PROPOSED = "proposed (not in vLLM 0.33.0)"
BEFORE_FIX = "before the fix (as in vLLM 0.33.0)"
WITH_FIX = "keep mode's fix (proposed, not in vLLM 0.33.0)"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class FunctionRef:
    """Where a function's source is: repo-relative file and qualified name."""

    file: str
    qualname: str

    @classmethod
    def of(cls, function: Callable[..., Any]) -> FunctionRef:
        return cls(source_file(sys.modules[function.__module__]), function.__qualname__)


@dataclass(frozen=True)
class Change:
    old: FunctionRef  # the code before the change
    new: FunctionRef  # the code after it
    old_label: str
    new_label: str
    # True: the old code is itself the lesson (a bug that was fixed), so it is
    # shown as a diff too. False: it is plain released code, shown as it is.
    diff_old: bool


@dataclass(frozen=True)
class Counterpart:
    """What the code panel needs about a traced function that is part of a change."""

    label: str  # what this version is
    other: FunctionRef | None  # the version to diff against; None: no diff
    other_label: str
    other_is_old: bool


CHANGES: list[Change] = []


def changes(
    old: Callable[..., Any], *, old_label: str, new_label: str, diff_old: bool = False
) -> Callable[[F], F]:
    """Decorate the code after a change with the function it replaces."""

    def register(new: F) -> F:
        CHANGES.append(
            Change(FunctionRef.of(old), FunctionRef.of(new), old_label, new_label, diff_old)
        )
        return new

    return register


def changed_by(new: Callable[..., Any], *, old_label: str, new_label: str) -> Callable[[F], F]:
    """Decorate the code before a fix with the fixed function; both are shown as diffs."""

    def register(old: F) -> F:
        CHANGES.append(Change(FunctionRef.of(old), FunctionRef.of(new), old_label, new_label, True))
        return old

    return register


def counterpart(function: FunctionRef) -> Counterpart | None:
    """The label of a traced function that is part of a change, and what to diff it against."""
    for change in CHANGES:
        if function == change.new:
            return Counterpart(change.new_label, change.old, change.old_label, True)
        if function == change.old:
            other = change.new if change.diff_old else None
            return Counterpart(change.old_label, other, change.new_label, False)
    return None
