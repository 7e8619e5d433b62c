"""Keyboard shortcuts: arrows step, space plays or pauses, Home restarts.

A tiny JSComponent whose ES module listens on the document (no network, no
sanitiser; works in `panel serve` and in Pyodide). A key *clicks the matching button*, so a
key does exactly what the button does, and quick repeats are not lost: button
clicks reach Python as separate events, where synced properties would be merged.
Keys are ignored while focus is in a text field, a select or a slider, and space
is left to a focused button, so native behaviour is kept.
"""

from __future__ import annotations

import json

import panel as pn
from panel.custom import JSComponent

# key -> accessible names of the button it presses (the first one present is used)
KEY_BUTTONS: dict[str, tuple[str, ...]] = {
    "ArrowLeft": ("Step back",),
    "ArrowRight": ("Step forward",),
    " ": ("Play", "Pause"),
    "Home": ("Restart",),
}

# An ES module: Panel compiles it in the browser and imports it from a blob: URL,
# so it needs no network and no server-side sanitiser (works in Pyodide too).
# Panel renders every component in its own shadow root: searches go through them.
_ESM = """
const KEY_BUTTONS = __KEY_BUTTONS__

function deepAll(root, selector, out = []) {
  out.push(...root.querySelectorAll(selector))
  for (const el of root.querySelectorAll('*')) {
    if (el.shadowRoot) { deepAll(el.shadowRoot, selector, out) }
  }
  return out
}

function typingIn(target) {
  if (!target || target.nodeType !== 1) { return false }
  const tag = target.tagName
  const role = target.getAttribute('role')
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || target.isContentEditable ||
    role === 'slider' || role === 'textbox' || role === 'combobox'
}

function onKey(event) {
  if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) { return }
  const names = KEY_BUTTONS[event.key]
  if (!names) { return }
  const target = event.composedPath()[0]
  if (typingIn(target)) { return }
  const onButton = target && target.nodeType === 1 &&
    (target.tagName === 'BUTTON' || target.getAttribute('role') === 'button')
  if (event.key === ' ' && onButton) { return }  // space presses the focused button itself
  const buttons = deepAll(document, 'button')
  for (const name of names) {
    const button = buttons.find((b) => b.textContent.trim() === name)
    if (button) {
      event.preventDefault()
      if (!button.disabled) { button.click() }
      return
    }
  }
}

export function render({ model }) {
  document.addEventListener('keydown', onKey)
  model.on('remove', () => document.removeEventListener('keydown', onKey))
  const el = document.createElement('div')
  el.style.display = 'none'
  return el
}
""".replace("__KEY_BUTTONS__", json.dumps(KEY_BUTTONS))


class KeyboardShortcuts(JSComponent):
    _esm = _ESM


class Keyboard(pn.viewable.Viewer):
    """The shortcuts (the code panel keeps its current line in view itself)."""

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self.component = KeyboardShortcuts(width=0, height=0, margin=0)

    def __panel__(self) -> pn.viewable.Viewable:
        return self.component
