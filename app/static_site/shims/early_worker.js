// In <head>: starts the worker first thing, so Pyodide loads while the page still fetches
// and runs Bokeh's 3 MB of JS. Its messages wait until the page script sets onmessage.
// The worker's script is the tag's data-worker; the worker is the tag's `worker` (no
// page-wide global): Panel's page script and the early page take it from there.
(() => {
  const tag = document.currentScript
  const worker = new Worker(tag.dataset.worker, {
    name: JSON.stringify(window.location),
  })
  const early = []
  let handler = null
  worker.addEventListener('message', (event) => { if (!handler) { early.push(event) } })
  Object.defineProperty(worker, 'onmessage', {
    get: () => handler,
    set: (fn) => {
      handler = fn
      worker.addEventListener('message', fn)
      early.splice(0).forEach(fn)
    },
  })
  tag.worker = worker
})()
