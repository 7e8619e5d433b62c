"""The early pages: the start page's, and one per scenario and layout, fetched by their
addresses.

build.py makes the App at every address app/data/url.py names and ships its early page
(app/page/early_page.py: the layout, every component's parameters) gzipped; the page
fetches the one its address asks for and lays it out before Bokeh and Python.
"""

from __future__ import annotations

import gzip
import json
from typing import Any
from urllib.parse import parse_qs

import pytest

from app.data import timelines, url
from app.static_site import layout

pytestmark = [pytest.mark.site]


def test_every_scenario_has_an_early_page_in_both_layouts() -> None:
    pages = url.early_pages()
    assert len(pages) == 2 * len(timelines.names()) + 1  # and the start page
    for name, query in pages.items():
        link = url.parse_link(query)
        assert not link.notices and name == url.early_page_of(link)


def early_nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    """An early page's column and each part in it (early_page.py): no deeper tree. The
    column carries the App's class, which early_page.css lays out as a column."""
    assert "prefix-cache-lab" in node["classes"]
    assert all("children" not in part for part in node["children"])
    return [node, *node["children"]]


def test_each_early_page_shows_its_address_and_stays_local(built_site: Any) -> None:
    site = built_site.out
    page = (site / layout.INDEX_HTML).read_text()
    assert "start-page" not in page and "embed-title" not in page  # no Bokeh document in it
    for name, query in url.early_pages().items():
        path = site / layout.EARLY_DIR / f"{name}.json.gz"
        early = json.loads(gzip.decompress(path.read_bytes()))
        nodes = early_nodes(early["root"])
        text = json.dumps(early)
        link = url.parse_link(query)
        if link.start:
            assert [n["esm"] for n in nodes if "esm" in n] == ["start_page.js", "glossary.js"]
            continue
        assert ("embed-title" in text) is link.embed and ("app-header" in text) is not link.embed
        # It steps early only at the addresses of its own state (early_page.js).
        built = parse_qs(early["query"])
        assert built["scenario"] == [link.scenario] and ("embed" in built) is link.embed
        # Its document holds every step of every mode of its scenario.
        (stepping,) = [n for n in nodes if n.get("esm") == "step_page.js"]
        document = json.loads(stepping["model"]["document_json"])
        assert document["lasts"] == early["lasts"]
        assert {k.split("/")[0] for k in early["lasts"]} == {link.scenario}, name
        assert document["held"] == {k: [0, last + 1] for k, last in early["lasts"].items()}
        for deck in document["views"].values():
            for key, order in deck["orders"].items():
                assert None not in order and len(order) == early["lasts"][key] + 1, (name, key)
        for cdn in (layout.BOKEH_CDN, layout.PANEL_CDN):
            assert cdn not in text
