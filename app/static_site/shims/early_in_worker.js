// The early playground, in the app's own worker (patches.py calls it once Pyodide is up,
// before Panel and Bokeh install): for a playground link, the project's wheel alone, so
// app/page/early_playground.py answers the page (early_playground.js) seconds before the app
// starts, without a second Python runtime competing for the CPU.
// {type, seq, request} -> {type, seq, answer} or {type, seq, error}; seq 0, unasked, is
// the link's own page.
async function startEarlyPlayground(wheel, type) {  // eslint-disable-line no-unused-vars
  const page = JSON.parse(self.name || '{}')
  if (!new URLSearchParams(page.search || '').get('playground')) { return }
  try {
    const failed = []
    // A URL: this one wheel (the lock's entry depends on Panel, for the app).
    await self.pyodide.loadPackage(new URL(wheel, self.location.href).href, {
      messageCallback: () => {},
      errorCallback: (msg) => { failed.push(msg) },
    })
    if (failed.length) { throw new Error(failed.join('; ')) }
    const handle = self.pyodide.pyimport('app.page.early_playground').handle
    const answer = (seq, request) => {
      try {
        self.postMessage({ type, seq, answer: handle(request) })
      } catch (error) {
        self.postMessage({ type, seq, error: String(error) })
      }
    }
    self.addEventListener('message', (event) => {
      if (event.data.type === type) { answer(event.data.seq, event.data.request) }
    })
    answer(0, JSON.stringify({ call: 'open', query: page.search }))
  } catch (error) {
    console.warn('early playground: the live page will show this link', error)
  }
}
