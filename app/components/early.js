// On <body> while the static site's early page steps before Python (app/page/early_page.js).
export const EARLY = 'pcl-early'
// The live stepping page, rendering, offers its model on this event (detail: {model,
// take}); the page before Python, if it drew that page, gives it over with `take(el)`.
export const LIVE_EVENT = 'pcl-live'

// The element the page before Python drew for this live model, now the live page's (its
// player, position and Play kept), or null: none to take over.
export function takeOver(model) {
  let taken = null
  const take = (el) => { taken = el }
  document.dispatchEvent(new CustomEvent(LIVE_EVENT, { detail: { model, take } }))
  return taken
}
