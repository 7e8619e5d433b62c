"""Deep links: `?scenario=reset&mode=keep&step=5&embed=1&quiz=1`, and
`?playground=CODE&...`, and `?scenario=playground` alone: the empty playground.

An address that names no position (no scenario, mode or step) and no playground opens
the start page, except in the compact layout: the write-up's `?embed=1` opens the
flagship.

Parsing is a pure function of the query string. A value that cannot be used
falls back to the default and yields a notice naming the parameter, so a typo
in a link never breaks the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

from app.data import timelines
from app.playground import store as playground
from engine.lab.play import playground_code
from engine.lab.play.scenario import SGLANG_MODES, ScenarioError
from engine.lab.shared.quoting import shorten_quotes
from engine.lab.workload.playground import workload_playground_code
from engine.lab.workload.workload import Workload

TRUE_VALUES = ("1", "true", "yes", "on")
EMBED_SUFFIX = "-embed"
# The start page's early page on the static site (build.py).
START_PAGE = "start"
# `?scenario=playground&playground=CODE`: the scenario is the one the code holds.
PLAYGROUND = "playground"
SCENARIO, MODE, STEP, EMBED, QUIZ = "scenario", "mode", "step", "embed", "quiz"
# The address parameters that name a timeline or a position in one: an address with
# none of them opens the start page.
POSITION_PARAMETERS = (SCENARIO, MODE, STEP, PLAYGROUND)
# `?lab=PRESET`: the workload lab, which has no early page (it needs Python).
LAB = "lab"
# The parameters that choose the page itself (the layout, the lab): the static site's
# early page of a scenario opens only at its own values of them. Any other parameter than
# these and the parse's (`utm_source`, `fbclid`, ...) is ignored.
PAGE_PARAMETERS = (EMBED, LAB)
# Stands where a notice quotes the address's value, in the notices the static site's early
# page says before Python (notice_templates).
NOTICE_VALUE = "PCLVALUE"


@dataclass(frozen=True)
class LinkState:
    scenario: str
    mode: str
    step: int
    embed: bool = False
    notices: tuple[str, ...] = ()
    start: bool = False  # the start page: the address names no position
    quiz: bool | None = None  # `quiz=1` / `quiz=0`; None: the layout's default


def browser_names() -> dict[str, str | list[str]]:
    """These names as the browser's one reader and writer of the address takes them
    (app/components/address.js): given by the components' parameters and the static
    site's early-page config, never copied."""
    return {
        "scenario": SCENARIO,
        "mode": MODE,
        "step": STEP,
        "playground": PLAYGROUND,
        "embed": EMBED,
        "quiz": QUIZ,
        "lab": LAB,
        "position": list(POSITION_PARAMETERS),
        "page": list(PAGE_PARAMETERS),
        "true": list(TRUE_VALUES),
        "embed_suffix": EMBED_SUFFIX,
    }


def _first(query: str) -> dict[str, str]:
    """The first value of each key; later repeats are ignored, as browsers do."""
    values: dict[str, str] = {}
    for key, value in parse_qsl(query.lstrip("?"), keep_blank_values=True):
        values.setdefault(key, value)
    return values


def parse_link(query: str) -> LinkState:
    """Check every parameter against the scenarios and the timeline they name."""
    raw = _first(query)
    notices: list[str] = []

    scenario = timelines.default_scenario()
    names = timelines.names()
    if raw.get(PLAYGROUND):  # the learner's own scenario, whole (app/playground/)
        try:
            scenario = playground.register(playground_code.decode(raw[PLAYGROUND])).scenario.name
        except ScenarioError as error:
            notices.append(f"Ignored playground: {error}. Showing {scenario!r}.")
    elif raw.get("scenario") == PLAYGROUND:  # no script yet: the empty playground
        scenario = playground.register(playground.EMPTY).scenario.name
    elif "scenario" in raw:
        if raw["scenario"] in names:
            scenario = raw["scenario"]
        else:
            notices.append(
                f"Ignored scenario={raw['scenario']!r}: not one of {', '.join(names)}. "
                f"Showing {scenario!r}."
            )

    modes = timelines.modes(scenario)  # vLLM's, then SGLang's (`mode=lpm` opens SGLang)
    mode = modes[0]
    if "mode" in raw:
        if raw["mode"] in modes:
            mode = raw["mode"]
        else:
            notices.append(f"Ignored {mode_refusal(raw['mode'], scenario)} Showing {mode!r}.")

    step = 0
    if "step" in raw:
        last = timelines.last_step(scenario, mode)
        text = raw["step"].strip()
        # (isascii: "²" is a digit to str.isdigit, and no number to int)
        if text.isascii() and text.isdigit() and int(text) <= last:
            step = int(text)
        else:
            notices.append(f"Ignored step={raw['step']!r}: steps go from 0 to {last}. Showing 0.")

    embed = raw.get(EMBED, "").lower() in TRUE_VALUES
    start = not embed and not any(name in raw for name in POSITION_PARAMETERS)
    quiz = raw[QUIZ].lower() in TRUE_VALUES if QUIZ in raw else None
    notices = [shorten_quotes(notice) for notice in notices]  # a hostile address's values
    return LinkState(scenario, mode, step, embed, tuple(notices), start, quiz)


