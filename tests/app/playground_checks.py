"""Driving the playground in a real browser and checking it against the engine.

Shared by the `panel serve` tests and the static-site tests of the playground.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from app.playground.store import EMPTY
from app.render.code_plan import code_parts
from app.render.prefill import FIELDS, follow, follow_page, model_texts
from engine.lab.play import toml_writer
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.script_lines import format_lines, parse_lines
from engine.lab.play.vllm.timeline import Timeline, build_timeline
from tests.app.conftest import parse
from tests.app.page_checks import expected, read_page, wait_for_step

expect = pytest.importorskip("playwright.sync_api").expect

SCRIPT = """add_request A max_tokens=3 text: You are a helpful assistant. Tell me a joke.
step
add_request B text: You are a helpful assistant. Tell me a story.
step
reset_prefix_cache keep
run_until_idle"""


def typed(blocks: int, block_size: int, script: str) -> dict[str, Any]:
    """The data the editor makes of what the test types into an empty playground."""
    steps, errors = parse_lines(script)
    assert not errors
    return {**EMPTY, "pool": {"num_gpu_blocks": blocks, "block_size": block_size}, "steps": steps}


def check_playground_step(page: Any, timeline: Timeline, step: int) -> None:
    wait_for_step(page, timeline, step)
    shown = read_page(page)
    narration = timeline.narration_text(timeline.steps[step])
    assert " ".join(narration.split()) in " ".join(shown.pop("narration").split())
    assert shown == expected(timeline, step)


def check_code_and_prefill_cost(page: Any, timeline: Timeline, step: int) -> None:
    """The code panel's lines at the step, a keep-mode diff's removed and added lines
    included, and the prefill-cost calculator on the step's request."""
    parts = parse(code_parts(timeline, step).html)
    frame = parts.find_all(data_testid="code-panel")[0]
    panel = page.get_by_test_id("code-panel")
    assert panel.get_attribute("data-diff") == frame.attrs.get("data-diff")  # (none: no code)
    lines = [
        [e.attrs["class"], e.attrs.get("data-line") or e.attrs["data-other-line"]]
        for e in parts.iter()
        if "ln" in e.attrs.get("class", "").split()
    ]
    # (the browser marks the lines that ran with more classes)
    shown = panel.locator(".ln").evaluate_all(
        "els => els.map(e => [['ln', 'del', 'add'].filter(c => e.classList.contains(c)).join(' '),"
        " e.dataset.line || e.dataset.otherLine])"
    )
    assert shown == lines
    texts, _ = follow(timeline.steps[step].snapshot, model_texts())
    for name in ("prompt_tokens", "cached_tokens"):
        expect(page.get_by_label(FIELDS[name], exact=True)).to_have_value(texts[name])
    cost = parse(follow_page(timeline, step, model_texts())).find_all(data_testid="prefill-cost")[0]
    calculator = page.get_by_test_id("prefill-cost")
    for attr in ("data-valid", "data-flops-with", "data-flops-without"):
        expect(calculator).to_have_attribute(attr, cost.attrs[attr])


def field(page: Any, label: str) -> Any:
    return page.get_by_label(label, exact=False)


def open_fork(page: Any) -> None:
    page.get_by_role("button", name="Edit a copy").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("(playground)")


def start_empty(page: Any) -> None:
    """Press "Start empty" and wait until its fields are on the page: text typed before
    they arrive would be overwritten, or typed next to them ("10" then "10" is "1010")."""
    page.get_by_role("button", name="Start empty").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(EMPTY["title"])
    expect(field(page, "GPU blocks")).to_have_value(str(EMPTY["pool"]["num_gpu_blocks"]))
    expect(field(page, "Script (one action per line)")).to_have_value(format_lines(EMPTY["steps"]))


def walk(page: Any, timeline: Timeline) -> None:
    """Every step, from the first, compared with the engine (the code panel and the
    prefill-cost calculator included)."""
    last = len(timeline.steps) - 1
    # it arrived (a traced build on a busy machine can take seconds)
    expect(page.get_by_test_id("step-counter")).to_contain_text(f"/ {last}", timeout=30_000)
    page.get_by_role("button", name="Restart").click()
    check_playground_step(page, timeline, 0)
    check_code_and_prefill_cost(page, timeline, 0)
    forward = page.get_by_role("button", name="Step forward")
    for step in range(1, len(timeline.steps)):
        forward.click()
        check_playground_step(page, timeline, step)
        check_code_and_prefill_cost(page, timeline, step)


