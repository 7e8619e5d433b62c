"""The suite's tiers: `--long` for what is long by nature, and the tiers a run needs.

Markers: `browser` (headless Chromium), `site` (the static site built by build.py),
`slow` (the 1,000-action soaks: skipped unless `--long`). tests/run.sh asks which
tiers the chosen tests need (PCL_TIERS_FILE) and sets up only those.
"""

from __future__ import annotations

import os

import pytest

# The shared checks' asserts say what differed, as a test module's do.
pytest.register_assert_rewrite("tests.app.page_checks", "tests.app.playground_checks")
pytest.register_assert_rewrite("tests.app.lab_checks")

LONG_HINT = "long by nature: run with --long (bash tests/run.sh --long)"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long",
        action="store_true",
        default=False,
        help="also run the tests marked slow (the 1,000-action soaks)",
    )


def long_run(config: pytest.Config) -> bool:
    return bool(config.getoption("--long"))


def tier_rank(item: pytest.Item) -> int:
    """0 for the static site's tests, 1 for the other real-browser tests, 2 for the rest."""
    for rank, tier in enumerate(("site", "browser")):
        if item.get_closest_marker(tier):
            return rank
    return 2


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The slow modules first, a module's tests kept together: run.sh's two processes take
    # whole modules in this order (--no-loadscope-reorder), so the short ones fill the end.
    module_rank: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        module_rank[module] = min(module_rank.get(module, 2), tier_rank(item))
    items.sort(key=lambda item: module_rank[item.nodeid.split("::")[0]])
    if long_run(config):
        return
    skip = pytest.mark.skip(reason=LONG_HINT)
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip)


def pytest_collection_finish(session: pytest.Session) -> None:
    path = os.environ.get("PCL_TIERS_FILE")
    if not path:
        return
    tiers = {
        tier
        for item in session.items
        for tier in ("browser", "site")
        if item.get_closest_marker(tier) and not item.get_closest_marker("skip")
    }
    with open(path, "w") as out:
        out.write(" ".join(sorted(tiers)) + "\n")