def notice_templates(scenario: str) -> dict[str, Any]:
    """What parse_link says of an address of ``scenario``'s page that it corrects, with
    NOTICE_VALUE quoted where it quotes the address's value: an unknown mode, an SGLang policy the
    scenario does not play, a step past a mode's last, and (the default scenario's page
    alone) an unknown scenario. The static site's early page says them before Python
    (app/components/address.js), quoting the value as Python does."""

    def said(**query: str) -> str:
        (notice,) = parse_link("?" + urlencode(query)).notices
        return notice

    modes = timelines.modes(scenario)
    templates: dict[str, Any] = {
        "value": repr(NOTICE_VALUE),  # (as the notices quote it)
        "mode": said(scenario=scenario, mode=NOTICE_VALUE),
        "policies": {m: said(scenario=scenario, mode=m) for m in SGLANG_MODES if m not in modes},
        "step": {m: said(scenario=scenario, mode=m, step=NOTICE_VALUE) for m in modes},
    }
    if scenario == timelines.default_scenario():
        templates["scenario"] = said(scenario=NOTICE_VALUE)
    return templates


def mode_refusal(mode: str, scenario: str) -> str:
    """Why ``mode`` names no timeline of ``scenario``: an SGLang schedule policy says which
    engines and policies the scenario plays with."""
    modes = timelines.modes(scenario)
    if timelines.engine_of(mode) == "sglang":
        policies = [m for m in modes if timelines.engine_of(m) == "sglang"]
        where = (
            f"plays on SGLang with {', '.join(policies)} only" if policies else "plays on vLLM only"
        )
        return (
            f"mode={mode!r}: {mode} is an SGLang schedule policy and scenario {scenario!r} "
            f"{where} ({', '.join(modes)})."
        )
    return f"mode={mode!r}: scenario {scenario!r} has {', '.join(modes)}."


def link_query(scenario: str, mode: str, step: int) -> dict[str, str]:
    """The query parameters that reopen the app at this state."""
    return {**timeline_query(scenario, mode), "step": str(step)}


def timeline_query(scenario: str, mode: str) -> dict[str, str]:
    """The query parameters that name a timeline (the player adds the step: player.js)."""
    if playground.is_playground(scenario):
        return playground_query(playground.get(scenario).code, mode, None)
    return {"scenario": scenario, "mode": mode}


def playground_query(code: str, mode: str, step: int | None) -> dict[str, str]:
    """The query parameters that open the playground ``code`` holds at this state (at no
    step: the timeline's)."""
    query = {"scenario": PLAYGROUND, "playground": code, "mode": mode}
    return query if step is None else {**query, "step": str(step)}


def playground_href(code: str, step: int | None = None) -> str:
    """The address that opens the playground ``code`` holds in its default mode, at
    ``step`` (None: the address names no step)."""
    return "?" + urlencode(playground_query(code, "default", step))


def empty_playground_href() -> str:
    """The address of the playground's empty scenario (the editor's "Start empty")."""
    return playground_href(playground_code.encode(playground.EMPTY), 0)


def lab_run_playground_href(workload: Workload, num_steps: int, step: int = 0) -> str:
    """The address that opens a lab run as a playground at timeline step ``step``.
    Raises ScenarioError when the run cannot be a playground scenario."""
    return playground_href(workload_playground_code(workload, num_steps), step)


def early_page_name(scenario: str, embed: bool) -> str:
    """The static site's early page of a scenario in a layout (build.py)."""
    return scenario + (EMBED_SUFFIX if embed else "")


def early_page_of(link: LinkState) -> str:
    """The early page that shows this address's page (before any step or mode)."""
    return START_PAGE if link.start else early_page_name(link.scenario, link.embed)


def early_pages() -> dict[str, str]:
    """Name -> address of every early page: the start page, and each scenario in both
    layouts."""
    layouts = {False: {}, True: {"embed": "1"}}
    return {
        START_PAGE: "",
        **{
            early_page_name(name, embed): "?" + urlencode({"scenario": name, **extra})
            for name in timelines.names()
            for embed, extra in layouts.items()
        },
    }


def lab_engine(query: str) -> str | None:
    """The engine word a lab address asks for (`&engine=both`), or None (vLLM)."""
    return _first(query).get("engine")


def lab_link(query: str) -> str | None:
    """The workload preset a `?lab=PRESET` address asks for ("" for the default), or None
    when the address is not the lab's."""
    return _first(query).get(LAB)
