// "Skip to the step controls": the first stop of the page's tab order, shown when it has
// focus, for a keyboard that would otherwise pass about a dozen stops first. One per
// page, outside Panel's shadow roots (a #fragment cannot reach into them): it focuses
// the control it is given.
const LINK_ID = 'pcl-skip-link'

export function addSkipLink(target, text, style) {
  if (!document.getElementById(LINK_ID + '-style')) {
    const sheet = document.createElement('style')
    sheet.id = LINK_ID + '-style'
    sheet.textContent = style
    document.head.append(sheet)
  }
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
