// The page's address: the one module that reads and writes it (window.location,
// window.history, popstate), for the page before Python and after (tests/app/test_address.py
// holds every other module to it). Python reads the first page's with app/data/url.py's
// parse_link, whose names (`names`: url.py's browser_names) each caller is given by its
// component's parameters or the static site's early-page config.

// The address's query ('?scenario=reset&step=3', or '').
export const currentQuery = () => window.location.search

// A parameter's first value, as parse_link takes it; null: not in the address.
export const queryParameter = (name, search = currentQuery()) => new URLSearchParams(search).get(name)

// Whether a value says yes (`embed=1`, `quiz=true`).
export const isTrue = (value, names) => value !== null && names.true.includes(value.toLowerCase())

// The compact layout (the write-up's `embed=1`).
export const compactAsked = (names, search = currentQuery()) => isTrue(queryParameter(names.embed, search), names)

// The start page: the address names no position, and is not the compact layout.
export function startAsked(names, search = currentQuery()) {
  const asked = new URLSearchParams(search)
  return !compactAsked(names, search) && !names.position.some((name) => asked.has(name))
}

// The static site's early page the address names, as parse_link would open it; null: none
// (Python's). config: [page names, the start page's, default scenario, names, the
// playground page's name (null: none), ...]. A scenario parse_link refuses opens the default
// scenario's page, which says so (openedAt).
export function pageName(config, search = currentQuery()) {
  const [NAMES, START, DEFAULT, names, PLAYGROUND] = config
  const compact = compactAsked(names, search)
  const suffix = compact ? names.embed_suffix : ''
  if (queryParameter(names.playground, search)) { return compact ? null : PLAYGROUND }
  if (startAsked(names, search)) { return START }
  const scenario = queryParameter(names.scenario, search) ?? DEFAULT
  if (NAMES.includes(scenario + suffix)) { return scenario + suffix }
  return scenario === names.playground ? null : DEFAULT + suffix  // (the empty playground)
}

// The longest value parse_link's notices quote whole (engine/lab/shared/quoting.py).
const QUOTE_LIMIT = 80
// What Python prints as it is (str.isprintable): letters, marks, numbers, punctuation,
// symbols, the space.
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]*$/u

// How parse_link's notices quote a value (Python's repr of a string), as HTML; null: a value
// Python quotes otherwise (one it cannot print, or longer than the quote limit).
function quoted(value) {
  if (!PRINTABLE.test(value)) { return null }
  const quote = value.includes("'") && !value.includes('"') ? '"' : "'"
  let inner = value.replaceAll('\\', '\\\\')
  if (quote === "'") { inner = inner.replaceAll("'", "\\'") }
  if ([...inner].length > QUOTE_LIMIT) { return null }
  return (quote + inner + quote).replaceAll('&', '&amp;').replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#x27;')
}

// The position ({key, step, notices}) an early page opens the address at, as parse_link
// would, with the HTML of what parse_link's notices say of it (page.notices: url.py's
// notice_templates, escaped); null: Python's (another page's address, or a value the page
// cannot quote as Python does); {} for the start page. The parameters that choose the page (the layout)
// must be the page's own; any other that parse_link ignores (`utm_source`, `fbclid`), this
// ignores as well.
export function openedAt(page, search, names) {
  if (!page.lasts) { return {} }  // the start page: every address of it is its own
  const asked = new URLSearchParams(search)
  const built = new URLSearchParams(page.query)
  if (names.page.some((name) => asked.get(name) !== built.get(name))) { return null }
  const said = page.notices || {}
  const notices = []
  // The notice on the address's `value` (null: none to give), if the page can say it.
  const refused = (template, value) => {
    const shown = quoted(value)
    if (template === undefined || shown === null) { return false }
    notices.push(template.replaceAll(said.value, () => shown))  // (a `$&` is the value's)
    return true
  }
  const keys = Object.keys(page.lasts)
  const own = keys[0].slice(0, keys[0].indexOf('/'))
  const scenario = asked.get(names.scenario)
  if (scenario !== null && scenario !== own && !refused(said.scenario, scenario)) { return null }
  if (scenario === null && own !== page.default_scenario) { return null }
  let key = keys[0]
  const mode = asked.get(names.mode)
  if (mode !== null && keys.includes(own + '/' + mode)) {
    key = own + '/' + mode
  } else if (mode !== null && Object.hasOwn(said.policies || {}, mode)) {
    notices.push(said.policies[mode])
  } else if (mode !== null && !refused(said.mode, mode)) {
    return null
  }
  const text = asked.get(names.step)
  let step = 0
  if (text !== null && /^[0-9]+$/.test(text.trim()) && Number(text.trim()) <= page.lasts[key]) {
    step = Number(text.trim())
  } else if (text !== null && !refused((said.step || {})[key.slice(own.length + 1)], text)) {
    return null
  }
  return { key, step, notices }
}

