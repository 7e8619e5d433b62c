"""The playground in the app, no browser: the editor, its messages, the address, files."""

from __future__ import annotations

import base64
import json
import re
import tomllib
from urllib.parse import parse_qs

import pytest

from app.data import timelines
from app.data.url import parse_link
from app.page.layout import App
from app.playground import store
from app.playground.store import EMPTY
from app.render.code_plan import SLOT
from app.render.prefill import SEED_FLOPS
from app.views import sender as sending
from app.views.editor import fork
from engine.lab.play import toml_writer
from engine.lab.play.scenario import ACTION_KINDS, MODES, scenario_names
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.script_lines import format_lines, parse_lines
from engine.lab.play.vllm.timeline import build_timeline
from engine.lab.shared.prefill_cost import prefill_cost
from tests.app.conftest import Element, parse

TWO_REQUESTS = """add_request A max_tokens=2 prompt: 1..12
step
add_request B text: You are a helpful assistant. Tell me a joke.
add_request C text: You are a helpful assistant. Tell me a story.
step
reset_prefix_cache keep
run_until_idle"""


def playground_app(query: str = "?scenario=reset") -> App:
    app = App(link=parse_link(query))
    return app


def edit(app: App, field: str, value: str | bool) -> dict[str, str]:
    """The learner changes one field of the page's editor (editor.js): Python's reply, each
    field's message as the page shows it."""
    reply = app.page.request({"ask": "edit", "fields": {**app.playground.fields, field: value}})
    assert "error" not in reply, reply
    messages: dict[str, str] = reply["messages"]
    return messages


def import_file(app: App, raw: bytes) -> dict[str, str]:
    """The learner picks a file in the editor (editor.js sends its bytes)."""
    data = base64.b64encode(raw).decode("ascii")
    reply = app.page.request({"ask": "import", "size": len(raw), "data": data})
    messages: dict[str, str] = reply["messages"]
    return messages


@pytest.mark.parametrize("name", scenario_names())
def test_every_built_in_script_reads_back_from_its_lines(name: str) -> None:
    data = fork(name)
    for part in ("setup", "steps"):
        actions, errors = parse_lines(format_lines(data.get(part, [])))
        assert errors == []
        data[part] = actions
    original = scenario_from_dict(fork(name))
    assert scenario_from_dict(data).script == original.script
    assert scenario_from_dict(data).setup == original.setup


def test_a_fork_opens_at_the_step_and_mode_the_learner_was_on() -> None:
    app = playground_app("?scenario=reset&mode=keep&step=4")
    before = app.pool.html
    app.playground.open_fork()
    assert store.is_playground(app.state.scenario)
    assert (app.state.mode, app.state.step) == ("keep", 4)
    assert app.pool.html == before  # the same scenario, so the same page
    assert "playground=" in app.query


def test_an_edit_rebuilds_every_view_and_keeps_the_step_where_it_exists() -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    edit(app, "script", TWO_REQUESTS)
    state = app.state
    expected = build_timeline(scenario_from_dict(app.playground._data), state.mode)
    assert state.timeline == expected
    state.open(state.scenario, state.mode, 5)
    edit(app, "script", TWO_REQUESTS + "\nstep")
    assert state.step == 5 and state.last_step == len(expected.steps)
    edit(app, "script", "add_request A prompt: 1..4\nstep")
    assert state.step == state.last_step == 2  # step 5 is gone: the last one instead


def test_shared_text_prefix_hits_in_the_playground() -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    edit(app, "num_gpu_blocks", "20")
    edit(app, "script", TWO_REQUESTS)
    stats = app.state.timeline.steps[5].snapshot.stats
    assert stats.hits == 8  # C hits B's two full blocks of the shared 9-token beginning


