"""The lab's way into the playground: a link that opens the run as a playground scenario
(at the step the learner is looking at), or why this run cannot be opened there. The
address is made by the caller (app/data/url.py: lab_run_playground_href)."""

from __future__ import annotations

from app.render.html import esc


def render_no_playground(reason: str) -> str:
    """Why this run cannot be opened in the playground."""
    return (
        '<p class="lab-playground" data-testid="lab-playground-reason">'
        f"This run cannot be opened in the playground: {esc(reason)}.</p>"
    )


def render_open_in_playground(href: str, engine_step: int | None = None) -> str:
    """The link to the run's playground (at the state after ``engine_step``, if the
    learner picked one)."""
    where = "" if engine_step is None else f" after engine step {engine_step:,}"
    return (
        '<p class="lab-playground"><a data-testid="lab-playground-link" '
        f'href="{esc(href)}" target="_blank" rel="noopener">Open this run in the '
        f"playground{esc(where)}</a>: the same requests as a scenario you can step "
        "through and edit.</p>"
    )
