"""Load and click figures of the static site, next to a stock one-button Panel app.

    python benchmarks/bench_site.py [--rounds 3] [--clicks 40] [--site LABEL=DIR ...]

Builds (with build.py) the stock app and, unless given, the real site; serves each on
127.0.0.1; and per round, for each site in turn (interleaved, so a busy machine slows
all of them alike), loads it in headless Chromium on a fresh profile (cold), then again
on the same profile (warm), then times "Step forward" from the click to the moment every
view shows the next step, then loads the write-up's embed link cold. Each load also
times its first mode change (to keep) and its first Step forward, each clicked as soon
as the control can act (before Python on the site's early pages, app/page/early_page.js).
Prints a Markdown table of medians (p50/p95 for clicks).
The stock app is the yardstick: quote ratios to it, the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.static_site.layout import APP_SCRIPT  # noqa: E402
from app.static_site.serve import make_server  # noqa: E402
from tests.site.conftest import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_FLAGS,
    RECORDER_JS,
    PageRun,
    record,
    wait_interactive,
)

STOCK_APP = """import panel as pn

pn.extension()
clicks = {"n": 0}
button = pn.widgets.Button(name="Click me", button_type="primary")
out = pn.pane.HTML("<span id='pcl-out' data-step='0'>n=0</span>")


def on_click(_event: object) -> None:
    clicks["n"] += 1
    out.object = f"<span id='pcl-out' data-step='{clicks['n']}'>n={clicks['n']}</span>"


