// The mode and engine pickers, parts of the stepping page: captioned groups of radio
// buttons.
import { ask, follow } from './position.js'
import { el } from './dom.js'

let groups = 0  // radio names must not collide between pickers on one page

// A picker part of the stepping page (the modes, the engines): at each position
// announced, `shown(at)` gives its [value, text] options and the value checked; the
// radios are built anew when the options change. Fewer than two options: nothing to
// pick, and the whole part hides, margins included.
function pickerPart({ model, view }, shown, pick) {
  const group = el('div', 'modes')
  group.setAttribute('role', 'radiogroup')
  group.setAttribute('aria-label', model.label)
  const name = `pcl-radio-${++groups}`
  let inputs = []
  let built = ''  // the options shown, as one string
  let value = null  // the value checked
  const check = () => { for (const input of inputs) { input.checked = input.value === value } }
  const radio = ([option, text]) => {
    const label = el('label', 'mode')
    const input = el('input')
    input.type = 'radio'
    input.name = name
    input.value = option
    input.addEventListener('change', () => {
      if (input.checked) { pick(option) }
      check()  // (the player may refuse a pick)
    })
    label.append(input, document.createTextNode(text))
    return label
  }
  follow(model, (at) => {
    const now = shown(at)
    value = now.value
    const names = now.options.map(([v]) => v).join('/')
    if (names !== built) {
      built = names
      group.replaceChildren(el('span', 'modes-label', model.label), ...now.options.map(radio))
      inputs = [...group.querySelectorAll('input')]
    }
    const hidden = now.options.length < 2 ? 'none' : ''
    group.style.display = hidden
    if (view && view.el) { view.el.style.display = hidden }
    check()
  })
  return group
}

// Arrow keys on a radio group check the next radio, so they would pick it: in `group`
// they only move the focus, and Enter or Space (or a click) picks the focused radio.
function arrowsOnlyMoveFocus(group) {
  const steps = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1 }
  group.addEventListener('keydown', (event) => {
    const inputs = [...group.querySelectorAll('input[type=radio]')]
    const at = inputs.indexOf(event.target)
    if (at < 0) { return }
    if (event.key in steps) {
      event.preventDefault()
      inputs[(at + steps[event.key] + inputs.length) % inputs.length].focus()
    } else if (event.key === 'Enter' && !event.target.checked) {
      event.preventDefault()
      event.target.click()
    }
  })
}

// The engine a mode plays on: SGLang's schedule policies are no vLLM mode's
// (app/data/timelines.py), so the mode names it.
function engineOf(mode, sglangModes) {
  return sglangModes.includes(mode) ? 'sglang' : 'vllm'
}

// The modes of the announced position's scenario, in the document's order, and its mode
// (or the mode picked, if the player waits for its last step: player.js).
function scenarioModes(at) {
  const scenario = at.key.slice(0, at.key.indexOf('/'))
  const modes = Object.keys(at.lasts || {})
    .filter((k) => k.startsWith(scenario + '/')).map((k) => k.slice(scenario.length + 1))
  return { modes, mode: (at.waiting || at.key).slice(scenario.length + 1) }
}

// The modes of the player's scenario on the engine of its timeline (the engine picker
// switches engines), in the document's order.
export function modes(part) {
  const { model } = part
  return pickerPart(part, (at) => {
    const { modes, mode } = scenarioModes(at)
    const engine = engineOf(mode, model.sglang_modes)
    const here = modes.filter((m) => engineOf(m, model.sglang_modes) === engine)
    return { options: here.map((m) => [m, m]), value: mode }
  }, (m) => ask({ mode: m }))
}

// The engines the player's scenario plays on; a scenario on one engine hides the part
// (so a playground link's page before Python shows it as soon as its document has both).
export function engines(part) {
  const { model } = part
  let byEngine = {}  // engine -> the scenario's modes on it
  const shown = {}  // engine -> the mode last shown on it, to come back to
  // Another engine: its mode last shown in this scenario, else its first; the player
  // keeps the step (within that timeline's last).
  const pick = (next) => {
    const modes = byEngine[next] || []
    if (modes.length) { ask({ mode: modes.includes(shown[next]) ? shown[next] : modes[0] }) }
  }
  const group = pickerPart(part, (at) => {
    const found = scenarioModes(at)
    byEngine = {}
    for (const m of found.modes) {
      const e = engineOf(m, model.sglang_modes)
      byEngine[e] = [...(byEngine[e] || []), m]
    }
    const engine = engineOf(found.mode, model.sglang_modes)
    shown[engine] = found.mode
    return { options: model.engines.filter(([e]) => e in byEngine), value: engine }
  }, pick)
  group.dataset.testid = 'engine-picker'
  arrowsOnlyMoveFocus(group)  // another engine is a new page of views: Enter or a click
  return group
}
