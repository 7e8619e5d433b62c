// The static site's page before Python (early_page.py): it fetches the early page of its
// address, lays it out with plain elements, and runs each component's own render with a
// plain model, so the player steps, the modes switch and the scenario picker opens another
// scenario's page while Pyodide starts. When the live page has rendered, it goes.
// The tag's data-early-pages: [page names, the start page's, default scenario, compact
// suffix, embed values that mean true, the parameters that name a position, the folder].
import { EARLY, WORKS_EARLY } from '../components/early.js'
import { ask } from '../components/position.js'
import { statusNote } from '../components/status_note.js'
import * as addressBar from '../components/address_bar.js'
import * as chartLegend from '../components/chart_legend.js'
import * as codePanel from '../components/code_panel.js'
import * as enginePicker from '../components/engine_picker.js'
import * as glossary from '../components/glossary.js'
import * as keyboard from '../components/keyboard.js'
import * as modePicker from '../components/mode_picker.js'
import * as panelTabs from '../components/panel_tabs.js'
import * as player from '../components/player.js'
import * as quiz from '../components/quiz.js'
import * as scenarioPicker from '../components/scenario_picker.js'
import * as startPage from '../components/start_page.js'
import * as stepDeck from '../components/step_deck.js'

const COMPONENTS = {
  'address_bar.js': addressBar,
  'chart_legend.js': chartLegend,
  'code_panel.js': codePanel,
  'engine_picker.js': enginePicker,
  'glossary.js': glossary,
  'keyboard.js': keyboard,
  'mode_picker.js': modePicker,
  'panel_tabs.js': panelTabs,
  'player.js': player,
  'quiz.js': quiz,
  'scenario_picker.js': scenarioPicker,
  'start_page.js': startPage,
  'step_deck.js': stepDeck,
}
// The longest the early page waits for the live page's player before it leaves.
const LIVE_WAIT_MS = 10_000
// Every way a control outside the step bar could change before Python listens.
const HELD_EVENTS = ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click', 'dblclick',
  'keydown', 'keypress', 'beforeinput', 'input', 'change']

// The early page the address names, as app/data/url.py would open it; null: none (Python's).
export function pageName(config, search) {
  const [NAMES, START, DEFAULT, SUFFIX, TRUE, POSITION] = config
  const asked = new URLSearchParams(search)
  const embed = asked.get('embed')
  const compact = embed !== null && TRUE.includes(embed.toLowerCase())
  // No position named: the start page, unless compact.
  const positioned = compact || POSITION.some((param) => asked.has(param))
  if (!positioned) { return START }
  const scenario = asked.has('scenario') ? asked.get('scenario') : DEFAULT
  const name = scenario + (compact ? SUFFIX : '')
  return NAMES.includes(name) ? name : null
}

// The position an address opens at, if Python would open it as it is (no notice) and
// the page holds it: its parameters are the page's own but for a position (and `quiz`),
// and its mode and step are the scenario's. {} for the start page; null: Python's.
export function openedAt(page, search) {
  if (!page.lasts) { return {} }  // the start page: every address of it is its own
  const asked = new URLSearchParams(search)
  const built = new URLSearchParams(page.query)
  for (const name of new Set([...asked.keys(), ...built.keys()])) {
    if (!page.position_parameters.includes(name) && asked.get(name) !== built.get(name)) {
      return null
    }
  }
  const keys = Object.keys(page.lasts)
  const scenario = asked.has('scenario') ? asked.get('scenario') : page.default_scenario
  const modes = keys.filter((key) => key.startsWith(scenario + '/'))
  if (!modes.length) { return null }
  const key = asked.has('mode') ? scenario + '/' + asked.get('mode') : modes[0]
  const text = asked.has('step') ? asked.get('step').trim() : '0'
  if (!modes.includes(key) || !/^[0-9]+$/.test(text)) { return null }
  const step = Number(text)
  return step <= page.lasts[key] ? { key, step } : null
}

async function unpack(response) {
  if (!response.ok) { return null }
  const bytes = new Uint8Array(await response.arrayBuffer())
  if (!(bytes[0] === 0x1f && bytes[1] === 0x8b)) {
    return JSON.parse(new TextDecoder().decode(bytes))  // the host unpacked it
  }
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))
  return JSON.parse(await new Response(stream).text())
}

// A component's model before Python: its parameters' values, and Panel's few calls.
function plainModel(values, children) {
  const handlers = {}
  const model = {
    ...values,
    on(name, callback) { (handlers[name] = handlers[name] || []).push(callback) },
    send_msg() {},  // nobody listens yet: the controls that need Python are held
    get_child(name) { return children[name] || [] },
  }
  return { model, remove: () => (handlers.remove || []).forEach((callback) => callback()) }
}

