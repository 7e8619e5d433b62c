"""The playground on the offline static site: the engine runs in Pyodide, in the page.

The same checks as on `panel serve` (tests/app/test_browser_playground.py): a
scenario built by hand equals CPython's timeline, step by step and by digest, and
survives a reload and an export and re-import; bad input gets its message.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.views.editor import fork
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.vllm.timeline import build_timeline
from tests.app.playground_checks import (
    SCRIPT,
    build_by_hand,
    check_an_edit_right_after_a_move_opens_there,
    check_import_refused,
    check_playground_step,
    check_the_editor_beside_the_views,
    export_toml,
    field,
    open_fork,
    walk,
)
from tests.app.test_browser_playground_soak import (
    SEED,
    skip_if_the_long_soak_runs,
    soak,
    soak_lengths,
)
from tests.site.conftest import kept_page
from tests.site.test_site_app import EXPECT_TIMEOUT_MS, WORKER_TIMEOUT_MS

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.site, pytest.mark.browser]

SITE_ACTIONS = int(os.environ.get("PCL_SITE_SOAK_ACTIONS", "25"))

# Runs in the Pyodide worker: the digest of the timeline the page's engine builds.
DIGEST_IN_WORKER = """async ([data, mode, timeoutMs]) => {
  const code = `
import json
import os
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.vllm.timeline import build_timeline
build_timeline(scenario_from_dict(json.loads(${JSON.stringify(data)})), "${mode}").digest()
`;
  const timeout = new Promise((_, reject) =>
    setTimeout(() => reject(new Error(`no digest after ${timeoutMs} ms`)), timeoutMs));
  return await Promise.race([self.pyodide.runPythonAsync(code), timeout]);
}"""


@pytest.fixture(scope="module", autouse=True)
def patient_expect() -> Iterator[None]:
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    yield
    expect.set_options(timeout=5_000)


def test_a_scenario_built_by_hand_in_pyodide_matches_cpython(
    site_page: Any, tmp_path: Path
) -> None:
    page, _ = site_page("?scenario=reset&mode=keep&step=2")
    open_fork(page)
    # The copy opens where the learner was: keep mode, step 2.
    check_playground_step(page, build_timeline(scenario_from_dict(fork("reset")), "keep"), 2)
    check_the_editor_beside_the_views(page)
    data, timeline = build_by_hand(page)
    walk(page, timeline)

    worker = next(w for w in page.workers if w.url.endswith(".js"))
    digest = worker.evaluate(DIGEST_IN_WORKER, [json.dumps(data), "keep", WORKER_TIMEOUT_MS])
    assert digest == timeline.digest()

    last = len(timeline.steps) - 1
    page.wait_for_url(re.compile(f"step={last}"))
    address = page.url.split("/", 3)[3]
    again, _ = site_page(address)
    check_playground_step(again, timeline, last)
    expect(field(again, "Script (one action per line)")).to_have_value(SCRIPT)

    exported = export_toml(again, tmp_path, data)
    field(again, "GPU blocks").fill("1")
    expect(again.locator(".pg-message", has_text="num_gpu_blocks must be from 2")).to_be_visible()
    field(again, "Script (one action per line)").fill("step\nstep")
    again.locator('input[type="file"]').set_input_files(str(exported))
    expect(field(again, "Script (one action per line)")).to_have_value(SCRIPT)
    check_playground_step(again, timeline, last)


@soak_lengths(SITE_ACTIONS)
def test_random_learner_actions_on_the_static_site(
    site_page: Any, actions: int, request: pytest.FixtureRequest
) -> None:
    """The panel-serve soak on the static site (site_page checks the console stays clean):
    25 actions, or 1,000 with --long (14-30 minutes on a 2-core machine: each reload starts
    Pyodide again); PCL_SITE_SOAK_ACTIONS sets the first number."""
    skip_if_the_long_soak_runs(request, actions)
    page, _ = site_page("?scenario=shared-prefix")
    soak(page, actions, SEED)


@pytest.fixture(scope="module")
def shared_prefix_fork(shared_context: Any, site_url: str) -> Iterator[Any]:
    """One page of `shared-prefix`'s copy in the playground for the two tests below, in
    their order (a load starts Pyodide again: about 7 s of both cores), last in the module
    so that no other page runs beside it: the bad files leave the copy shown, and the
    second test starts empty from it. Clean throughout."""
    with kept_page(shared_context, site_url, "?scenario=shared-prefix") as (page, _):
        open_fork(page)
        yield page


def test_a_file_that_is_not_a_scenario_gets_its_message_in_pyodide(
    shared_prefix_fork: Any,
) -> None:
    timeline = build_timeline(scenario_from_dict(fork("shared-prefix")), "default")
    check_import_refused(shared_prefix_fork, timeline)


def test_an_edit_right_after_a_step_opens_at_that_step_in_pyodide(shared_prefix_fork: Any) -> None:
    check_an_edit_right_after_a_move_opens_there(shared_prefix_fork)
