"""The fleet lab's HTML (`?lab=fleet`): the intro, progress, the table of each router's figures and
the replicas' playground links, from the numbers as data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from app.render.html import esc
from app.render.lab import TEXTS, progress_bar, render_no_playground
from app.render.lab_traces import ENGINE_NAMES
from engine.lab.fleet.result import FleetRun

FLEET = TEXTS["fleet"]


def render_fleet_intro() -> str:
    routers = FLEET["routers"].items()
    items = "".join(f"<li><b>{esc(name)}</b>: {esc(what)}</li>" for name, what in routers)
    return str(FLEET["intro"]).format(routers=items)


def render_fleet_progress(share: float, done: int, total: int) -> str:
    return progress_bar(share, f"Running… {done} of {total} routers")


def render_fleet_done(requests: int, replicas: int, runs: int) -> str:
    return f"Done: {requests:,} requests over {replicas} replicas, {runs} runs."


def render_fleet_numbers(runs: Mapping[tuple[str, str], FleetRun]) -> str:
    """A row per (engine, router): hit rate, busiest replica's share, stale routes."""
    rows = "".join(
        "<tr>"
        f"<td>{esc(ENGINE_NAMES.get(engine, engine))}</td><td>{esc(router)}</td>"
        f"<td>{run.hit_rate:.1%}</td><td>{run.max_replica_share:.0%}</td>"
        f"<td>{run.stale_routes:,} of {run.believed_routes:,}</td>"
        "</tr>"
        for (engine, router), run in runs.items()
    )
    return str(FLEET["numbers"]).format(rows=rows)


@dataclass(frozen=True)
class ReplicaLink:
    """A replica of a run: its requests and hits, and its playground address (None: ``reason``)."""

    replica: int
    requests: int
    hits: int
    prompt_tokens: int
    href: str | None
    reason: str = ""


def render_replica_links(
    router: str, engine: str, refusal: str | None, links: Sequence[ReplicaLink]
) -> str:
    """Each replica of the run as a link to the playground, or why the run does not open there."""
    if refusal is not None:
        return render_no_playground(refusal)
    items = "".join(_replica_item(link) for link in links)
    return str(FLEET["replicas"]).format(router=esc(router), engine=esc(engine), items=items)


def _replica_item(link: ReplicaLink) -> str:
    kind = "idle" if not link.requests else "refused" if link.href is None else "link"
    plural = "" if link.requests == 1 else "s"
    escaped = {"href": esc(link.href or ""), "reason": esc(link.reason), "plural": plural}
    return str(FLEET[f"replica_{kind}"]).format(**{**asdict(link), **escaped})
