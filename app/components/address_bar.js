import { addressWriter, loadPage } from './address.js'

// The workload lab's address (address_bar.py), written by address.js. The lab only
// replaces its entry and opens another preset group as a new page: it has no entry of
// its own to go Back or Forward to (the browser reloads the page it left).
export function render({ model }) {
  const address = addressWriter(model.address)
  model.on('query', () => address.soon(model.query))
  model.on('load', () => { if (model.load) { loadPage(model.load) } })
  model.on('remove', () => address.flush())
  // No write on load: the address that opened the page already says where it is.
  const el = document.createElement('div')
  el.style.display = 'none'
  return el
}
