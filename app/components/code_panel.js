import { follow } from './position.js'
import { box, el } from './dom.js'

export function render({ model }) {
  const label = el('label', 'picker')
  const picker = el('select')
  label.append(el('span', '', model.picker_label), picker)
  label.style.display = 'none'  // until a step's functions are there (setOptions)
  const host = el('div')
  const root = box('', label, host)
  const body = el('div', 'code mono')
  body.setAttribute('role', 'list')
  let frameShown = null
  let bodyShown = null
  let optionsShown = null  // the step and the labels the picker shows

  // The player's position, with the document's code: {frames, bodies, plans}.
  let heard = { key: '', step: 0, code: { frames: [], bodies: [], plans: {} } }
  function planned(at) {
    const { frames, bodies, plans } = at.code
    const plan = (plans[at.key] || [])[at.step]
    return plan ? { ...plan, frame: frames[plan.frame], body: bodies[plan.body] } : null
  }
  // Python's answer to a pick: the function's frame, body and marks (a key's plan never
  // changes: a playground's key names its data)
  let picked = null
  function parts(at, plan) {
    const choice = Number(picker.value)
    if (plan && choice !== plan.focus && picked && picked.key === at.key &&
        picked.step === at.step && picked.index === choice) { return picked }
    if (plan) { return plan }
    return { frame: '', body: '', ran: [], current: -1 }
  }
  // Reading offsetTop forces a layout of the whole page: once per frame, in the frame's
  // own layout pass (a page that renders the panel several times did it at each render).
  let scrollQueued = false
  function scroll() {
    scrollQueued = false
    const line = body.querySelector('.ln[data-current]')
    const box = body.closest('.code-scroll')
    if (line && box) { box.scrollTop = Math.max(0, line.offsetTop - box.clientHeight / 2) }
  }
  function scrollSoon() {
    if (!scrollQueued) { scrollQueued = true; requestAnimationFrame(scroll) }
  }
  // A line that ran, and the last one (the theme's CSS marks them by these attributes).
  const flag = (line, name, on) => { if (on) { line.dataset[name] = 'true' } else { delete line.dataset[name] } }
  function mark(ranLines, current) {
    const ran = new Set(ranLines)
    for (const line of body.querySelectorAll('.ln[data-line]')) {
      const n = Number(line.dataset.line)
      flag(line, 'ran', ran.has(n))
      flag(line, 'current', n === current)
      if (n === current) { line.setAttribute('aria-current', 'step') } else { line.removeAttribute('aria-current') }
      line.querySelector('.mk').textContent = n === current ? '\u25b6' : (line.dataset.mk || '')
    }
    scrollSoon()
  }
  function setOptions(at, plan) {
    // A new step (or timeline) puts the picker back on the step's focus. The same step
    // announced again (a large timeline's steps arriving) keeps the
    // learner's pick: it came after the pick and says nothing against it.
    const labels = plan ? plan.labels : []
    const shown = `${at.key}@${at.step} ${JSON.stringify(labels)}`
    if (optionsShown === shown) { return }
    optionsShown = shown
    picker.replaceChildren(...labels.map((name, index) => new Option(name, String(index))))
    if (plan) { picker.value = String(plan.focus) }
    label.style.display = labels.length ? '' : 'none'
  }
  function update() {
    const at = heard
    const plan = (at.code.plans[at.key] || [])[at.step]
    // A timeline still on its way, or null: Python sends this step's plan a moment later;
    // keep what is shown until then.
    if (plan === undefined && !(at.key in at.code.plans) && bodyShown !== null) { return }
    if (plan === null) { return }
    root.dataset.at = `${at.key}@${at.step}`  // the position shown (tests, benchmarks)
    const shown = planned(at)
    setOptions(at, shown)
    const p = parts(at, shown)
    if (p.body !== bodyShown) {
      bodyShown = p.body
      body.innerHTML = p.body
    }
    if (p.frame !== frameShown) {
      frameShown = p.frame
      host.innerHTML = p.frame
      const slot = host.querySelector('.code-slot')
      if (slot) { slot.replaceWith(body) }
    }
    mark(p.ran, p.current)
  }
  picker.addEventListener('change', () => {
    const at = heard
    const choice = Number(picker.value)
    const plan = planned(at)
    if (plan && choice !== plan.focus) {
      model.ask({ ask: 'code', key: at.key, step: at.step, index: choice })
        .then((reply) => { if (reply.picked) { picked = reply.picked; update() } })
    }
    update()
  })
  // A frame or body equal to the one shown is not parsed again.
  follow(model, (at) => {
    // No code part yet (the static site's playground page before Python): it waits.
    if (!at.code && !heard.code.frames.length) { return }
    heard = { ...at, code: at.code || heard.code }
    update()
  })
  return root
}
