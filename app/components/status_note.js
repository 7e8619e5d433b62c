// The status line at the page's foot while Python starts on the static site: Panel's
// loading stage, then `hint`. It follows the stage until `stop()`.
export function statusNote(hint) {
  const note = document.createElement('div')
  note.className = 'pcl-early-note'
  note.setAttribute('role', 'status')
  note.dataset.testid = 'early-note'
  const stage = document.createElement('span')
  stage.className = 'stage'
  note.append(stage, document.createTextNode(hint))
  const copyStage = () => {
    const msg = document.querySelector('.pn-loading-msg')
    const text = msg ? msg.textContent : 'Starting Python.'
    if (stage.textContent !== text) { stage.textContent = text }  // (it watches itself too)
  }
  const watcher = new MutationObserver(copyStage)
  watcher.observe(document.body, { childList: true, subtree: true, characterData: true })
  copyStage()
  return { note, stop: () => watcher.disconnect() }
}
