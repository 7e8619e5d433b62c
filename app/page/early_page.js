// The static site's page before Python (early_page.py): it fetches the early page of its
// address, lays it out with plain elements, and runs each component's own render with a
// plain model, so the player steps, the modes switch and the scenario picker opens another
// scenario's page while Pyodide starts. A playground link's page is laid out the same,
// fed by the app's worker (app/data/early_playground.py): the page's document of the
// link's playground, a mode picked, a script edited. When the live page has rendered and
// its player holds the learner's position, it goes.
// The tag's data-early-pages: [[page names, the start page's, default scenario,
// app/data/url.py's names of the address, the playground page's name (null: none), the
// worker's message type], the folder].
import { currentQuery, openedAt, pageName } from '../components/address.js'
import { EARLY, WORKS_EARLY } from '../components/early.js'
import { AT_EVENT, ask } from '../components/position.js'
import { statusNote } from '../components/status_note.js'
import * as addressBar from '../components/address_bar.js'
import * as chainDeck from '../components/chain_deck.js'
import * as chartLegend from '../components/chart_legend.js'
import * as codePanel from '../components/code_panel.js'
import * as enginePicker from '../components/engine_picker.js'
import * as glossary from '../components/glossary.js'
import * as keyboard from '../components/keyboard.js'
import * as modePicker from '../components/mode_picker.js'
import * as panelTabs from '../components/panel_tabs.js'
import * as prefillDeck from '../components/prefill_deck.js'
import * as player from '../components/player.js'
import * as quiz from '../components/quiz.js'
import * as scenarioPicker from '../components/scenario_picker.js'
import * as startPage from '../components/start_page.js'
import * as stepPage from '../components/step_page.js'
import * as stepDeck from '../components/step_deck.js'

const COMPONENTS = {
  'address_bar.js': addressBar,
  'chain_deck.js': chainDeck,
  'chart_legend.js': chartLegend,
  'code_panel.js': codePanel,
  'engine_picker.js': enginePicker,
  'glossary.js': glossary,
  'keyboard.js': keyboard,
  'mode_picker.js': modePicker,
  'panel_tabs.js': panelTabs,
  'prefill_deck.js': prefillDeck,
  'player.js': player,
  'quiz.js': quiz,
  'scenario_picker.js': scenarioPicker,
  'start_page.js': startPage,
  'step_deck.js': stepDeck,
  'step_page.js': stepPage,
}
// The longest the early page waits for the live page's player before it leaves.
const LIVE_WAIT_MS = 10_000
// Every way a control outside the step bar could change before Python listens.
const HELD_EVENTS = ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click', 'dblclick',
  'keydown', 'keypress', 'beforeinput', 'input', 'change']

async function unpack(response) {
  if (!response.ok) { return null }
  const bytes = new Uint8Array(await response.arrayBuffer())
  if (!(bytes[0] === 0x1f && bytes[1] === 0x8b)) {
    return JSON.parse(new TextDecoder().decode(bytes))  // the host unpacked it
  }
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))
  return JSON.parse(await new Response(stream).text())
}

// A component's model before Python: its parameters' values, and Panel's few calls;
// `changed(name)` tells its handlers that a parameter changed (as Bokeh would).
function plainModel(values, children) {
  const handlers = {}
  const fire = (name) => (handlers[name] || []).forEach((callback) => callback())
  const model = {
    ...values,
    on(name, callback) { (handlers[name] = handlers[name] || []).push(callback) },
    send_msg() {},  // nobody listens yet: the controls that need Python are held
    get_child(name) { return children[name] || [] },
  }
  return { model, remove: () => fire('remove'), changed: fire }
}

