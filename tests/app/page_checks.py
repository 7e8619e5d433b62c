"""Reading the simulator's page and checking it against the engine's timeline.

Shared by the `panel serve` tests and the static-site tests: one definition of what
the page must show at a step.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.lab.timeline import Timeline

expect = pytest.importorskip("playwright.sync_api").expect


def wait_for_step(page: Any, timeline: Timeline, step: int) -> None:
    last = len(timeline.steps) - 1
    expect(page.get_by_test_id("step-counter")).to_have_text(f"Step {step} / {last}")
    # Every view has rendered this step (they carry data-step), of this timeline (every
    # deck and the code panel say which position they show: modes can look alike).
    expect(page.locator(f'section[data-step]:not([data-step="{step}"])')).to_have_count(0)
    at = f"{timeline.scenario}/{timeline.mode}@{step}"
    expect(page.locator(f'[data-at]:not([data-at="{at}"])')).to_have_count(0)
    expect(page.locator(f'[data-at="{at}"]').first).to_be_attached()


def read_page(page: Any) -> dict[str, Any]:
    blocks = page.locator('[data-testid^="block-"]').evaluate_all(
        "els => els.map(e => [e.dataset.testid, e.dataset.refCnt, e.dataset.state, e.dataset.hash])"
    )
    return {
        "blocks": blocks,
        "queue": page.locator('[data-testid="free-queue"] > [data-block-id]').evaluate_all(
            "els => els.map(e => Number(e.dataset.blockId))"
        ),
        "map": page.locator('[data-testid="hash-map"] tr[data-block-id]').evaluate_all(
            "els => els.map(e => [e.dataset.hash, e.dataset.blockId])"
        ),
        "requests": page.locator('[data-testid="requests"] tr[data-request-id]').evaluate_all(
            "els => els.map(e => [e.dataset.requestId, e.dataset.status, e.dataset.computed,"
            " e.dataset.blockIds, e.dataset.preemptions])"
        ),
        "log": page.locator('[data-testid="log"] .line').all_inner_texts(),
        "ran": page.locator('[data-testid="code-panel"] [data-ran]').evaluate_all(
            "els => els.map(e => Number(e.dataset.line))"
        ),
        "current": page.locator('[data-testid="code-panel"] [data-current]').evaluate_all(
            "els => els.map(e => Number(e.dataset.line))"
        ),
        "narration": page.get_by_test_id("narration").inner_text(),
        "metrics": page.get_by_test_id("metrics").evaluate(
            "e => [e.dataset.queries, e.dataset.hits, e.dataset.preemptedRequests,"
            " e.dataset.preemptedQueries, e.dataset.preemptedHits, e.dataset.resets]"
        ),
        "events": page.locator('[data-testid="events"] [data-type]').evaluate_all(
            "els => els.map(e => e.dataset.type)"
        ),
        "chain": page.get_by_test_id("hash-chain").evaluate(
            "e => [e.dataset.request || null, (e.dataset.hashes || '').split(' ').filter(Boolean)]"
        ),
        "dead": page.get_by_test_id("engine-dead").count() > 0,
        "cpu": page.locator('[data-testid^="cpu-block-"]').evaluate_all(
            "els => els.map(e => [e.dataset.refCnt, e.dataset.state, e.dataset.hash])"
        ),
    }


def expected(timeline: Timeline, step: int) -> dict[str, Any]:
    current = timeline.steps[step]
    snapshot = current.snapshot
    return {
        "blocks": [
            [f"block-{b.block_id}", str(b.ref_cnt), b.state, b.hash_label or ""]
            for b in snapshot.blocks
        ],
        "queue": list(snapshot.free_queue),
        "map": [[e.hash_label, " ".join(map(str, e.block_ids))] for e in snapshot.hash_map],
        "requests": [
            [
                r.request_id,
                r.status,
                str(r.num_computed_tokens),
                " ".join(map(str, r.block_ids)),
                str(r.num_preemptions),
            ]
            for r in snapshot.requests
        ],
        "log": [str(line) for line in timeline.logs_until(step)],
        "ran": sorted(current.focus.lines) if current.focus else [],
        "current": [current.focus.last_line] if current.focus else [],
        "metrics": [
            str(v)
            for v in (
                snapshot.stats.queries,
                snapshot.stats.hits,
                snapshot.stats.preempted_requests,
                snapshot.stats.preempted_queries,
                snapshot.stats.preempted_hits,
                snapshot.stats.resets,
            )
        ],
        "events": [e.type for e in snapshot.events],
        # The chain opens on the newest request.
        "chain": [
            snapshot.requests[-1].request_id if snapshot.requests else None,
            list(snapshot.requests[-1].block_hash_labels) if snapshot.requests else [],
        ],
        "dead": snapshot.engine_dead,
        "cpu": [[str(b.ref_cnt), b.state, b.hash_label or ""] for b in snapshot.offload.cpu_blocks]
        if snapshot.offload
        else [],
    }


def check_step(page: Any, timeline: Timeline, step: int) -> None:
    wait_for_step(page, timeline, step)
    shown = read_page(page)
    narration = " ".join(timeline.narration_text(timeline.steps[step]).split())
    assert narration and narration in " ".join(shown.pop("narration").split())
    assert shown == expected(timeline, step)


def exercise_keyboard(page: Any, timeline: Timeline) -> None:
    """Arrows step, Home restarts, space plays and pauses: checked against the timeline."""
    page.get_by_test_id("narration").click()  # focus the page, not a control
    page.keyboard.press("Home")
    check_step(page, timeline, 0)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    check_step(page, timeline, 2)
    page.keyboard.press("ArrowLeft")
    check_step(page, timeline, 1)
    page.keyboard.press("Home")
    check_step(page, timeline, 0)
    page.keyboard.press(" ")
    expect(page.get_by_role("button", name="Pause")).to_be_visible()
    page.keyboard.press(" ")
    expect(page.get_by_role("button", name="Play")).to_be_visible()