def build_by_hand(page: Any) -> tuple[dict[str, Any], Timeline]:
    """Start an empty playground and type a 20-block pool and SCRIPT into it: the data
    the editor makes of it, and its keep-mode timeline."""
    start_empty(page)
    field(page, "GPU blocks").fill("20")
    field(page, "Script (one action per line)").fill(SCRIPT)
    data = typed(20, 4, SCRIPT)
    timeline = build_timeline(scenario_from_dict(data), "keep")
    # What walk() then checks: a step whose code is keep mode's diff, and steps whose
    # request found a cached prefix.
    steps = range(len(timeline.steps))
    assert any('data-diff="true"' in code_parts(timeline, s).html for s in steps)
    assert any(r.num_cached_tokens > 0 for s in steps for r in timeline.steps[s].snapshot.requests)
    return data, timeline


def export_toml(page: Any, tmp_path: Path, data: dict[str, Any]) -> Path:
    """Export TOML: the downloaded file holds `data`, as toml_writer writes it."""
    with page.expect_download() as download:
        page.get_by_role("button", name="Export TOML").click()
    exported = tmp_path / "mine.toml"
    download.value.save_as(exported)
    assert tomllib.loads(exported.read_text()) == data
    assert exported.read_text() == toml_writer.dumps(data)
    return exported


# Files a learner might pick by mistake, or made to hurt: each is refused with a message.
BAD_FILES = (
    (b"[pool\n", "Import: not valid TOML"),
    (b'title = "x"\n[pool]\nnum_gpu_blocks = 1\n[[steps]]\ndo = "step"\n', "num_gpu_blocks"),
    (b"\xff\xfe not text", "Import:"),
)


def check_import_refused(page: Any, timeline: Timeline) -> None:
    """Each of BAD_FILES imported gets its message; the playground shown stays, and its
    step controls still work."""
    for content, message in BAD_FILES:
        page.locator('input[type="file"]').set_input_files(
            {"name": "bad.toml", "mimeType": "application/toml", "buffer": content}
        )
        expect(page.locator(".pg-message", has_text=message)).to_be_visible()
        check_playground_step(page, timeline, 0)
    page.get_by_role("button", name="Step forward").click()
    check_playground_step(page, timeline, 1)


LONG_SCRIPT = """add_request A max_tokens=2 prompt: 1..12
step
add_request B max_tokens=3 prompt: 1..8, 20, 21
step 3
reset_prefix_cache preempt
run_until_idle"""
SHORT_SCRIPT = "add_request A max_tokens=2 prompt: 1..12\nstep\nstep\nstep"


def check_an_edit_right_after_a_move_opens_there(page: Any, rounds: int = 3) -> None:
    """A step taken with the slider and an edit in the same moment: the edited playground
    opens at the slider's step, not at a step from before the move (on `panel serve` the
    move once reached Python after the edit, which then opened at the old step, cut to
    the new timeline's last)."""
    start_empty(page)
    field(page, "GPU blocks").fill("10")
    script = field(page, "Script (one action per line)")
    slider = page.get_by_role("slider", name="Step")
    counter = page.get_by_test_id("step-counter")
    short = build_timeline(scenario_from_dict(typed(10, 4, SHORT_SCRIPT)), "default")
    for _ in range(rounds):
        script.fill(LONG_SCRIPT)
        expect(counter).to_contain_text("/ 8")
        slider.fill("6")
        expect(counter).to_have_attribute("data-step", "6")
        page.wait_for_timeout(300)  # Python is at 6 too
        # Both in one task of the page, as fast as a learner could never be.
        page.evaluate(
            """([slider, script, text]) => {
                slider.value = '2'
                slider.dispatchEvent(new Event('input', { bubbles: true }))
                script.value = text
                script.dispatchEvent(new Event('input', { bubbles: true }))
            }""",
            [slider.element_handle(), script.element_handle(), SHORT_SCRIPT],
        )
        expect(counter).to_contain_text("/ 4")
        page.wait_for_timeout(300)  # (a late move back would come within this)
        check_playground_step(page, short, 2)


def check_the_editor_beside_the_views(page: Any) -> None:
    """An edit and the pool it changes share a screen: side by side on a laptop's page
    (the editor heads the second column), the editor first on a phone, which does not
    scroll sideways. Leaves the page at 1280x800."""
    page.set_viewport_size({"width": 1280, "height": 800})
    page.evaluate("() => window.scrollTo(0, 0)")
    blocks = field(page, "GPU blocks")
    pool = page.get_by_test_id("pool")
    expect(blocks).to_be_in_viewport()
    expect(pool).to_be_in_viewport()
    at_blocks, at_pool = blocks.bounding_box(), pool.bounding_box()
    assert at_blocks["x"] > at_pool["x"] + at_pool["width"], (at_blocks, at_pool)
    assert at_blocks["y"] < at_pool["y"] + at_pool["height"], (at_blocks, at_pool)
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        expect(page.get_by_role("button", name="Start empty")).to_be_visible()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        script = field(page, "Script (one action per line)").bounding_box()
        assert script["y"] + script["height"] < pool.bounding_box()["y"]
    finally:
        page.set_viewport_size({"width": 1280, "height": 800})
