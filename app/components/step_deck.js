import { rememberDetails, restoreDetails } from './remember_details.js'
import { follow } from './position.js'

// An order's mark for a page Python has not sent yet (step_deck.py's NOT_SENT).
const NOT_SENT = -1

export function render({ model, view }) {
  const host = document.createElement('div')
  rememberDetails(host)
  let shown = null
  let heard = null  // the player's position
  function show() {
    // Until the player names a timeline held here (a new scenario still arriving), the
    // deck shows its own position.
    const at = heard && heard.key in model.orders ? heard : { key: model.key, step: model.step }
    const order = model.orders[at.key]
    const index = order ? order[at.step] : undefined
    if (index === NOT_SENT) { return }  // Python sends it: keep the page shown until then
    const page = index === undefined ? '' : model.pages[index]
    host.dataset.at = `${at.key}@${at.step}`  // the position shown (tests, benchmarks)
    if (page === shown) { return }
    shown = page
    host.innerHTML = page
    restoreDetails(host)
    // An empty page hides the whole component, margins included.
    if (view && view.el) { view.el.style.display = page ? '' : 'none' }
  }
  // One load changes pages, orders, key and step, each heard apart: a page equal to the
  // one shown is not parsed again.
  model.on(['pages', 'orders', 'key', 'step'], show)
  show()
  follow(model, (at) => { heard = at; show() })
  return host
}
