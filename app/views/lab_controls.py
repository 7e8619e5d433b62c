"""What every lab page shares (the presets' LabView, the traces' TraceLabView, the fleet's
FleetLabView): the picker, the engine knob, Run, Stop, the status line, the notices, the knobs'
cells and messages, the stale mark, the layout roots, the address, and how a run is started,
shown playing and stopped."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlencode

import panel as pn
import param
from bokeh.document import Document

from app.components import at_once
from app.components.address_bar import AddressBar
from app.data.lab import ENGINE_CHOICES, ENGINE_WORDS, SlicedRun
from app.data.lab_presets import FLEET_PRESET, TRACES_PRESET
from app.host.errors import logged
from app.render.lab import render_knob_error, render_lab_notices, render_stale_note
from app.style.theme import FOCUS_RING
from app.views.lab_link import LAB_CSS, STYLESHEETS
from engine.lab.workload.presets import preset_names

# A row of controls that wraps: a phone is narrower than a row of knobs.
WRAPPING: dict[str, Any] = {"flex_wrap": "wrap", "sizing_mode": "stretch_width"}
T = TypeVar("T")
# A row of a page's table of knobs: (name, widget class, label, value, width; None: the
# widget's own).
KnobRow = tuple[str, Callable[..., Any], str, Any, int | None]


def lab_picker_options() -> list[str]:
    """The preset picker's choices: every workload preset, then the traces' and the fleet's."""
    return [*preset_names(), TRACES_PRESET, FLEET_PRESET]


def lab_query(preset: str, engine: str) -> str:
    """The address of a lab page: its preset and the engine knob's choice."""
    return urlencode({"lab": preset, "engine": ENGINE_WORDS[engine]})


def knob_widgets(rows: Iterable[KnobRow]) -> dict[str, Any]:
    """The knobs' widgets by name, made from their table's rows."""
    widgets = {}
    for name, kind, label, value, width in rows:
        size = {} if width is None else {"width": width}
        widgets[name] = kind(label=label, value=value, **size)
    return widgets


def update_changed(obj: param.Parameterized, **values: Any) -> None:
    """Set only the values that differ: each set costs Panel a fraction of a ms."""
    changed = {name: value for name, value in values.items() if getattr(obj, name) != value}
    if changed:
        obj.param.update(**changed)


def html_pane(text: str = "", **params: Any) -> pn.pane.HTML:
    """A pane of a lab page's HTML, in the lab's style, as wide as its column."""
    return pn.pane.HTML(
        text, **{"stylesheets": STYLESHEETS, "sizing_mode": "stretch_width", **params}
    )


# The class of a root of results while they are not the knobs' (lab.css dims them).
STALE = "lab-stale"


def lab_root(role: str, *children: Any, margin: tuple[int, ...]) -> pn.Column:
    """One of a lab page's layout roots; ``role`` is its class in lab_page.css."""
    return pn.Column(
        *children,
        margin=margin,
        sizing_mode="stretch_width",
        max_width=1280,
        stylesheets=[LAB_CSS],
        styles={"margin": "0 auto"},
        css_classes=["workload-lab", role],
    )


