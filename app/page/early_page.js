// The static site's page before Python (early_page.py): it fetches the early page of its
// address, lays it out with plain elements, and runs each component's own render with a
// model of its values (earlyModel), so the player steps, the modes switch and the scenario
// picker opens another scenario's page while Pyodide starts; the other requests of the
// stepping page wait for Python. A playground link's page is laid out the same, fed by the
// app's worker (app/data/early_playground.py): the link's playground, a mode picked, the
// editor's fields edited. The live stepping page takes the drawn one over (show).
// The tag's data-early-pages: [[page names, the start page's, default scenario,
// app/data/url.py's names of the address, the playground page's name (null: none), the
// worker's message type], the folder].
import { currentQuery, noticeHtml, openedAt, pageName } from '../components/address.js'
import { EARLY, LIVE_EVENT } from '../components/early.js'
import { ask } from '../components/position.js'
import { channel } from '../components/requests.js'
import { statusNote } from '../components/status_note.js'
import { addStyle, cssSheet, el } from '../components/dom.js'
import * as glossary from '../components/glossary.js'
import * as startPage from '../components/start_page.js'
import * as stepPage from '../components/step_page.js'

// The stepping page's module: the live page takes its element over (show).
const STEPPING_PAGE = 'step_page.js'
// What a component does not read anew when the live model takes over (earlyModel).
const NOT_READ_ANEW = ['document_json', 'reply_json', 'remove']
// The longest the page waits for the live stepping page to take it over, once Panel is up.
const LIVE_WAIT_MS = 10_000
// The components an early page holds (the stepping page draws its parts itself).
const COMPONENTS = {
  'glossary.js': glossary,
  'start_page.js': startPage,
  [STEPPING_PAGE]: stepPage,
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

// A component's model before Python: its parameters' values and Panel's few calls;
// `give(name, value)` changes a parameter and tells its handlers (as Bokeh would). A request
// (`send_msg`) waits for Python unless `answer(request)` takes it (the playground's
// worker) and `waited()` is told; `attach(live)` gives every handler and waiting request
// to the live model, which answers from then on, and tells `when_live`'s callbacks.
function earlyModel(values, answer, waited) {
  const handlers = []  // [name, callback], in the order they came
  const waiting = []
  const onLive = []
  let live = null
  const fire = (name, ...args) => {
    for (const [each, callback] of handlers) { if (each === name) { callback(...args) } }
  }
  const own = {
    on(name, callback) {
      handlers.push([name, callback])
      if (live) { live.on(name, callback) }
    },
    send_msg(request) {
      if (live) { live.send_msg(request); return }
      if (answer(request)) { return }
      waiting.push(request)
      waited()
    },
    when_live(callback) { onLive.push(callback) },
  }
  const model = new Proxy(own, {
    get(_, name) {
      if (name in own) { return own[name] }
      return live ? live[name] : values[name]
    },
  })
  const attach = (liveModel) => {
    live = liveModel
    for (const [name, callback] of handlers) { live.on(name, callback) }
    // Python's values read anew (the editor's fields: Python's playground, the address's);
    // the player takes Python's document itself (`when_live`).
    new Set(handlers.map(([name]) => name)).forEach((name) => {
      if (!NOT_READ_ANEW.includes(name)) { fire(name) }
    })
    waiting.splice(0).forEach((request) => live.send_msg(request))
    onLive.forEach((callback) => callback())
  }
  const give = (name, value) => { values[name] = value; fire(name) }
  const reply = (request, answered) => give('reply_json', JSON.stringify({ ...answered, id: request.id }))
  return { model, remove: () => fire('remove'), give, reply, attach }
}

// Lays the page out; `steppers` gets the stepping page's ({made, early}: its early model
// {model, give, reply, attach}), which the live page takes over; `asks` = {answer, waited}
// the components' requests before Python (earlyModel).
function layOut(page, sheets, { removes, steppers, asks }) {
  // The page: a column of components and HTML panes (early_page.py), which fill it
  // (early_page.css), each in a shadow root (sheet 0: part_host.css, as Bokeh's).
  const column = el('div', page.root.classes.join(' '))
  Object.entries(page.root.style).forEach(([name, value]) => column.style.setProperty(name, value))
  for (const node of page.root.children) {
    const host = el('div')
    const root = host.attachShadow({ mode: 'open' })
    root.adoptedStyleSheets = [0, ...node.sheets].map((id) => sheets[id])
    column.append(host)
    if (!node.esm) {
      const div = el('div')
      div.innerHTML = node.html
      root.append(div)
      continue
    }
    const early = earlyModel(node.model, asks.answer, asks.waited)
    removes.push(early.remove)
    const made = COMPONENTS[node.esm].render({ model: early.model, view: { el: host } })
    root.append(made)
    if (node.esm === STEPPING_PAGE) { steppers.push({ made, early, layout: node.model.layout }) }
  }
  return column
}

// Lays the page out over the loading page, at `at` ({key, step}, or {} for the start
// page); null if Python is there already, else its stepping page's (layOut), if any.
// `answer(request)` may answer a request before Python (the playground's worker); any other
// waits, and the note says so. The live stepping page takes this one's over as it renders
// (LIVE_EVENT): the same element, player and position, its requests now Python's. Any
// other page (the start page) goes once the live page has rendered.
function show(page, at, answer = () => false) {
  const body = document.body
  if (!body.classList.contains('pn-loading')) { return null }  // live already
  const sheets = page.sheets.map(cssSheet)
  const style = addStyle(page.style)
  const steps = page.hint !== undefined  // a scenario's or a playground's, not the start page
  const status = steps ? statusNote(page.hint) : null
  const waited = () => { if (status) { status.say(page.asked_hint) } }
  const removes = []
  const steppers = []
  const host = el('div', 'pcl-early-page')
  if (steps) { body.classList.add(EARLY) }
  host.append(layOut(page, sheets, { removes, steppers, asks: { answer, waited } }))
  body.prepend(host)
  if (status) { body.append(status.note) }
  // The player opens where the address says (it is already there).
  if (at.key !== undefined) { ask({ key: at.key, step: at.step, address: false }) }
  if (steps) { host.append(el('div', 'pcl-early-room')) }
  // The stepping page's fate once Python is up: 'waiting' for the live page to take it
  // over, 'taken' (its element lives on in the live page), or 'left' (not taken in time).
  let stepping = steppers.length ? 'waiting' : 'left'
  const leave = () => {
    document.removeEventListener(LIVE_EVENT, takenOver)
    const kept = stepping === 'taken' ? steppers[0].early.remove : null
    removes.filter((remove) => remove !== kept).forEach((remove) => remove())
    host.remove()
  }
  // Gone once Panel has lifted its loading class (until then the page scrolls, no veil
  // over it) and the live stepping page has taken this one's over (a moment after Panel
  // lifts it), or after LIVE_WAIT_MS: the live page then draws its own.
  let late = null  // the wait for the live stepping page, once Panel is up
  const settle = () => {
    if (body.classList.contains('pn-loading')) { return }
    if (stepping === 'waiting') {
      if (late === null) { late = setTimeout(() => { stepping = 'left'; settle() }, LIVE_WAIT_MS) }
      return
    }
    clearTimeout(late)
    watcher.disconnect()
    if (host.isConnected) { leave() }
    style.remove()
    body.classList.remove(EARLY)
    if (status) { status.stop(); status.note.remove() }
  }
  function takenOver(event) {
    const { model, take } = event.detail
    const stepper = steppers[0]
    if (stepping !== 'waiting' || stepper.layout !== model.layout || !host.isConnected) { return }
    stepping = 'taken'
    take(stepper.made)  // (moved into the live page's element)
    leave()
    stepper.early.attach(model)
    settle()
  }
  document.addEventListener(LIVE_EVENT, takenOver)
  const watcher = new MutationObserver(settle)
  watcher.observe(body, { attributes: true, attributeFilter: ['class'] })
  return steppers[0]
}

// The app's worker, asked: request -> a promise of its answer (JSON both ways).
function asking(worker, type) {
  const { ask, settle } = channel((request, seq) =>
    worker.postMessage({ type, seq, request: JSON.stringify(request) }))
  worker.addEventListener('message', (event) => {
    const { seq, answer, error } = event.data || {}
    if (event.data.type !== type) { return }
    settle(seq, error === undefined ? JSON.parse(answer) : null, error)
  })
  return ask
}

// A playground link's page: laid out once the worker answers with the link's document and
// its editor's fields. Until Python, the worker answers the stepping page's requests for
// a timeline's pages (a mode not played yet, the rest of an edit's), and each edit of the
// fields (editor.js asks one at a time): a new playground, which the player opens and
// writes into the address (Python opens it from there), or the editor's messages.
function showPlayground(page, worker, type) {
  const askWorker = asking(worker, type)
  const stepping = page.root.children.find((node) => node.esm === STEPPING_PAGE)
  const decks = stepping.model.decks
  let serial = 1  // one per document the worker makes (the player tells them apart)
  let player = null  // the stepping page's early model
  // A request of the stepping page the worker answers: all of a timeline's pages, an edit.
  const answer = (request) => {
    let at = null
    ask({ reply: (position) => { at = position } })  // the player's position now
    let asked
    if (request.ask === 'steps' || request.ask === 'mode') {
      const key = request.ask === 'steps' ? request.key
        : at.key.slice(0, at.key.indexOf('/') + 1) + request.mode
      asked = { call: 'mode', key, step: request.step }
    } else if (request.ask === 'edit') {
      asked = { call: 'edit', key: at.key, step: at.step, fields: request.fields }
    } else {
      return false
    }
    serial += 1
    askWorker({ ...asked, decks, serial }).then((answered) => {
      // (an edit that cannot be played keeps the last valid timeline)
      if (answered.document) { player.give('document_json', JSON.stringify(answered.document)) }
      player.reply(request, { messages: answered.messages })
    }, (error) => console.warn('early page:', error))
    return true
  }
  askWorker({ call: 'open', query: currentQuery(), decks, serial }).then((opened) => {
    if (!opened) { return }  // an address Python answers (a notice)
    stepping.model.document_json = JSON.stringify(opened.document)
    stepping.model.editor = { ...stepping.model.editor, fields: opened.fields }
    const shown = show(page, {}, answer)
    if (shown) { player = shown.early }
  }).catch((error) => console.warn('early page: Python will show this link', error))
}

export function start(config, folder) {
  const name = pageName(config)
  if (name === null) { return }
  const worker = document.querySelector('script[data-worker]')?.worker  // early_worker.js's
  const playground = name === config[4]
  if (playground && !worker) { return }
  fetch(`./${folder}/${name}.json.gz`).then(unpack).then((page) => {
    if (!page) { return }
    if (playground) { showPlayground(page, worker, config[5]); return }
    const at = openedAt(page, currentQuery(), config[3])
    if (!at) { return }
    for (const node of page.root.children) {  // what the address got wrong, as the live page says
      if (node.esm === STEPPING_PAGE) { node.model.notice_html = noticeHtml(page, at.notices) }
    }
    show(page, at)
  }).catch((error) => console.warn('early page: Python will show this address', error))
}
