import { WORKS_EARLY } from './early.js'
import { ask, follow } from './position.js'

let groups = 0  // radio names must not collide between pickers on one page

export function render({ model }) {
  const group = document.createElement('div')
  group.className = 'modes'
  group.setAttribute('role', 'radiogroup')
  group.setAttribute('aria-label', model.label)
  group.setAttribute(WORKS_EARLY, '')  // works before Python (early_steps.py)
  const name = `pcl-mode-${++groups}`
  let inputs = []
  let built = ''  // the modes shown, as one string
  let mode = null  // the mode of the player's timeline

  function check() {
    for (const input of inputs) { input.checked = input.value === mode }
  }
  // The modes of the player's scenario, in the bundle's order.
  function follows(at) {
    const scenario = at.key.slice(0, at.key.indexOf('/'))
    const modes = Object.keys(at.lasts || {})
      .filter((k) => k.startsWith(scenario + '/')).map((k) => k.slice(scenario.length + 1))
    mode = at.key.slice(scenario.length + 1)
    if (modes.join('/') !== built) { built = modes.join('/'); build(modes) }
    check()
  }
  function build(modes) {
    const caption = document.createElement('span')
    caption.className = 'modes-label'
    caption.textContent = model.label
    inputs = []
    const options = modes.map((mode) => {
      const option = document.createElement('label')
      option.className = 'mode'
      const input = document.createElement('input')
      input.type = 'radio'
      input.name = name
      input.value = mode
      input.addEventListener('change', () => {
        if (input.checked) { ask({ mode }) }
        check()  // the player may refuse (a timeline it does not hold)
      })
      inputs.push(input)
      option.append(input, document.createTextNode(mode))
      return option
    })
    group.replaceChildren(caption, ...options)
  }
  follow(model, follows)
  return group
}