button.on_click(on_click)
pn.Column(button, out).servable()
"""

# Runs in the page: click the named button (the first button if none has the name),
# resolve as soon as the marker ([data-step] counter) and every view carry the next
# step: at once if the click updated the page synchronously, else when the mutation
# that completes it lands. One check per microtask (observers on every shadow root
# would otherwise each walk the whole page, timing the benchmark instead of the app).
CLICK_JS = """
async ([name, timeoutMs]) => {
  const deepAll = (root, selector, out = []) => {
    out.push(...root.querySelectorAll(selector))
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { deepAll(el.shadowRoot, selector, out) }
    }
    return out
  }
  const marker = () => deepAll(document, '[data-testid="step-counter"], #pcl-out')[0]
  const buttons = deepAll(document, 'button')
  const button = buttons.find((b) => b.textContent.trim() === name) || buttons[0]
  const next = String(Number(marker().dataset.step) + 1)
  const done = () => marker().dataset.step === next &&
    deepAll(document, 'section[data-step]').every((s) => s.dataset.step === next)
  const roots = [document, ...deepAll(document, '*').filter((e) => e.shadowRoot)
    .map((e) => e.shadowRoot)]
  const observers = []
  let resolveLanded = null
  let scheduled = false
  const landed = new Promise((resolve) => { resolveLanded = resolve })
  const check = () => { scheduled = false; if (done()) { resolveLanded() } }
  for (const root of roots) {
    const obs = new MutationObserver(() => {
      if (!scheduled) { scheduled = true; queueMicrotask(check) }
    })
    obs.observe(root, {subtree: true, childList: true, attributes: true, characterData: true})
    observers.push(obs)
  }
  let timer = null
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('no update')), timeoutMs)
  })
  const start = performance.now()
  button.click()
  try {
    if (!done()) { await Promise.race([landed, timeout]) }
    return performance.now() - start
  } finally {
    clearTimeout(timer)
    observers.forEach((o) => o.disconnect())
  }
}
"""
# Runs in the page from its first moment: wait until a step control can act (the
# early page's, app/page/early_page.js, or the live page's), click Step forward, and
# return the time the page showed the next step: when a reader's first click lands.
FIRST_STEP_JS = (
    """async ([name, timeoutMs]) => {
  const click = """
    + CLICK_JS
    + """
  const RETRY_MS = 1000
  const deadline = performance.now() + timeoutMs
  const body = () => document.body
  const ready = () => body() && (body().classList.contains('pcl-early') ||
    (!body().classList.contains('pn-loading') && document.readyState !== 'loading'))
  while (!ready()) {
    if (performance.now() > deadline) { throw new Error('never ready') }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  // A click sent the moment the stock page turns live can be lost (Panel links the
  // worker's document a message later): click again each second, as a reader would.
  while (true) {
    try {
      await click([name, RETRY_MS])
      return performance.now()
    } catch (error) {
      if (performance.now() > deadline) { throw error }
    }
  }
}"""
)
# Runs in the page from its first moment: wait until the controls can act, pick the
# mode (a radio of that value) and return the time every view showed that mode (at the
# step shown: a mode switch keeps it);
# null on a page without it (the stock app).
FIRST_MODE_JS = """async ([mode, key, timeoutMs]) => {
  const deepAll = (root, selector, out = []) => {
    out.push(...root.querySelectorAll(selector))
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { deepAll(el.shadowRoot, selector, out) }
    }
    return out
  }
  const deadline = performance.now() + timeoutMs
  const body = () => document.body
  const ready = () => body() && (body().classList.contains('pcl-early') ||
    (!body().classList.contains('pn-loading') && document.readyState !== 'loading'))
  const shown = () => {
    const views = deepAll(document, '[data-at]')
    return views.length > 0 && views.every((v) => v.dataset.at.startsWith(key + '@'))
  }
  while (!ready()) {
    if (performance.now() > deadline) { throw new Error('never ready') }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const radio = deepAll(document, 'input[type=radio]').find((r) => r.value === mode)
  if (!radio) { return null }
  radio.click()
  while (!shown()) {
    if (performance.now() > deadline) { throw new Error('mode never shown') }
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  return performance.now()
}"""
FCP_JS = """() => {
  const fcp = performance.getEntriesByName('first-contentful-paint')[0]
  return fcp ? fcp.startTime : null
}"""
CLICK_TIMEOUT_MS = 20_000
LOAD_TIMEOUT_MS = 90_000
STEP_BUTTON = "Step forward"
# The flagship (the site's address without a query is the start page, which has no steps).
FLAGSHIP_LINK = "?scenario=reset"
# The write-up's iframe address (README): its own early page (build.py, "pages").
EMBED_LINK = "?scenario=reset&mode=default&step=1&embed=1"
FIRST_MODE, FIRST_MODE_KEY = "keep", "reset/keep"  # the flagship opens in "default"


@dataclass
class Load:
    fcp_ms: float
    first_mode_ms: float | None
    first_step_ms: float
    interactive_ms: float
    bytes: int
    requests: int
    status: list[dict[str, Any]]


@dataclass
class Figures:
    label: str
    site: Path
    cold: list[Load] = field(default_factory=list)
    warm: list[Load] = field(default_factory=list)
    embed: list[Load] = field(default_factory=list)  # cold, at EMBED_LINK
    clicks: list[float] = field(default_factory=list)


@contextmanager
def served(site: Path) -> Iterator[str]:
    server = make_server(site, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def load(pw: Any, profile: Path, url: str, query: str = "") -> tuple[Any, Any, Load]:
    """Open url in a persistent context on profile; return (context, page, figures)."""
    context = pw.chromium.launch_persistent_context(
        str(profile),
        executable_path=str(CHROMIUM),
        args=CHROMIUM_FLAGS,
        headless=True,
        viewport={"width": 1280, "height": 800},
    )
    context.add_init_script(RECORDER_JS)
    page = context.pages[0] if context.pages else context.new_page()
    run = PageRun(origin=url)
    detach = record(page, run)
    page.goto(url + "/" + query, wait_until="commit", timeout=60_000)
    first_mode = page.evaluate(FIRST_MODE_JS, [FIRST_MODE, FIRST_MODE_KEY, LOAD_TIMEOUT_MS])
    first_step = float(page.evaluate(FIRST_STEP_JS, [STEP_BUTTON, LOAD_TIMEOUT_MS]))
    wait_interactive(page, run)
    page.wait_for_timeout(300)  # late requests (icons, fonts) still count as the load's
    detach()
    if run.foreign or run.errors or run.bad_status:
        raise SystemExit(f"{url}: foreign {run.foreign} errors {run.errors} {run.bad_status}")
    figures = Load(
        float(page.evaluate(FCP_JS) or 0),
        None if first_mode is None else float(first_mode),
        first_step,
        float(run.interactive_ms or 0),
        run.bytes,
        len(run.requests),
        run.status,
    )
    return context, page, figures


def clicks(page: Any, count: int) -> list[float]:
    samples: list[float] = []
    while len(samples) < count:
        forward = page.get_by_role("button", name=STEP_BUTTON)
        if forward.count() and forward.first.is_disabled():
            page.get_by_role("button", name="Restart").click()  # not timed
            page.wait_for_timeout(200)
            continue
        samples.append(float(page.evaluate(CLICK_JS, [STEP_BUTTON, CLICK_TIMEOUT_MS])))
    return samples


def one_round(pw: Any, figures: Figures, url: str, n_clicks: int) -> None:
    with tempfile.TemporaryDirectory(prefix="pcl-bench-profile-") as tmp:
        profile = Path(tmp)
        context, _, cold = load(pw, profile, url, FLAGSHIP_LINK)
        context.close()
        context, page, warm = load(pw, profile, url, FLAGSHIP_LINK)
        try:
            figures.clicks += clicks(page, n_clicks)
        finally:
            context.close()
    with tempfile.TemporaryDirectory(prefix="pcl-bench-profile-") as tmp:
        context, _, embed = load(pw, Path(tmp), url, EMBED_LINK)
        context.close()
    figures.cold.append(cold)
    figures.warm.append(warm)
    figures.embed.append(embed)


def disk_mb(site: Path) -> tuple[float, float]:
    """(MB on disk without, with the precompressed copies)."""
    files = [p for p in site.rglob("*") if p.is_file()]
    plain = sum(p.stat().st_size for p in files if p.suffix not in (".gz", ".br"))
    return plain / 1e6, sum(p.stat().st_size for p in files) / 1e6


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def med(loads: list[Load], key: str) -> float:
    return float(statistics.median(getattr(x, key) for x in loads))


def med_or_none(loads: list[Load], key: str) -> float | None:
    """The median, or None where the page has no such control (the stock app's mode)."""
    values = [getattr(x, key) for x in loads if getattr(x, key) is not None]
    return float(statistics.median(values)) if values else None


def seconds(ms: float | None, per: float = 1e3) -> str:
    return "-" if ms is None else f"{ms / per:.2f}"


def table(results: list[Figures]) -> str:
    head = "| | " + " | ".join(f.label for f in results) + " |"
    rows = [head, "|---" * (len(results) + 1) + "|"]

    def row(name: str, cell: Any) -> None:
        rows.append(f"| {name} | " + " | ".join(cell(f) for f in results) + " |")

    row("first contentful paint, cold (s)", lambda f: f"{med(f.cold, 'fcp_ms') / 1e3:.2f}")
    row(
        "first mode change lands, cold (s)", lambda f: seconds(med_or_none(f.cold, "first_mode_ms"))
    )
    row(
        "first mode change lands, warm (s)", lambda f: seconds(med_or_none(f.warm, "first_mode_ms"))
    )
    row("first Step forward lands, cold (s)", lambda f: f"{med(f.cold, 'first_step_ms') / 1e3:.2f}")
    row("first Step forward lands, warm (s)", lambda f: f"{med(f.warm, 'first_step_ms') / 1e3:.2f}")
    row(
        "embed link: first Step forward lands, cold (s)",
        lambda f: seconds(med(f.embed, "first_step_ms")),
    )
    row(
        "embed link: first mode change lands, cold (s)",
        lambda f: seconds(med_or_none(f.embed, "first_mode_ms")),
    )
    row("interactive, cold (s)", lambda f: f"{med(f.cold, 'interactive_ms') / 1e3:.2f}")
    row("interactive, warm (s)", lambda f: f"{med(f.warm, 'interactive_ms') / 1e3:.2f}")
    for load, key in (
        ("cold", "first_step_ms"),
        ("warm", "first_step_ms"),
        ("cold", "interactive_ms"),
        ("warm", "interactive_ms"),
    ):
        stock = med(getattr(results[0], load), key)
        row(
            f"{key.removesuffix('_ms').replace('_', ' ')}, {load} / stock's",
            lambda f, load=load, key=key, stock=stock: f"{med(getattr(f, load), key) / stock:.2f}",
        )
    for load in ("cold", "warm"):  # the stock app has no mode: its whole app is ready then
        stock = med(getattr(results[0], load), "interactive_ms")
        row(
            f"first mode change, {load} / stock's interactive",
            lambda f, load=load, stock=stock: seconds(
                med_or_none(getattr(f, load), "first_mode_ms"), stock
            ),
        )
    row(
        "click to DOM p50 / p95 (ms)",
        lambda f: f"{percentile(f.clicks, 0.5):.0f} / {percentile(f.clicks, 0.95):.0f}",
    )
    row("transferred cold (MB)", lambda f: f"{med(f.cold, 'bytes') / 1e6:.1f}")
    row("transferred warm (MB)", lambda f: f"{med(f.warm, 'bytes') / 1e6:.1f}")
    row("requests cold", lambda f: f"{med(f.cold, 'requests'):.0f}")
    row("site/ on disk (MB, + precompressed)", lambda f: "{:.1f} ({:.1f})".format(*disk_mb(f.site)))
    return "\n".join(rows)


def build_site(app: Path, out: Path, project: bool) -> None:
    cmd = [sys.executable, str(ROOT / "build.py"), "build", "--app", str(app), "--out", str(out)]
    if not project:
        # The yardstick is a plain converted app: none of the builder's load-time measures.
        cmd.append("--no-project")
    env = dict(os.environ)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, cwd=ROOT)
    if proc.returncode:
        raise SystemExit(f"build failed:\n{proc.stdout}\n{proc.stderr}")


def site_arguments(description: str) -> argparse.ArgumentParser:
    """The options every site benchmark takes: rounds, the sites, the stock app."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--site",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="a built site to measure (default: build the real one)",
    )
    parser.add_argument("--stock", type=Path, help="a stock app's site built before")
    return parser


def sites_to_measure(args: argparse.Namespace, work: Path) -> tuple[Path, list[tuple[str, Path]]]:
    """The stock app's site and the labelled sites to measure, built in ``work`` unless
    given."""
    stock_site = args.stock or work / "stock-site"
    if not args.stock:
        (work / "stock").mkdir()
        (work / "stock" / "main.py").write_text(STOCK_APP)
        build_site(work / "stock" / "main.py", stock_site, project=False)
    targets = [(label, Path(path)) for label, _, path in (s.partition("=") for s in args.site)]
    if not targets:
        build_site(ROOT / APP_SCRIPT, work / "site", project=True)
        targets = [("Prefix Cache Lab", work / "site")]
    return stock_site, targets


def parse_args() -> argparse.Namespace:
    parser = site_arguments(__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--clicks", type=int, default=40, help="timed clicks per round")
    parser.add_argument("--json", type=Path, help="also write every sample here")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="pcl-bench-") as tmp:
        stock_site, sites = sites_to_measure(args, Path(tmp))
        targets = [("stock app", stock_site), *sites]
        results = [Figures(label, site) for label, site in targets]
        with sync_playwright() as pw:
            for n in range(args.rounds):
                for figures in results:
                    with served(figures.site) as url:
                        one_round(pw, figures, url, args.clicks)
                print(
                    f"round {n + 1}/{args.rounds} done (load {os.getloadavg()[0]:.1f})",
                    file=sys.stderr,
                    flush=True,
                )
        print(table(results))
        if args.json:
            args.json.write_text(
                json.dumps(
                    [
                        {
                            "label": f.label,
                            "cold": [vars(x) for x in f.cold],
                            "warm": [vars(x) for x in f.warm],
                            "embed": [vars(x) for x in f.embed],
                            "clicks": f.clicks,
                        }
                        for f in results
                    ],
                    indent=1,
                )
            )


if __name__ == "__main__":
    main()
