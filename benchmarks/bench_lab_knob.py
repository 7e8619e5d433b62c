"""The lab's knob-to-chart time in `panel serve` or the static site, in a real browser.

Starts `panel serve app/main.py` (as tests/app/browser.py does), or with --site serves
the static site built by build.py (the engine in Pyodide), opens
`?lab=shared-prefix` (200 requests with its overlay) in headless Chromium and, each
round, changes a knob the way the widget does (its model's value, which Bokeh sends
to the server) and times, inside the page, from the change to the painted frame
whose chart data is the learner's new run, and to the one with the overlay's too
(the lab shows the learner's run while the overlay's plays). Each round changes
knobs not run before in that server: the unique part's length (both runs play, every
prompt new), the output length (both runs play, their prompts' block hashes kept
from earlier runs: engine/lab/workload/prompt_hashes.py), the salt 0.3 s later (the overlay's
run is reused, the learner's plays: the runs played ahead, app/data/lab.py's RunAhead, have
not begun), the salt set back 1 s later (both runs are known; runs play ahead
meanwhile, so the change waits for a slice of theirs), and, after the lab was idle
for --idle seconds, the salt changed to a value played ahead.
Prints the medians.

    python benchmarks/bench_lab_knob.py [--rounds 5] [--site [--site-dir DIR]] [--idle 8]
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
from tests.app.browser import chromium, panel_serve

ROOT = Path(__file__).resolve().parents[1]

# Runs in the page: set a widget's value by its title, then wait for the painted frame
# after the learner's source got new data. Returns milliseconds.
MEASURE = """
async ([title, value, overlayPlays]) => {
  const doc = Bokeh.documents[Bokeh.documents.length - 1]
  const models = Array.from(doc.all_models)
  const widget = models.find((m) => m.title === title)
  const sources = ['run', 'compare'].map((name) => doc.get_model_by_name('lab-source-' + name))
  const before = sources.map((source) => source.data)
  // Both sources are watched from the start: when their data comes in one message,
  // both times are that one frame's.
  const painted = (source, old) => new Promise((resolve) => {
    const poll = () => {
      if (source.data === old) { requestAnimationFrame(poll); return }
      // The new data is drawn in the next frame.
      setTimeout(() => requestAnimationFrame(() => setTimeout(() => {
        resolve(performance.now() - start)
      })))
    }
    requestAnimationFrame(poll)
  })
  const start = performance.now()
  widget.value = value
  const times = sources.map((source, i) => (i === 0 || overlayPlays) && painted(source, before[i]))
  const first = await times[0]
  return [first, overlayPlays ? await times[1] : first]
}
"""

CASES = (
    "unique part changed (both runs play, new prompts)",
    "output length changed (both runs play, prompts known)",
    "salt changed 0.3 s after a run (the learner's run plays)",
    "salt set back 1 s after a run (both runs known, runs playing ahead)",
    "salt changed after the lab was idle (played ahead)",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--site", action="store_true", help="the static site (site/), Pyodide")
    parser.add_argument(
        "--site-dir", type=Path, default=ROOT / SITE_DIR, help="with --site: another build"
    )
    parser.add_argument(
        "--idle", type=float, default=8.0, help="seconds idle before the last change"
    )
    args = parser.parse_args()
    samples: dict[str, list[float]] = {case: [] for case in CASES}
    overlays: dict[str, list[float]] = {case: [] for case in CASES}
    with (
        served(args.site_dir) if args.site else panel_serve() as url,
        sync_playwright() as playwright,
        chromium(playwright, viewport={"width": 1280, "height": 900}) as context,
    ):
        page = context.new_page()
        page.goto(f"{url}?lab=shared-prefix")
        page.get_by_test_id("lab-outcome").wait_for(timeout=120_000)
        if args.site:  # the knobs act once Python is up, not on the early page
            page.wait_for_function(
                "() => !document.body.classList.contains('pn-loading')", timeout=180_000
            )
        for round_ in range(args.rounds):
            changes = (  # (seconds after the last change, the knob, its value,
                # whether the overlay's run plays too)
                (0.3, "Unique part (tokens)", 201 + round_, True),
                (0.3, "Output (tokens)", 17 + round_, True),
                (0.3, "cache_salt", "fixed", False),
                (1.0, "cache_salt", "none", False),
                (args.idle, "cache_salt", "per-user", False),
            )
            for case, (wait_s, *change) in zip(CASES, changes, strict=True):
                page.wait_for_timeout(wait_s * 1000)
                first, both = page.evaluate(MEASURE, change)
                samples[case].append(first)
                overlays[case].append(both)
            page.wait_for_timeout(300)
            page.evaluate(MEASURE, ["cache_salt", "none", False])  # the next round's start
    where = "static site (Pyodide)" if args.site else "panel serve"
    title = f"`shared-prefix`, 200 requests, knob to painted chart, {where}"
    print(f"| {title}, median of {args.rounds} | the learner's run | both runs |")
    print("|---|---|---|")
    for case, times in samples.items():
        both = statistics.median(overlays[case])
        print(f"| {case} | {statistics.median(times):,.0f} ms | {both:,.0f} ms |")


if __name__ == "__main__":
    main()
