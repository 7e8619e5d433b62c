// A playground link's early page, answered in the app's own worker (patches.py calls
// startEarlyPlayground once Pyodide is up, before Panel and Bokeh install): the project's
// wheel alone, so app/data/early_playground.py answers the page (app/page/early_page.js)
// seconds before the app starts, without a second Python runtime competing for the CPU.
// {type, seq, request} -> {type, seq, answer} or {type, seq, error}; patches.py sets
// self.pclWheel = {wheel, early: type, side} before this. The page asks before the wheel
// is in: its requests wait here until then.
/* global installLocked -- install_locked.js's, in the same worker */
const earlyAsked = []
let earlyAnswer = null
self.addEventListener('message', (event) => {
  const { type, seq, request } = event.data || {}
  if (type !== self.pclWheel.early) { return }
  if (earlyAnswer) { earlyAnswer(seq, request) } else { earlyAsked.push([seq, request]) }
})

async function startEarlyPlayground() {  // eslint-disable-line no-unused-vars
  const { wheel, early: type } = self.pclWheel
  const page = JSON.parse(self.name || '{}')
  if (!new URLSearchParams(page.search || '').get('playground')) { return }
  try {
    // A URL: this one wheel (the lock's entry depends on Panel, for the app).
    await installLocked([new URL(wheel, self.location.href).href])
    const handle = self.pyodide.pyimport('app.data.early_playground').handle
    earlyAnswer = (seq, request) => {
      try {
        self.postMessage({ type, seq, answer: handle(request) })
      } catch (error) {
        self.postMessage({ type, seq, error: String(error) })
      }
    }
    earlyAsked.splice(0).forEach(([seq, request]) => earlyAnswer(seq, request))
  } catch (error) {
    console.warn('early playground: the live page will show this link', error)
  }
}
