// The learner's position on the page (player.js owns it): the player announces each
// position on AT_EVENT (detail {key, step}); everything else asks it on ASK_EVENT
// (detail: a move, a mode or a position, a `reply` callback for the position now, or
// `views`: a view's pages anew, Python's answer to a pick).
export const AT_EVENT = 'pcl-at'
export const ASK_EVENT = 'pcl-ask'

export function ask(request) {
  document.dispatchEvent(new CustomEvent(ASK_EVENT, { detail: request }))
}

// Calls `moved({key, step})` with the position now (if a player is on the page) and
// each one announced after it, while the model is on the page.
export function follow(model, moved) {
  const heard = (event) => moved(event.detail)
  document.addEventListener(AT_EVENT, heard)
  model.on('remove', () => document.removeEventListener(AT_EVENT, heard))
  ask({ reply: moved })
}
