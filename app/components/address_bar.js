import { addressWriter, loadPage, onBackForward } from './address.js'

// The workload lab's address (address_bar.py), written and followed by address.js.
export function render({ model }) {
  const address = addressWriter(model.address)
  const stop = onBackForward((query) => {
    address.cancel()
    model.send_msg({ query })
  })
  model.on('query', () => address.soon(model.query))
  model.on('load', () => { if (model.load) { loadPage(model.load) } })
  model.on('remove', () => {
    stop()
    address.flush()
  })
  // No write on load: the address that opened the page already says where it is.
  const el = document.createElement('div')
  el.style.display = 'none'
  return el
}