function layOut(page, sheets, removes) {
  const sheet = (id) => sheets[id]
  let flexBoxes = 0
  function outer(node) {
    const el = document.createElement('div')
    for (const [name, value] of Object.entries(node.style)) { el.style.setProperty(name, value) }
    el.classList.add(...node.classes)
    return el
  }
  function shadow(el, node) {
    const root = el.attachShadow({ mode: 'open' })
    root.adoptedStyleSheets = [...node.sheets, 0].map(sheet)  // 0: early_host.css, last as Bokeh's
    return root
  }
  function box(node) {
    const el = outer(node)
    // Panel's flex box lays out in an element with this id, which its own stylesheet
    // targets (layout.css); here that stylesheet is the page's, so only its box has one.
    if (node.box === 'flex' && node.sheets.length) { el.id = `flexbox-early-${++flexBoxes}` }
    el.append(...node.children.map(build))
    if (node.sheets.length) { el.dataset.sheets = node.sheets.join(' ') }
    return el
  }
  function component(node) {
    const el = outer(node)
    const children = {}
    for (const [name, nodes] of Object.entries(node.children || {})) {
      children[name] = nodes.map(build)
    }
    const { model, remove } = plainModel(node.model, children)
    removes.push(remove)
    const made = COMPONENTS[node.esm].render({ model, view: { el } })
    shadow(el, node).append(made)
    return el
  }
  function html(node) {
    const el = outer(node)
    const div = document.createElement('div')
    div.innerHTML = node.html
    shadow(el, node).append(div)
    return el
  }
  // A Panel widget, drawn as it will be; it takes input once Python is there.
  function waits(node) {
    const el = outer(node)
    el.classList.add('pcl-waits')
    let control
    if (node.waits === 'button') {
      control = document.createElement('button')
      control.type = 'button'
      control.textContent = node.label
    } else if (node.waits === 'select') {
      control = document.createElement('select')
      for (const label of node.options) { control.append(new Option(label, label)) }
      control.value = node.value
    } else if (node.waits === 'checkbox') {
      control = document.createElement('input')
      control.type = 'checkbox'
      control.checked = node.value
    } else {
      control = document.createElement(node.waits === 'textarea' ? 'textarea' : 'input')
      control.value = node.value
    }
    if (node.waits !== 'button' && node.label) {
      control.setAttribute('aria-label', node.label)  // its name, as the live widget's
      const label = document.createElement('label')
      const caption = document.createElement('span')
      caption.textContent = node.label
      label.append(caption, control)
      control = label
    }
    el.append(control)
    return el
  }
  function build(node) {
    if (node.box) { return box(node) }
    if (node.esm) { return component(node) }
    if (node.html !== undefined) { return html(node) }
    return waits(node)
  }
  return build(page.root)
}

// The step bar, and plain HTML that needs no Python: disclosures and links.
function worksEarly(event) {
  return event.composedPath().some((el) => el.nodeType === 1 && (el.hasAttribute(WORKS_EARLY) ||
    el.tagName === 'SUMMARY' || (el.tagName === 'A' && el.hasAttribute('href'))))
}

function holdOthers(hint) {
  const body = document.body
  const { note, stop } = statusNote(hint)
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
  body.append(note)
  return () => {
    for (const type of HELD_EVENTS) { window.removeEventListener(type, hold, true) }
    stop()
    clearTimeout(nudged)
    note.remove()
  }
}

function show(page, at) {
  const body = document.body
  if (!body.classList.contains('pn-loading')) { return }  // live already
  const sheets = page.sheets.map((text) => {
    const sheet = new CSSStyleSheet()
    sheet.replaceSync(text)
    return sheet
  })
  const style = document.createElement('style')
  style.textContent = page.style
  document.head.append(style)
  // The boxes' own stylesheets (the full page's columns: layout.css) are the page's.
  const boxSheets = new Set()
  const removes = []
  const host = document.createElement('div')
  host.className = 'pcl-early-page'
  const scenario = page.lasts !== undefined
  if (scenario) { body.classList.add(EARLY) }
  host.append(layOut(page, sheets, removes))
  for (const el of host.querySelectorAll('[data-sheets]')) {
    el.dataset.sheets.split(' ').forEach((id) => boxSheets.add(Number(id)))
  }
  document.adoptedStyleSheets = [...document.adoptedStyleSheets,
    ...[...boxSheets].map((id) => sheets[id])]
  const room = document.createElement('div')
  room.className = 'pcl-early-room'
  body.prepend(host)
  const release = scenario ? holdOthers(page.hint) : () => {}
  // The player opens where the address says (it is already there).
  if (at.key !== undefined) { ask({ ...at, address: false }) }
  if (scenario) { host.append(room) }
  // The live page has rendered (Panel lifts its loading class): it takes over once its
  // player is on the page (its components render a moment after Bokeh's document), so
  // the page is never blank in between.
  const leave = () => {
    host.remove()
    style.remove()
    body.classList.remove(EARLY)
  }
  const handOver = () => {
    if (body.classList.contains('pn-loading')) { return }
    watcher.disconnect()
    removes.forEach((remove) => remove())  // this page's player, first: it stops answering
    release()
    if (scenario) { whenPlayerAnswers(leave) } else { leave() }
  }
  const watcher = new MutationObserver(handOver)
  watcher.observe(body, { attributes: true, attributeFilter: ['class'] })
}

// Calls `then` once a player answers on the page (position.js), or after LIVE_WAIT_MS.
export function whenPlayerAnswers(then, waited = 0) {
  let answered = false
  ask({ reply: () => { answered = true } })
  if (answered || waited >= LIVE_WAIT_MS) { then(); return }
  setTimeout(() => whenPlayerAnswers(then, waited + 50), 50)
}

export function start(config, folder) {
  const name = pageName(config, window.location.search)
  if (name === null) { return }
  fetch(`./${folder}/${name}.json.gz`).then(unpack).then((page) => {
    const at = page && openedAt(page, window.location.search)
    if (at) { show(page, at) }
  }).catch((error) => console.warn('early page: Python will show this address', error))
}
