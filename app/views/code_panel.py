"""The code panel in the browser: every step's code sent once per timeline.

A function's highlighted source is tens of kilobytes of HTML and the same
function runs at many steps, so the panel receives, per timeline, the distinct
frames (heading, legend) and bodies (a function's lines, unmarked) and a plan:
per step, which frame and body show the step's focus function, which lines ran,
which ran last, and the names of every function that ran. The step comes by the
step channel (step_deck.py). The browser marks the lines and scrolls the code box
(not the page) so the last line that ran sits in its middle.

The function picker lives here too: picking the focus shows the plan; picking
another function asks Python (`pick`), whose answer (`picked`) is shown while
the step and the pick still match.
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

  function planned(step) {
    const plan = model.plan[step]
    return plan ? { frame: model.frames[plan[0]], body: model.bodies[plan[1]], ran: plan[2],
                     current: plan[3], labels: plan[4], focus: plan[5] } : null
  }
  function parts(step, plan) {
    const choice = Number(picker.value)
    const picked = model.picked
    if (plan && choice !== plan.focus && picked && picked.step === step &&
        picked.index === choice) { return picked }
    if (plan) { return plan }
    return { frame: '', body: '', ran: [], current: -1 }
  }
  function scroll() {
    const line = body.querySelector('.ln.current')
    const box = body.closest('.code-scroll')
    if (line && box) { box.scrollTop = Math.max(0, line.offsetTop - box.clientHeight / 2) }
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
    setTimeout(scroll, 0)
  }
  function setOptions(step, plan) {
    // A new step (or timeline) puts the picker back on the step's focus.
    const labels = plan ? plan.labels : []
    if (optionsStep === step && optionsShown === labels) { return }
    optionsStep = step
    optionsShown = labels
    picker.replaceChildren(...labels.map((text, index) => new Option(text, String(index))))
    if (plan) { picker.value = String(plan.focus) }
    label.style.display = labels.length ? '' : 'none'
  }
  function update() {
    const step = channelStep(model)
    const plan = planned(step)
    setOptions(step, plan)
    const p = parts(step, plan)
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
    const step = channelStep(model)
    const choice = Number(picker.value)
    const plan = planned(step)
    if (plan && choice !== plan.focus) { model.pick = [step, choice] }
    update()
  })
  model.on(['frames', 'bodies', 'plan', 'key'], () => {
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
    plan = param.List(
        default=[],
        doc="Per step: [frame, body, ran lines, last line, function labels, focus index]",
    )
    key = param.String(default="", doc="The timeline the plan is for")
    step = param.Integer(default=0, doc="The step to show until the channel has this key")
    pick = param.List(default=[], doc="From the browser: [step, index] of a picked function")
    picked = param.Dict(default={}, doc="The picked function's step, index, frame, body, marks")

    _esm = _ESM
