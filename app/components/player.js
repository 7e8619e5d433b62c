import { EARLY, WORKS_EARLY } from './early.js'
import { ASK_EVENT, AT_EVENT } from './position.js'
import { addSkipLink } from './skip_link.js'

// Play and speed, carried from the static site's early page to the live page.
const CARRIED = 'pcl-player'
// Steps in quick succession (Play, held arrow keys) write the address once.
const ADDRESS_AFTER_MS = 150

function carried() {
  try {
    const value = JSON.parse(window.sessionStorage.getItem(CARRIED))
    window.sessionStorage.removeItem(CARRIED)
    return value
  } catch { return null }
}
function carry(value) {
  try { window.sessionStorage.setItem(CARRIED, JSON.stringify(value)) } catch { /* private mode */ }
}

export function render({ model }) {
  const [RESTART, BACK, FORWARD, PLAY, PAUSE] = model.names
  const bar = document.createElement('div')
  bar.className = 'player'
  bar.setAttribute(WORKS_EARLY, '')  // works before Python (app/page/early_page.js)
  const button = (text, kind) => {
    const b = document.createElement('button')
    b.type = 'button'
    b.className = 'btn ' + kind
    b.textContent = text
    return b
  }
  const restart = button(RESTART, 'plain')
  const back = button(BACK, 'plain')
  const forward = button(FORWARD, 'primary')
  const play = button(PLAY, 'play')
  const speedLabel = document.createElement('label')
  speedLabel.className = 'speed'
  const speedText = document.createElement('span')
  speedText.textContent = 'Speed'
  const speedPicker = document.createElement('select')
  for (const [text, value] of model.speeds) { speedPicker.append(new Option(text, String(value))) }
  speedLabel.append(speedText, speedPicker)
  const buttons = document.createElement('div')
  buttons.className = 'buttons'
  buttons.append(restart, back, forward, play, speedLabel)
  const scrub = document.createElement('input')
  scrub.type = 'range'
  scrub.min = '0'
  scrub.setAttribute('aria-label', 'Step')
  const counter = document.createElement('div')
  counter.className = 'counter'
  counter.dataset.testid = 'step-counter'
  counter.setAttribute('aria-live', 'polite')
  const track = document.createElement('div')
  track.className = 'track'
  track.append(scrub, counter)
  bar.append(buttons, track)

  // The bundle (step_deck.py's Outbox): the position's part from Python, and every view's
  // pages, the code and the questions, announced with each position.
  let bundle = { views: {} }
  // Python sends the parts changed since its last message (step_deck.py's Outbox).
  function merge() {
    const changed = JSON.parse(model.bundle || '{}')
    bundle = { ...bundle, ...changed, views: { ...bundle.views, ...(changed.views || {}) } }
  }
  // Python sends the parts not acknowledged: the acknowledgement waits for the page to be
  // live (the static site's copy has no Python to tell).
  function acknowledge() {
    if (bundle.n && model.received !== bundle.n &&
        !document.body.classList.contains('pn-loading')) { model.received = bundle.n }
  }
  merge()
  let opened = bundle.position || {}  // at, lasts, queries, heard, serial
  const holds = (k) => opened.lasts !== undefined && k in opened.lasts
  // A playground's modes not counted yet are null in `lasts`: their counts come a moment
  // later, in the same position again (app/views/sender.py).
  const counted = (k) => holds(k) && opened.lasts[k] !== null
  const lastOf = (k) => (counted(k) ? opened.lasts[k] : 0)
  // A mode asked for before its last step was counted: kept, and gone to once it is (or
  // replaced by a later ask). {key, step (undefined: the step then), address}
  let waiting = null
  const scenarioOf = (k) => k.slice(0, k.indexOf('/'))

  // The position the address names, if a timeline of the bundle holds it.
  function addressed() {
    const here = new URLSearchParams(window.location.search)
    for (const [k, query] of Object.entries(opened.queries || {})) {
      if (!Object.entries(query).every(([name, value]) => here.get(name) === value)) { continue }
      const text = (here.get('step') || '0').trim()
      if (/^[0-9]+$/.test(text) && counted(k) && Number(text) <= lastOf(k)) {
        return [k, Number(text)]
      }
    }
    return null
  }

  let [key, step] = addressed() || opened.at || ['', 0]
  let speed = model.default_speed
  let timer = null
  const left = carried()  // the copy's Play and speed, if it was on this timeline
  if (left && left.key === key) { speed = left.speed }
  // The copy before Python remembers Play and speed for the live page that replaces it.
  const remember = () => {
    if (document.body.classList.contains(EARLY)) {
      carry({ key, playing: timer !== null, speed })
    }
  }

  let addressTimer = null
  function writeAddress() {
    addressTimer = null
    const query = (opened.queries || {})[key]
    if (!query) { return }
    const params = new URLSearchParams(window.location.search)
    const scenarioBefore = params.get('scenario')
    for (const name of model.position_parameters) {
      if (!(name in query) && name !== 'step') { params.delete(name) }
    }
    for (const [name, value] of Object.entries(query)) { params.set(name, value) }
    params.set('step', String(step))
    const search = '?' + params.toString()
    if (search === window.location.search) { return }
    const url = window.location.pathname + search + window.location.hash
    if (params.get('scenario') !== scenarioBefore) {
      window.history.pushState(null, '', url)  // Back returns to the scenario left
    } else {
      window.history.replaceState(window.history.state, '', url)
    }
  }
  function flushAddress() {
    if (addressTimer !== null) { clearTimeout(addressTimer); writeAddress() }
  }
  function addressSoon() {
    if (addressTimer !== null) { clearTimeout(addressTimer) }
    addressTimer = setTimeout(writeAddress, ADDRESS_AFTER_MS)
  }

  function show() {
    const last = lastOf(key)
    scrub.max = String(Math.max(last, 1))
    scrub.value = String(step)
    scrub.disabled = last === 0
    counter.dataset.step = String(step)
    counter.textContent = `Step ${step} / ${last}`
    back.disabled = step === 0
    forward.disabled = step >= last
    play.textContent = timer === null ? PLAY : PAUSE
    play.className = 'btn ' + (timer === null ? 'play' : 'pause')
    speedPicker.value = String(speed)
  }
  const position = () => ({
    key, step, lasts: opened.lasts || {}, scenario: opened.scenario,
    waiting: waiting === null ? null : waiting.key,  // a mode picked, shown once counted
    views: bundle.views, questions: bundle.questions,
    code: bundle.code && { ...bundle.code, bodies: bundle.bodies || [] },
  })
  function announce() {
    document.dispatchEvent(new CustomEvent(AT_EVENT, { detail: position() }))
  }
  let told = null  // the last position Python was told
  function tellPython() {
    const at = model.at
    if (!at || at[0] !== key || at[1] !== step) { model.at = [key, step] }
    told = [key, step]
  }
  const modeOf = (k) => k.slice(k.indexOf('/') + 1)
  // A mode the learner picked on the scenario left after Python built this bundle (Python
  // had not heard it): the learner meant it for the scenario that opened.
  function pickedSince(next) {
    const heard = next.heard || []
    if (!told || !heard.length || told[0] === heard[0]) { return null }
    if (scenarioOf(told[0]) !== scenarioOf(heard[0])) { return null }
    const picked = scenarioOf(next.at[0]) + '/' + modeOf(told[0])
    return picked !== next.at[0] && picked in next.lasts ? picked : null
  }
  // Every move: the views swap their pages now, then Python and the address learn it.
  function go(nextKey, nextStep, address = true) {
    key = nextKey
    step = Math.max(0, Math.min(nextStep, lastOf(key)))
    show()
    announce()
    tellPython()
    if (address) { addressSoon() }
  }
  function want(nextKey, nextStep, address = true) {
    waiting = null
    if (!counted(nextKey)) {
      waiting = { key: nextKey, step: nextStep, address }
      announce()  // (the pickers show the pick meanwhile)
      return
    }
    if (nextKey !== key) { pause() }
    go(nextKey, nextStep === undefined ? step : nextStep, address)
  }
  function honourWaiting() {
    if (waiting !== null && counted(waiting.key)) { want(waiting.key, waiting.step, waiting.address) }
  }
  function pause() {
    if (timer !== null) { clearInterval(timer); timer = null }
    remember()
  }
  function stopAtTheEnd() {
    if (step >= lastOf(key)) { pause(); show() }
  }
  function tick() {
    go(key, step + 1)
    stopAtTheEnd()
  }
  function start() {
    if (step >= lastOf(key)) { go(key, 0) }
    timer = setInterval(tick, 1000 / speed)
    remember()
    show()
  }
  const togglePlay = () => { if (timer === null) { start() } else { pause(); show() } }
  const moves = {
    restart: () => { pause(); go(key, 0) },
    back: () => { pause(); go(key, step - 1) },
    forward: () => { go(key, step + 1); stopAtTheEnd() },
    end: () => { pause(); go(key, lastOf(key)) },
    play: togglePlay,
  }
  restart.addEventListener('click', moves.restart)
  back.addEventListener('click', moves.back)
  forward.addEventListener('click', moves.forward)
  play.addEventListener('click', togglePlay)
  scrub.addEventListener('input', () => { pause(); go(key, Number(scrub.value)) })
  speedPicker.addEventListener('change', () => {
    speed = Number(speedPicker.value)
    remember()
    if (timer !== null) { clearInterval(timer); timer = setInterval(tick, 1000 / speed) }
  })

  // Another control asks: a mode (the step kept), a position, a move, where it is, or
  // to open the address's position (the static site's early page, leaving).
  function asked(event) {
    const request = event.detail || {}
    if (request.reply) { request.reply(position()); return }
    if (request.reopen) { popped(); return }
    if (request.views) {  // a view's pages anew, Python's answer to a pick
      bundle = { ...bundle, views: { ...bundle.views, ...request.views } }
      announce()
      return
    }
    let next = null
    if (request.mode !== undefined) { next = scenarioOf(key) + '/' + request.mode }
    if (request.key !== undefined) { next = request.key }
    if (next !== null) {
      if (holds(next)) { want(next, request.step, request.address !== false) }
      return
    }
    if (moves[request.move]) { moves[request.move]() }
  }
  document.addEventListener(ASK_EVENT, asked)
  // A reload starts afresh: only the copy's replacement carries Play on.
  const forget = () => carried()
  window.addEventListener('pagehide', forget)

  // Back or Forward: a position this bundle holds is the player's; another goes to Python.
  function popped() {
    if (addressTimer !== null) { clearTimeout(addressTimer); addressTimer = null }
    const found = addressed()
    if (found === null) { model.ask({ ask: 'open', query: window.location.search }); return }
    if (found[0] !== key) { pause() }
    go(found[0], found[1])
  }
  window.addEventListener('popstate', popped)

  // From Python: pages (the rest of them, or a pick's), or a new set of timelines (a
  // scenario, an edit, an address) and where to open.
  model.on('bundle', () => {
    merge()
    acknowledge()
    const next = bundle.position || {}
    if (next.serial === opened.serial) {
      opened = next  // (the same position: its modes' last steps all counted now)
      show()
      announce()
      honourWaiting()
      return
    }
    flushAddress()  // the entry left keeps its position, for Back
    opened = next
    const [nextKey, nextStep] = opened.at
    const picked = pickedSince(opened)
    if (waiting !== null) {  // a pick on the scenario left is meant for this one, as above
      const meant = scenarioOf(nextKey) + '/' + modeOf(waiting.key)
      waiting = meant !== nextKey && holds(meant) ? { ...waiting, key: meant } : null
    }
    if (nextKey !== key) { pause() }
    key = nextKey
    step = Math.min(nextStep, lastOf(key))
    show()
    announce()
    addressSoon()
    if (waiting !== null) { honourWaiting() } else if (picked !== null) { want(picked, step) }
  })
  const removeSkipLink = addSkipLink(forward, model.skip_text, model.skip_style)
  model.on('remove', () => {
    removeSkipLink()
    document.removeEventListener(ASK_EVENT, asked)
    window.removeEventListener('popstate', popped)
    window.removeEventListener('pagehide', forget)
    if (timer !== null) { clearInterval(timer) }
    flushAddress()
  })
  // Once the page is live (Python listens from then on): the bundle held, and a position
  // elsewhere than Python's (the copy's address) or Play carried over.
  const at = opened.at || []
  const moved = at[0] !== key || at[1] !== step
  const adopt = () => {
    if (document.body.classList.contains('pn-loading')) { setTimeout(adopt, 50); return }
    acknowledge()
    if (moved) { tellPython() }
    if (left && left.key === key && left.playing && timer === null) { start() }
  }
  setTimeout(adopt)
  show()
  announce()
  return bar
}
