"""Edit-to-views latency of the playground, measured in a real browser.

Opens an empty playground (on `panel serve`, or with --site on the static site
built by build.py, where the engine runs in Pyodide), types a 10-block script
of 40 steps, then for each sample changes one value in the script (request A's
max_tokens, back and forth, and the last request's last token, new each time,
so no edit finds a timeline already built) and times, inside the page, from the input event to
the frame where every view shows the new timeline (every StepDeck's `data-at`
names it, and the step counter agrees). The traced build of the shown mode, the
rendering of the shown step's pages (the others follow 50 ms later:
app/views/sender.py) and the transfer are all included; edits are 300 ms apart, as
keystrokes are. Prints p50 and p95. With --step N the views show step N while the script is
edited (the step stays where it is: each edit renders the pages around it).

With --large, a 10,000-block pool of block size 16 with 200 requests (about
230 steps; longer than the script field takes, so opened by its address), whose
decks hold only the pages around the shown step; an edit changes the pool's
size (a new one each time); then Step forward is timed too, from the click to the frame where every
view shows the next step (its pages asked of Python when it moves). The steps are
--step-pause-ms apart (default 250: Play's fastest speed, 4 steps/s, and about as fast as
a learner clicks); 0 clicks again the moment a step shows, faster than any learner.

    python benchmarks/bench_playground_edit.py [--edits 30] [--site] [--large] [--step N]
        [--step-pause-ms MS]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright

from app.static_site.layout import SITE_DIR
from benchmarks.bench_site import served
from engine.lab.play import playground_code
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.script_lines import parse_lines
from engine.lab.play.vllm.timeline import count_steps
from tests.app.browser import chromium, panel_serve
from tests.app.playground_checks import start_empty

ROOT = Path(__file__).resolve().parents[1]

# 10 blocks of 4 tokens, 40 steps after the start: arrivals sharing a prefix, steps,
# a keep reset, an abort.
SCRIPT = "\n".join(
    [
        "add_request A max_tokens={a} prompt: 1..8",
        "step",
        "add_request B max_tokens=3 prompt: 1..8, 20, 21",
        "step 3",
        "add_request C max_tokens=2 prompt: 1..4, 30..33",
        "step 4",
        "reset_prefix_cache keep",
        "add_request D max_tokens=4 prompt: 1..8",
        "step 5",
        "add_request E max_tokens=6 prompt: 40..47",
        "step 6",
        "add_request F max_tokens=2 prompt: 1..8, 50",
        "abort E",
        "step 9",
        "add_request G prompt: 1..11, {g}",
        "step 3",
    ]
)


def large_script(a: int, g: int, requests: int = 200) -> str:
    """Requests sharing a 64-token prefix, ten at a time between two engine steps."""
    lines = []
    for i in range(requests):
        first = 1_000 + 40 * i
        tokens = a if i == 0 else 8
        prompt = f"1..64, {first}..{first + 39}" + (f", {g}" if i == requests - 1 else "")
        lines.append(f"add_request R{i} max_tokens={tokens} prompt: {prompt}")
        if i % 10 == 9:
            lines.append("step 2")
    return "\n".join([*lines, "run_until_idle"])


# Runs in the page: click Step forward, then wait for the frame in which every deck
# shows the next step. Returns milliseconds.
MEASURE_STEP = """
async (button) => {
  const deepAll = (root, selector, out = []) => {
    out.push(...root.querySelectorAll(selector))
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { deepAll(el.shadowRoot, selector, out) }
    }
    return out
  }
  const steps = () => deepAll(document, '[data-at]').map((e) => e.dataset.at.split('@')[1])
  const next = String(Number(steps()[0]) + 1)
  const start = performance.now()
  button.click()
  await new Promise((resolve) => {
    const done = () => steps().every((s) => s === next)
    const poll = () => (done() ? setTimeout(resolve) : requestAnimationFrame(poll))
    requestAnimationFrame(poll)
  })
  return performance.now() - start
}
"""

# The last request's last token, new at every edit: every edit is a timeline not built
# before (the playground keeps the timelines it built, by the script's digest).
FIRST_TOKEN = 100_000

# Runs in the page: set the script field's text, fire `input`, then wait for the frame
# in which every deck shows another timeline than before. Returns milliseconds.
MEASURE = """
async ([area, text]) => {
  const deepAll = (root, selector, out = []) => {
    out.push(...root.querySelectorAll(selector))
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { deepAll(el.shadowRoot, selector, out) }
    }
    return out
  }
  const keys = () => deepAll(document, '[data-at]').map((e) => e.dataset.at.split('@')[0])
  const before = keys()[0]
  const done = () => { const k = keys(); return k[0] !== before && k.every((x) => x === k[0]) }
  const start = performance.now()
  area.value = text
  area.dispatchEvent(new Event('input', { bubbles: true }))
  await new Promise((resolve) => {
    const poll = () => (done() ? setTimeout(resolve) : requestAnimationFrame(poll))
    requestAnimationFrame(poll)
  })
  return performance.now() - start
}
"""


# Between edits, as between a learner's keystrokes: the views' other pages, sent a
# moment after the shown one (app/views/sender.py), arrive in it.
PAUSE_MS = 300


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def report(title: str, samples: list[float]) -> None:
    print(title)
    print(f"  p50 {percentile(samples, 0.50):.0f} ms")
    print(f"  p95 {percentile(samples, 0.95):.0f} ms")
    mean = statistics.fmean(samples)
    print(f"  min {min(samples):.0f} ms  max {max(samples):.0f} ms  mean {mean:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--site", action="store_true", help="the static site (site/), Pyodide")
    parser.add_argument(
        "--site-dir", type=Path, default=ROOT / SITE_DIR, help="with --site: another build"
    )
    parser.add_argument("--large", action="store_true", help="10,000 blocks, 200 requests")
    parser.add_argument(
        "--step", type=int, default=0, help="edit while the views show this step (Step forward)"
    )
    parser.add_argument(
        "--step-pause-ms", type=int, default=250, help="between two Step forward clicks (--large)"
    )
    args = parser.parse_args()
    warm_up = 1 if args.large else 3
    samples: list[float] = []
    step_samples: list[float] = []
    with (
        served(args.site_dir) if args.site else panel_serve() as url,
        sync_playwright() as playwright,
        chromium(playwright, viewport={"width": 1280, "height": 800}) as context,
    ):
        page = context.new_page()
        page.set_default_timeout(900_000)
        page.goto(f"{url}?scenario=reset")
        page.wait_for_function(
            "() => !document.body.classList.contains('pn-loading')", timeout=120_000
        )
        if args.large:  # longer than the script field takes (5,000 characters): by address
            steps, _ = parse_lines(large_script(a=4, g=FIRST_TOKEN))
            data = {"title": "large", "pool": {"num_gpu_blocks": 10_000, "block_size": 16}}
            code = playground_code.encode({**data, "steps": steps})
            page.goto(f"{url}?scenario=playground&playground={code}")
            last = count_steps(scenario_from_dict({**data, "steps": steps}), "default")
            page.get_by_test_id("step-counter").filter(has_text=f"/ {last}").wait_for()
            # An edit: the pool's size, a new one each time.
            field = page.get_by_label("GPU blocks")
            edits = [str(10_000 - i - 1) for i in range(args.edits + warm_up)]
        else:
            page.get_by_role("button", name="Edit a copy").click()
            start_empty(page)
            page.get_by_label("GPU blocks").fill("10")
            field = page.get_by_label("Script (one action per line)")
            field.fill(SCRIPT.format(a=4, g=FIRST_TOKEN))
            page.get_by_test_id("step-counter").filter(has_text="/ 40").wait_for()
            for _ in range(args.step):
                page.get_by_role("button", name="Step forward").click()
            page.get_by_test_id("step-counter").filter(has_text=f"Step {args.step} / 40").wait_for()
            edits = [
                SCRIPT.format(a=4 + (i + 1) % 2, g=FIRST_TOKEN + i + 1)
                for i in range(args.edits + warm_up)
            ]
        handle = field.element_handle()
        for i, text in enumerate(edits):
            ms = float(page.evaluate(MEASURE, [handle, text]))
            if i >= warm_up:
                samples.append(ms)
            page.wait_for_timeout(PAUSE_MS)
        if args.large:
            forward = page.get_by_role("button", name="Step forward").element_handle()
            page.get_by_role("button", name="Restart").click()
            for _ in range(20):
                step_samples.append(float(page.evaluate(MEASURE_STEP, forward)))
                page.wait_for_timeout(args.step_pause_ms)
    where = "static site (Pyodide)" if args.site else "panel serve"
    if args.large:
        report(
            f"Playground edit to views, 10,000 blocks, 200 requests, {len(samples)} edits, {where}",
            samples,
        )
        report(
            f"Step forward to views, same playground, {len(step_samples)} steps "
            f"{args.step_pause_ms} ms apart",
            step_samples,
        )
    else:
        report(
            f"Playground edit to views, 10 blocks, 40 steps, {len(samples)} edits, {where}", samples
        )


if __name__ == "__main__":
    main()
