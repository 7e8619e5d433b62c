"""What every renderer needs: escaping, and which records changed at a step."""

from __future__ import annotations

import html
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from engine.lab.snapshot import Snapshot
from engine.lab.timeline import Timeline

Record = TypeVar("Record")
Key = TypeVar("Key", bound=Hashable)


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def changed_at(
    timeline: Timeline,
    step: int,
    records: Callable[[Snapshot], Iterable[Record]],
    key: Callable[[Record], Key],
) -> set[Key]:
    """Keys of the step's records that differ from the previous step's (none at step 0)."""
    if step == 0:
        return set()
    before = {key(r): r for r in records(timeline.steps[step - 1].snapshot)}
    return {key(r) for r in records(timeline.steps[step].snapshot) if before.get(key(r)) != r}
