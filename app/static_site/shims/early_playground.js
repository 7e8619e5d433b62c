// In <head>: a playground link (?playground=CODE) has no pre-rendered copy, its scenario
// is the learner's own. The engine and the pure renderers need no package, so the app's
// worker answers for them (early_in_worker.js, app/page/early_playground.py) before Panel and
// Bokeh are installed: this shows the link's views over the loading veil, steps,
// switches modes and plays an edited script; the live page then takes over at the
// learner's mode and step, with the edited script typed into its editor.
// The tag's data-early: [the script field's label, the player's two events
// (components/position.js), the messages' type]; data-style: this page's CSS.
(() => {
  if (!new URLSearchParams(window.location.search).get('playground')) { return }
  const tag = document.currentScript
  const [SCRIPT_LABEL, AT_EVENT, ASK_EVENT, TYPE] = JSON.parse(tag.dataset.early)
  const STYLE = tag.dataset.style
  const HANDOVER_MS = 10000  // the live page plays an edited script in well under this
  const worker = window.__pclWorker  // the app's (early_worker.js)
  const waiting = new Map()
  let asked = 0
  worker.addEventListener('message', (event) => {
    const { type, seq, answer, error } = event.data
    if (type !== TYPE || !waiting.has(seq)) { return }
    const { resolve, reject } = waiting.get(seq)
    waiting.delete(seq)
    if (error === undefined) { resolve(JSON.parse(answer)) } else { reject(new Error(error)) }
  })
  const opened = new Promise((resolve, reject) => { waiting.set(0, { resolve, reject }) })
  const ask = (request) => new Promise((resolve, reject) => {
    asked += 1
    waiting.set(asked, { resolve, reject })
    worker.postMessage({ type: TYPE, seq: asked, request: JSON.stringify(request) })
  })
  const live = () => document.body && !document.body.classList.contains('pn-loading')
  // Asks the live page's player for a position (components/position.js).
  const askPlayer = (key, step) => {
    document.dispatchEvent(new CustomEvent(ASK_EVENT, { detail: { key, step } }))
  }
  const deepAll = (root, selector, out = []) => {
    out.push(...root.querySelectorAll(selector))
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { deepAll(el.shadowRoot, selector, out) }
    }
    return out
  }
  const element = (name, props = {}, ...children) => {
    const el = Object.assign(document.createElement(name), props)
    el.append(...children)
    return el
  }

  let linked = null  // the link's own page: what the live page opens on
  let shown = null   // the page on screen
  let host = null
  let parts = null
  let queued = null  // the newest edit, sent when the one in flight is answered
  let editing = false

  function show(page) {
    if (!host) { return }  // the live page has taken over
    shown = page
    const at = `${page.key}@${page.step}`
    parts.header.innerHTML = page.header
    parts.narration.innerHTML = page.narration
    parts.narration.dataset.at = at
    parts.views.replaceChildren(...Object.entries(page.views).map(([name, html]) => {
      const view = element('div', { className: 'early-view', innerHTML: html })
      view.dataset.view = name
      view.dataset.at = at
      return view
    }))
    parts.counter.textContent = `Step ${page.step} / ${page.last}`
    parts.counter.dataset.step = String(page.step)
    parts.back.disabled = parts.restart.disabled = page.step === 0
    parts.forward.disabled = page.step >= page.last
    parts.modes.replaceChildren(...page.modes.map((mode) => {
      const input = element('input', { type: 'radio', name: 'mode', value: mode })
      input.checked = mode === page.mode
      input.addEventListener('change', () => go(mode, 0))
      return element('label', {}, input, ' ' + mode)
    }))
  }
  function go(mode, step) {
    ask({ call: 'show', name: shown.name, mode, step }).then(show, quit)
  }
  function edit() {
    queued = parts.script.value
    if (editing) { return }
    editing = true
    const script = queued
    queued = null
    ask({ call: 'edit', name: linked.name, mode: shown.mode, step: shown.step, script })
      .then((page) => {
        parts.message.textContent = page.error || ''
        if (!page.error) { show(page) }  // the last valid timeline stays otherwise
      }, quit)
      .finally(() => {
        editing = false
        if (queued !== null) { edit() }
      })
  }
  function build(page) {
    host = element('div')
    host.dataset.testid = 'early-playground'
    const root = host.attachShadow({ mode: 'open' })
    const button = (text, onClick) => {
      const b = element('button', { type: 'button', className: 'btn plain', textContent: text })
      b.addEventListener('click', onClick)
      return b
    }
    parts = {
      header: element('div'),
      restart: button('Restart', () => go(shown.mode, 0)),
      back: button('Step back', () => go(shown.mode, shown.step - 1)),
      forward: button('Step forward', () => go(shown.mode, shown.step + 1)),
      counter: element('div', { className: 'counter' }),
      modes: element('fieldset', { className: 'modes' }),
      script: element('textarea', { value: page.script, spellcheck: false }),
      message: element('div', { className: 'early-message', role: 'alert' }),
      narration: element('div'),
      views: element('div', { className: 'early-views' }),
    }
    parts.counter.dataset.testid = 'early-step-counter'
    parts.counter.setAttribute('aria-live', 'polite')
    parts.modes.setAttribute('aria-label', 'Mode')
    parts.script.addEventListener('input', edit)
    root.append(
      element('style', { textContent: page.css }),
      element('style', { textContent: STYLE }),
      element('div', { className: 'early-page' },
        parts.header,
        element('div', { className: 'early-bar' },
          parts.restart, parts.back, parts.forward, parts.counter, parts.modes),
        element('label', { className: 'early-script' }, SCRIPT_LABEL, parts.script),
        parts.message,
        parts.narration,
        parts.views),
      element('p', { className: 'early-note', role: 'status' },
        'Python is starting. Steps, modes and the script work now; ' +
        'the code, the hash chain and the other fields come with it.'))
    document.body.append(host)
    new MutationObserver(handOver).observe(document.body,
      { attributes: true, attributeFilter: ['class'] })
  }
  // The live page is ready: it carries on at the learner's mode and step, and gets the
  // edited script, if any, through its own editor (app/playground/editor.py plays it);
  // this stays on screen until the live page shows that script's timeline.
  // The live page's components render a moment after Bokeh's document: its player
  // answers once it is there (or the overlay leaves after HANDOVER_MS anyway).
  function whenPlayerAnswers(then, waited = 0) {
    let answered = false
    document.dispatchEvent(new CustomEvent(ASK_EVENT, { detail: { reply: () => { answered = true } } }))
    if (answered || waited >= HANDOVER_MS) { then(); return }
    setTimeout(() => whenPlayerAnswers(then, waited + 50), 50)
  }
  function handOver() {
    if (!live() || !host || host.inert) { return }
    host.inert = true
    whenPlayerAnswers(takeOver)
  }
  function takeOver() {
    if (shown.name === linked.name) {
      askPlayer(shown.key, shown.step)
      leave()
      return
    }
    askPlayer(`${linked.name}/${shown.mode}`, shown.step)  // Python's state learns it first
    const label = deepAll(document, 'label')
      .find((l) => l.textContent.trim().startsWith(SCRIPT_LABEL))
    const box = label && label.parentElement.querySelector('textarea')
    if (!box) { leave(); return }
    const arrived = (event) => {
      if (event.detail.key === shown.key) {
        document.removeEventListener(AT_EVENT, arrived)
        leave()
      }
    }
    document.addEventListener(AT_EVENT, arrived)
    setTimeout(leave, HANDOVER_MS)  // never left covering the live page
    box.value = parts.script.value
    box.dispatchEvent(new Event('input', { bubbles: true, composed: true }))
    box.dispatchEvent(new Event('change', { bubbles: true, composed: true }))
  }
  function leave() {
    if (host) { host.remove() }
    host = null
  }
  function quit(error) {
    leave()
    console.warn('early playground: Python will show this link', error)
  }

  opened.then((page) => {
    if (!page || live()) { return }
    linked = page
    build(page)
    show(page)
  }, quit)
})()
