"""A chart's legend in HTML below its Bokeh figure; a click on a series hides or shows it.

Bokeh's own legend is a DOM element that it positions again, with a forced layout, and
redraws on every paint of its figure: across the lab's seven charts that was about a
fifth of the browser's time for a knob change (docs/performance.md). This one is drawn
once per set of series and does not move when the data does.
"""

from __future__ import annotations

from typing import ClassVar

import param

from app.components.component import AppComponent
from app.style.stylesheets import stylesheet


class ChartLegend(AppComponent):
    """The series of one chart (render_chart_legend); ``hidden`` names the hidden ones."""

    html = param.String(default="", doc="The legend (app/render/lab.py: render_chart_legend)")
    hidden = param.List(default=[], item_type=str, doc="The keys of the series hidden")

    _esm = "chart_legend.js"
    _stylesheets: ClassVar[list[str]] = [stylesheet("app.components", "chart_legend.css")]
