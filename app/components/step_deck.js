import { rememberDetails, restoreDetails } from './remember_details.js'
import { onStep, position } from './step_channel.js'

// An order's mark for a page Python has not sent yet (step_deck.py's NOT_SENT).
const NOT_SENT = -1

export function render({ model, view }) {
  const host = document.createElement('div')
  rememberDetails(host)
  let shown = null
  function show() {
    const at = position(model, (key) => key in model.orders)
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
  onStep(model, show)
  show()
  return host
}
