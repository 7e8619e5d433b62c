"""A seeded soak of random learner actions in the playground on `panel serve`.

Edits (valid and not), pool sizes, steps, keys, the slider, modes, reloads, and the
browser's Back and Forward, in a random order fixed by the seed; after every action
the page must show the engine's timeline of the last valid script at the mode and
step that action leads to, and the console must stay clean (checked by the `watched`
fixture).

    PCL_SOAK_ACTIONS=300 PCL_SOAK_SEED=7 pytest tests/app/test_browser_playground_soak.py

The suite runs 120 actions; `--long` runs 1,000 instead (about 7 minutes on a 2-core
machine), whose first 120 are the same actions (one seed). The static site's soak
(tests/site/test_site_playground.py) reuses `soak` and `soak_lengths`.
"""

from __future__ import annotations

import os
import random
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from engine.lab.play import playground_code
from engine.lab.play.scenario import Scenario, ScenarioError, load_scenario
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.script_lines import format_lines, parse_lines
from engine.lab.play.vllm.timeline import Timeline, build_timeline
from tests.app import test_browser_serve as serve
from tests.app.playground_checks import check_playground_step, field, open_fork, start_empty
from tests.app.test_browser_serve import Watched, open_app
from tests.conftest import long_run

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.browser

server, playwright, browser, watched = serve.server, serve.playwright, serve.browser, serve.watched

ACTIONS = int(os.environ.get("PCL_SOAK_ACTIONS", "120"))
LONG_ACTIONS = 1000
SEED = int(os.environ.get("PCL_SOAK_SEED", "12"))
SCRIPT_LABEL = "Script (one action per line)"
# Picked at random, edits and steps the most often.
ACTION_KINDS = (
    *("script", "script", "blocks"),
    *("forward", "forward", "back", "key", "scrub", "mode"),
    *("reload", "history"),
)


def random_script(rng: random.Random) -> str:
    lines: list[str] = []
    ids: list[str] = []
    for _ in range(rng.randint(1, 8)):
        kind = rng.choice(["add", "add", "step", "steps", "idle", "reset", "abort", "bad"])
        if kind == "add":
            ids.append(f"R{len(ids)}")
            prompt = rng.choice(["1..8", "1..8, 20, 21", "1..4, 30..33", "40..60"])
            if rng.random() < 0.3:
                prompt = "text: You are a helpful assistant. " + rng.choice(["Hi.", "Bye."])
            else:
                prompt = "prompt: " + prompt
            lines.append(f"add_request {ids[-1]} max_tokens={rng.randint(1, 4)} {prompt}")
        elif kind == "step":
            lines.append("step")
        elif kind == "steps":
            lines.append(f"step {rng.randint(2, 4)}")
        elif kind == "idle":
            lines.append("run_until_idle")
        elif kind == "reset":
            lines.append("reset_prefix_cache " + rng.choice(["", "default", "preempt", "keep"]))
        elif kind == "abort" and ids:
            lines.append(f"abort {rng.choice(ids)}")
        elif kind == "bad" and rng.random() < 0.3:
            lines.append(rng.choice(["dance", "add_request X prompt: 1..x", "step 0"]))
    return "\n".join(lines)


def played(blocks: str, script: str) -> dict[str, Any] | None:
    """The data the editor plays for these fields, or None when it refuses them."""
    steps, errors = parse_lines(script)
    if errors or not blocks.isdigit():
        return None
    data = {"title": "My scenario", "pool": {"num_gpu_blocks": int(blocks), "block_size": 4}}
    data["steps"] = steps
    try:
        scenario_from_dict(data)
    except ScenarioError:
        return None
    return data


def shown_position(page: Any, name: str, mode: str | None = None) -> tuple[str, int]:
    """The mode and step the page shows, once every view shows the same position of ``name``
    (in ``mode``, when the last action picked one: until Python has built a playground's
    other mode, the views still agree on the mode left, which is not the answer)."""
    for _ in range(100):
        at = set(page.locator("[data-at]").evaluate_all("els => els.map(e => e.dataset.at)"))
        counter = page.get_by_test_id("step-counter").get_attribute("data-step")
        if len(at) == 1:
            key, _, step = next(iter(at)).partition("@")
            scenario, _, shown = key.partition("/")
            if scenario == name and step == counter and mode in (None, shown):
                return shown, int(step)
        page.wait_for_timeout(100)
    fields = {label: field(page, label).input_value() for label in ("GPU blocks", SCRIPT_LABEL)}
    raise AssertionError(
        f"the views never agreed on a position of {name}: {at}, {counter}; fields {fields}"
    )


def soak_lengths(actions: int) -> Any:
    """The suite's soak of ``actions`` and the long one (marked slow, run by ``--long``)."""
    return pytest.mark.parametrize(
        "actions",
        [
            pytest.param(actions, id=f"{actions}-actions"),
            pytest.param(LONG_ACTIONS, id=f"{LONG_ACTIONS}-actions", marks=pytest.mark.slow),
        ],
    )


def skip_if_the_long_soak_runs(request: pytest.FixtureRequest, actions: int) -> None:
    """With ``--long`` the short soak is the long one's first actions (one seed): skip it."""
    if actions != LONG_ACTIONS and long_run(request.config):
        pytest.skip("the long soak plays these actions first")


@soak_lengths(ACTIONS)
def test_random_learner_actions_keep_the_page_equal_to_the_engine(
    watched: Watched, server: str, actions: int, request: pytest.FixtureRequest
) -> None:
    skip_if_the_long_soak_runs(request, actions)
    soak(open_app(watched, server, "?scenario=shared-prefix"), actions, SEED)


