"""Reading the workload lab's page in a real browser: its charts' data, its step view.

Shared by the `panel serve` tests and the static-site tests of the lab.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from engine.lab.play import playground_code
from engine.lab.workload.presets import Preset, load_preset
from engine.lab.workload.run import WorkloadRun
from engine.lab.workload.vllm.runner import run_workload

expect = pytest.importorskip("playwright.sync_api").expect

# The lab's live document: the last one holding its charts.
LIVE_DOCUMENT_JS = "Bokeh.documents.filter(doc => doc.get_model_by_name('lab-source-run')).at(-1)"

SOURCE_JS = f"""([name, column]) => {{
  const source = {LIVE_DOCUMENT_JS}?.get_model_by_name(name);
  return source ? {{id: source.id, values: Array.from(source.data[column])}} : null;
}}"""


def source(page: Any, name: str, column: str) -> dict[str, Any]:
    result = page.evaluate(SOURCE_JS, [f"lab-source-{name}", column])
    assert result is not None, f"no source {name}"
    return dict(result)


def preset_runs(name: str) -> tuple[Preset, WorkloadRun, WorkloadRun]:
    """A preset with the engine's runs of its workload and of its overlay, in CPython."""
    chosen = load_preset(name)
    compare_workload = chosen.compare_workload()
    assert compare_workload is not None
    return chosen, run_workload(chosen.workload), run_workload(compare_workload)


def click_a_chart(page: Any, timeout_ms: int) -> tuple[Any, int]:
    """Click the first chart a fifth of the way in (within the solid run: the dashed one
    runs longer): the step view it opens, and the engine step it shows."""
    canvas = page.locator(".bk-Canvas").first
    box = canvas.bounding_box()
    assert box is not None
    canvas.click(position={"x": box["width"] / 5, "y": box["height"] / 3})
    step_view = page.get_by_test_id("lab-step")
    expect(step_view).to_be_visible(timeout=timeout_ms)
    return step_view, int(step_view.get_attribute("data-step") or "0")


def playground_of(link: Any) -> tuple[dict[str, Any], int]:
    """The scenario data and the timeline step the lab's playground link opens."""
    query = parse_qs(urlsplit(link.get_attribute("href") or "").query)
    assert query["scenario"] == ["playground"] and query["mode"] == ["default"]
    return playground_code.decode(query["playground"][0]), int(query["step"][0])


RENDERER_VISIBLE_JS = f"(name) => {LIVE_DOCUMENT_JS}.get_model_by_name(name).visible"


def check_legend_hides_and_shows(page: Any, label: str, key: str) -> None:
    """A click on a legend's series hides its line on the chart; a second click shows it."""
    button = page.get_by_role("button", name=label, exact=True)
    expect(button).to_have_attribute("aria-pressed", "true")
    button.click()
    expect(button).to_have_attribute("aria-pressed", "false")
    page.wait_for_function(f"() => !({RENDERER_VISIBLE_JS})({key!r})")
    button.click()
    expect(button).to_have_attribute("aria-pressed", "true")
    page.wait_for_function(f"() => ({RENDERER_VISIBLE_JS})({key!r})")


def check_a_chart_on_the_first_screen(page: Any) -> None:
    """A knob's effect shows without scrolling: at 1280x800 and in the write-up's 800x900
    embed, the hit-rate chart and its legend are in view below the knobs; on the wide
    screen the next chart is in view too, right of the knobs."""
    for width, height in ((1280, 800), (800, 900)):
        page.set_viewport_size({"width": width, "height": height})
        # The charts lay themselves out again after the resize: wait for them.
        for _ in range(50):
            problems = first_screen_problems(page, width, height)
            if not problems:
                break
            page.wait_for_timeout(100)
        assert not problems, (width, height, problems)
    page.set_viewport_size({"width": 1280, "height": 800})


