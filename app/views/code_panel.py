"""The code panel in the browser: the function's lines sent once, the marks per step.

A function's highlighted source is tens of kilobytes of HTML. Re-sending it on
every step (when the same function ran again with other lines) dominated the
step's cost, on the wire and in the browser. This JSComponent keeps the lines
and only receives, per step, the small frame (heading, legend) and which lines
ran and which ran last; it marks them, and scrolls the code box (not the page)
so the last line that ran sits in its middle.
"""

from __future__ import annotations

import param
from panel.custom import JSComponent

SLOT = '<div class="code-slot"></div>'  # where the frame takes the lines

_ESM = """
export function render({ model }) {
  const host = document.createElement('div')
  const body = document.createElement('div')
  body.className = 'code mono'
  body.setAttribute('role', 'list')

  function scroll() {
    const line = body.querySelector('.ln.current')
    const box = body.closest('.code-scroll')
    if (line && box) { box.scrollTop = Math.max(0, line.offsetTop - box.clientHeight / 2) }
  }
  function mark() {
    const ran = new Set(model.ran)
    for (const el of body.querySelectorAll('.ln[data-line]')) {
      const n = Number(el.dataset.line)
      const isRan = ran.has(n)
      const isCurrent = n === model.current
      el.classList.toggle('ran', isRan)
      el.classList.toggle('current', isCurrent)
      if (isRan) { el.dataset.ran = 'true' } else { delete el.dataset.ran }
      if (isCurrent) {
        el.dataset.current = 'true'
        el.setAttribute('aria-current', 'step')
      } else {
        delete el.dataset.current
        el.removeAttribute('aria-current')
      }
      el.querySelector('.mk').textContent = isCurrent ? '\\u25b6' : (el.dataset.mk || '')
    }
    setTimeout(scroll, 0)
  }
  function setFrame() {
    host.innerHTML = model.frame
    const slot = host.querySelector('.code-slot')
    if (slot) { slot.replaceWith(body) }
    setTimeout(scroll, 0)
  }
  function setBody() {
    body.innerHTML = model.body
    mark()
  }
  model.on('frame', setFrame)
  model.on('body', setBody)
  model.on(['ran', 'current'], mark)
  setFrame()
  setBody()
  return host
}
"""


class CodePanel(JSComponent):
    frame = param.String(default="", doc="The panel around the lines; SLOT marks their place")
    body = param.String(default="", doc="The function's lines, unmarked")
    ran = param.List(default=[], item_type=int, doc="Line numbers that ran at this step")
    current = param.Integer(default=-1, doc="The last line that ran; -1 for none")

    _esm = _ESM
