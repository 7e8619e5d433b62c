import { WORKS_EARLY } from './early.js'
import { announce, onStep, position } from './step_channel.js'

export function render({ model }) {
  const [RESTART, BACK, FORWARD, PLAY, PAUSE] = model.names
  const bar = document.createElement('div')
  bar.className = 'player'
  bar.setAttribute(WORKS_EARLY, '')  // works before Python (early_steps.py)
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
  const speed = document.createElement('select')
  for (const [text, value] of model.speeds) { speed.append(new Option(text, String(value))) }
  speedLabel.append(speedText, speed)
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

  const holds = (k) => k in model.lasts
  const lastOf = (k) => (holds(k) ? model.lasts[k] : 0)
  // An earlier view of this bar (the static site's pre-rendered copy, before Python was
  // live) left a position, and maybe Play and a speed: carry on from there.
  let { key, step } = position(model, holds)
  step = Math.min(step, lastOf(key))
  const left = globalThis.__pclPlayer && globalThis.__pclPlayer.key === key
    ? globalThis.__pclPlayer : null
  let timer = null
  const remember = () => {
    globalThis.__pclPlayer = { key, playing: timer !== null, speed: model.speed }
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
    speed.value = String(model.speed)
  }
  let syncing = false  // (its own writes to the model are not moves from Python)
  function sync() {  // Python learns the position: the timeline first, then the step
    syncing = true
    try {
      if (model.key !== key) { model.key = key }
      if (model.step !== step) { model.step = step }
    } finally { syncing = false }
  }
  function go(next) {
    step = Math.max(0, Math.min(next, lastOf(key)))
    announce(key, step)  // every view swaps its page now
    show()
    sync()  // then Python learns it
  }
  function pause() {
    if (timer !== null) { clearInterval(timer); timer = null }
    if (model.playing) { model.playing = false }
    remember()
  }
  function tick() {
    go(step + 1)
    if (step >= lastOf(key)) { pause(); show() }
  }
  function start() {
    if (step >= lastOf(key)) { go(0) }
    timer = setInterval(tick, 1000 / model.speed)
    model.playing = true
    remember()
    show()
  }
  restart.addEventListener('click', () => { pause(); go(0) })
  back.addEventListener('click', () => { pause(); go(step - 1) })
  forward.addEventListener('click', () => {
    go(step + 1)
    if (step >= lastOf(key)) { pause(); show() }
  })
  play.addEventListener('click', () => { if (timer === null) { start() } else { pause(); show() } })
  scrub.addEventListener('input', () => { pause(); go(Number(scrub.value)) })
  speed.addEventListener('change', () => {
    model.speed = Number(speed.value)
    remember()
    if (timer !== null) { clearInterval(timer); timer = setInterval(tick, 1000 / model.speed) }
  })
  // Another control moved the page: the mode picker, or the copy opening at its address.
  onStep(model, () => {
    const channel = globalThis.__pclStep
    if (!channel || !holds(channel.key)) { return }
    if (channel.key === key && channel.step === step) { return }  // (its own announcement)
    if (channel.key !== key) { pause() }
    key = channel.key
    step = Math.min(channel.step, lastOf(key))
    show()
    sync()
  })
  // From Python: a new scenario, a mode or a jump (a deep link) moves the bar.
  model.on(['key', 'step', 'lasts'], () => {
    if (syncing) { return }
    const next = Math.min(model.step, lastOf(model.key))
    if (model.key === key && next === step) { show(); return }  // (its own position, echoed)
    if (model.key !== key) { pause() }
    key = model.key
    step = next
    announce(key, step)
    show()
  })
  model.on('remove', () => { if (timer !== null) { clearInterval(timer) } })
  // Python learns what was carried over once the page is live (it listens from then on).
  const adopt = () => {
    if (document.body.classList.contains('pn-loading')) { setTimeout(adopt, 50); return }
    sync()
    if (left && left.speed !== model.speed) { model.speed = left.speed }
    if (left && left.playing && timer === null) { start() }
    show()
  }
  if (key !== model.key || step !== model.step ||
      (left && (left.playing || left.speed !== model.speed))) {
    setTimeout(adopt)
  }
  announce(key, step)
  show()
  return bar
}
