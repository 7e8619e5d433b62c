"""The lab's way into the playground: a link that opens the run as a playground scenario
(at the step the learner is looking at), or why this run cannot be opened there."""

from __future__ import annotations

from urllib.parse import urlencode

from app.render.html import esc
from app.url import playground_query
from engine.lab.scenario import ScenarioError
from engine.lab.workload import Workload
from engine.lab.workload_playground import workload_playground_code


def render_open_in_playground(
    workload: Workload, num_steps: int, timeline_step: int = 0, engine_step: int | None = None
) -> str:
    """The link to the run's playground at ``timeline_step`` (the state after
    ``engine_step``, if the learner picked one), or the reason there is none."""
    try:
        code = workload_playground_code(workload, num_steps)
    except ScenarioError as error:
        return (
            '<p class="lab-playground" data-testid="lab-playground-reason">'
            f"This run cannot be opened in the playground: {esc(error)}.</p>"
        )
    href = "?" + urlencode(playground_query(code, "default", timeline_step))
    where = "" if engine_step is None else f" after engine step {engine_step:,}"
    return (
        '<p class="lab-playground"><a data-testid="lab-playground-link" '
        f'href="{esc(href)}" target="_blank" rel="noopener">Open this run in the '
        f"playground{esc(where)}</a>: the same requests as a scenario you can step "
        "through and edit.</p>"
    )
