// "Skip to the step controls": the first stop of the page's tab order, shown when it has
// focus, for a keyboard that would otherwise pass about a dozen stops first. One per
// page, outside Panel's shadow roots (a #fragment cannot reach into them): it focuses
// the control it is given.
import { addStyle } from './dom.js'

const LINK_ID = 'pcl-skip-link'

export function addSkipLink(target, text, style) {
  addStyle(style, LINK_ID + '-style')
  document.getElementById(LINK_ID)?.remove()  // (a page replaced: the newest control)
  const link = document.createElement('a')
  link.id = LINK_ID
  link.href = '#'
  link.textContent = text
  link.addEventListener('click', (event) => {
    event.preventDefault()
    target.focus()
  })
  document.body.prepend(link)
  return () => link.remove()
}
