// The status line at the page's foot while Python starts on the static site: Panel's
// loading stage, then `hint` (or what `say` says since). It follows the stage until `stop()`.
import { el } from './dom.js'

export function statusNote(hint) {
  const note = el('div', 'pcl-early-note')
  note.setAttribute('role', 'status')
  note.dataset.testid = 'early-note'
  const stage = el('span', 'stage')
  const words = document.createTextNode(hint)
  note.append(stage, words)
  const copyStage = () => {
    const msg = document.querySelector('.pn-loading-msg')
    const text = msg ? msg.textContent : 'Starting Python.'
    if (stage.textContent !== text) { stage.textContent = text }  // (it watches itself too)
  }
  const watcher = new MutationObserver(copyStage)
  watcher.observe(document.body, { childList: true, subtree: true, characterData: true })
  copyStage()
  const say = (text) => { words.textContent = text }
  return { note, stop: () => watcher.disconnect(), say }
}