def soak(page: Any, actions: int, seed: int) -> None:
    """``actions`` random learner actions on an open page (console errors are the
    caller's to check); after each, the page shows the engine's timeline at the mode
    and step the action leads to."""
    rng = random.Random(seed)
    built: dict[tuple[str, str], Timeline] = {}

    def timeline_of(data: dict[str, Any], mode: str) -> Timeline:
        return built_timeline(built, scenario_from_dict(data), mode)

    open_fork(page)
    start_empty(page)
    blocks, script = "10", "add_request A max_tokens=2 prompt: 1..12\nstep"
    field(page, "GPU blocks").fill(blocks)
    field(page, SCRIPT_LABEL).fill(script)
    data = played(blocks, script)
    assert data is not None
    mode, step = shown_position(page, scenario_from_dict(data).name)
    done: list[str] = []
    for _ in range(actions):
        last = len(timeline_of(data, mode).steps) - 1
        action = rng.choice(ACTION_KINDS)
        if action in ("script", "blocks"):
            # A learner edits a moment after a step, not within the same few ms (a
            # step reaches Python after the browser has shown it).
            page.wait_for_timeout(200)
        if action == "script":
            script = random_script(rng)
            field(page, SCRIPT_LABEL).fill(script)
        elif action == "blocks":
            blocks = str(rng.choice([1, 3, 6, 10, 20, 40]))
            field(page, "GPU blocks").fill(blocks)
        elif action in ("forward", "back"):
            button = page.get_by_role(
                "button", name="Step forward" if action == "forward" else "Step back"
            )
            if button.is_enabled():
                button.click()
            step = min(step + 1, last) if action == "forward" else max(step - 1, 0)
        elif action == "key":
            page.get_by_test_id("narration").click()
            key = rng.choice(["ArrowRight", "ArrowLeft", "Home"])
            page.keyboard.press(key)
            step = {"ArrowRight": min(step + 1, last), "ArrowLeft": max(step - 1, 0)}.get(key, 0)
        elif action == "scrub":
            if last > 0:  # the slider is off with one step
                step = rng.randint(0, last)
                page.get_by_role("slider", name="Step").fill(str(step))
        elif action == "mode":
            picked = rng.choice(["default", "preempt", "keep"])
            page.get_by_role("radio", name=picked).check()
            if picked != mode:  # a mode picked keeps the step, within its last one
                mode, step = picked, min(step, len(timeline_of(data, picked).steps) - 1)
        elif action == "history":
            # Back leaves the playground for the scenario it was forked from (a new
            # scenario is a new history entry); Forward returns to it as it was left.
            wait_for_address(page, data, mode, step)
            page.go_back()
            check_scenario_page(page, "shared-prefix", built)
            page.go_forward()
        else:
            wait_for_address(page, data, mode, step)
            page.reload()
            # Live, and on the static site the early page has handed over to it.
            page.wait_for_function(
                "() => !document.body.classList.contains('pn-loading')"
                " && !document.querySelector('.pcl-early-page')",
                timeout=120_000,
            )
        if action == "reload":
            # The address reopens the last valid playground, fields included.
            blocks = str(data["pool"]["num_gpu_blocks"])
            script = format_lines(data["steps"])
            expect(field(page, "GPU blocks")).to_have_value(blocks)
            expect(field(page, SCRIPT_LABEL)).to_have_value(script)
        elif action == "history":
            # The same session: the fields hold what was typed, or the last valid
            # playground as the address has it; nothing else.
            valid = (str(data["pool"]["num_gpu_blocks"]), format_lines(data["steps"]))
            shown = (
                field(page, "GPU blocks").input_value(),
                field(page, SCRIPT_LABEL).input_value(),
            )
            assert shown in ((blocks, script), valid), shown
            blocks, script = shown
        data = played(blocks, script) or data  # refused fields: the last valid one stays
        timeline = timeline_of(data, mode)
        # An edit keeps the step while it still exists.
        step = min(step, len(timeline.steps) - 1)
        done.append(action)
        try:
            assert shown_position(page, timeline.scenario, mode) == (mode, step)
            check_playground_step(page, timeline, step)
        except AssertionError as error:
            raise AssertionError(f"after {len(done)} actions, the last {done[-6:]}") from error


def wait_for_address(page: Any, data: dict[str, Any], mode: str, step: int) -> None:
    """Wait until the address reopens the playground ``data`` at ``mode`` and ``step``.
    The app writes it a moment after a change (the change's round trip to Python, then
    a short wait for more steps); a learner's Back or reload within that moment finds
    the entry as it was, which is not what the soak checks."""
    name = scenario_from_dict(data).name
    query: dict[str, list[str]] = {}
    for _ in range(100):
        query = parse_qs(urlsplit(page.evaluate("() => window.location.href")).query)
        code = query.get("playground", [""])[0]
        at = query.get("mode") == [mode] and query.get("step") == [str(step)]
        if at and code and scenario_from_dict(playground_code.decode(code)).name == name:
            return
        page.wait_for_timeout(100)
    shown = {key: value for key, value in query.items() if key != "playground"}
    raise AssertionError(f"the address never reached {mode} step {step} of {name}: {shown}")


def check_scenario_page(page: Any, name: str, built: dict[tuple[str, str], Timeline]) -> None:
    """The built-in scenario's page, at whatever mode and step it shows."""
    mode, step = shown_position(page, name)
    check_playground_step(page, built_timeline(built, load_scenario(name), mode), step)


def built_timeline(
    built: dict[tuple[str, str], Timeline], scenario: Scenario, mode: str
) -> Timeline:
    """The scenario's timeline in ``mode``, built once per soak."""
    if (scenario.name, mode) not in built:
        built[(scenario.name, mode)] = build_timeline(scenario, mode)
    return built[(scenario.name, mode)]
