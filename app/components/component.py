"""The base of every browser component of the app: a JSComponent that does not hear its
own changes back as if the browser had made them.

In Pyodide a document has no server session, so when a hold on it ends, Bokeh hands
every change Python made inside it to the models' change callbacks, Panel's among
them. A change made inside a nested hold (a component's own update runs inside the
edit's) is released after the component stopped marking it as its own, so Panel took
it for a change from the browser: it set the parameter again (comparing every page of
a deck with itself) and counted a busy event, whose bookkeeping rewrites every
parameter of `pn.state` several times. A playground edit made about 60 of them: more
than half its Python time in Pyodide (tests/app/test_echo.py; docs/performance.md). On
a server the held changes go straight to the socket. A change that really comes from
the browser equals what Python holds only when it would change nothing.
"""

from __future__ import annotations

from typing import Any, ClassVar

from bokeh.document import Document
from panel.custom import JSComponent


class _AllNames:
    def __contains__(self, name: object) -> bool:
        return True


class SkipsEchoes:
    """Skips a change from the model equal to what Python holds (for a JSComponent),
    and counts no change from the browser as busy: the app shows no busy indicator, and
    each count rewrites every parameter of `pn.state` twice (Panel's `edit_readonly`)."""

    param: Any
    _busy__ignore: ClassVar[Any] = _AllNames()

    def _server_change(
        self, doc: Document, ref: str, subpath: str | None, attr: str, old: Any, new: Any
    ) -> None:
        # (a component's data properties are its parameters, by name and value)
        try:
            echo = subpath is None and attr in self.param and bool(getattr(self, attr) == new)
        except Exception:  # a value that cannot be compared is taken as a change
            echo = False
        if not echo:
            super()._server_change(doc, ref, subpath, attr, old, new)  # type: ignore[misc]


class AppComponent(SkipsEchoes, JSComponent):
    """A JSComponent that does not hear its own changes back."""
