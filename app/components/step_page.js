import * as player from './player.js'
import * as scenarioPicker from './scenario_picker.js'
import * as pickerParts from './pickers.js'
import * as codePanel from './code_panel.js'
import * as chainDeck from './chain_deck.js'
import * as prefillDeck from './prefill_deck.js'
import * as quiz from './quiz.js'
import * as glossary from './glossary.js'
import * as panelTabs from './panel_tabs.js'
import * as keyboard from './keyboard.js'
import * as playgroundEditor from './editor.js'
import { requester } from './requests.js'
import { ask } from './position.js'
import { takeOver } from './early.js'
import { deckSlot } from './deck_slot.js'
import { box, button, cssSheet, el } from './dom.js'

// The stepping page (step_page.py): every view of a scenario, laid out here. Each part is
// a module that was a component of its own; its model is a view of this one (`part`):
// `names` maps a name the part reads to the page's parameter, `values` are its own
// (constants, its children).
function part(model, { names = {}, values = {} } = {}) {
  const real = (name) => names[name] || name
  return new Proxy({}, {
    get(_, name) {
      if (name in values) { return values[name] }
      if (name === 'on') {  // (a value of the part's own never changes)
        const own = (event) => event in values || event in (values.children || {})
        return (event, callback) => { if (!own(event)) { model.on(real(event), callback) } }
      }
      if (name === 'get_child') { return (child) => values.children[child] || [] }
      const value = model[real(name)]
      return typeof value === 'function' ? value.bind(model) : value
    },
    set(_, name) {  // (the position is the browser's: Python is asked, requests.js)
      throw new Error(`a part of the stepping page writes no parameter (${String(name)})`)
    },
  })
}

export function render({ model }) {
  // On the static site this page was drawn before Python (app/page/early_page.js): it
  // becomes the live one, and Python answers its requests from now on.
  const early = takeOver(model)
  if (early) { return early }
  const embed = model.layout === 'embed'
  const request = requester(model)  // Python's answers to the learner's picks
  const sheets = model.sheets.map(cssSheet)  // each made once, for every part
  // A part in a shadow root of its own, with its own stylesheets, as when it was a
  // component: `host` is its element on the page (a deck hides it when it has no page).
  function shadowed(name, className = '') {
    const host = el('div', `part part-${name} ${className}`.trim())
    const root = host.attachShadow({ mode: 'open' })
    root.adoptedStyleSheets = (model.part_sheets[name] || []).map((index) => sheets[index])
    return [host, root]
  }
  function mount(name, render, options = {}, className = '') {
    const [host, root] = shadowed(name, className)
    root.append(render({ model: part(model, options), view: { el: host } }))
    return host
  }
  const deck = (name) => mount(name, deckSlot, { values: { view: name } })
  // HTML that needs no Python and no step (the labs' link, the address's notice).
  const html = (name, text) => {
    const [host, root] = shadowed(name)
    root.innerHTML = text
    host.hidden = !text
    return host
  }

  // The controls: the pickers and the step bar.
  const pickers = box('pickers',
    mount('scenario', scenarioPicker.render,
      { names: { options: 'scenario_options', label: 'scenario_label' } },
      model.scenario_options.length > 1 ? '' : 'gone'),
    mount('engine', pickerParts.engines, { names: { label: 'engine_label' } }),
    mount('mode', pickerParts.modes, { names: { label: 'mode_label' } }),
  )
  const controls = box('controls', pickers,
    mount('player', player.render, { values: { ask: request } }))

  const code = mount('code', codePanel.render, {
    names: { picker_label: 'code_label' }, values: { ask: request },
  })
  const chain = mount('chain', chainDeck.render, { values: { view: 'chain', ask: request } })
  const prefill = mount('prefill', prefillDeck.render, {
    names: { labels: 'prefill_labels' }, values: { view: 'prefill', ask: request },
  })
  const questions = mount('quiz', quiz.render, { values: { compact: embed } })
  const terms = mount('glossary', glossary.render, { names: { html: 'glossary_html' } })
  const narration = deck('NarrationView')
  const notice = html('notice', model.notice_html)
  model.on('remove', keyboard.followKeys(model.key_moves))

  const page = el('div', `step-page ${embed ? 'embed' : 'page'}`)
  const tabs = (labels, objects, dense = false) =>
    mount('tabs', panelTabs.render, { values: { labels, active: 0, dense, children: { objects } } })
  if (embed) {
    const story = model.quiz_in_tabs
      ? [tabs(model.story_tabs, [narration, questions], true)]
      : [narration, questions]
    // (styled by panel_tabs.css: the tabs draw their panels in their own shadow root)
    const cache = box('cache',
      box('cache-column', deck('PoolView'), deck('QueueView'), deck('LogView')),
      box('cache-column', deck('HashMapView'), deck('RequestsView')))
    page.append(deck('EmbedHeaderView'), notice, controls, ...story,
      tabs(model.embed_tabs,
        [cache, code, deck('MetricsView'), chain, prefill, deck('OffloadView'), terms]))
  } else {
    // The lab's link and "Edit a copy" share a line: the pool stays on a projector's first
    // screen (1280x720).
    const fork = button('fork', model.fork_label, () => ask({ fork: true }))  // (the player asks)
    const showFork = () => { fork.hidden = !model.fork_shown }
    showFork()
    model.on('fork_shown', showFork)
    const ways = box('ways', html('ways', model.ways_html), fork)
    const editor = mount('editor', playgroundEditor.render, { values: { ask: request } }, 'editor')
    const views = box('views', editor,
      box('views-pool', deck('PoolView'), deck('OffloadView'), deck('QueueView'),
        deck('HashMapView'), deck('RequestsView'), chain),
      box('views-more', code, deck('MetricsView'), deck('LogView'), prefill, terms))
    page.append(deck('HeaderView'), ways, notice, controls, narration, questions, views)
  }
  return page
}
