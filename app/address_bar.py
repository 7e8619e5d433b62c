"""Keeps the address bar on the learner's state, so the link can be shared.

Panel's Location model pushes a history entry on every change, which costs a
synchronous `history.pushState` (and a message back to the server) on every
step. This small JSComponent instead writes the query a moment after the last
step, off the click-to-render path. A new scenario is a new history entry, so
Back returns to the scenario (and the mode and step) the learner left; steps and
modes replace the entry in place. Going Back or Forward sends the address to
Python (`on_pop`), which opens it. Other query parameters (`embed=1`) are kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import param
from panel.custom import JSComponent

# Steps in quick succession (Play, held arrow keys) write the address once.
DEBOUNCE_MS = 150

_ESM = """
const scenarioOf = (query) => new URLSearchParams(query).get('scenario')

export function render({ model }) {
  let timer = null
  let entry = scenarioOf(model.query)  // the scenario this history entry shows
  const write = () => {
    timer = null
    const params = new URLSearchParams(window.location.search)
    for (const [key, value] of new URLSearchParams(model.query)) { params.set(key, value) }
    const search = '?' + params.toString()
    if (search === window.location.search) { return }
    const url = window.location.pathname + search + window.location.hash
    const scenario = params.get('scenario')
    if (scenario !== entry) {
      entry = scenario
      window.history.pushState(null, '', url)
    } else {
      window.history.replaceState(window.history.state, '', url)
    }
  }
  const popped = () => {
    if (timer !== null) { clearTimeout(timer); timer = null }
    entry = scenarioOf(window.location.search)
    model.send_msg({ query: window.location.search })
  }
  window.addEventListener('popstate', popped)
  const schedule = () => {
    if (timer !== null) { clearTimeout(timer) }
    timer = setTimeout(write, __DEBOUNCE__)
  }
  model.on('query', schedule)
  model.on('remove', () => {
    window.removeEventListener('popstate', popped)
    if (timer !== null) { clearTimeout(timer); write() }
  })
  // No write on load: the address that opened the page already says where it is.
  const el = document.createElement('div')
  el.style.display = 'none'
  return el
}
""".replace("__DEBOUNCE__", str(DEBOUNCE_MS))


class AddressBar(JSComponent):
    query = param.String(default="", doc="The query string that reopens the app here")

    _esm = _ESM

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        # Called with the address the learner went Back or Forward to.
        self.on_pop: Callable[[str], None] = lambda _query: None

    def _handle_msg(self, data: Any) -> None:
        if isinstance(data, dict) and isinstance(data.get("query"), str):
            self.on_pop(data["query"])