@pytest.mark.parametrize(
    ("widget", "text", "message"),
    [
        ("num_gpu_blocks", "1", "num_gpu_blocks must be from 2 to 10,000, not 1"),
        ("num_gpu_blocks", "lots", "num_gpu_blocks must be a whole number"),
        ("block_size", "65", "block_size must be from 1 to 64, not 65"),
        ("script", "add_request A prompt: 1..x", "'1..x' is not a range"),
        ("script", "add_request A prompt: 1..400", "needs 100 blocks"),
        ("script", "step\nexplode", "line 2: unknown action 'explode'"),
        ("script", "abort Z", "abort names request 'Z'"),
        ("script", "add_request <b>x</b> prompt: 1", "request id '<b>x</b>' is used twice"),
        # every message names the line, in the field's own words
        ("script", "# a note\n\nadd_request A prompt: 1..400", "line 3: request 'A' needs"),
        ("script", "step\nabort Z", "line 2: abort names request 'Z'"),
        ("script", "step\nadd_request A max_tokens=0 prompt: 1", "line 2: max_tokens of 'A'"),
        ("script", "add_request A prompt: 1\n\nadd_request A prompt: 2", "line 3: request id"),
        ("script", "add_request A prompt: 1\n\nadd_request A prompt: 2", "(first at line 1)"),
        ("setup", "step\nstep cuont=2", "line 2: step does not use cuont (it takes count)"),
        # a request's images and embeddings: overlapping, past the end, a negative offset
        (
            "script",
            "step\nadd_request I mm_items=cat:8:6,dog:10:2 prompt: 1..24",
            "line 2 (I): the items 'cat' (tokens 8..13) and 'dog' (tokens 10..11) overlap",
        ),
        (
            "script",
            "add_request I mm_items=cat:20:6 prompt: 1..24",
            "line 1 (I): the item 'cat' (tokens 20..25) goes past the prompt's end",
        ),
        (
            "script",
            "add_request I prompt_embeds=notes:-1:4 prompt: 1..24",
            "line 1 (I): prompt_embeds has a negative offset (-1)",
        ),
        # conflicting or unused arguments are refused on their line
        ("script", "step\nreset_prefix_cache preempt keep", "line 2: reset_prefix_cache takes"),
        ("script", "reset_prefix_cache keep reset_running_requests=true", "give the mode 'keep'"),
        ("script", "http_reset keep_running_requests=true", "line 1: http_reset does not use"),
        ("script", "step count=2 count=3", "line 1: step: count is given twice"),
        # a line too long to read word by word (shlex: ~0.1 ms a character) is refused
        ("script", "step " + "1" * 3_000, "line 1: step: its words are 3,005 characters"),
    ],
)
def test_bad_input_gets_its_message_and_the_last_timeline_stays(
    widget: str, text: str, message: str
) -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    if "<b>" in text:  # the id is used twice, and must come back escaped
        text = text + "\n" + text
    shown = app.state.timeline
    said = edit(app, widget, text)[widget]
    assert "&lt;b&gt;" in said if "<b>" in text else said
    assert message.replace("'", "&#x27;").replace("<", "&lt;").replace(">", "&gt;") in said
    assert app.state.timeline is shown
    assert (
        edit(app, widget, {"num_gpu_blocks": "10", "block_size": "4"}.get(widget, "step"))[widget]
        == ""
    )


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("step\n" * 501, "501 actions is more than 500"),
        ("step 1000\nstep 1001", "2,001 engine steps is more than 2,000"),
        ("step\n" * 200_000, "at most 999,999 characters (the field cuts a longer text)"),
    ],
    ids=["500 actions", "2,000 steps", "the field's length"],
)
def test_a_script_over_a_limit_gets_its_message(script: str, message: str) -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    shown = app.state.timeline
    assert message in edit(app, "script", script)["script"]
    assert app.state.timeline is shown


def test_a_script_of_500_requests_fits_the_field_and_plays() -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    script = "\n".join(f"add_request R{i} max_tokens=1 prompt: 1..4, {i + 10}" for i in range(499))
    script += "\nrun_until_idle"
    assert len(script) > 5_000  # Panel's default cap for a text area
    assert app.page.editor_text["max_chars"] > len(script)  # the browser keeps all of it
    assert edit(app, "script", script)["script"] == ""
    assert app.state.timeline is not None and len(app.state.timeline.steps) > 1


def test_an_edit_keeps_the_page_where_it_is() -> None:
    """Python does not know the page's step: an edit's document says to keep the mode and
    step where it has them (player.js), while one the page asked for opens at its `at`."""
    app = playground_app()
    app.page.request({"ask": "fork", "key": "reset/keep", "step": 3})
    forked = app.page.opened
    assert forked["at"] == [f"{app.state.scenario}/keep", 3] and forked["keep"] is False
    edit(app, "script", format_lines(fork("reset")["steps"]) + "\nstep")
    edited = app.page.opened
    assert edited["keep"] is True and edited["serial"] == forked["serial"] + 1
    assert edited["at"][0] == f"{app.state.scenario}/keep"  # the mode Python last played
    # A mode asked for opens on the playground Python opened last (the edit's), at the
    # page's step: a pick made before the edit's document came is meant for it.
    app.page.request({"ask": "mode", "mode": "preempt", "step": 2})
    assert app.page.opened["at"] == [f"{app.state.scenario}/preempt", 2]
    assert app.state.scenario == edited["at"][0].split("/")[0]
    assert "error" in app.page.request({"ask": "mode", "mode": "turbo", "step": 2})


