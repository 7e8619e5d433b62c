import { rememberDetails, restoreDetails } from './remember_details.js'
import { follow } from './position.js'

// A view's slot: its page of the page's document at the player's position (a view's
// part of the stepping page; the hash chain's and the prefill calculator's add to it).
export function deckSlot({ model, view }) {
  const host = document.createElement('div')
  rememberDetails(host)
  let shown = null
  function show(at) {
    const deck = at.views && at.views[model.view]
    const order = deck && deck.orders[at.key]
    if (!order) { return }  // a timeline whose pages are still on their way
    const index = order[at.step]
    if (index === null) { return }  // Python sends it: keep the page shown until then
    const page = index === undefined ? '' : deck.pages[index]
    host.dataset.at = `${at.key}@${at.step}`  // the position shown (tests, benchmarks)
    if (page === shown) { return }
    shown = page
    // A picker in the page (data-pick) keeps the keyboard's focus across the swap.
    const focused = host.getRootNode().activeElement
    const picker = focused && host.contains(focused) ? focused.dataset.pick : undefined
    host.innerHTML = page
    restoreDetails(host)
    if (picker) { host.querySelector(`[data-pick="${picker}"]`)?.focus() }
    // An empty page hides the whole component, margins included.
    if (view && view.el) { view.el.style.display = page ? '' : 'none' }
  }
  follow(model, show)
  return host
}
