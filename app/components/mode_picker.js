import { WORKS_EARLY } from './early.js'
import { announce, onStep } from './step_channel.js'

let groups = 0  // radio names must not collide between pickers on one page

export function render({ model }) {
  const group = document.createElement('div')
  group.className = 'modes'
  group.setAttribute('role', 'radiogroup')
  group.setAttribute('aria-label', model.label)
  group.setAttribute(WORKS_EARLY, '')  // works before Python (early_steps.py)
  const name = `pcl-mode-${++groups}`
  let inputs = []

  function chosen() {
    const channel = globalThis.__pclStep
    const prefix = model.scenario + '/'
    if (channel && channel.key.startsWith(prefix)) {
      const mode = channel.key.slice(prefix.length)
      if (model.modes.includes(mode)) { return mode }
    }
    return model.mode
  }
  function check() {
    const mode = chosen()
    for (const input of inputs) { input.checked = input.value === mode }
  }
  function build() {
    const caption = document.createElement('span')
    caption.className = 'modes-label'
    caption.textContent = model.label
    inputs = []
    const options = model.modes.map((mode) => {
      const option = document.createElement('label')
      option.className = 'mode'
      const input = document.createElement('input')
      input.type = 'radio'
      input.name = name
      input.value = mode
      input.addEventListener('change', () => {
        if (input.checked) { announce(model.scenario + '/' + mode, 0) }
      })
      inputs.push(input)
      option.append(input, document.createTextNode(mode))
      return option
    })
    group.replaceChildren(caption, ...options)
    check()
  }
  model.on(['scenario', 'modes'], build)
  model.on('mode', check)
  onStep(model, check)
  build()
  return group
}