def test_the_address_reopens_the_same_playground_and_a_bad_one_gets_a_notice() -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    edit(app, "script", TWO_REQUESTS)
    app.state.open(app.state.scenario, "keep", 6)
    query = app.query
    reopened = playground_app("?" + query)
    assert reopened.state.timeline == app.state.timeline
    assert (reopened.state.mode, reopened.state.step) == ("keep", 6)
    assert reopened.page.editor["fields"]["script"] == TWO_REQUESTS
    assert reopened.page.editor["shown"]
    assert reopened.pool.html == app.pool.html
    damaged = playground_app(
        "?scenario=playground&playground=" + query.split("playground=")[1][:-40]
    )
    assert damaged.state.scenario == timelines.default_scenario()
    assert "Ignored playground" in damaged.page.notice_html


def test_leaving_the_playground_clears_it_from_the_address() -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    app.state.scenario = "shared-prefix"
    query = parse_qs(app.query, keep_blank_values=True)
    assert query["scenario"] == ["shared-prefix"] and "playground" not in query
    # The player drops the playground's parameters it does not write (player.js).
    assert "playground" in app.page.address["position"]
    assert not app.page.editor["shown"]


def test_export_then_import_gives_back_the_same_playground() -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    edit(app, "script", TWO_REQUESTS)
    reply = app.page.request({"ask": "export"})
    exported = reply["toml"]
    assert reply["filename"].endswith(".toml")
    assert tomllib.loads(exported) == app.playground._data
    name = app.state.scenario
    other = playground_app()
    assert import_file(other, exported.encode())["file"] == ""
    assert other.state.scenario == name
    assert other.page.editor["fields"]["script"] == TWO_REQUESTS
    assert "Import: not valid TOML" in import_file(other, b"[pool\n")["file"]
    too_large = other.page.request({"ask": "import", "size": 2_000_000})
    assert "larger than 1,000,000 bytes" in too_large["messages"]["file"]
    assert other.state.scenario == name
    assert toml_writer.dumps(other.playground._data) == exported


def test_a_playground_step_is_narrated_from_what_its_snapshots_show() -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    edit(app, "num_gpu_blocks", "20")
    edit(app, "script", TWO_REQUESTS)

    def narration(mode: str, step: int) -> str:
        app.state.open(app.state.scenario, mode, step)
        return re.sub(r"<[^>]+>", "", app.narration.html)  # the words, glossary links or not

    text = narration("default", 5)
    assert "8 of 22 looked-up prompt tokens hit the cache." in text
    assert "Freed with their hashes, to the tail (still cached): #3 to #1, #6 and #5." in text
    assert "#4 to #8 were taken and freed within this step." in text  # in the order taken
    assert "The reset cleared the hash of" in narration("keep", 6)
    assert "A pool of 19 usable blocks of 4 tokens (20 with the null block #0): 0 held" in (
        narration("keep", 0)
    )


def test_no_message_names_the_playground_or_its_tables() -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    for script in ("step\nabort Z", "add_request A prompt: 1..400", "step\nstep id=A"):
        shown = edit(app, "script", script)["script"]
        assert "playground-" not in shown and "steps #" not in shown and "line " in shown


def test_the_hint_lists_every_action_and_http_resets_query() -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    hint = app.page.editor_text["help"]
    for kind in ACTION_KINDS:
        assert f"<code>{kind}" in hint
    assert "http_reset query=" in hint


def test_open_in_playground_is_offered_on_every_scenario_but_a_playground() -> None:
    app = playground_app()
    assert app.page.fork_shown
    app.playground.open_fork()
    assert not app.page.fork_shown
    # The picker shows the open playground by the title the player's bundle gives it.
    title = "Playground: Reset under load (playground)"
    assert app.page.opened["scenario"] == [app.state.scenario, title]
    app.state.scenario = "reset"
    assert app.page.fork_shown


def test_the_address_of_the_empty_playground_fills_the_fields() -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    reopened = playground_app("?" + app.query)
    fields = reopened.page.editor["fields"]
    assert fields["num_gpu_blocks"] == "10"
    assert fields["script"] == "add_request A max_tokens=2 prompt: 1..12\nstep"


def test_after_an_edit_the_bar_holds_every_mode_of_the_playground() -> None:
    """A small playground's document counts every mode's last step: a mode picked in the
    browser moves the bar at once (its pages are Python's to play, asked for)."""
    app = playground_app("?scenario=reset&mode=keep&step=4")
    app.playground.open_fork()
    edit(app, "script", format_lines(fork("reset")["steps"]) + "\nstep")
    state = app.state
    assert app.page.opened["lasts"] == {
        f"{state.scenario}/{m}": store.last_step(state.scenario, m) for m in state.modes
    }
    assert list(app.page.opened["held"]) == [state.key]  # one mode played


