"""Edit-to-views latency of the playground, measured in a real browser.

Opens an empty playground (on `panel serve`, or with --site on the static site
built by build.py, where the engine runs in Pyodide), types a 10-block script
of 40 steps, then for each sample changes one value in the script (request A's
max_tokens, back and forth) and times, inside the page, from the input event to
the frame where every view shows the new timeline (every StepDeck's `data-at`
names it, and the step counter agrees). The traced build of every mode, the
rendering of every step of every view and the transfer are all included.
Prints p50 and p95.

    python benchmarks/bench_playground_edit.py [--edits 30] [--site]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright

import build
from tests.app.browser import chromium, panel_serve

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
        "add_request G prompt: 1..12",
        "step 3",
    ]
)

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


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


@contextmanager
def static_site() -> Iterator[str]:
    server = build.make_server(Path(build.SITE_DIR).resolve(), 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--site", action="store_true", help="the static site (site/), Pyodide")
    args = parser.parse_args()
    samples: list[float] = []
    with (
        static_site() if args.site else panel_serve() as url,
        sync_playwright() as playwright,
        chromium(playwright, viewport={"width": 1280, "height": 800}) as context,
    ):
        page = context.new_page()
        page.goto(f"{url}?scenario=reset")
        page.wait_for_function(
            "() => !document.body.classList.contains('pn-loading')", timeout=120_000
        )
        page.get_by_role("button", name="Edit a copy").click()
        page.get_by_role("button", name="Start empty").click()
        page.get_by_label("GPU blocks").fill("10")
        area = page.get_by_label("Script (one action per line)")
        area.fill(SCRIPT.format(a=4))
        page.get_by_test_id("step-counter").filter(has_text="/ 40").wait_for(timeout=60_000)
        handle = area.element_handle()
        for i in range(args.edits + 3):  # the first three warm up
            ms = float(page.evaluate(MEASURE, [handle, SCRIPT.format(a=4 + (i + 1) % 2)]))
            if i >= 3:
                samples.append(ms)
    where = "static site (Pyodide)" if args.site else "panel serve"
    print(f"Playground edit to views, 10 blocks, 40 steps, {len(samples)} edits, {where}")
    print(f"  p50 {percentile(samples, 0.50):.0f} ms")
    print(f"  p95 {percentile(samples, 0.95):.0f} ms")
    mean = statistics.fmean(samples)
    print(f"  min {min(samples):.0f} ms  max {max(samples):.0f} ms  mean {mean:.0f} ms")


if __name__ == "__main__":
    main()
