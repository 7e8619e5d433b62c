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
  let heard = null  // the player's position

  // The mode of the player's timeline, if it is this scenario's.
  function chosen() {
    const prefix = model.scenario + '/'
    return heard && heard.key.startsWith(prefix) ? heard.key.slice(prefix.length) : null
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
        if (input.checked) { ask({ mode }) }
        check()  // the player may refuse (a timeline it does not hold)
      })
      inputs.push(input)
      option.append(input, document.createTextNode(mode))
      return option
    })
    group.replaceChildren(caption, ...options)
    check()
  }
  model.on(['scenario', 'modes'], build)
  build()
  follow(model, (at) => { heard = at; check() })
  return group
}