def first_screen_problems(page: Any, width: int, height: int) -> list[str]:
    box = {
        "run": page.get_by_role("button", name="Run").bounding_box(),
        "knob": page.get_by_label("Requests", exact=True).bounding_box(),
        "hit rate": page.locator(".bk-Canvas").first.bounding_box(),
        "legend": page.get_by_role("button", name="cumulative (solid)", exact=True).bounding_box(),
        "second chart": page.locator(".bk-Canvas").nth(1).bounding_box(),
    }
    if any(value is None for value in box.values()):
        return [f"no {name}" for name, value in box.items() if value is None]
    problems = []
    if box["hit rate"]["y"] < box["run"]["y"] + box["run"]["height"]:
        problems.append("the hit-rate chart is not below the knobs")
    if box["legend"]["y"] + box["legend"]["height"] > height:
        problems.append("the hit-rate chart's legend is below the first screen")
    if width >= 1100:
        if box["second chart"]["x"] < box["knob"]["x"] + box["knob"]["width"]:
            problems.append("the second chart is not right of the knobs")
        if box["second chart"]["y"] + box["second chart"]["height"] > height:
            problems.append("the second chart is below the first screen")
    return problems


def check_both_runs_follow_a_knob(page: Any, timeout_ms: int) -> None:
    """On `shared-prefix`: a knob both runs share (the output length) changed, both
    sources come to hold the engine's runs of the new knobs."""
    shared = load_preset("shared-prefix")
    workload = shared.workload.replace(output_tokens=shared.workload.output_tokens + 3)
    compare_workload = shared.compare_workload(workload)
    assert compare_workload is not None
    run, compare = run_workload(workload), run_workload(compare_workload)
    field = page.get_by_label("Output (tokens)", exact=True)
    field.fill(str(workload.output_tokens))
    field.press("Enter")
    steps = {"run": run.series["step"], "compare": compare.series["step"]}
    page.wait_for_function(
        f"""steps => Object.entries(steps).every(([name, values]) => {{
          const source = {LIVE_DOCUMENT_JS}?.get_model_by_name('lab-source-' + name);
          return source && source.data.step.length === values.length;
        }})""",
        arg=steps,
        timeout=timeout_ms,
    )
    for name, expected in (("run", run), ("compare", compare)):
        for column in ("cumulative_hits", "held_blocks", "evictions"):
            assert source(page, name, column)["values"] == expected.series[column], (name, column)


def set_the_output_back(page: Any, timeout_ms: int) -> None:
    """After check_both_runs_follow_a_knob, for the next test on the same page: the
    preset's output length again, and its runs in both sources."""
    _, run, compare = preset_runs("shared-prefix")
    field = page.get_by_label("Output (tokens)", exact=True)
    field.fill(str(load_preset("shared-prefix").workload.output_tokens))
    field.press("Enter")
    hits = {"run": run.series["cumulative_hits"], "compare": compare.series["cumulative_hits"]}
    page.wait_for_function(
        f"""hits => Object.entries(hits).every(([name, values]) => {{
          const source = {LIVE_DOCUMENT_JS}?.get_model_by_name('lab-source-' + name);
          return source && JSON.stringify(Array.from(source.data.cumulative_hits))
            === JSON.stringify(values);
        }})""",
        arg=hits,
        timeout=timeout_ms,
    )


def check_a_bad_knob_says_why(page: Any) -> None:
    """`fresh-salt`'s pool made too small for one request: the message beside the knob
    says why, and Run is off."""
    field = page.get_by_label("num_gpu_blocks", exact=True)
    field.fill("50")
    field.press("Enter")
    expect(page.get_by_role("alert")).to_contain_text(
        "a request needs 139 blocks (2,215 tokens at block_size 16) but the pool has only 49"
    )
    expect(page.get_by_role("button", name="Run")).to_be_disabled()


# The opacity of each part of the lab's results root (the charts), as the page draws it.
DIMMED_JS = """() => {
  const root = document.querySelector('.workload-lab.lab-charts');
  return [...root.shadowRoot.children]
    .filter(e => e.className.startsWith('bk-'))
    .map(e => getComputedStyle(e).opacity);
}"""


