"""The panel of app/render/notice.py, in Panel."""

from __future__ import annotations

import panel as pn

from app.render.notice import render_notice
from app.style.theme import CSS


def notice_pane(notices: tuple[str, ...]) -> pn.pane.HTML:
    return pn.pane.HTML(
        render_notice(notices),
        stylesheets=[CSS],
        sizing_mode="stretch_width",
        visible=bool(notices),
        margin=(4, 0),
    )
