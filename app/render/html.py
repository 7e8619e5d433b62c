"""What every renderer needs: escaping, what changed at a step, a panel's frame, its
tables and legends; and the notice naming each deep-link parameter that was ignored."""

from __future__ import annotations

import html
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

Record = TypeVar("Record")
Key = TypeVar("Key", bound=Hashable)
Shot = TypeVar("Shot", covariant=True)  # a step's snapshot: vLLM's or SGLang's


class StepOf(Protocol[Shot]):
    @property
    def snapshot(self) -> Shot: ...


class TimelineOf(Protocol[Shot]):
    """Either engine's timeline, as far as "what changed at a step" needs it."""

    @property
    def steps(self) -> Sequence[StepOf[Shot]]: ...


def esc(value: object) -> str:
    """``value`` as HTML text. Most values (ids, counts, hash labels) need no escaping:
    they are returned as they are, which in Pyodide costs a fraction of the five
    replacements `html.escape` always makes (a page escapes thousands of them)."""
    text = value if type(value) is str else str(value)
    if "&" in text or "<" in text or ">" in text or '"' in text or "'" in text:
        return html.escape(text, quote=True)
    return text


def previous_and_current(
    timeline: TimelineOf[Shot], step: int, records: Callable[[Shot], Sequence[Record]]
) -> tuple[Sequence[Record], Sequence[Record]]:
    """The step's records before and after it (at step 0, the same records: nothing
    changed at the state after the setup)."""
    current = records(timeline.steps[step].snapshot)
    return (records(timeline.steps[step - 1].snapshot) if step > 0 else current), current


def changed_at(
    timeline: TimelineOf[Shot],
    step: int,
    records: Callable[[Shot], Sequence[Record]],
    key: Callable[[Record], Key],
) -> set[Key]:
    """Keys of the step's records that differ from the previous step's (none at step 0)."""
    if step == 0:
        return set()
    previous, current = previous_and_current(timeline, step, records)
    before = {key(r): r for r in previous}
    return {key(r) for r in current if before.get(key(r)) != r}


def plural(count: int) -> str:
    """The s of a plural ("1 node", "2 nodes")."""
    return "" if count == 1 else "s"


def panel(label: str, title: str, body: str, attrs: str = "", classes: str = "box") -> str:
    """A panel named ``label`` (``attrs``: its other attributes) under its ``title`` (if any)."""
    heading = f'<h3 class="panel-title">{title}</h3>' if title else ""
    return f'<section class="{classes}"{attrs} aria-label="{label}">{heading}{body}</section>'


def table(head: str, rows: str, attrs: str = "") -> str:
    """A compact table: ``head``, its header cells, over ``rows`` (both HTML)."""
    return (
        f'<table class="compact"{attrs}><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    )


def legend(items: Iterable[str], classes: str = "legend") -> str:
    """A panel's legend, an item (HTML) a line."""
    lines = "".join(f"<li>{item}</li>" for item in items)
    return f'<ul class="{classes}" aria-label="legend">{lines}</ul>'


def swatch_legend(prefix: str, texts: Mapping[str, str]) -> str:
    """Each state's swatch (its class: ``prefix`` + the state) beside its text (HTML), then
    the mark of a change at the step."""
    swatches = (
        f'<span class="swatch {prefix}{state}"></span>{text}' for state, text in texts.items()
    )
    return legend([*swatches, '<span class="swatch changed"></span>changed at this step'])


def render_notice(notices: tuple[str, ...]) -> str:
    if not notices:
        return ""
    items = "".join(f"<li>{esc(n)}</li>" for n in notices)
    return (
        '<div class="notice" role="alert" data-testid="notice">'
        f"<b>Some link parameters were ignored.</b><ul>{items}</ul></div>"
    )
