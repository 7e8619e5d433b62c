"""Stepping before Python is ready, on the static site's pre-rendered page.

The static site opens on a copy of its address's scenario rendered at build
time (build.py pre-renders every scenario, in both layouts), and Pyodide takes
seconds more to start. That copy already holds every step of every mode of its
scenario (StepDeck), the mode picker, the step controls and the scenario
picker (which, before Python, opens the picked scenario's own page), none of
which needs Python. So, while Python starts, this component lifts Panel's
loading veil, lets those controls, the keyboard shortcuts, links and disclosures
work, and holds back every other control (function and request pickers, the
prefill calculator: they need Python), saying so in a status line that also
names the loading stage. When the live page replaces the copy, its controls
keep the mode and step the learner reached.

It acts only when the copy holds what the address asks for (`?mode=keep&step=5`
of its scenario, in its layout), and opens there. Any other address, or one
Python would correct with a notice, waits for Python under the veil, as before:
parse_link stays the one judge of an address, this only recognises the plain
valid ones. Under `panel serve` there is no copy (no `pn-loading` page) and it
does nothing."""

from __future__ import annotations

import json

import param
from panel.custom import JSComponent

from app.views.step_deck import STEP_CHANNEL_JS

EARLY_CLASS = "pcl-early"
# Marks the parts of the page that work without Python (views/player_bar.py).
EARLY_ATTRIBUTE = "data-early"
HINT = "Steps, modes and scenarios work now; the other controls start with Python."
# The address parameters a copy follows: a position, and `quiz` (views/quiz.js reads it).
# Any other must be as the copy was rendered.
POSITION_PARAMETERS = ("scenario", "mode", "step", "quiz")

_ESM = (
    STEP_CHANNEL_JS
    + """
const POSITION_PARAMETERS = __POSITION__
const EARLY = '__EARLY__'
const WORKS_EARLY = '__ATTRIBUTE__'
const HINT = __HINT__
// Every way a control outside the step bar could change before Python listens.
const HELD_EVENTS = ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click', 'dblclick',
  'keydown', 'keypress', 'beforeinput', 'input', 'change']
const STYLE = `
body.pn-loading.${EARLY} { overflow: auto; }
.pcl-early-room { height: 88px; }  /* the page's end can scroll out from under the note */
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

// The position the address asks for, if this copy holds it and Python would take the
// address as it is (no notice); else null.
function askedPosition(model) {
  const asked = new URLSearchParams(window.location.search)
  const copy = new URLSearchParams(model.query)
  for (const name of new Set([...asked.keys(), ...copy.keys()])) {
    if (!POSITION_PARAMETERS.includes(name) && asked.get(name) !== copy.get(name)) { return null }
  }
  const keys = Object.keys(model.lasts)
  const scenario = asked.has('scenario') ? asked.get('scenario') : model.default_scenario
  const modes = keys.filter((key) => key.startsWith(scenario + '/'))
  if (!modes.length) { return null }
  const key = asked.has('mode') ? scenario + '/' + asked.get('mode') : modes[0]
  const text = asked.has('step') ? asked.get('step').trim() : '0'
  if (!modes.includes(key) || !/^[0-9]+$/.test(text)) { return null }
  const step = Number(text)
  return step <= model.lasts[key] ? { key, step } : null
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
  if (!first || !body.classList.contains('pn-loading')) { return el }
  const asked = askedPosition(model)
  if (asked === null) {
    // The live page opens where the address says, not where this copy's controls were.
    globalThis.__pclStep = null
    return el
  }
  const shown = globalThis.__pclStep
  if (!shown || shown.key !== asked.key || shown.step !== asked.step) {
    announce(asked.key, asked.step)
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
  const room = document.createElement('div')
  room.className = 'pcl-early-room'
  body.classList.add(EARLY)
  body.append(room, note)
  // The live page replaces this copy: everything goes back as Panel left it.
  model.on('remove', () => {
    for (const type of HELD_EVENTS) { window.removeEventListener(type, hold, true) }
    watcher.disconnect()
    clearTimeout(nudged)
    note.remove()
    room.remove()
    body.classList.remove(EARLY)
  })
  return el
}
""".replace("__EARLY__", EARLY_CLASS)
    .replace("__POSITION__", json.dumps(POSITION_PARAMETERS))
    .replace("__ATTRIBUTE__", EARLY_ATTRIBUTE)
    .replace("__HINT__", json.dumps(HINT))
)


class EarlySteps(JSComponent):
    query = param.String(default="", doc="The address of the state this page was rendered at")
    lasts = param.Dict(default={}, doc="Timeline key -> last step, for every mode of the copy")
    default_scenario = param.String(default="", doc="The scenario of an address that names none")

    _esm = _ESM
