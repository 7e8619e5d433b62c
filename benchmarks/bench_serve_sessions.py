"""A workshop opening the app at once: N sessions of `panel serve` start together.

Starts `panel serve app/main.py` (as tests/app/browser.py does), opens the page in N
pages of headless Chromium at the same moment (the step-by-step simulator, or with
--lab the workload lab's `?lab=shared-prefix`: 200 requests with its overlay), and
times until every page shows (the step counter; the lab's outcome), and the server's
CPU time meanwhile, read from /proc (the server is one process: sessions are built
one after the other). Then the pages are left idle for --idle seconds (in the lab,
the runs ahead play, one session's at a time) and the server's CPU time for that is
printed too. Lab sessions asking for one run share it (app/data/lab.py's RunsInProgress).

    python benchmarks/bench_serve_sessions.py [--sessions 8] [--lab] [--idle 10]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright

from tests.app.browser import chromium, panel_serve

LOAD_TIMEOUT_MS = 300_000


def server_cpu_seconds(port: str) -> float:
    """User and system CPU time of the `panel serve` process listening on ``port``."""
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            if b"serve" in command and port.encode() in command:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / ticks
        except OSError:
            continue
    raise RuntimeError(f"no panel serve process on port {port}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--lab", action="store_true", help="the workload lab's page")
    parser.add_argument("--idle", type=float, default=10.0)
    args = parser.parse_args()
    with (
        panel_serve() as url,
        sync_playwright() as playwright,
        chromium(playwright, viewport={"width": 1280, "height": 900}) as context,
    ):
        port = url.split(":")[2].split("/")[0]
        pages = [context.new_page() for _ in range(args.sessions)]
        cpu_before = server_cpu_seconds(port)
        start = time.monotonic()
        lab = ("?lab=shared-prefix", "lab-outcome")
        query, shows = lab if args.lab else ("?scenario=reset&mode=keep", "step-counter")
        for page in pages:
            page.goto(f"{url}{query}", wait_until="commit")
        shown = []
        for page in pages:  # each wait ends once its page shows, or at once if it did
            page.get_by_test_id(shows).wait_for(timeout=LOAD_TIMEOUT_MS)
            shown.append(time.monotonic() - start)
        cpu_shown = server_cpu_seconds(port)
        time.sleep(args.idle)
        cpu_idle = server_cpu_seconds(port)
    what = "the workload lab (`?lab=shared-prefix`)" if args.lab else "`?scenario=reset&mode=keep`"
    print(f"| {args.sessions} sessions open {what} at once | |")
    print("|---|---|")
    print(f"| every page shown (its first view) after | {max(shown):.1f} s |")
    print(f"| the server's CPU time until then | {cpu_shown - cpu_before:.1f} s |")
    print(
        f"| the server's CPU time in the next {args.idle:g} s, the pages idle | "
        f"{cpu_idle - cpu_shown:.1f} s |"
    )


if __name__ == "__main__":
    main()
