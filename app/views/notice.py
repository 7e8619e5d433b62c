"""A visible notice naming each deep-link parameter that was ignored."""

from __future__ import annotations

import panel as pn

from app.render.html import esc
from app.theme import CSS


def render_notice(notices: tuple[str, ...]) -> str:
    if not notices:
        return ""
    items = "".join(f"<li>{esc(n)}</li>" for n in notices)
    return (
        '<div class="notice" role="alert" data-testid="notice">'
        f"<b>Some link parameters were ignored.</b><ul>{items}</ul></div>"
    )


def notice_pane(notices: tuple[str, ...]) -> pn.pane.HTML:
    return pn.pane.HTML(
        render_notice(notices),
        stylesheets=[CSS],
        sizing_mode="stretch_width",
        visible=bool(notices),
        margin=(4, 0),
    )