def two_requests_at_step(step: int) -> App:
    """The two-request playground shown at ``step``."""
    app = playground_app()
    app.playground.load(EMPTY)
    edit(app, "script", TWO_REQUESTS)
    app.state.open(app.state.scenario, app.state.mode, step)
    return app


def test_an_edit_renders_each_view_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit's document is made in one go: every part rendered once, every step held."""
    app = two_requests_at_step(5)
    made: list[set[str]] = []
    real_make = sending.Sender._make

    def recorded(sender: sending.Sender, parts: set[str], at: tuple[str, int]) -> None:
        made.append(set(parts))
        real_make(sender, parts, at)

    monkeypatch.setattr(sending.Sender, "_make", recorded)
    edit(app, "script", TWO_REQUESTS + "\nstep")
    assert made == [set(app.sender._parts)], made
    timeline = app.state.timeline
    assert timeline is not None
    assert app.page.opened["held"] == {app.state.key: [0, len(timeline.steps)]}


def test_an_edit_keeps_the_function_sources_at_their_places() -> None:
    """The code panel's bodies (a function's highlighted source, tens of KB each) keep
    their indices: an edit running the same functions names the same bodies, so the page
    parses none again (code_panel.js compares a body with the one shown)."""
    app = two_requests_at_step(3)
    held = app.sender.sent["bodies"]
    edit(app, "script", TWO_REQUESTS.replace("max_tokens=2", "max_tokens=3"))
    assert app.sender.sent["bodies"] == held
    assert app.page.opened["bodies"] == list(held)
    assert "Code that ran" not in app.code.html  # (step 3 ran code: its body is shown)
    assert app.code.parts.body in app.sender.sent["bodies"]


def shared_prefix(shared: int, reset: str = "reset_prefix_cache") -> str:
    """A and B share their first ``shared`` tokens; B runs while the reset comes."""
    return (
        "add_request A max_tokens=2 prompt: 1..12\nstep\n"
        f"add_request B max_tokens=3 prompt: 1..{shared}, 50..53\nstep\n{reset}\nrun_until_idle"
    )


def shown_code(app: App) -> tuple[Element, list[tuple[str, int | None, str]], list[int], int]:
    """The code panel as the browser builds it from what it holds at the app's step: the
    frame, each line's kind ("same", "add", "del"), number and text, and the marks."""
    code, bodies = app.sender.sent["code"], app.sender.sent["bodies"]
    plan = code["plans"][app.state.key][app.state.step]
    root = parse(code["frames"][plan["frame"]].replace(SLOT, bodies[plan["body"]]))
    (frame,) = root.find_all(data_testid="code-panel")
    lines = [
        (
            next((k for k in ("add", "del") if k in e.attrs["class"].split()), "same"),
            int(e.attrs["data-line"]) if "data-line" in e.attrs else None,
            e.text,
        )
        for e in root.iter()
        if "ln" in e.attrs.get("class", "").split()
    ]
    return frame, lines, plan["ran"], plan["current"]


@pytest.mark.parametrize(
    ("reset", "diff_modes"),
    [("reset_prefix_cache", {"keep"}), ("reset_prefix_cache keep", set(MODES))],
    ids=["mode-decides", "keep-pinned"],
)
def test_a_playground_reset_shows_keep_modes_diff_where_the_keep_reset_ran(
    reset: str, diff_modes: set[str]
) -> None:
    """At a playground's reset, the code panel shows the keep reset as a diff against the
    released code where it ran (keep mode, or every mode if the line says keep)."""
    app = playground_app()
    app.playground.load(EMPTY)
    edit(app, "script", shared_prefix(8, reset))
    for mode in app.state.modes:
        app.state.open(app.state.scenario, mode, 0)
        steps = app.state.timeline.steps
        at = next(i for i, s in enumerate(steps) if s.label.startswith("reset_prefix_cache("))
        app.state.step = at
        focus, kept = steps[at].focus, "keep_running_requests=True" in steps[at].label
        assert focus is not None and kept == (mode in diff_modes)
        frame, lines, ran, current = shown_code(app)
        assert frame.attrs["data-diff"] == str(kept).lower(), mode
        assert frame.attrs["data-qualname"] == focus.qualname
        assert focus.qualname.startswith("KeepModeBlockPool." if kept else "BlockPool.")
        assert (ran, current) == (sorted(focus.lines), focus.last_line)
        assert set(ran) <= {n for _, n, _ in lines}  # each line that ran is there, numbered
        assert {k for k, _, _ in lines} == ({"same", "add", "del"} if kept else {"same"}), mode
        guard = [(k, n in ran) for k, n, text in lines if "not allow_used_blocks" in text]
        assert guard == ([("add", True)] if kept else [])  # keep's guard: added, and it ran