// The notice's HTML of what openedAt's notices say (none: '').
export function noticeHtml(page, notices) {
  if (!notices.length) { return '' }
  const said = page.notices
  // (one pass: a value that spells an item's mark stays as it is)
  return said.frames[notices.length - 1].replace(new RegExp(said.item + '([0-9])', 'g'),
    (_, i) => notices[Number(i)])
}

// The timeline and step the address names: [key, step] of the first of `queries` (key ->
// the parameters that name that timeline) whose parameters it has, if `fits(key, step)`.
export function addressedIn(queries, names, fits, search = currentQuery()) {
  const here = new URLSearchParams(search)
  for (const [key, named] of Object.entries(queries)) {
    if (!Object.entries(named).every(([name, value]) => here.get(name) === value)) { continue }
    const text = (here.get(names.step) || '0').trim()
    if (/^[0-9]+$/.test(text) && fits(key, Number(text))) { return [key, Number(text)] }
  }
  return null
}

// Steps in quick succession (Play, held arrow keys) write the address once.
const WRITE_AFTER_MS = 150

// Writes the address a moment (`afterMs`) after the last `soon`, so steps in quick
// succession (Play, a held arrow key) write it once, off the click's path: `params` (an
// object, or a query string) set,
// `dropped` names deleted where `params` has none, every other parameter kept (embed=1).
// A new scenario pushes a history entry, so Back returns to the scenario left where it was
// left; anything else (a step, a mode) replaces the entry.
export function addressWriter(names, afterMs = WRITE_AFTER_MS) {
  let timer = null
  let pending = null  // {params, dropped}: what the timer will write
  const write = () => {
    timer = null
    const params = new URLSearchParams(currentQuery())
    const before = params.get(names.scenario)
    for (const name of pending.dropped) {
      if (!(name in pending.params)) { params.delete(name) }
    }
    for (const [name, value] of Object.entries(pending.params)) { params.set(name, value) }
    const search = '?' + params.toString()
    if (search === currentQuery()) { return }
    const url = window.location.pathname + search + window.location.hash
    if (params.get(names.scenario) !== before) {
      window.history.pushState(null, '', url)
    } else {
      window.history.replaceState(window.history.state, '', url)
    }
  }
  const cancel = () => {
    if (timer === null) { return false }
    clearTimeout(timer)
    timer = null
    return true
  }
  return {
    soon(wanted, dropped = []) {
      const params = typeof wanted === 'string' ? Object.fromEntries(new URLSearchParams(wanted))
        : wanted
      // A new scenario within the wait: the entry left first takes its position.
      if (cancel() && pending.params[names.scenario] !== params[names.scenario]) { write() }
      pending = { params, dropped }
      timer = setTimeout(write, afterMs)
    },
    flush() { if (cancel()) { write() } },  // now, if a write waits
    cancel,
  }
}

// Calls `moved(query)` when the learner goes Back or Forward; returns what stops it.
export function onBackForward(moved) {
  const popped = () => moved(currentQuery())
  window.addEventListener('popstate', popped)
  return () => window.removeEventListener('popstate', popped)
}

// Loads `params` (an object, or a query string: '?lab=fleet') as a new page, keeping the
// address's own values of the `kept` parameters (the layout, when the scenario picker opens
// another scenario's page before Python).
export function loadPage(params, kept = []) {
  const next = new URLSearchParams(params)
  for (const name of kept) {
    const value = queryParameter(name)
    if (value !== null) { next.set(name, value) }
  }
  window.location.assign(window.location.pathname + '?' + next.toString())
}
