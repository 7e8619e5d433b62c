"""A visible notice naming each deep-link parameter that was ignored."""

from __future__ import annotations

from app.render.html import esc


def render_notice(notices: tuple[str, ...]) -> str:
    if not notices:
        return ""
    items = "".join(f"<li>{esc(n)}</li>" for n in notices)
    return (
        '<div class="notice" role="alert" data-testid="notice">'
        f"<b>Some link parameters were ignored.</b><ul>{items}</ul></div>"
    )
