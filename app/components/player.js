import { addressWriter, addressedIn, currentQuery, onBackForward } from './address.js'
import { ASK_EVENT, AT_EVENT } from './position.js'
import { addSkipLink } from './skip_link.js'
import { box, button, el } from './dom.js'

// The player: the one owner of the learner's position (timeline, step, Play, speed), and
// the step bar it draws. The rules of stepping live here only: steps stay within 0..last,
// Play stops at the last step and replays from 0 there, Step back, Restart or the
// scrubber pause; a mode switch keeps the step (within that mode's last).
// It shows the page's document (docs/document.md), announces each position with it
// (position.js's `pcl-at`; the other parts ask on `pcl-ask`), asks Python only for what
// the document lacks (`model.ask`, requests.js), and keeps the address on the position
// (address.js). On the static site the live page takes it over, Play and all (`when_live`).

const parsed = (text) => { try { return JSON.parse(text || '{}') } catch { return {} } }

export function render({ model }) {
  const [RESTART, BACK, FORWARD, PLAY, PAUSE] = model.names
  const bar = el('div', 'player')
  // A button of the step bar: its move (`moves`, below) when pressed.
  const stepButton = (text, kind, move) => button('btn ' + kind, text, () => moves[move]())
  const restart = stepButton(RESTART, 'plain', 'restart')
  const back = stepButton(BACK, 'plain', 'back')
  const forward = stepButton(FORWARD, 'primary', 'forward')
  const play = stepButton(PLAY, 'play', 'play')
  const speedLabel = el('label', 'speed')
  const speedPicker = el('select')
  for (const [text, value] of model.speeds) { speedPicker.append(new Option(text, String(value))) }
  speedLabel.append(el('span', '', 'Speed'), speedPicker)
  const scrub = Object.assign(el('input'), { type: 'range', min: '0' })
  scrub.setAttribute('aria-label', 'Step')
  const counter = el('div', 'counter')
  counter.dataset.testid = 'step-counter'
  counter.setAttribute('aria-live', 'polite')
  bar.append(box('buttons', restart, back, forward, play, speedLabel),
    box('track', scrub, counter))

  let doc = parsed(model.document_json)  // at, lasts, queries, held, views, code, questions
  // Python's head of the document the static site's early page holds (`prebuilt`): kept
  // over it (`when_live`); a page without it asks Python for the document.
  const holdsPrebuilt = (head) => head.prebuilt === true && String(head.scenario) === String(doc.scenario)
  const asksFirst = doc.prebuilt === true
  if (asksFirst) { doc = {} }
  const scenarioOf = (k) => k.slice(0, k.indexOf('/'))
  const modeOf = (k) => k.slice(k.indexOf('/') + 1)
  // A timeline of the document's scenario (a large playground's mode not played yet has
  // a null last step), and one whose pages it holds, at a step.
  const named = (k) => doc.lasts !== undefined && k in doc.lasts
  const holds = (k) => doc.held !== undefined && k in doc.held
  const holdsStep = (k, s) => holds(k) && doc.held[k][0] <= s && s < doc.held[k][1]
  const lastOf = (k) => (named(k) && doc.lasts[k] !== null ? doc.lasts[k] : 0)
  // A mode asked of Python (its document comes in `document_json`): the pickers show it.
  let waiting = null
  // The mode shown when the page last asked Python for a document (a scenario, a copy):
  // a mode picked since, before the document came, is meant for it.
  let modeAsked = null
  // Python asked at the handover for the address's document (the learner's timeline): the
  // learner's moves since count.
  let handedOver = false

  const names = model.address  // app/data/url.py's
  // The position the address names, if the document holds its timeline.
  const addressed = () => addressedIn(doc.queries || {}, names, (k, s) => holds(k) && s <= lastOf(k))

  let [key, step] = addressed() || doc.at || ['', 0]
  let speed = model.default_speed
  let timer = null

  const address = addressWriter(names)
  function addressSoon() {
    const query = (doc.queries || {})[key]
    if (query) { address.soon({ ...query, [names.step]: String(step) }, names.position) }
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
    key, step, lasts: doc.lasts || {}, scenario: doc.scenario, waiting,
    views: doc.views, questions: doc.questions,
    code: doc.code && { ...doc.code, bodies: doc.bodies || [] },
  })
  function announce() {
    document.dispatchEvent(new CustomEvent(AT_EVENT, { detail: position() }))
  }
  // A large timeline's steps around the one shown, asked once each: the views keep their
  // page until they come, and the next step is there before the learner asks for it.
  let askedFor = null
  function askForSteps() {
    const around = [step - 1, step, step + 1].filter((s) => s >= 0 && s <= lastOf(key))
    if (around.every((s) => holdsStep(key, s))) { return }
    const wanted = `${doc.serial}:${key}@${step}`
    if (askedFor === wanted) { return }
    askedFor = wanted
    const serial = doc.serial
    model.ask({ ask: 'steps', key, step }).then((answer) => {
      if (answer.serial !== serial || doc.serial !== serial) { return }  // a document since
      doc = { ...doc, ...answer, views: { ...doc.views, ...answer.views } }
      announce()
    })
  }
  // Every move: the views swap their pages now, and the address learns it.
  function go(nextKey, nextStep, address = true) {
    key = nextKey
    step = Math.max(0, Math.min(nextStep, lastOf(key)))
    show()
    announce()
    askForSteps()
    if (address) { addressSoon() }
  }
  // A timeline of the scenario (a mode, an engine): the document's, or Python's.
  // (`address`: false for the early page opening where the address already is)
  function want(nextKey, nextStep, address = true) {
    const at = nextStep === undefined ? step : nextStep
    if (holds(nextKey)) {
      waiting = null
      if (nextKey !== key) { pause() }
      go(nextKey, at, address)
      return
    }
    pause()
    waiting = nextKey
    announce()  // (the pickers show the pick meanwhile)
    // (Python opens that mode of the scenario it opened last: an edit's, if one came since)
    model.ask({ ask: 'mode', mode: modeOf(nextKey), step: at })
  }
  // A scenario picked, or a copy to edit: a document Python makes.
  function open(request) {
    modeAsked = modeOf(key)
    model.ask(request)
  }
  function pause() {
    if (timer !== null) { clearInterval(timer); timer = null }
  }
  // Step forward, and each tick of Play: Play stops by itself at the last step.
  function tick() {
    go(key, step + 1)
    if (step >= lastOf(key)) { pause(); show() }
  }
  function start() {
    if (step >= lastOf(key)) { go(key, 0) }
    timer = setInterval(tick, 1000 / speed)
    show()
  }
  const moves = {
    restart: () => { pause(); go(key, 0) },
    back: () => { pause(); go(key, step - 1) },
    forward: tick,
    end: () => { pause(); go(key, lastOf(key)) },
    play: () => { if (timer === null) { start() } else { pause(); show() } },
  }
  scrub.addEventListener('input', () => { pause(); go(key, Number(scrub.value)) })
  speedPicker.addEventListener('change', () => {
    speed = Number(speedPicker.value)
    if (timer !== null) { clearInterval(timer); timer = setInterval(tick, 1000 / speed) }
  })

  // Another control asks: a mode (the step kept), a position, a move, where it is, to show a
  // view's pages anew (Python's answer to a pick), or a document of Python's (a scenario
  // picked, a copy to edit).
  function asked(event) {
    const request = event.detail || {}
    if (request.reply) { request.reply(position()); return }
    if (request.views) {
      doc = { ...doc, views: { ...doc.views, ...request.views } }
      announce()
      return
    }
    if (request.scenario !== undefined) { open({ ask: 'pick', name: request.scenario }); return }
    if (request.fork) { open({ ask: 'fork', key, step }); return }
    let next = null
    if (request.mode !== undefined) { next = scenarioOf(key) + '/' + request.mode }
    if (request.key !== undefined) { next = request.key }
    if (next !== null) {
      if (named(next)) { want(next, request.step, request.address !== false) }
      return
    }
    if (moves[request.move]) { moves[request.move]() }
  }
  document.addEventListener(ASK_EVENT, asked)

  // Back or Forward: a position the document holds is the player's; another is Python's.
  function popped() {
    address.cancel()
    const found = addressed()
    if (found === null) { model.ask({ ask: 'open', query: currentQuery() }); return }
    if (found[0] !== key) { pause() }
    go(found[0], found[1])
  }
  const stopFollowing = onBackForward(popped)

  // A new document from Python: an edit's keeps the mode and step where it has them; a
  // mode's opens at the step the learner is on, as does the handover's (`when_live`) if it
  // holds the learner's timeline; one Python was asked for (a scenario, an address, a copy)
  // opens at its `at`, in the mode the learner picked meanwhile if there was one.
  model.on('document_json', () => {
    const next = parsed(model.document_json)
    if (next.serial === doc.serial) { return }
    address.flush()  // the entry left keeps its position, for Back
    const kept = scenarioOf(next.at[0]) + '/' + modeOf(key)
    const pickedSince = modeAsked !== null && modeOf(key) !== modeAsked
    const before = key
    const wanted = waiting
    const stays = handedOver
    doc = next
    waiting = null
    modeAsked = null
    handedOver = false
    if (next.keep && holds(kept)) {
      key = kept
    } else if (wanted !== null && holds(wanted)) {
      key = wanted  // the mode it waited for, at the step the learner moved to meanwhile
    } else if (!(stays && holds(key))) {
      [key, step] = next.at
    }
    if (key !== before) { pause() }
    go(key, step)
    if (!next.keep && pickedSince && kept !== key && named(kept)) { want(kept, step) }
  })
  const removeSkipLink = addSkipLink(forward, model.skip_text, model.skip_style)
  model.on('remove', () => {
    removeSkipLink()
    document.removeEventListener(ASK_EVENT, asked)
    stopFollowing()
    if (timer !== null) { clearInterval(timer) }
    address.flush()
  })
  // The live page took this page over (the static site: early_page.js): the builder's
  // document stays if Python's is its head, else Python's replaces it (or the early
  // worker's); the learner's position stays if the document holds that timeline (a key
  // names one timeline), else Python opens the address, and until it answers the early
  // page's document stays, the learner's moves on it kept (`handedOver`).
  if (model.when_live) {
    model.when_live(() => {
      address.flush()
      const early = doc
      const next = parsed(model.document_json)
      if (!holdsPrebuilt(next)) { doc = next.prebuilt ? {} : next }
      waiting = null
      if (holds(key)) { go(key, step, false); return }
      doc = { ...early, serial: null }  // (no serial of Python's: its next document is new)
      handedOver = true
      model.ask({ ask: 'open', query: currentQuery() })
    })
  }
  show()
  announce()
  askForSteps()
  if (asksFirst) { popped() }
  return bar
}
