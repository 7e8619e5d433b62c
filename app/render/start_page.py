"""The start page: the scenarios from first principles to the keep-mode deep dives.

The default page when the address names no scenario (the write-up's `?embed=1`
keeps opening the flagship). The path and its one-liners are content
(content/start.toml); each scenario's title comes from its own file, handed in by the
caller (a renderer reads no timelines). Every entry
is a plain link to `?scenario=NAME`, so the page needs no Python: on the static
site, start_page.js lifts the loading veil from its early page at once. The
workload lab (`?lab=`) has no early page and opens on this one: there the veil stays and
a status line says the lab waits for Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from app.render.html import esc
from engine.lab.play.scenario import scenario_names
from engine.lab.shared.content import load_toml, one_line


@dataclass(frozen=True)
class Entry:
    scenario: str
    teaches: str


@dataclass(frozen=True)
class Part:
    title: str
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class LearningPath:
    intro: str
    parts: tuple[Part, ...]
    engines: str = ""  # what the SGLang mark means
    beyond: tuple[tuple[str, str, str], ...] = ()  # (address's name, title, offers: HTML)

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(e.scenario for part in self.parts for e in part.entries)


@cache
def learning_path() -> LearningPath:
    """content/start.toml, checked: every scenario once, and no other name."""
    data = load_toml("start.toml")
    parts = tuple(
        Part(
            one_line(part["title"]),
            tuple(Entry(e["scenario"], one_line(e["teaches"])) for e in part["entry"]),
        )
        for part in data["part"]
    )
    beyond = tuple(
        (name, way["title"], one_line(way["offers"]))
        for name, way in data.get("beyond", {}).items()
    )
    path = LearningPath(
        one_line(data.get("intro", "")), parts, one_line(data.get("engines", "")), beyond
    )
    names, order = set(scenario_names()), path.order
    if len(set(order)) != len(order) or set(order) != names:
        raise ValueError(
            "content/start.toml must list every scenario once: "
            f"missing {sorted(names - set(order))}, unknown {sorted(set(order) - names)}"
        )
    return path


def next_on_path(name: str) -> str | None:
    """The scenario after ``name`` on the path; None after the last (or off the path)."""
    order = learning_path().order
    if name not in order or name == order[-1]:
        return None
    return order[order.index(name) + 1]


SGLANG_MARK = (
    '<span class="engine-mark" data-testid="plays-on-sglang" '
    'title="also plays on SGLang\'s radix cache (the engine picker)">vLLM · SGLang</span>'
)


def render_start_page(
    titles: Mapping[str, str],
    playground_href: str = "",
    lab_href: str = "",
    *,
    engines: Mapping[str, Sequence[str]] | None = None,
    traces_href: str = "",
    fleet_href: str = "",
) -> str:
    """The page; ``titles``: each scenario's title, by its name; ``engines``: the engines
    each plays on (those on SGLang too are marked); the addresses of an empty
    playground, of the workload lab, of its real traces and of the fleet (no link when empty)."""
    engines = engines or {}
    path = learning_path()
    number = 0
    parts = []
    for part in path.parts:
        items = []
        for entry in part.entries:
            number += 1
            title = titles[entry.scenario]
            items.append(
                f'<li value="{number}" data-scenario="{esc(entry.scenario)}">'
                f'<a href="?scenario={esc(entry.scenario)}">{esc(title)}</a>'
                f"{SGLANG_MARK if 'sglang' in engines.get(entry.scenario, ()) else ''}"
                f'<p class="teaches">{esc(entry.teaches)}</p></li>'
            )
        parts.append(f"<section><h2>{esc(part.title)}</h2><ol>{''.join(items)}</ol></section>")
    links = {
        "playground": playground_href,
        "lab": lab_href,
        "traces": traces_href,
        "fleet": fleet_href,
    }
    beyond = [
        f'<li><a href="{esc(links[name])}" data-testid="start-{name}">{title}</a>'
        f'<p class="teaches">{offers}</p></li>'
        for name, title, offers in path.beyond
        if links[name]
    ]
    own_way = (
        '<section data-testid="beyond-the-path"><h2>Or go your own way</h2>'
        f'<ul class="beyond">{"".join(beyond)}</ul></section>'
        if beyond
        else ""
    )
    return (
        '<main class="start" data-testid="start-page">'
        '<div class="kicker">Prefix Cache Lab · vLLM v1 BlockPool · SGLang RadixCache</div>'
        "<h1>Step through vLLM's prefix cache</h1>"
        f'<p class="intro">{esc(path.intro)}</p>'
        f'<p class="intro" data-testid="engines-note">{esc(path.engines)} {SGLANG_MARK}</p>'
        f"{own_way}"
        f'<nav aria-label="scenarios, in learning order" data-testid="learning-path">'
        f"{''.join(parts)}</nav></main>"
    )
