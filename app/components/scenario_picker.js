import { loadPage } from './address.js'
import { EARLY } from './early.js'
import { ask, follow } from './position.js'
import { el } from './dom.js'

export function render({ model }) {
  const label = el('label', 'scenario-picker')
  const select = el('select')
  label.append(el('span', '', model.label), select)
  let open = ['', '']  // the player's scenario: [name, title]

  function build() {
    const options = model.options.map(([name, title]) => new Option(title, name))
    if (open[0] && !model.options.some(([name]) => name === open[0])) {
      options.push(new Option(open[1], open[0]))  // the open playground
    }
    select.replaceChildren(...options)
    select.value = open[0]
  }
  // An arrow key, Home, End or a typed letter moves a closed select's value and fires
  // 'change' at once: that only shows another scenario here, and Enter opens it (a
  // pick in the open list, by click or Enter there, opens it at once). Leaving the
  // picker puts the open scenario back.
  let keyed = false  // the value moved by a key on the closed select
  let browsing = false  // showing a scenario Enter has not opened yet
  select.setAttribute('aria-description', 'Arrow keys browse the scenarios; Enter opens one')
  select.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      keyed = false
      if (browsing) {
        event.preventDefault()
        browsing = false
        go()
      }
      return
    }
    keyed = !['Tab', 'Escape', ' ', 'F4', 'Shift', 'Alt', 'Control', 'Meta'].includes(event.key) &&
      !event.altKey
  })
  select.addEventListener('pointerdown', () => { keyed = false })
  select.addEventListener('blur', () => {
    keyed = false
    if (browsing) {
      browsing = false
      select.value = open[0]
    }
  })
  select.addEventListener('change', () => {
    if (keyed) {
      keyed = false
      browsing = select.value !== open[0]
      return
    }
    go()
  })

  function go() {
    if (select.value === open[0]) { return }
    if (!document.body.classList.contains(EARLY)) {
      ask({ scenario: select.value })  // (the player asks Python: player.js)
      select.value = open[0]  // until Python opens it
      return
    }
    // Before Python: that scenario's own page (its early page), same layout.
    loadPage({ [model.address.scenario]: select.value }, [model.address.embed])
  }
  model.on('options', build)
  follow(model, (at) => {
    const scenario = at.scenario || open
    if (scenario[0] === open[0] && scenario[1] === open[1]) { return }
    open = scenario
    build()
  })
  build()
  return label
}
