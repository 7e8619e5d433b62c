import { EARLY, WORKS_EARLY } from './early.js'
import { ask } from './position.js'
import { statusNote } from './status_note.js'

// Every way a control outside the step bar could change before Python listens.
const HELD_EVENTS = ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click', 'dblclick',
  'keydown', 'keypress', 'beforeinput', 'input', 'change']
// The position the address asks for, if this copy holds it and Python would take the
// address as it is (no notice); else null.
function askedPosition(model) {
  const asked = new URLSearchParams(window.location.search)
  const copy = new URLSearchParams(model.query)
  for (const name of new Set([...asked.keys(), ...copy.keys()])) {
    if (!model.position_parameters.includes(name) && asked.get(name) !== copy.get(name)) { return null }
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
  const first = body.dataset.pclCopy === undefined
  body.dataset.pclCopy = ''
  if (!first || !body.classList.contains('pn-loading')) { return el }
  // The copy steps early only where Python would take the address as it is; its player
  // opens there (the address already says so).
  const asked = askedPosition(model)
  if (asked === null) { return el }
  ask({ ...asked, address: false })

  if (!document.getElementById('pcl-early-style')) {
    const style = document.createElement('style')
    style.id = 'pcl-early-style'
    style.textContent = model.style
    document.head.append(style)
  }
  const { note, stop } = statusNote(model.hint)
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
    stop()
    clearTimeout(nudged)
    note.remove()
    room.remove()
    body.classList.remove(EARLY)
  })
  return el
}
