"""Reading the simulator's page and checking it against the engine's timeline.

Shared by the `panel serve` tests and the static-site tests: one definition of what
the page must show at a step.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.lab.play.sglang.timeline import SGLangTimeline
from engine.lab.play.vllm.timeline import Timeline

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect
PlaywrightTimeout = playwright_api.TimeoutError


# `deep(selector)`: the matches in the document and in every open shadow root (Panel's
# components render into shadow roots, which Playwright's locators pierce too).
DEEP_JS = """
  const deep = (selector, root = document, found = []) => {
    found.push(...root.querySelectorAll(selector));
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) deep(selector, el.shadowRoot, found);
    }
    return found;
  };
"""
# Every condition of wait_for_step's checks, tested in the page at each frame: the
# checks below then pass at once instead of at Playwright's next retry (100 ms and more).
STEP_SHOWN_JS = (
    """([text, step, at]) => {"""
    + DEEP_JS
    + """
  const counters = deep('[data-testid="step-counter"]');
  if (counters.length !== 1) return false;
  if (counters[0].textContent.replace(/\\s+/g, ' ').trim() !== text) return false;
  if (deep(`section[data-step]:not([data-step="${step}"])`).length) return false;
  if (deep(`[data-at]:not([data-at="${at}"])`).length) return false;
  return deep(`[data-at="${at}"]`).length > 0;
}"""
)
STEP_SHOWN_TIMEOUT_MS = 15_000
# The views that show another position than the one asked for, named for the message.
STALE_JS = (
    """([step, at]) => {"""
    + DEEP_JS
    + """
  const name = (el) => {
    const owner = el.closest("[data-testid]");
    return (owner && owner.dataset.testid) || el.getRootNode().host?.tagName || el.tagName;
  };
  return [
    ...deep(`section[data-step]:not([data-step="${step}"])`).map(
      (el) => `${name(el)} shows step ${el.dataset.step}`),
    ...deep(`[data-at]:not([data-at="${at}"])`).map((el) => `${name(el)} shows ${el.dataset.at}`),
  ];
}"""
)


def wait_for_step(page: Any, timeline: Timeline, step: int) -> None:
    last = len(timeline.steps) - 1
    text = f"Step {step} / {last}"
    at = f"{timeline.scenario}/{timeline.mode}@{step}"
    try:
        page.wait_for_function(
            STEP_SHOWN_JS, arg=[text, str(step), at], polling="raf", timeout=STEP_SHOWN_TIMEOUT_MS
        )
    except PlaywrightTimeout:
        pass  # the checks below say what is wrong
    else:
        # Every check below held in that one frame (the one counter included): asking
        # each again took five more round trips, about 40 ms a step.
        return
    expect(page.get_by_test_id("step-counter")).to_have_text(text)
    stale = page.evaluate(STALE_JS, [str(step), at])
    assert not stale, f"views not at {at}: {stale}"
    # Every view has rendered this step (they carry data-step), of this timeline (every
    # deck and the code panel say which position they show: modes can look alike).
    expect(page.locator(f'section[data-step]:not([data-step="{step}"])')).to_have_count(0)
    expect(page.locator(f'[data-at]:not([data-at="{at}"])')).to_have_count(0)
    expect(page.locator(f'[data-at="{at}"]').first).to_be_attached()


# What read_page reads, in one call into the page (a call per view took a round trip
# each). A view that must be there once and is not, or is there twice, is named.
READ_PAGE_JS = (
    """() => {"""
    + DEEP_JS
    + """
  const all = (selector, read) => deep(selector).map(read);
  const one = (testid, read) => {
    const found = deep(`[data-testid="${testid}"]`);
    if (found.length !== 1) throw new Error(`${found.length} elements [data-testid=${testid}]`);
    return read(found[0]);
  };
  const d = e => e.dataset;
  return {
    blocks: all('[data-testid^="block-"]', e => [d(e).testid, d(e).refCnt, d(e).state, d(e).hash]),
    queue: all('[data-testid="free-queue"] > [data-block-id]', e => Number(d(e).blockId)),
    map: all('[data-testid="hash-map"] tr[data-block-id]', e => [d(e).hash, d(e).blockId]),
    requests: all('[data-testid="requests"] tr[data-request-id]', e => [
      d(e).requestId, d(e).status, d(e).computed, d(e).blockIds, d(e).preemptions]),
    log: all('[data-testid="log"] .line', e => e.innerText),
    ran: all('[data-testid="code-panel"] [data-ran]', e => Number(d(e).line)),
    current: all('[data-testid="code-panel"] [data-current]', e => Number(d(e).line)),
    narration: one("narration", e => e.innerText),
    metrics: one("metrics", e => [d(e).queries, d(e).hits, d(e).preemptedRequests,
      d(e).preemptedQueries, d(e).preemptedHits, d(e).resets]),
    events: all('[data-testid="events"] [data-type]', e => d(e).type),
    chain: one("hash-chain", e => [d(e).request || null,
      (d(e).hashes || "").split(" ").filter(Boolean)]),
    dead: deep('[data-testid="engine-dead"]').length > 0,
    cpu: all('[data-testid^="cpu-block-"]', e => [d(e).refCnt, d(e).state, d(e).hash]),
  };
}"""
)


def read_page(page: Any) -> dict[str, Any]:
    shown: dict[str, Any] = page.evaluate(READ_PAGE_JS)
    return shown


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


# Chromium's emulation of a phone (an iPhone 12's screen): not a narrow desktop window,
# which lays a page out at its width whether or not the page asks for it.
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 3,
    "is_mobile": True,
    "has_touch": True,
}
SMALLEST_TEXT_PX = 14
# Each rendered text's element whose font is smaller than the given size (px), in the
# document and in every open shadow root: [tag, class, size, the text's start].
SMALL_TEXT_JS = (
    """(smallest) => {"""
    + DEEP_JS
    + """
  const small = [];
  for (const el of deep("*")) {
    const text = [...el.childNodes].find(n => n.nodeType === 3 && n.textContent.trim());
    if (!text || el.getClientRects().length === 0) continue;
    const size = parseFloat(getComputedStyle(el).fontSize);
    if (size < smallest) {
      small.push([el.tagName, String(el.className).slice(0, 30), size,
                  text.textContent.trim().slice(0, 30)]);
    }
  }
  return small;
}"""
)


# Each visible label whose text runs past its own box (into the field beside it):
# [the label's text, by how many px].
LABELS_OVERFLOWING_JS = (
    """() => {"""
    + DEEP_JS
    + """
  const over = [];
  for (const label of deep("label")) {
    // the widget's box: a label may be as wide as its text, past its widget
    const widget = label.parentElement ?? label.getRootNode().host;
    if (!label.textContent.trim() || label.getClientRects().length === 0 || !widget) continue;
    const box = widget.getBoundingClientRect();
    const range = document.createRange();
    range.selectNodeContents(label);
    const right = Math.max(...[...range.getClientRects()].map(r => r.right));
    if (right > box.right + 1) over.push([label.textContent.trim(), Math.round(right - box.right)]);
  }
  return over;
}"""
)


def check_reads_on_a_phone(page: Any) -> None:
    """The page lays out at the phone's own width (a viewport tag), no text in it is
    smaller than 14 px, no label runs into what is beside it, and it does not scroll
    sideways."""
    width = PHONE["viewport"]["width"]  # type: ignore[index]
    meta = page.evaluate(
        "() => document.querySelector('meta[name=viewport]')?.getAttribute('content')"
    )
    assert meta is not None and "width=device-width" in meta, meta
    assert page.evaluate("() => window.innerWidth") == width
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    small = page.evaluate(SMALL_TEXT_JS, SMALLEST_TEXT_PX)
    assert not small, f"{len(small)} texts under {SMALLEST_TEXT_PX} px, e.g. {small[:5]}"
    overflowing = page.evaluate(LABELS_OVERFLOWING_JS)
    assert not overflowing, f"labels run past their widget: {overflowing}"


def check_sglang_step(page: Any, timeline: SGLangTimeline, step: int) -> None:
    """The counter, the radix tree's nodes and the KV slots at ``step`` of ``timeline``."""
    expect(page.get_by_test_id("step-counter")).to_have_attribute("data-step", str(step))
    snapshot = timeline.steps[step].snapshot
    tree = page.get_by_test_id("radix-tree")
    expect(tree).to_be_visible()
    nodes = tree.locator("[data-node-id]")
    expect(nodes).to_have_count(len(snapshot.nodes))
    for node in snapshot.nodes:
        row = tree.locator(f'[data-node-id="{node.node_id}"]')
        expect(row).to_have_attribute("data-lock-ref", str(node.lock_ref))
        expect(row).to_have_attribute("data-tokens", str(node.num_tokens))
    slots = page.get_by_test_id("kv-slots")
    expect(slots).to_be_visible()
    expect(slots).to_contain_text(f"{snapshot.num_slots:,} slots")
    expect(page.get_by_test_id("pool")).to_have_count(0)
    expect(page.get_by_test_id("hash-map")).to_have_count(0)
