"""Click-to-DOM latency of "Step forward" in `panel serve`, measured in a real browser.

Starts `panel serve app/main.py` (the same setup as tests/app/test_browser_serve.py),
opens the app in headless Chromium, and for each sample clicks "Step forward" and
times, inside the page, from the click to the moment the page shows the new step
(polled on every animation frame): the counter, and every section that carries
`data-step` (the narration and the code panel; a step's changes to the other
views arrive in the same patch). Prints p50 and p95.

    python benchmarks/bench_serve_click.py [--clicks 50] [--mode keep]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright

from app.data import timelines
from tests.app.browser import chromium, panel_serve

# Runs in the page: click, then wait until the counter and every view carry the
# next step and that frame has been painted (a task queued from the frame's
# animation callback runs after its layout and paint). Returns milliseconds.
MEASURE = """
async (button) => {
  // Panel renders each pane in a shadow root and replaces its HTML on update,
  // so look the elements up afresh on every poll.
  const deepAll = (root, selector, out = []) => {
    out.push(...root.querySelectorAll(selector))
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { deepAll(el.shadowRoot, selector, out) }
    }
    return out
  }
  const stepOf = () => deepAll(document, '[data-testid="step-counter"]')[0].dataset.step
  const next = String(Number(stepOf()) + 1)
  const done = () => stepOf() === next &&
    deepAll(document, 'section[data-step]').every((s) => s.dataset.step === next)
  const start = performance.now()
  button.click()
  await new Promise((resolve) => {
    const poll = () => (done() ? setTimeout(resolve) : requestAnimationFrame(poll))
    requestAnimationFrame(poll)
  })
  return performance.now() - start
}
"""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=50)
    parser.add_argument("--mode", default="keep")
    args = parser.parse_args()
    last = len(timelines.timeline("reset", args.mode).steps) - 1

    samples: list[float] = []
    with (
        panel_serve() as url,
        sync_playwright() as playwright,
        chromium(playwright, viewport={"width": 1280, "height": 800}) as context,
    ):
        page = context.new_page()
        page.goto(f"{url}?scenario=reset&mode={args.mode}&step=0")
        counter = page.get_by_test_id("step-counter")
        counter.wait_for(timeout=30_000)
        button = page.get_by_role("button", name="Step forward")
        restart = page.get_by_role("button", name="Restart")
        # Warm-up: one pass through the timeline (first renders, JIT, caches).
        for _ in range(last):
            button.click()
        while len(samples) < args.clicks:
            restart.click()
            page.locator('[data-testid="step-counter"][data-step="0"]').wait_for()
            for _ in range(min(last, args.clicks - len(samples))):
                samples.append(float(page.evaluate(MEASURE, button.element_handle())))

    print(f"Step forward, click to DOM, {len(samples)} clicks, panel serve, headless Chromium")
    print(f"  p50 {percentile(samples, 0.50):.1f} ms")
    print(f"  p95 {percentile(samples, 0.95):.1f} ms")
    print(
        f"  min {min(samples):.1f} ms  max {max(samples):.1f} ms  "
        f"mean {statistics.fmean(samples):.1f} ms"
    )


if __name__ == "__main__":
    main()