def check_stale_results_are_marked(page: Any) -> None:
    """A knob that cannot run leaves the last results up, marked as the previous knobs'
    and dimmed; the knob set back, they are the knobs' again and the mark goes."""
    field = page.get_by_label("Requests", exact=True)
    before = field.input_value()
    note = page.get_by_test_id("lab-stale")
    expect(note).to_have_count(0)
    field.fill("0")
    field.press("Enter")
    expect(note).to_have_text(f"These results are for the previous knobs: requests = {before}.")
    page.wait_for_function(f"() => ({DIMMED_JS})().every(opacity => opacity === '0.4')")
    field.fill(before)
    field.press("Enter")
    expect(note).to_be_hidden()
    page.wait_for_function(f"() => ({DIMMED_JS})().every(opacity => opacity === '1')")


def check_a_long_run_stops(page: Any, timeout_ms: int, sources: tuple[str, ...] = ("run",)) -> None:
    """On `fresh-salt`: a long run shows its progress, Stop ends it, and the charts keep
    the last finished run (on each of ``sources``: "sglang-run" too with both engines)."""
    before = {name: source(page, name, "cumulative_queries")["values"] for name in sources}
    # About 4 s of runs in CPython (twice that in Pyodide): Stop comes on after 1 s
    # (app/views/lab.py's LONG_RUN_S), well before they end, on a fast machine too.
    for label, value in (("Output (tokens)", "128"), ("Requests", "2000")):
        field = page.get_by_label(label, exact=True)
        field.fill(value)
        field.press("Enter")
    expect(page.get_by_text("Running…")).to_be_visible(timeout=timeout_ms)
    page.get_by_role("button", name="Stop").click()
    expect(page.get_by_text("Stopped: the charts still show the last finished run.")).to_be_visible(
        timeout=timeout_ms
    )
    for name, values in before.items():
        assert source(page, name, "cumulative_queries")["values"] == values
    expect(page.get_by_role("button", name="Run")).to_be_enabled()


def check_both_engines_share_the_charts(page: Any, timeout_ms: int) -> None:
    """On `shared-prefix`, the engine knob set to both: SGLang's runs join vLLM's on the
    same charts (the engine's numbers), every legend names both engines, the summary has
    both engines' columns, and the address carries the choice."""
    from engine.lab.workload.sglang.runner import run_sglang_workload

    shared = load_preset("shared-prefix")
    compare = shared.compare_workload()
    assert compare is not None
    sglang, sglang_compare = run_sglang_workload(shared.workload), run_sglang_workload(compare)
    page.get_by_label("Engine").select_option("both")
    numbers = page.get_by_test_id("lab-numbers")
    heads = numbers.locator("th[scope=col]")
    expect(heads).to_have_text(
        [
            "vLLM: no salt",
            "SGLang: no salt",
            "vLLM: fresh salt per request",
            "SGLang: fresh salt per request",
        ],
        timeout=timeout_ms,
    )
    hits = numbers.locator('td[data-key="hits"]')
    expect(hits.nth(1)).to_have_text(f"{sglang.summary()['hits']:,}")
    assert (
        source(page, "sglang-run", "cumulative_hits")["values"]
        == (sglang.series["cumulative_hits"])
    )
    drawn = source(page, "sglang-compare", "cumulative_hits")["values"]
    assert drawn == sglang_compare.series["cumulative_hits"]
    # The hit-rate chart's legend: both engines' lines, each named.
    legend = page.locator(".chart-legend").first
    expect(legend.locator('[data-key="cumulative_hit_rate/run"]')).to_have_text(
        "vLLM cumulative (solid)"
    )
    expect(legend.locator('[data-key="cumulative_hit_rate/sglang-run"]')).to_have_text(
        "SGLang cumulative (solid)"
    )
    expect(page.get_by_test_id("lab-expected")).to_have_text(
        [
            shared.expected_text(run_workload(shared.workload), run_workload(compare)),
            shared.expected_text(sglang, sglang_compare),
        ]
    )
    page.wait_for_url("**engine=both**", timeout=timeout_ms)
