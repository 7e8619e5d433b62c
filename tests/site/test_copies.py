"""The pre-rendered copies: one per scenario and layout, fetched by their addresses.

build.py runs the app once per address app/data/url.py names and ships each document
gzipped; the page fetches the one its address asks for instead of showing its own.
"""

from __future__ import annotations

import gzip
import json
import re
from typing import Any
from urllib.parse import parse_qs

import pytest

from app.data import timelines, url
from app.static_site import layout

pytestmark = [pytest.mark.site]


def test_every_scenario_has_a_copy_in_both_layouts() -> None:
    copies = url.prerendered_copies()
    assert len(copies) == 2 * len(timelines.names()) + 1  # and the start page
    for name, query in copies.items():
        link = url.parse_link(query)
        assert not link.notices and name == url.copy_of(link)


def test_each_copy_shows_its_address_and_stays_local(built_site: Any) -> None:
    site = built_site.out
    page = (site / layout.INDEX_HTML).read_text()
    own = url.copy_of(url.parse_link(""))
    assert "start-page" in page and "embed-title" not in page
    for name, query in url.prerendered_copies().items():
        path = site / layout.COPIES_DIR / f"{name}.json.gz"
        if name == own:
            assert not path.exists()  # the page holds it
            continue
        copy = json.loads(gzip.decompress(path.read_bytes()))
        docs = copy["docs_json"]
        link = url.parse_link(query)
        assert ("embed-title" in docs) is link.embed and ("app-header" in docs) is not link.embed
        # Its components (early steps, address bar) know which address it shows.
        plain = docs.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        queries = [parse_qs(q) for q in re.findall(r'"query":"(scenario=[^"]*)"', plain)]
        assert {q["scenario"][0] for q in queries} == {link.scenario}, name
        assert any("embed" in q for q in queries) is link.embed, name
        assert len(copy["root_ids"]) == page.count("data-root-id=")  # one element per root
        for cdn in (layout.BOKEH_CDN, layout.PANEL_CDN):
            assert cdn not in docs
