"""A workshop of 30 on one `panel serve`, offline: no page asks any other host for anything.

On a busy server Bokeh discards a session whose browser has not connected within its
unused-session lifetime (15 s) and makes it anew from the browser's WebSocket, with no
HTML page: Panel then pointed that session's widget stylesheets at cdn.holoviz.org (10
of 30 pages opened at once did, 25-44 s after load). Here the lifetime is 0.3 s, so
nearly every one of the 30 sessions is remade that way within seconds rather than under
minutes of load, and every host but the server's is unresolvable, as in a room with no
network.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.data import timelines
from tests.app.browser import CHROMIUM, CHROMIUM_ARGS, panel_serve
from tests.app.test_browser_serve import Watched

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = pytest.mark.browser

SEATS = 30
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    # Sessions unused for 0.3 s are discarded (checked every 0.3 s), as a 2-core server
    # with 30 sessions opening discards those not connected within 15 s.
    with panel_serve("--unused-session-lifetime", "300", "--check-unused-sessions", "300") as url:
        yield url


def test_thirty_seats_at_once_ask_no_other_host(server: str) -> None:
    origin = server.rsplit("/", 1)[0]
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, OFFLINE], headless=True
        )
        try:
            context = browser.new_context(viewport={"width": 800, "height": 600})
            seats: list[Watched] = [Watched(context.new_page(), origin) for _ in range(SEATS)]
            for seat in seats:  # all asked for before any is waited on
                seat.page.goto(f"{server}?scenario=reset", wait_until="commit")
            last = timelines.last_step("reset", "default")
            for seat in seats:  # each remade session opened its address's scenario
                counter = seat.page.get_by_test_id("step-counter")
                expect(counter).to_have_text(f"Step 0 / {last}", timeout=240_000)
                # Panel's column is on the page, its stylesheets (listpanel.css, loading.css,
                # the theme's: once asked of the CDN) loaded with it. (The stepping page holds
                # no Panel widget: its controls and editor are its own.)
                expect(seat.page.locator(".bk-panel-models-layout-Column").first).to_be_attached()
            errors = [e for seat in seats for e in seat.errors]
            foreign = sorted({url for seat in seats for url in seat.foreign})
            assert not foreign, f"{len(foreign)} requests outside the origin: {foreign[:8]}"
            assert not errors, f"console errors and warnings: {errors[:5]}"
        finally:
            browser.close()
