"""Keeps the address bar on the learner's state, so the link can be shared.

Panel's Location model pushes a history entry on every change, which costs a
synchronous `history.pushState` (and a message back to the server) on every
step. This small JSComponent instead replaces the query in place, a moment
after the last step, off the click-to-render path (and without a history entry
per step). Other query parameters (such as `embed=1`) are kept.
"""

from __future__ import annotations

import param
from panel.custom import JSComponent

# Steps in quick succession (Play, held arrow keys) write the address once.
DEBOUNCE_MS = 150

_ESM = """
export function render({ model }) {
  let timer = null
  const write = () => {
    timer = null
    const params = new URLSearchParams(window.location.search)
    for (const [key, value] of new URLSearchParams(model.query)) { params.set(key, value) }
    const search = '?' + params.toString()
    if (search !== window.location.search) {
      const url = window.location.pathname + search + window.location.hash
      window.history.replaceState(window.history.state, '', url)
    }
  }
  const schedule = () => {
    if (timer !== null) { clearTimeout(timer) }
    timer = setTimeout(write, __DEBOUNCE__)
  }
  model.on('query', schedule)
  model.on('remove', () => { if (timer !== null) { clearTimeout(timer); write() } })
  // No write on load: the address that opened the page already says where it is.
  const el = document.createElement('div')
  el.style.display = 'none'
  return el
}
""".replace("__DEBOUNCE__", str(DEBOUNCE_MS))


class AddressBar(JSComponent):
    query = param.String(default="", doc="The query string that reopens the app here")

    _esm = _ESM
