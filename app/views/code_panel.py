"""The code panel in the browser: every step's code sent once per scenario.

A function's highlighted source is tens of kilobytes of HTML and the same
function runs at many steps (and in every mode), so the panel receives, for
the scenario's timelines, the distinct frames (heading, legend) and bodies (a
function's lines, unmarked) and a plan per timeline: per step, which frame and
body show the step's focus function, which lines ran, which ran last, and the
names of every function that ran. The position comes by the step channel
(step_deck.py). The browser marks the lines and scrolls the code box
(not the page) so the last line that ran sits in its middle.

The function picker lives here too: picking the focus shows the plan; picking
another function asks Python (`pick`), whose answer (`picked`) is shown while
the position and the pick still match.
"""

from __future__ import annotations

import param

from app.views.step_deck import STEP_CHANNEL_JS, LeanComponent

SLOT = '<div class="code-slot"></div>'  # where the frame takes the lines
PICKER_LABEL = "Functions that ran at this step (in the order entered)"

_ESM = (
    STEP_CHANNEL_JS
    + """
export function render({ model }) {
  const root = document.createElement('div')
  const label = document.createElement('label')
  label.className = 'picker'
  const caption = document.createElement('span')
  caption.textContent = __PICKER_LABEL__
  const picker = document.createElement('select')
  label.append(caption, picker)
  const host = document.createElement('div')
  root.append(label, host)
  const body = document.createElement('div')
  body.className = 'code mono'
  body.setAttribute('role', 'list')
  let frameShown = null
  let bodyShown = null
  let optionsShown = null
  let optionsStep = null

  const here = () => position(model, (key) => key in model.plans)
  function planned(at) {
    const plan = (model.plans[at.key] || [])[at.step]
    return plan ? { frame: model.frames[plan[0]], body: model.bodies[plan[1]], ran: plan[2],
                     current: plan[3], labels: plan[4], focus: plan[5] } : null
  }
  function parts(at, plan) {
    const choice = Number(picker.value)
    const picked = model.picked
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
    const line = body.querySelector('.ln.current')
    const box = body.closest('.code-scroll')
    if (line && box) { box.scrollTop = Math.max(0, line.offsetTop - box.clientHeight / 2) }
  }
  function scrollSoon() {
    if (!scrollQueued) { scrollQueued = true; requestAnimationFrame(scroll) }
  }
  function mark(ranLines, current) {
    const ran = new Set(ranLines)
    for (const el of body.querySelectorAll('.ln[data-line]')) {
      const n = Number(el.dataset.line)
      const isRan = ran.has(n)
      const isCurrent = n === current
      el.classList.toggle('ran', isRan)
      el.classList.toggle('current', isCurrent)
      if (isRan) { el.dataset.ran = 'true' } else { delete el.dataset.ran }
      if (isCurrent) {
        el.dataset.current = 'true'
        el.setAttribute('aria-current', 'step')
      } else {
        delete el.dataset.current
        el.removeAttribute('aria-current')
      }
      el.querySelector('.mk').textContent = isCurrent ? '\\u25b6' : (el.dataset.mk || '')
    }
    scrollSoon()
  }
  function setOptions(at, plan) {
    // A new step (or timeline) puts the picker back on the step's focus.
    const labels = plan ? plan.labels : []
    const where = at.key + '@' + at.step
    if (optionsStep === where && optionsShown === labels) { return }
    optionsStep = where
    optionsShown = labels
    picker.replaceChildren(...labels.map((text, index) => new Option(text, String(index))))
    if (plan) { picker.value = String(plan.focus) }
    label.style.display = labels.length ? '' : 'none'
  }
  function update() {
    const at = here()
    root.dataset.at = `${at.key}@${at.step}`  // the position shown (tests, benchmarks)
    const plan = planned(at)
    setOptions(at, plan)
    const p = parts(at, plan)
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
    const at = here()
    const choice = Number(picker.value)
    const plan = planned(at)
    if (plan && choice !== plan.focus) { model.pick = [at.key, at.step, choice] }
    update()
  })
  model.on(['frames', 'bodies', 'plans', 'key'], () => {
    frameShown = null
    bodyShown = null
    optionsShown = null
    update()
  })
  model.on(['step', 'picked'], update)
  onStep(model, update)
  update()
  return root
}
""".replace("__PICKER_LABEL__", repr(PICKER_LABEL))
)


class CodePanel(LeanComponent):
    frames = param.List(default=[], item_type=str, doc="Distinct frames; SLOT marks the lines")
    bodies = param.List(default=[], item_type=str, doc="Distinct bodies: a function's lines")
    plans = param.Dict(
        default={},
        doc="Timeline key -> per step: [frame, body, ran lines, last line, labels, focus index]",
    )
    key = param.String(default="", doc="The timeline to show until the channel names one held")
    step = param.Integer(default=0, doc="The step to show until the channel names one held")
    pick = param.List(default=[], doc="From the browser: [key, step, index] of a picked function")
    picked = param.Dict(default={}, doc="The picked function's position, index, frame, body, marks")

    _esm = _ESM
