"""Shared helpers for the app's tests: parse the HTML the views render."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import ClassVar

import panel as pn
import pytest
from bokeh.document import Document
from panel.io.state import set_curdoc


class Element:
    def __init__(self, tag: str, attrs: dict[str, str]) -> None:
        self.tag = tag
        self.attrs = attrs
        self.children: list[Element] = []
        self.nodes: list[Element | str] = []  # text and children, in document order

    @property
    def text(self) -> str:
        return "".join(n if isinstance(n, str) else n.text for n in self.nodes)

    def iter(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            yield from child.iter()

    def find_all(self, **attrs: str) -> list[Element]:
        return [
            e
            for e in self.iter()
            if all(e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]

    def with_attr(self, name: str) -> list[Element]:
        return [e for e in self.iter() if name in e.attrs]


class _Builder(HTMLParser):
    VOID: ClassVar[frozenset[str]] = frozenset({"br", "img", "input", "meta", "link", "hr", "wbr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        self.stack[-1].nodes.append(element)
        if tag not in self.VOID:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].nodes.append(data)


def parse(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    return builder.root


@pytest.fixture(autouse=True)
def no_logged_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Callbacks log their exceptions instead of raising: a logged error fails the test."""
    with caplog.at_level(logging.ERROR, logger="prefix_cache_lab.app"):
        yield
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors[0].getMessage()


@pytest.fixture
def doc() -> Iterator[Document]:
    """A document as Pyodide has it: no server session, connected and loaded (as
    panel/io/pyodide.py marks it), on the thread that made it, so a hold's end hands
    its changes to the models' callbacks at once."""
    document = Document()
    pn.state._loaded[document] = pn.state._connected[document] = True
    with set_curdoc(document):
        pn.state._thread_id = threading.get_ident()
    yield document
    for marks in (pn.state._loaded, pn.state._connected, pn.state._thread_id_):
        marks.pop(document, None)
