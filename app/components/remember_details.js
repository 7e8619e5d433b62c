// A <details data-remember="NAME"> in a deck's page keeps the learner's choice, open or
// closed, across steps, scenarios and visits: a collapsed "How to read this" stays
// collapsed. Kept in localStorage; where the browser refuses it (a sandboxed frame,
// storage off) the page's own default holds.
import { store, stored } from './storage.js'

const PREFIX = 'pcl.details.'

// Apply the remembered choices to a page just put in.
export function restoreDetails(root) {
  for (const details of root.querySelectorAll('details[data-remember]')) {
    const choice = stored(PREFIX + details.dataset.remember)
    if (choice !== null) { details.open = choice === 'open' }
  }
}

// Remember each choice the learner makes under root (toggle does not bubble: captured).
export function rememberDetails(root) {
  root.addEventListener('toggle', (event) => {
    const details = event.target
    if (details instanceof HTMLDetailsElement && details.dataset.remember) {
      store(PREFIX + details.dataset.remember, details.open ? 'open' : 'closed')
    }
  }, true)
}
