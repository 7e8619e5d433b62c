const scenarioOf = (query) => new URLSearchParams(query).get('scenario')

export function render({ model }) {
  let timer = null
  let pending = null  // the query the timer will write
  let entry = scenarioOf(model.query)  // the scenario this history entry shows
  const write = () => {
    timer = null
    const params = new URLSearchParams(window.location.search)
    for (const [key, value] of new URLSearchParams(pending)) { params.set(key, value) }
    const search = '?' + params.toString()
    if (search === window.location.search) { return }
    const url = window.location.pathname + search + window.location.hash
    const scenario = params.get('scenario')
    if (scenario !== entry) {
      entry = scenario
      window.history.pushState(null, '', url)
    } else {
      window.history.replaceState(window.history.state, '', url)
    }
  }
  const popped = () => {
    if (timer !== null) { clearTimeout(timer); timer = null }
    entry = scenarioOf(window.location.search)
    model.send_msg({ query: window.location.search })
  }
  window.addEventListener('popstate', popped)
  const schedule = () => {
    if (timer !== null) {
      clearTimeout(timer)
      // A new scenario within the wait: this entry first takes the position it was left at,
      // so Back returns there.
      if (scenarioOf(model.query) !== scenarioOf(pending)) { write() }
    }
    pending = model.query
    timer = setTimeout(write, model.debounce_ms)
  }
  model.on('query', schedule)
  model.on('load', () => {
    if (model.load) { window.location.assign(window.location.pathname + model.load) }
  })
  model.on('remove', () => {
    window.removeEventListener('popstate', popped)
    if (timer !== null) { clearTimeout(timer); write() }
  })
  // No write on load: the address that opened the page already says where it is.
  const el = document.createElement('div')
  el.style.display = 'none'
  return el
}
