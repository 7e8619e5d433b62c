import { box, el } from './dom.js'
import { store, stored } from './storage.js'

// Tabs: one panel shown, the others one click away (the embed's panels take turns to fit
// 800x900); plain JavaScript, so they work before Python. A tab whose panel has nothing
// to show hides; a panel that asks to be seen brings its tab forward.
const REVEAL_EVENT = 'pcl-reveal'  // sent by a panel that wants to be seen (glossary.js)
const CONCEAL_EVENT = 'pcl-conceal'  // sent by a panel with nothing to show (quiz.js)
// The tab a learner chose, kept for this browser tab: on the static site the live page
// replaces the early page, whose tabs work before Python, and opens on it too.
const CHOSEN = 'pcl-tab:'
const remembered = (labels) => stored(CHOSEN + labels.join('|'), 'sessionStorage')
const remember = (labels, label) => store(CHOSEN + labels.join('|'), label, 'sessionStorage')

export function render({ model }) {
  const list = el('div', 'tablist')
  list.setAttribute('role', 'tablist')
  const panels = el('div', 'panels')
  const root = box(model.dense ? 'tabs dense' : 'tabs', list, panels)
  const chosen = model.labels.indexOf(remembered(model.labels))
  let active = chosen >= 0 ? chosen : model.active
  let buttons = []
  let boxes = []

  function select(index) {
    active = index
    buttons.forEach((b, i) => {
      b.setAttribute('aria-selected', String(i === index))
      b.tabIndex = i === index ? 0 : -1
    })
    boxes.forEach((box, i) => { box.hidden = i !== index })
  }
  // A deck with no page for this scenario hides its own element (deck_slot.js); a
  // layout Python hides (`visible`: the hash chain on SGLang) gets Bokeh's
  // `:host { display: none }` in its shadow root, so the computed style tells both; an
  // element not on the page yet (the early page's, at build) has only its own style.
  const hides = (child) => !child || child.style.display === 'none' ||
    getComputedStyle(child).display === 'none'
  function fitTabs() {
    boxes.forEach((box, i) => { buttons[i].hidden = hides(box.firstElementChild) })
    if (buttons[active] && buttons[active].hidden) { select(0) }
  }
  const watcher = new MutationObserver(fitTabs)
  function build() {
    const children = model.get_child('objects')
    buttons = model.labels.map((label, i) => {
      const b = el('button', 'tab', label)
      b.setAttribute('role', 'tab')
      b.dataset.testid = 'tab'
      b.addEventListener('click', () => { select(i); remember(model.labels, label) })
      return b
    })
    boxes = children.map((child) => {
      const box = el('div', 'panel')
      box.setAttribute('role', 'tabpanel')
      box.append(child)
      watcher.observe(child, { attributes: true, attributeFilter: ['style'] })
      if (child.shadowRoot) {  // where Bokeh writes a layout's visibility
        watcher.observe(child.shadowRoot, { childList: true, characterData: true, subtree: true })
      }
      return box
    })
    list.replaceChildren(...buttons)
    panels.replaceChildren(...boxes)
    select(Math.min(active, boxes.length - 1))
    fitTabs()
  }
  list.addEventListener('keydown', (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key]
    if (!step) { return }
    event.stopPropagation()  // (the page's arrow keys step the timeline)
    const shown = buttons.filter((b) => !b.hidden)
    const next = shown[(shown.indexOf(buttons[active]) + step + shown.length) % shown.length]
    select(buttons.indexOf(next))
    remember(model.labels, next.textContent)
    next.focus()
  })
  root.addEventListener(REVEAL_EVENT, (event) => {
    const index = boxes.findIndex((box) => event.composedPath().includes(box))
    if (index >= 0) { select(index) }
  })
  // A panel with nothing left to show hands its place back to the first tab.
  root.addEventListener(CONCEAL_EVENT, (event) => {
    const index = boxes.findIndex((box) => event.composedPath().includes(box))
    if (index > 0 && index === active) { select(0) }
  })
  model.on('objects', build)
  model.on('remove', () => watcher.disconnect())
  build()
  return root
}
