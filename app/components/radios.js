// A captioned group of radio buttons (the mode and engine pickers): fills `group` with
// `caption` and one radio per [value, text] of `options`; picking one calls `pick(value)`,
// then `after()` (the player may refuse a pick, so the caller re-checks what it shows).
import { follow } from './position.js'
import { el } from './dom.js'

let groups = 0  // radio names must not collide between pickers on one page

export function radioGroup(label) {
  const group = el('div', 'modes')
  group.setAttribute('role', 'radiogroup')
  group.setAttribute('aria-label', label)
  return { group, name: `pcl-radio-${++groups}` }
}

// A picker part of the stepping page (the modes, the engines): at each position
// announced, `shown(at)` gives its [value, text] options and the value checked; the
// radios are built anew when the options change. Fewer than two options: nothing to
// pick, and the whole part hides, margins included.
export function pickerPart({ model, view }, shown, pick) {
  const radios = radioGroup(model.label)
  const group = radios.group
  let inputs = []
  let built = ''  // the options shown, as one string
  let value = null  // the value checked
  const check = () => { for (const input of inputs) { input.checked = input.value === value } }
  follow(model, (at) => {
    const now = shown(at)
    value = now.value
    const names = now.options.map(([v]) => v).join('/')
    if (names !== built) {
      built = names
      inputs = fillRadios(radios, model.label, now.options, pick, check)
    }
    const hidden = now.options.length < 2 ? 'none' : ''
    group.style.display = hidden
    if (view && view.el) { view.el.style.display = hidden }
    check()
  })
  return group
}

export function fillRadios({ group, name }, caption, options, pick, after) {
  const label = el('span', 'modes-label', caption)
  const inputs = []
  const items = options.map(([value, text]) => {
    const option = el('label', 'mode')
    const input = el('input')
    input.type = 'radio'
    input.name = name
    input.value = value
    input.addEventListener('change', () => {
      if (input.checked) { pick(value) }
      after()
    })
    inputs.push(input)
    option.append(input, document.createTextNode(text))
    return option
  })
  group.replaceChildren(label, ...items)
  return inputs
}

// Arrow keys on a radio group check the next radio, so they would pick it: in `group`
// they only move the focus, and Enter or Space (or a click) picks the focused radio.
export function arrowsOnlyMoveFocus(group) {
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
export function engineOf(mode, sglangModes) {
  return sglangModes.includes(mode) ? 'sglang' : 'vllm'
}

// The modes of the announced position's scenario, in the document's order, and its mode
// (or the mode picked, if the player waits for its last step: player.js).
export function scenarioModes(at) {
  const scenario = at.key.slice(0, at.key.indexOf('/'))
  const modes = Object.keys(at.lasts || {})
    .filter((k) => k.startsWith(scenario + '/')).map((k) => k.slice(scenario.length + 1))
  return { modes, mode: (at.waiting || at.key).slice(scenario.length + 1) }
}
