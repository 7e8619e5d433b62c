// The early playground's worker (early_playground.js starts it): Pyodide with no package
// but the project's wheel, so a playground link's views come seconds before Panel's
// worker has loaded Panel and Bokeh. Each message asks app/early_playground.py's
// handle(): {seq, wheel, request} -> {seq, answer} or {seq, error}, in order.
importScripts('./pyodide/pyodide.js')

let handle = null
async function start(wheel) {
  const pyodide = await loadPyodide()
  const failed = []
  // A URL: this one wheel, not the lock's entry (which depends on Panel, for the app).
  await pyodide.loadPackage(wheel, {
    messageCallback: () => {},
    errorCallback: (msg) => { failed.push(msg) },
  })
  if (failed.length) { throw new Error(failed.join('; ')) }
  return pyodide.pyimport('app.early_playground').handle
}
self.onmessage = async (event) => {
  const { seq, wheel, request } = event.data
  if (!handle) { handle = start(wheel) }
  try {
    const answer = (await handle)(request)
    self.postMessage({ seq, answer })
  } catch (error) {
    self.postMessage({ seq, error: String(error) })
  }
}
