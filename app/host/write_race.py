"""A workaround for Panel 1.9.4's write race on `panel serve` (docs/private-names.md, "A
Panel bug the app meets").

Panel's write task (`_dispatch_msgs`) puts a message back when Bokeh holds the socket's
write lock and retries 10 ms later, but only while the document is marked blocked; an
earlier write task that ends in between clears the mark, and the message waits until the
document's next change (a lab's "Running… 0%" with its run done, a stepping page's reply
held back). Wrapped here: a write task that ends with messages still queued and the mark
cleared marks the document again and writes them. Only on a server: in Pyodide's worker
Panel queues nothing. Remove it when tests/app/test_panel_write_race.py's xfail passes.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import panel.io.document as panel_document

WriteTask = Callable[[Any], Coroutine[Any, Any, None]]


def rearming(write_task: WriteTask) -> WriteTask:
    """Panel's write task, followed by a retry when it left messages stranded."""

    async def write_then_rearm(doc: Any) -> None:
        await write_task(doc)
        # Panel's task re-queues itself whenever it keeps the mark; a destroyed document
        # has neither queue nor mark, so this never revives one.
        if panel_document._WRITE_MSGS.get(doc) and doc not in panel_document._WRITE_BLOCK:
            panel_document._WRITE_BLOCK[doc] = True
            await write_then_rearm(doc)

    write_then_rearm.rearms = write_task  # type: ignore[attr-defined]
    return write_then_rearm


def fix_panels_write_race() -> None:
    """Install the wrapper (once per process: `panel serve` runs main.py per session)."""
    if not hasattr(panel_document._dispatch_msgs, "rearms"):
        panel_document._dispatch_msgs = rearming(panel_document._dispatch_msgs)
