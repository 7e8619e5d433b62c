"""The `panel serve` browser fixtures (tests/app/test_browser_serve.py), and fresh contexts."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.app.test_browser_serve import (  # noqa: F401  (fixtures, shared)
    Watched,
    browser,
    launched,
    own_context,
    playwright,
    server,
    watched,
)


@pytest.fixture
def fresh(launched: Any, server: str) -> Iterator[Callable[..., Watched]]:  # noqa: F811
    """fresh(width=1280, height=800) -> a page in a new context (of the module's one
    Chromium): an empty localStorage."""
    with contextlib.ExitStack() as stack:
        pages: list[Watched] = []

        def _open(width: int = 1280, height: int = 800) -> Watched:
            context = stack.enter_context(
                own_context(launched, viewport={"width": width, "height": height})
            )
            pages.append(Watched(context.new_page(), server.rsplit("/", 1)[0]))
            return pages[-1]

        yield _open
        for page in pages:
            assert not page.errors, f"console errors: {page.errors}"
            assert not page.foreign, f"requests outside the origin: {page.foreign}"
