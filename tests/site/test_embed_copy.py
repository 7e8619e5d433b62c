"""The compact layout's pre-rendered copy (`?embed=1`, the write-up's iframes).

build.py pre-renders the app a second time at EMBED_QUERY and the page fetches that
copy instead of its own when the address asks for the compact layout.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app import url
from tests.site.conftest import build

pytestmark = [pytest.mark.site]


def test_the_page_reads_embed_as_the_app_does() -> None:
    assert build.EMBED_TRUE_VALUES == url.TRUE_VALUES
    assert build.PRERENDER_QUERY_ENV == url.PRERENDER_QUERY_ENV
    assert url.parse_link(build.EMBED_QUERY).embed


def test_the_embed_copy_is_the_compact_layout_and_local(built_site: Any) -> None:
    site = built_site.out
    copy = json.loads((site / build.EMBED_COPY).read_text())
    page = (site / build.INDEX_HTML).read_text()
    assert "embed-title" in copy["docs_json"] and "embed-title" not in page
    assert "app-header" in page and "app-header" not in copy["docs_json"]
    assert len(copy["root_ids"]) == page.count("data-root-id=")  # one element per root
    for cdn in (build.BOKEH_CDN, build.PANEL_CDN):
        assert cdn not in copy["docs_json"]