// Lays the page out; `named` gets its named parts (early_page.py): {el, model, changed}
// of a component, {el, control} of a stand-in, {el, div} of an HTML pane.
function layOut(page, sheets, removes, named) {
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
    root.adoptedStyleSheets = [0, ...node.sheets].map(sheet)  // 0: part_host.css, as Bokeh's
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
    const { model, remove, changed } = plainModel(node.model, children)
    removes.push(remove)
    const made = COMPONENTS[node.esm].render({ model, view: { el } })
    shadow(el, node).append(made)
    if (node.name) { named[node.name] = { el, model, changed } }
    return el
  }
  function html(node) {
    const el = outer(node)
    const div = document.createElement('div')
    div.innerHTML = node.html
    shadow(el, node).append(div)
    if (node.name) { named[node.name] = { el, div } }
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
    } else if (node.waits === 'checkbox' || node.waits === 'file') {
      control = document.createElement('input')
      control.type = node.waits
      control.checked = node.value === true
    } else {
      control = document.createElement(node.waits === 'textarea' ? 'textarea' : 'input')
      control.value = node.value
    }
    const input = control
    if (node.waits !== 'button' && node.label) {
      control.setAttribute('aria-label', node.label)  // its name, as the live widget's
      const label = document.createElement('label')
      const caption = document.createElement('span')
      caption.textContent = node.label
      if (node.waits === 'checkbox') {  // beside its box, as Panel's
        label.className = 'pcl-check'
        label.append(control, caption)
      } else {
        label.append(caption, control)
      }
      control = label
    }
    el.append(control)
    if (node.name) { named[node.name] = { el, control: input } }
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

// Lays the page out over the loading page, at `at` ({key, step}, or {} for the start
// page), until the live page holds the learner's position; null if Python is there
// already, else its named parts (layOut).
function show(page, at) {
  const body = document.body
  if (!body.classList.contains('pn-loading')) { return null }  // live already
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
  const named = {}
  const host = document.createElement('div')
  host.className = 'pcl-early-page'
  const steps = page.hint !== undefined  // a scenario's or a playground's, not the start page
  if (steps) { body.classList.add(EARLY) }
  host.append(layOut(page, sheets, removes, named))
  for (const el of host.querySelectorAll('[data-sheets]')) {
    el.dataset.sheets.split(' ').forEach((id) => boxSheets.add(Number(id)))
  }
  document.adoptedStyleSheets = [...document.adoptedStyleSheets,
    ...[...boxSheets].map((id) => sheets[id])]
  const room = document.createElement('div')
  room.className = 'pcl-early-room'
  body.prepend(host)
  const release = steps ? holdOthers(page.hint) : () => {}
  // The player opens where the address says (it is already there).
  if (at.key !== undefined) { ask({ ...at, address: false }) }
  if (steps) { host.append(room) }
  // The live page has rendered (Panel lifts its loading class): it takes over once its
  // player is on the page (its components render a moment after Bokeh's document) at
  // the learner's position, so the page is never blank in between.
  const leave = () => {
    host.remove()
    style.remove()
    body.classList.remove(EARLY)
  }
  const handOver = () => {
    if (body.classList.contains('pn-loading')) { return }
    watcher.disconnect()
    host.inert = true  // on screen until the live page is there, taking no more input
    let learner = null  // where this page's player is
    ask({ reply: ({ key, step }) => { learner = { key, step } } })
    removes.forEach((remove) => remove())  // this page's player, first: it stops answering
    release()
    if (learner) { whenLiveAt(learner, leave) } else { leave() }
  }
  const watcher = new MutationObserver(handOver)
  watcher.observe(body, { attributes: true, attributeFilter: ['class'] })
  return named
}

// Whether a position's document holds its step's pages (null: not held, bundle.py).
const holdsPages = (at) => Object.values(at.views || {}).some((deck) => {
  const order = deck.orders[at.key]
  return order !== undefined && order[at.step] !== null
})

// Calls `then` once a player on the page is at `learner` ({key, step}) with its pages,
// or after LIVE_WAIT_MS. A player elsewhere (the live page opened at the address the
// worker started with: a playground edited since) is asked once to open the address
// (position.js), which it holds or Python does.
export function whenLiveAt(learner, then, waited = 0, reopened = false) {
  let there = false
  let answered = false
  ask({
    reply: (at) => {
      answered = true
      there = at.key === learner.key && at.step === learner.step && holdsPages(at)
    },
  })
  if (there || waited >= LIVE_WAIT_MS) { then(); return }
  if (answered && !reopened) { ask({ reopen: true }) }
  setTimeout(() => whenLiveAt(learner, then, waited + 50, reopened || answered), 50)
}

