"""Keep the cyclic garbage collector off the objects that live as long as the process.

With Panel, Bokeh and the app imported, about 140,000 objects are tracked by the
collector, and every full collection walks them all: 65 ms each on the CI machine's
kind of CPU. A lab run's 20,000-block pools and a playground's traced builds allocate
enough to set off such collections, so a knob change or an edit paid for them at
random (runs of one workload took 250 to 450 ms). Frozen, those objects are skipped:
a full collection takes about 5 ms. They are still freed by reference counting; only
a frozen object in a reference cycle would never be collected, so this runs once,
before any session has built anything.
"""

from __future__ import annotations

import gc

_frozen = False
_held = False


def hold_collections() -> None:
    """No collection until ``freeze_imported_objects``: the app's imports set off full
    collections, each walking Panel's and Bokeh's objects (two or three at the static
    site's start, about 0.1 s each in Pyodide), before the one that freezing makes."""
    global _held
    if not _frozen and not _held and gc.isenabled():
        _held = True
        gc.disable()


def freeze_imported_objects() -> None:
    """Move every object tracked now into the collector's permanent generation, once
    per process (``panel serve`` runs the app's main module again for each session)."""
    global _frozen, _held
    if not _frozen:
        _frozen = True
        gc.collect()  # what is garbage already goes first, rather than stay for good
        gc.freeze()
    if _held:
        _held = False
        gc.enable()