def shown_hit(app: App, request_id: str = "B") -> int:
    """Check the prefill-cost view against the request's record at the app's step (the
    engine's: its prompt and prefix-cache hit), and return the hit."""
    snapshot = app.state.current.snapshot
    request = next(r for r in snapshot.requests if r.request_id == request_id)
    cost = prefill_cost(request.num_prompt_tokens, request.num_cached_tokens, SEED_FLOPS)
    (panel,) = parse(app.prefill.html).find_all(data_testid="prefill-cost")
    assert panel.attrs["data-valid"] == "true"
    for attr, value in [
        ("data-flops-without", cost.flops_without_cache),
        ("data-flops-with", cost.flops_with_cache),
        ("data-speedup", cost.speedup),
    ]:
        assert float(panel.attrs[attr]) == pytest.approx(value, rel=1e-4), attr
    assert f"{request.num_prompt_tokens:,} prompt tokens" in panel.text
    assert f"with {request.num_cached_tokens:,} cached" in panel.text
    fields = json.loads(parse(app.prefill.html).with_attr("data-fields")[0].attrs["data-fields"])
    assert {n: fields[n] for n in ("prompt_tokens", "cached_tokens")} == {
        "prompt_tokens": str(request.num_prompt_tokens),
        "cached_tokens": str(request.num_cached_tokens),
    }
    return request.num_cached_tokens


def admitted(app: App, request_id: str) -> int:
    """The step at which the request was admitted (its prefix-cache hit known)."""
    return next(
        i
        for i, s in enumerate(app.state.timeline.steps)
        if any(r.request_id == request_id and r.num_cached_tokens >= 0 for r in s.snapshot.requests)
    )


def test_the_prefill_cost_on_a_playground_is_its_requests_and_follows_an_edit() -> None:
    """The prefill-cost view shows the admitted request's prompt and cache hit as the
    engine recorded them, and a longer shared prefix typed in raises the hit it shows."""
    app = playground_app()
    app.playground.load(EMPTY)
    edit(app, "script", shared_prefix(8))
    app.state.step = step = admitted(app, "B")
    hit = shown_hit(app)
    edit(app, "script", shared_prefix(12))  # the learner stays on the step
    assert app.state.step == step
    # 4 more shared tokens: one more full block found in the cache
    assert hit > 0 and shown_hit(app) - hit == app.state.timeline.block_size


def test_the_prefill_cost_on_a_playground_is_each_modes_own() -> None:
    """A request sent after a reset while B runs shows each mode's hit: none after keep
    mode's reset (the hashes are gone), the prefix's after the released one (it failed)."""
    app = playground_app()
    app.playground.load(EMPTY)
    after = "reset_prefix_cache\nadd_request C prompt: 1..8, 60\nstep"
    edit(app, "script", shared_prefix(8, after))
    hits: dict[str, int] = {}
    for mode in ("default", "keep"):
        app.state.open(app.state.scenario, mode, 0)
        app.state.step = admitted(app, "C")
        hits[mode] = shown_hit(app, "C")
    assert hits["keep"] == 0 < hits["default"]


def test_the_playground_named_alone_opens_the_empty_playground() -> None:
    """`?scenario=playground` with no script is the start page's empty playground, not
    a refusal."""
    app = playground_app("?scenario=playground")
    assert store.is_playground(app.state.scenario)
    assert not app.page.notice_html
    assert app.page.editor["fields"]["script"] == format_lines(EMPTY["steps"])
    assert app.query == playground_app("?" + app.query).query


def test_a_hostile_line_is_quoted_short_in_its_message() -> None:
    """A 999,999-character unknown action comes back as its first 80 characters and its
    length (it was quoted whole: 12.5 s and a page 6.5 million px wide)."""
    app = playground_app("?scenario=playground")
    shown = app.state.timeline
    said = edit(app, "script", "step\n" + "x" * 999_990)["script"]
    assert "line 2: unknown action" in said
    assert "999,990 characters" in said and len(said) < 1_000
    assert app.state.timeline is shown


def test_a_hostile_address_is_quoted_short_in_its_notice() -> None:
    notices = parse_link("?scenario=" + "y" * 50_000 + "&mode=" + "z" * 50_000).notices
    assert notices and all(len(n) < 600 and "50,000 characters" in n for n in notices)