class LabGroup(pn.viewable.Viewer):
    """A lab page: ``roots`` served one by one, a run started by ``start`` and stopped by Stop, the
    engine knob, the picker, and a message below each of its ``knobs``."""

    # A knob's cell has the class f"{cell_prefix}-{knob}" (the pages' CSS and tests).
    cell_prefix: ClassVar[str] = "knob"

    def __init__(
        self,
        preset_name: str,
        engine: str,
        notices: Sequence[str],
        knobs: Iterable[str],
        **params: Any,
    ) -> None:
        super().__init__(**params)
        # Narrow enough that the preset, the engine and the overlay's checkbox share one
        # row of the lab's 580 px column: one row more pushes the hit-rate chart's legend
        # below a 1280x800 screen (tests/site/test_site_lab.py).
        self.preset_select = at_once.Select(
            label="Preset", options=lab_picker_options(), value=preset_name, width=190
        )
        self.engine = at_once.Select(
            label="Engine", options=list(ENGINE_CHOICES), value=engine, width=100
        )
        self.run_button = pn.widgets.Button(
            label="Run", color="primary", width=90, stylesheets=[FOCUS_RING]
        )
        self.stop_button = pn.widgets.Button(
            label="Stop", disabled=True, width=90, stylesheets=[FOCUS_RING]
        )
        # The progress bar is part of the status line: a widget shown and hidden would
        # make the browser lay out the whole page twice per run.
        # A size its text does not change: a new status does not lay the page out again.
        # No wider than a phone, where it wraps below the buttons.
        self.status = html_pane(css_classes=["lab-status"], min_width=240, max_width=420, height=34)
        # Why the address's preset or engine was not taken, above the knobs.
        notice = render_lab_notices(notices)
        self.notice = html_pane(notice, visible=bool(notices), sizing_mode=None)
        # Hidden while the knob can be used.
        self.knob_errors = {
            knob: html_pane(
                visible=False, sizing_mode=None, margin=(0, 10), css_classes=["knob-error"]
            )
            for knob in knobs
        }
        # Above the results while they are not the knobs' (lab.css dims the rest of
        # them, not it).
        self.stale_note = html_pane(visible=False, margin=(0, 10), css_classes=["lab-stale-note"])
        # The address follows the preset and the engine, so the link can be shared.
        self.address_bar = AddressBar(width=0, height=0, margin=0)
        # The page's own knobs by name (the preset and the engine are LabGroup's).
        self.knobs: dict[str, Any] = {}
        self._run: SlicedRun | None = None
        self.running = False  # Stop is on
        self.roots: Sequence[pn.Column] = ()
        self.run_button.on_click(self._on_run)
        self.stop_button.on_click(self._on_stop)
        self.preset_select.param.watch(self._on_preset, "value")
        self.engine.param.watch(lambda _: self.show_address(), "value")

    @property
    def engines(self) -> tuple[str, ...]:
        """The engines the knob asks for, in order."""
        return ENGINE_CHOICES[self.engine.value]

    def controls_root(self, intro: str, *rows: pn.viewable.Viewable) -> pn.Column:
        """The layout root of the controls: the intro, the notices, then ``rows``."""
        controls = pn.Column(html_pane(intro), self.notice, *rows, sizing_mode="stretch_width")
        return lab_root("lab-controls", controls, margin=(10, 16, 0, 16))

    def results_root(self, role: str, *children: Any) -> pn.Column:
        """The last layout root: ``children``, then the address bar."""
        return lab_root(role, *children, self.address_bar, margin=(0, 16, 10, 16))

    def buttons_row(self, *more: pn.widgets.Widget) -> pn.FlexBox:
        """Run, ``more`` buttons, Stop and the status line."""
        return pn.FlexBox(
            self.run_button,
            *more,
            self.stop_button,
            self.status,
            flex_wrap="wrap",
            sizing_mode="stretch_width",
        )

    def widget(self, name: str) -> Any:
        """A knob's widget: the picker ("preset"), the engine or one of ``knobs``."""
        if name in self.knobs:
            return self.knobs[name]
        return {"preset": self.preset_select, "engine": self.engine}[name]

    def knob_row(self, *names: str, **params: Any) -> pn.FlexBox:
        """A row of knobs that wraps: each a cell (with ``params``) of its widget above its
        message, if it has one."""
        return pn.FlexBox(*(self.knob_cell(name, **params) for name in names), **WRAPPING)

    def knob_cell(self, name: str, **params: Any) -> pn.Column:
        errors = [self.knob_errors[name]] if name in self.knob_errors else []
        classes = [f"{self.cell_prefix}-{name}"]
        return pn.Column(self.widget(name), *errors, margin=0, css_classes=classes, **params)

    def show_knob_error(self, knob: str, message: str) -> None:
        """Show the knob's message below it (none: hide it)."""
        pane = self.knob_errors[knob]
        update_changed(pane, object=render_knob_error(message), visible=bool(message))

    def show_stale(self, changes: Sequence[str], playing: bool) -> None:
        """Mark the results shown (the roots after the controls) as stale, with a note naming
        ``changes`` (none: unmark them); ``playing``: a run of the knobs plays."""
        stale = bool(changes)
        with pn.io.hold():
            note = render_stale_note(changes, playing) if stale else ""
            update_changed(self.stale_note, object=note, visible=stale)
            for root in self.roots[1:]:
                classes = [c for c in root.css_classes if c != STALE] + ([STALE] if stale else [])
                update_changed(root, css_classes=classes)

    def show_address(self) -> None:
        self.address_bar.query = lab_query(self.preset_select.value, self.engine.value)

    @logged
    def _on_preset(self, event: Any) -> None:
        """One of this page's presets is loaded here; another page's opens as a new page."""
        if not self.load_preset(event.new):
            self.address_bar.load = "?" + lab_query(event.new, self.engine.value)

    def load_preset(self, name: str) -> bool:
        """Show another of this page's presets; False if ``name`` is another page's (the traces'
        and the fleet's pages have one preset)."""
        return False

    def can_run(self) -> bool:
        """Whether the knobs can run (Run stays off while they cannot)."""
        return True

    def show_running(self, running: bool) -> None:
        """Stop on and Run off while a run goes on."""
        if self.running != running:
            self.running = running
            self.stop_button.disabled = not running
            self.run_button.disabled = running or not self.can_run()

    def show_staleness(self, playing: bool = False) -> None:
        """Mark the results stale while they are not the knobs' (``playing``: a run of the knobs
        plays)."""

    async def play_run(
        self,
        run: SlicedRun,
        play: Callable[[Callable[[float], None]], Awaitable[T | None]],
        progress: Callable[[float], str],
        stopped: str,
        show: Callable[[T], None],
        long_after: float = 0.0,
        stale_after: float | None = None,
    ) -> None:
        """A run's life on the page: ``play(on_progress)`` as the page's run (the one in progress
        stopped); once it has played ``long_after`` s, Stop on and ``progress(share)`` in the
        status line, and the results marked stale once it has played ``stale_after`` s (None:
        the page marks them); at its end, unless a newer run took over, ``show`` what it gave,
        or the status line says ``stopped``."""
        if self._run is not None:
            self._run.stop()
        self._run = run
        started, marked = time.perf_counter(), False

        def on_progress(share: float) -> None:
            # Each button or status change costs the page a layout of the controls' root
            # (and, in Pyodide, Panel's bookkeeping), so a short run changes none.
            nonlocal marked
            took = time.perf_counter() - started
            if stale_after is not None and not marked and took > stale_after:
                marked = True
                self.show_staleness(playing=True)
            if run is self._run and took >= long_after:
                self.show_running(True)
                update_changed(self.status, object=progress(share))

        if not long_after:
            self.show_running(True)
        result = await play(on_progress)
        if run is not self._run:
            return  # a newer run took over
        self._run = None
        with pn.io.hold():
            self.show_running(False)
            if result is None:
                self.status.object = stopped
                if stale_after is not None:
                    self.show_staleness()
            else:
                show(result)

    async def start(self) -> None:
        raise NotImplementedError

    @logged
    def _on_run(self, *_: Any) -> None:
        pn.state.execute(self.start)

    @logged
    def _on_stop(self, *_: Any) -> None:
        if self._run is not None:
            self._run.stop()

    def serve(self, title: str) -> None:
        """Serve the layout roots, with neither a Location nor a BrowserInfo: the static site's page
        holds no more root elements than the main app's (tests/site/test_site_lab.py)."""
        with pn.config.set(browser_info=False):
            for index, root in enumerate(self.roots):
                root.servable(title=title if index == 0 else None, location=False)
        assert pn.state.curdoc is not None
        attach_shared_models(pn.state.curdoc)

    def __panel__(self) -> pn.viewable.Viewable:
        """The whole page as one layout (the app serves ``roots`` one by one)."""
        return pn.Column(*self.roots, sizing_mode="stretch_width")


def attach_shared_models(document: Document) -> None:
    """Attach again the models the roots share (the charts' sources and step axis): Panel detaches
    each root's models before adding it, and Bokeh attaches only new ones."""
    for model in document.models:
        if model.document is None:
            model._attach_document(document)