// The app's worker, asked: request -> a promise of its answer (JSON both ways).
function asking(worker, type) {
  const waiting = new Map()
  let asked = 0
  worker.addEventListener('message', (event) => {
    const { seq, answer, error } = event.data || {}
    if (event.data.type !== type || !waiting.has(seq)) { return }
    const { resolve, reject } = waiting.get(seq)
    waiting.delete(seq)
    if (error === undefined) { resolve(JSON.parse(answer)) } else { reject(new Error(error)) }
  })
  return (request) => new Promise((resolve, reject) => {
    asked += 1
    waiting.set(asked, { resolve, reject })
    worker.postMessage({ type, seq: asked, request: JSON.stringify(request) })
  })
}

// Every node of a page's tree.
function* nodes(node) {
  yield node
  const children = node.children || []
  for (const child of Array.isArray(children) ? children : Object.values(children).flat()) {
    yield* nodes(child)
  }
}

// A playground link's page: laid out once the worker answers with the link's document and
// its editor's fields. Then the worker answers a mode the player has no pages of, and
// each edit of the script: a new playground, which the player opens and writes into the
// address (the live page opens it from there), or the editor's message.
function showPlayground(page, worker, type) {
  const askWorker = asking(worker, type)
  const tree = [...nodes(page.root)]
  // (the stepping page names its decks)
  const decks = tree.flatMap((node) => (node.model && node.model.decks) || [])
  let serial = 1  // one per playground opened (the player's position part)
  askWorker({ call: 'open', query: currentQuery(), decks, serial }).then((opened) => {
    if (!opened) { return }  // an address Python answers (a notice)
    for (const node of tree) {
      if (node.name === 'player') { node.model.document_json = JSON.stringify(opened.document) }
      if (node.name in opened.fields) { node.value = opened.fields[node.name] }
    }
    const named = show(page, {})
    if (named) { worksWithWorker(named, askWorker, decks, () => (serial += 1)) }
  }).catch((error) => console.warn('early page: Python will show this link', error))
}

function worksWithWorker(named, askWorker, decks, nextSerial) {
  const player = named.player
  const give = (document) => {  // into the page's document, as Python writes it
    player.model.document_json = JSON.stringify(document)
    player.changed('document_json')
  }
  const where = () => {
    let at = null
    ask({ reply: (position) => { at = position } })
    return at
  }
  // A timeline of the playground (a mode picked, or the rest of an edit's): all its
  // pages, once.
  let asked = null
  const askAll = (at) => {
    asked = at.key
    askWorker({ call: 'mode', key: at.key, step: at.step, decks, serial: nextSerial() })
      .then((answer) => give(answer.document), (error) => console.warn('early page:', error))
  }
  // (a mode not played yet is the one the player waits for: it asked Python, not here)
  document.addEventListener(AT_EVENT, (event) => {
    const at = event.detail.waiting ? { ...event.detail, key: event.detail.waiting }
      : event.detail
    if (holdsPages(at) || asked === at.key || !document.body.contains(player.el)) { return }
    askAll(at)
  })
  // The script: each edit played as the live editor plays it; the newest waits for the
  // one in flight.
  const script = named.script
  script.el.setAttribute(WORKS_EARLY, '')
  let queued = null
  let editing = false
  const edit = () => {
    queued = script.control.value
    if (editing) { return }
    editing = true
    const at = where()
    const request = { call: 'edit', key: at.key, step: at.step, script: queued, decks }
    queued = null
    askWorker({ ...request, serial: nextSerial() }).then((answer) => {
      for (const [field, html] of Object.entries(answer.messages)) {
        const shown = named['message:' + field]
        if (!shown) { continue }
        shown.div.innerHTML = html
        shown.el.style.display = html ? '' : 'none'
      }
      if (answer.document) { give(answer.document) }  // else the last valid timeline stays
    }, (error) => console.warn('early page:', error)).finally(() => {
      editing = false
      if (queued !== null) { edit(); return }  // the rest of this one would be stale
      const now = where()
      if (now && asked !== now.key) { askAll(now) }
    })
  }
  script.control.addEventListener('input', edit)
}

export function start(config, folder) {
  const name = pageName(config)
  if (name === null) { return }
  const worker = window.__pclWorker  // the app's (early_worker.js)
  const playground = name === config[4]
  if (playground && !worker) { return }
  fetch(`./${folder}/${name}.json.gz`).then(unpack).then((page) => {
    if (!page) { return }
    if (playground) { showPlayground(page, worker, config[5]); return }
    const at = openedAt(page, currentQuery(), config[3])
    if (at) { show(page, at) }
  }).catch((error) => console.warn('early page: Python will show this address', error))
}
