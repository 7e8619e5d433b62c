"""vLLM's step as lines of text: the pool, the free queue, the hash map, the requests,
the stats, the log and the KV events (their hashes by the pool's labels)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.lab.play.records import EventRecord
from engine.lab.play.vllm.event_labels import event_hash_labels, event_label
from engine.lab.play.vllm.snapshot import BlockRecord, HashMapEntry, Snapshot
from engine.lab.play.vllm.timeline import Step, Timeline

STATE_MARK = {"null": "null", "held": "held", "free-cached": "cached", "free-empty": "free"}


def _block_text(block: BlockRecord) -> str:
    label = block.hash_label or "-"
    return f"[{block.block_id} r{block.ref_cnt} {label} {STATE_MARK[block.state]}]"


def _map_text(entries: Sequence[HashMapEntry]) -> str:
    shown = [f"{e.hash_label}->{','.join(map(str, e.block_ids))}" for e in entries]
    return "cached_block_hash_to_block: {" + ", ".join(shown) + "}"


UNHELD_HASH_NOTE = (
    "  (~: a hash that no block holds any more, so it has no label in the pool; it is "
    "written with the first digits of the event's own 64-bit value instead)"
)


def _event_text(event: EventRecord, labels: dict[int, str]) -> str:
    """An event's fields, its hashes shown by the pool's labels for them."""
    fields = event.to_dict()
    for name in ("block_hashes", "parent_block_hash"):
        value = fields.get(name)
        if isinstance(value, list):
            fields[name] = [event_label(h, labels) for h in value]
        elif value is not None:
            fields[name] = event_label(value, labels)
    return f"event: {fields}"


def render_snapshot(snapshot: Snapshot, event_labels: dict[int, str] | None = None) -> list[str]:
    lines = ["pool:  " + " ".join(_block_text(b) for b in snapshot.blocks)]
    lines.append(
        "free_block_queue (head is reused first): " + " ".join(map(str, snapshot.free_queue))
    )
    lines.append(_map_text(snapshot.hash_map))
    for r in snapshot.requests:
        lines.append(
            f"request {r.request_id}: {r.status}, computed {r.num_computed_tokens}/{r.num_tokens} "
            f"tokens, blocks {list(r.block_ids)}, preemptions {r.num_preemptions}"
        )
    if snapshot.offload is not None:
        cpu = snapshot.offload
        lines.append("cpu pool: " + " ".join(_block_text(b) for b in cpu.cpu_blocks))
        lines.append("cpu " + _map_text(cpu.cpu_hash_map))
        for store in cpu.stores_in_flight:
            lines.append(
                f"store {store.store_event} in flight: gpu {list(store.gpu_block_ids)} -> "
                f"cpu {list(store.cpu_block_ids)}"
            )
    if snapshot.aux_output is not None:
        aux = snapshot.aux_output
        lines.append(
            f"aux output: generation scheduler {aux.scheduler_generation} / worker "
            f"{aux.worker_generation}, outputs in flight {aux.outputs_in_flight}"
        )
    if snapshot.engine_dead:
        lines.append("engine core: DEAD")
    s = snapshot.stats
    lines.append(
        f"stats: queries {s.queries} hits {s.hits} (preempted: {s.preempted_queries} / "
        f"{s.preempted_hits}) resets {s.resets}"
    )
    lines.extend(f"log: {line}" for line in snapshot.logs)
    events = [_event_text(event, event_labels or {}) for event in snapshot.events]
    lines.extend(events)
    if any("'~" in line for line in events):
        lines.append(UNHELD_HASH_NOTE)
    return lines


def render_step(timeline: Timeline, step: Step) -> list[str]:
    """What only vLLM's step shows: the state after it, its events' hashes labelled."""
    labels = event_hash_labels(timeline, step.index) if step.snapshot.events else {}
    return render_snapshot(step.snapshot, labels)
