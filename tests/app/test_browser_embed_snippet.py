"""The embed snippet of docs/static-site.md, in a write-up's page, on a phone and a desk.

The documented iframe had `width="800"`: in a blog's column at 390 px the page scrolled
sideways (816 px) and cut the figure. The snippet is read from the docs, so the test
checks what a writer copies.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.app.browser import REPO, chromium, panel_serve
from tests.app.test_browser_serve import Watched

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = pytest.mark.browser

# A write-up's page: a column with margins, text around the figure.
PAGE = """<!doctype html><html><head><meta name="viewport" content="width=device-width">
<style>body {{ margin: 0; font: 17px/1.6 Georgia, serif; }}
main {{ max-width: 760px; margin: 0 auto; padding: 0 16px; }}</style></head>
<body><main><h1>How vLLM's prefix cache resets</h1><p>Step through it below.</p>
{snippet}<p>The text goes on after the figure.</p></main></body></html>"""


def documented_snippet() -> str:
    docs = (REPO / "docs" / "static-site.md").read_text(encoding="utf-8")
    found = re.search(r"```html\n(<iframe.*?</iframe>)\n```", docs, re.S)
    assert found, "docs/static-site.md has no iframe snippet"
    return found.group(1)


@contextlib.contextmanager
def blog(html: str) -> Iterator[str]:
    """The write-up's page, served on another origin than the app's (a local one: Chromium
    blocks a public page's frame of a local server)."""

    class Post(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Post)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{httpd.server_address[1]}/post.html"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with panel_serve() as url:
        yield url


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1280, 800)], ids=["phone", "desk"])
def test_the_documented_snippet_fits_the_page_around_it(
    server: str, width: int, height: int
) -> None:
    snippet = documented_snippet()
    query = re.search(r'src="[^"?]*(\?[^"]*)"', snippet)
    assert query
    html = PAGE.format(snippet=re.sub(r'src="[^"]*"', f'src="{server}{query.group(1)}"', snippet))
    with (
        blog(html) as post,
        playwright_api.sync_playwright() as playwright,
        chromium(playwright, viewport={"width": width, "height": height}) as context,
    ):
        page: Any = context.new_page()
        page.goto(post)
        frame = page.frame_locator("iframe")
        expect(frame.get_by_test_id("step-counter")).to_be_visible(timeout=60_000)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        box = page.locator("iframe").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width
        assert box["width"] == min(760, width - 32)  # the column's width
        inner = page.frames[1]
        watched = Watched(inner.page, server.rsplit("/", 1)[0])
        assert inner.evaluate("() => document.documentElement.scrollWidth") <= box["width"]
        assert not watched.errors
