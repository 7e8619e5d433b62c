"""Stepping before Python is ready, on the static site's pre-rendered page.

The static site opens on a copy of the first state rendered at build time, and
Pyodide takes seconds more to start. That copy already holds every step of its
timeline (StepDeck) and the step controls (PlayerBar), which need no Python.
So, while Python starts, this component lifts Panel's loading veil, lets the
step controls, the keyboard shortcuts, links and disclosures work, and holds back
every other control (scenario, mode, pickers, calculators: they need Python),
saying so in a status line that also names the loading stage. When the live page replaces
the copy, its PlayerBar keeps the step the learner reached.

It acts only when the copy shows what the address asks for: an address naming
another scenario, mode, step or layout waits for Python, under the veil, as
before. Under `panel serve` there is no copy (no `pn-loading` page) and it does
nothing.
"""

from __future__ import annotations

import json

import param
from panel.custom import JSComponent

EARLY_CLASS = "pcl-early"
# Marks the parts of the page that work without Python (views/player_bar.py).
EARLY_ATTRIBUTE = "data-early"
HINT = "Stepping works now; scenario, mode and the other controls start with Python."

_ESM = (
    """
const EARLY = '__EARLY__'
const WORKS_EARLY = '__ATTRIBUTE__'
const HINT = __HINT__
// Every way a control outside the step bar could change before Python listens.
const HELD_EVENTS = ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click', 'dblclick',
  'keydown', 'keypress', 'beforeinput', 'input', 'change']
const STYLE = `
body.pn-loading.${EARLY} { overflow: auto; }
body.pn-loading.${EARLY}:after { display: none; }
body.pn-loading.${EARLY}:before { position: fixed; top: auto; left: 14px; bottom: 9px;
  transform: none; width: 18px; height: 18px; mask-size: 18px 18px;
  -webkit-mask-size: 18px 18px; z-index: 1002; }
body.${EARLY} .pn-loading-msg { display: none; }
.pcl-early-note { position: fixed; left: 0; right: 0; bottom: 0; z-index: 1001;
  padding: 7px 12px 7px 42px; font: 13px/1.35 system-ui, sans-serif; color: #3d3200;
  background: #fff6d6; border-top: 1px solid #e3cf85; }
.pcl-early-note .stage { font-weight: 600; margin-right: .6em; }
.pcl-early-note.nudge { background: #ffe08a; }
`

function showsAddress(prerendered) {
  const shown = new URLSearchParams(prerendered)
  for (const [key, value] of new URLSearchParams(window.location.search)) {
    if (shown.get(key) !== value) { return false }
  }
  return true
}

// The step bar, and plain HTML that needs no Python: disclosures and links.
function worksEarly(event) {
  return event.composedPath().some((el) => el.nodeType === 1 && (el.hasAttribute(WORKS_EARLY) ||
    el.tagName === 'SUMMARY' || (el.tagName === 'A' && el.hasAttribute('href'))))
}

export function render({ model }) {
  const el = document.createElement('div')
  el.style.display = 'none'
  const body = document.body
  // Only the first document on a page can be the copy: the live one comes after it.
  const first = !globalThis.__pclFirstRendered
  globalThis.__pclFirstRendered = true
  if (!first || !body.classList.contains('pn-loading') || !showsAddress(model.query)) {
    return el
  }

  if (!document.getElementById('pcl-early-style')) {
    const style = document.createElement('style')
    style.id = 'pcl-early-style'
    style.textContent = STYLE
    document.head.append(style)
  }
  const note = document.createElement('div')
  note.className = 'pcl-early-note'
  note.setAttribute('role', 'status')
  note.dataset.testid = 'early-note'
  const stage = document.createElement('span')
  stage.className = 'stage'
  note.append(stage, document.createTextNode(HINT))
  const copyStage = () => {
    const msg = document.querySelector('.pn-loading-msg')
    const text = msg ? msg.textContent : 'Starting Python.'
    if (stage.textContent !== text) { stage.textContent = text }  // (it watches itself too)
  }
  const watcher = new MutationObserver(copyStage)
  watcher.observe(body, { childList: true, subtree: true, characterData: true })
  copyStage()
  let nudged = null
  const hold = (event) => {
    if (worksEarly(event)) { return }
    const target = event.composedPath()[0]
    if (event.type.startsWith('key') &&
        (event.key === 'Tab' || target === body || target === document.documentElement)) {
      return  // moving focus, and the shortcuts (they press the step buttons), stay
    }
    event.preventDefault()
    event.stopImmediatePropagation()
    if (event.type === 'pointerdown' || event.type === 'keydown') {
      note.classList.add('nudge')
      clearTimeout(nudged)
      nudged = setTimeout(() => note.classList.remove('nudge'), 900)
    }
  }
  for (const type of HELD_EVENTS) { window.addEventListener(type, hold, true) }
  body.classList.add(EARLY)
  body.append(note)
  // The live page replaces this copy: everything goes back as Panel left it.
  model.on('remove', () => {
    for (const type of HELD_EVENTS) { window.removeEventListener(type, hold, true) }
    watcher.disconnect()
    clearTimeout(nudged)
    note.remove()
    body.classList.remove(EARLY)
  })
  return el
}
""".replace("__EARLY__", EARLY_CLASS)
    .replace("__ATTRIBUTE__", EARLY_ATTRIBUTE)
    .replace("__HINT__", json.dumps(HINT))
)


class EarlySteps(JSComponent):
    query = param.String(default="", doc="The address of the state this page was rendered at")

    _esm = _ESM
