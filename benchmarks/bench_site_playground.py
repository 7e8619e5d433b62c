"""Opening a playground link on the static site, next to a stock one-button Panel app.

    python benchmarks/bench_site_playground.py [--rounds 3] [--site LABEL=DIR ...] [--stock DIR]

The link is `?scenario=playground&playground=CODE&mode=keep&step=5`, CODE the learner's
own 10-block scenario of `SCRIPT` below (about 40 engine steps). Per round, for each
site in turn (interleaved, so a busy machine slows all of them alike): a cold load (a
fresh browser profile, so an empty HTTP cache), then a warm load (the same profile
again). Every figure is a time from the navigation's start (the page's clock origin):

- first view: the link's playground is on screen at the link's position: a step counter
  reads "Step 5 / LAST" and every view that says which position it shows ([data-at])
  shows this timeline's step 5: the live page's, or before Python is ready the early
  page's (app/page/early_page.js: the same layout, fed by the app's worker), if any.
- first edit lands: the learner's first edit shows its result. As soon as a field
  labelled "Script (one action per line)" is on screen and takes input (the early
  page's or the live editor's, whichever comes first), the benchmark appends the
  line `step` to its script, as a learner typing it; the edit has landed when the step
  counter ends in "/ LAST+1" and every [data-at] view shows the edited scenario's
  timeline (its name computed here, in CPython, by the engine).
- interactive: Panel lifts its loading veil (Python and the live app are ready).

The stock app's interactive (cold, warm) comes from bench_site.py's own load, in the
same rounds: quote the ratios, the machine may be shared. Prints a Markdown table of
medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.playground.fields import LABELS  # noqa: E402
from app.playground.fields import SCRIPT as SCRIPT_FIELD  # noqa: E402
from app.playground.store import EMPTY  # noqa: E402
from benchmarks.bench_site import (  # noqa: E402
    load,
    served,
    site_arguments,
    sites_to_measure,
)
from engine.lab.play import playground_code  # noqa: E402
from engine.lab.play.scenario_file import scenario_from_dict  # noqa: E402
from engine.lab.play.script_lines import parse_lines  # noqa: E402
from engine.lab.play.vllm.timeline import build_timeline  # noqa: E402
from tests.site.conftest import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_FLAGS,
    RECORDER_JS,
    PageRun,
    record,
    wait_interactive,
)

SCRIPT = """add_request A max_tokens=6 text: You are a helpful assistant. Tell me a joke.
step 3
add_request B max_tokens=6 text: You are a helpful assistant. Tell me a story about blocks.
step 4
add_request C max_tokens=4 prompt: 1..12
step 3
reset_prefix_cache keep
step 2
add_request D max_tokens=8 prompt: 1..8, 40, 41
run_until_idle
add_request E max_tokens=4 text: You are a helpful assistant. Tell me a joke about caches.
run_until_idle
add_request F max_tokens=6 prompt: 1..12, 50..53
run_until_idle"""
MODE, STEP = "keep", 5
SCRIPT_LABEL = LABELS[SCRIPT_FIELD]
LOAD_TIMEOUT_MS = 120_000


def playground(script: str) -> dict[str, Any]:
    steps, errors = parse_lines(script)
    assert not errors, errors
    return {**EMPTY, "pool": {"num_gpu_blocks": 10, "block_size": 4}, "steps": steps}


# Runs in the page from its first moment: [first view, edit typed, edit landed] in ms
# from the navigation's start (see the module's docstring).
OPEN_AND_EDIT_JS = """async ([key, step, last, edited, editedLast, label, timeoutMs]) => {
  const deepAll = (root, selector, out = []) => {
    out.push(...root.querySelectorAll(selector))
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { deepAll(el.shadowRoot, selector, out) }
    }
    return out
  }
  // The early page; or, on a site built before 2026-12-05 (to compare with), its early
  // playground (a shadow root of its own, with its own step counter's test id).
  const early = () => {
    const host = document.querySelector('.pcl-early-page')
    if (host) { return host.inert ? null : host }  // (inert: handing over)
    const old = document.querySelector('[data-testid="early-playground"]')
    return old && !old.inert ? old.shadowRoot : null
  }
  const scope = () => early() || document
  const counter = () => deepAll(scope(),
    '[data-testid="step-counter"], [data-testid="early-step-counter"]')[0]
  const shows = (timeline, counted) => {
    const shown = counter()
    if (!shown || !counted(shown.textContent.trim())) { return false }
    const views = deepAll(scope(), '[data-at]')
    return views.length > 0 && views.every((v) => v.dataset.at.startsWith(timeline + '@'))
  }
  const field = () => {
    const live = document.body && !document.body.classList.contains('pn-loading')
    const root = early() || (live ? document : null)
    if (!root) { return null }
    const labels = deepAll(root, 'label').filter((l) => l.textContent.trim().startsWith(label))
    const boxes = labels.map((l) => l.parentElement.querySelector('textarea'))
    return boxes.find((box) => box && !box.disabled && box.getClientRects().length > 0) || null
  }
  const until = async (ready, what) => {
    const deadline = performance.now() + timeoutMs
    while (!ready()) {
      if (performance.now() > deadline) { throw new Error(what) }
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return performance.now()
  }
  const viewed = await until(() => shows(key, (t) => t === `Step ${step} / ${last}`),
    'the link never showed')
  const box = await until(field, 'no script field') && field()
  box.value = box.value + '\\nstep'
  const typed = performance.now()
  box.dispatchEvent(new Event('input', { bubbles: true, composed: true }))
  box.dispatchEvent(new Event('change', { bubbles: true, composed: true }))
  const landed = await until(() => shows(edited, (t) => t.endsWith(`/ ${editedLast}`)),
    'the edit never showed')
  return [viewed, typed, landed]
}"""


@dataclass
class Open:
    first_view_ms: float
    edit_typed_ms: float
    first_edit_ms: float
    interactive_ms: float
    early: bool  # the edit went to the early page (before Python)


@dataclass
class Figures:
    label: str
    site: Path
    cold: list[Open] = field(default_factory=list)
    warm: list[Open] = field(default_factory=list)


@dataclass
class Stock:
    cold: list[float] = field(default_factory=list)
    warm: list[float] = field(default_factory=list)


def open_link(pw: Any, profile: Path, url: str) -> Open:
    data = playground(SCRIPT)
    timeline = build_timeline(scenario_from_dict(data), MODE)
    edited = build_timeline(scenario_from_dict(playground(SCRIPT + "\nstep")), MODE)
    query = (
        f"?scenario=playground&playground={playground_code.encode(data)}&mode={MODE}&step={STEP}"
    )
    context = pw.chromium.launch_persistent_context(
        str(profile),
        executable_path=str(CHROMIUM),
        args=CHROMIUM_FLAGS,
        headless=True,
        viewport={"width": 1280, "height": 800},
    )
    try:
        context.add_init_script(RECORDER_JS)
        page = context.pages[0] if context.pages else context.new_page()
        run = PageRun(origin=url)
        detach = record(page, run)
        page.goto(f"{url}/{query}", wait_until="commit", timeout=60_000)
        viewed, typed, landed = page.evaluate(
            OPEN_AND_EDIT_JS,
            [
                f"{timeline.scenario}/{MODE}",
                STEP,
                len(timeline.steps) - 1,
                f"{edited.scenario}/{MODE}",
                len(edited.steps) - 1,
                SCRIPT_LABEL,
                LOAD_TIMEOUT_MS,
            ],
        )
        early = bool(page.evaluate("() => window.__pcl.interactive === null"))
        wait_interactive(page, run, LOAD_TIMEOUT_MS)
        page.wait_for_timeout(300)
        detach()
        if run.foreign or run.errors or run.bad_status:
            raise SystemExit(f"{url}: foreign {run.foreign} errors {run.errors} {run.bad_status}")
        return Open(viewed, typed, landed, float(run.interactive_ms or 0), early)
    finally:
        context.close()


def one_round(pw: Any, figures: Figures, url: str) -> None:
    with tempfile.TemporaryDirectory(prefix="pcl-bench-profile-") as tmp:
        figures.cold.append(open_link(pw, Path(tmp), url))
        figures.warm.append(open_link(pw, Path(tmp), url))


def stock_round(pw: Any, stock: Stock, url: str) -> None:
    with tempfile.TemporaryDirectory(prefix="pcl-bench-profile-") as tmp:
        for loads in (stock.cold, stock.warm):
            context, _, figures = load(pw, Path(tmp), url)
            context.close()
            loads.append(figures.interactive_ms)


def med(values: list[float]) -> float:
    return float(statistics.median(values))


def table(stock: Stock, results: list[Figures]) -> str:
    rows = [
        "| | stock app: interactive | " + " | ".join(f.label for f in results) + " |",
        "|---" * (len(results) + 2) + "|",
    ]
    for phase in ("cold", "warm"):
        base = med(getattr(stock, phase))
        for name, key in (
            ("first view", "first_view_ms"),
            ("first edit lands", "first_edit_ms"),
            ("interactive", "interactive_ms"),
        ):
            cells = []
            for f in results:
                value = med([getattr(x, key) for x in getattr(f, phase)])
                cells.append(f"{value / 1e3:.2f} s ({value / base:.2f}x)")
            rows.append(f"| {name}, {phase} | {base / 1e3:.2f} s | " + " | ".join(cells) + " |")
        cells = [
            f"{med([x.first_edit_ms - x.edit_typed_ms for x in getattr(f, phase)]):.0f} ms"
            for f in results
        ]
        rows.append(f"| first edit, typed to shown, {phase} | | " + " | ".join(cells) + " |")
        runs = [getattr(f, phase) for f in results]
        cells = [f"{sum(x.early for x in r)}/{len(r)}" for r in runs]
        rows.append(f"| first edit made before Python, {phase} | | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def parse_args() -> argparse.Namespace:
    return site_arguments(__doc__.splitlines()[0] if __doc__ else "").parse_args()


def main() -> None:
    args = parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="pcl-bench-") as tmp:
        stock_site, targets = sites_to_measure(args, Path(tmp))
        results = [Figures(label, site) for label, site in targets]
        stock = Stock()
        with sync_playwright() as pw:
            for n in range(args.rounds):
                with served(stock_site) as url:
                    stock_round(pw, stock, url)
                for figures in results:
                    with served(figures.site) as url:
                        one_round(pw, figures, url)
                print(
                    f"round {n + 1}/{args.rounds} done (load {os.getloadavg()[0]:.1f})",
                    file=sys.stderr,
                    flush=True,
                )
        print(table(stock, results))


if __name__ == "__main__":
    main()
