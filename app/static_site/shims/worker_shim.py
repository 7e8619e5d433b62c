"""Run in the worker after the installs and before the app's code (patches.py)."""

import json

import pyodide.ffi

# Panel 1.9.4 uses jsnull (Pyodide >= 0.28); in 0.27 JS null already arrives as None.
if not hasattr(pyodide.ffi, "jsnull"):
    pyodide.ffi.jsnull = object()

try:
    import nh3  # noqa: F401
except ImportError:
    # ReactiveHTML components (pn.FlexBox among them) sanitize their string params
    # with nh3, a Rust extension with no Pyodide 0.27 build here: escape instead
    # (stricter, and identical for the plain text they carry).
    import html
    import sys
    import types

    _nh3 = types.ModuleType("nh3")
    _nh3.clean = lambda text, **_kw: html.escape(text, quote=False)
    sys.modules["nh3"] = _nh3

import panel.io.pyodide as _pn_pyodide
from js import name as _page_location
from panel.io.state import state
from panel.util import edit_readonly

_init_doc = _pn_pyodide.init_doc


def _init_doc_with_location():
    # Give the app the page's URL (query string) before its code runs.
    _init_doc()
    loc = state.location
    if loc is None or not _page_location:
        return
    data = json.loads(_page_location)
    with edit_readonly(loc):
        loc.param.update({k: v for k, v in data.items() if k in loc.param})


_pn_pyodide.init_doc = _init_doc_with_location


def _link_docs_worker_batched(doc, dispatch_fn, msg_id=None, setter=None):
    # Panel posts one message per model change; one click changes a dozen models, and
    # each message is serialised, posted and applied on its own (about 100 ms a step).
    # Queue the changes of one Python task and post them as one patch when it ends.
    import asyncio
    import functools

    import js
    from bokeh.events import DocumentReady

    pending = []

    def flush():
        events = pending[:]
        pending.clear()
        if not events:
            return
        patch, buffer_map = _pn_pyodide._process_document_events(doc, events)
        patch = pyodide.ffi.to_js(patch, dict_converter=_pn_pyodide._dict_converter)
        buffers = js.Map.new(js.Object.entries(pyodide.ffi.to_js(buffer_map)))
        dispatch_fn(patch, buffers, msg_id)

    def on_change(event):
        if setter is not None and getattr(event, "setter", None) == setter:
            return  # the browser's own change, coming back
        if not pending:
            asyncio.get_event_loop().call_soon(flush)
        pending.append(event)

    doc.on_change(on_change)
    doc.unhold()
    doc.on_event("document_ready", functools.partial(state._schedule_on_load, doc))
    doc.callbacks.trigger_event(DocumentReady())


_pn_pyodide._link_docs_worker = _link_docs_worker_batched
