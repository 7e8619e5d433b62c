"""Keyboard shortcuts, and keeping the code panel's current line in view.

A tiny ReactiveHTML component whose script listens on the document (no network;
works in `panel serve` and in Pyodide). A key *clicks the matching button*, so a
key does exactly what the button does, and quick repeats are not lost: button
clicks reach Python as separate events, where synced properties would be merged.
Keys are ignored while focus is in a text field, a select or a slider, and space
is left to a focused button, so native behaviour is kept.
"""

from __future__ import annotations

import json

import panel as pn
import param

from app.state import SimulatorState

# key -> accessible names of the button it presses (the first one present is used)
KEY_BUTTONS: dict[str, tuple[str, ...]] = {
    "ArrowLeft": ("Step back",),
    "ArrowRight": ("Step forward",),
    " ": ("Play", "Pause"),
    "Home": ("Restart",),
}

# Panel renders every component in its own shadow root: search through them.
_FIND = """
state.deepAll = (root, selector, out = []) => {
  out.push(...root.querySelectorAll(selector))
  for (const el of root.querySelectorAll('*')) {
    if (el.shadowRoot) { state.deepAll(el.shadowRoot, selector, out) }
  }
  return out
}
"""

_ON_RENDER = (
    _FIND
    + """
const keyButtons = __KEY_BUTTONS__
if (state.onkey) { document.removeEventListener('keydown', state.onkey) }
state.onkey = (event) => {
  if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) { return }
  const names = keyButtons[event.key]
  if (!names) { return }
  const target = event.composedPath()[0]
  if (target && target.nodeType === 1) {
    const tag = target.tagName
    const role = target.getAttribute('role')
    const typing = tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT'
    if (typing || target.isContentEditable) { return }
    if (role === 'slider' || role === 'textbox' || role === 'combobox') { return }
    if (event.key === ' ' && (tag === 'BUTTON' || role === 'button')) { return }
  }
  const buttons = state.deepAll(document, 'button')
  for (const name of names) {
    const button = buttons.find((b) => b.textContent.trim() === name)
    if (button) {
      event.preventDefault()
      if (!button.disabled) { button.click() }
      return
    }
  }
}
document.addEventListener('keydown', state.onkey)
""".replace("__KEY_BUTTONS__", json.dumps(KEY_BUTTONS))
)

# Scroll only the code box (not the page) so the marked line sits in its middle.
_SCROLL = """
setTimeout(() => {
  const line = state.deepAll(document, '[data-testid="code-panel"] .ln.current')[0]
  const box = line ? line.closest('.code-scroll') : null
  if (box) { box.scrollTop = Math.max(0, line.offsetTop - box.clientHeight / 2) }
}, 0)
"""


class KeyboardShortcuts(pn.reactive.ReactiveHTML):
    scroll_token = param.Integer(default=0, doc="Bumped after each step is rendered")

    _template = '<div id="keys" style="display:none"></div>'
    _scripts = {  # noqa: RUF012  (Panel's declared class attribute)
        "render": _ON_RENDER + _SCROLL,
        "scroll_token": _SCROLL,
        "remove": "document.removeEventListener('keydown', state.onkey)",
    }


class Keyboard(pn.viewable.Viewer):
    """The shortcuts, plus a nudge to scroll the code panel after every step."""

    state = param.ClassSelector(class_=SimulatorState)

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self.component = KeyboardShortcuts(width=0, height=0, margin=0)
        self.state.param.watch(self._after_render, ["timeline", "step"])

    def _after_render(self, *_: object) -> None:
        self.component.scroll_token += 1

    def __panel__(self) -> pn.viewable.Viewable:
        return self.component
