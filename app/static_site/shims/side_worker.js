// The workload lab's side (app/data/side_runs.py), a worker of the app's worker: a second
// Python runtime that plays the overlay's run while the app's worker plays the
// learner's. It loads Pyodide and the project's wheel alone (this worker's name), never
// Panel; says it is ready; then answers each pickled workload with its pickled run, in
// the order they came. (site.py writes install_locked.js before it.)
/* global installLocked -- install_locked.js's, in the same file */
importScripts('./pyodide/pyodide.js')

const started = (async () => {
  self.pyodide = await loadPyodide()
  await installLocked([new URL(self.name, self.location.href).href])
  const side = self.pyodide.pyimport('app.data.side_runs')
  const ready = side.worker_ready()
  self.postMessage(ready, [ready.buffer])
  self.pclAnswered = 0  // how many runs it played (the site's tests read it)
  return side.worker_answer
})()

// Thrown uncaught, an error reaches the app's worker (the error event of its Worker),
// which then plays the runs itself.
const fail = (error) => { setTimeout(() => { throw error }) }
started.catch(fail)

self.addEventListener('message', (event) => {
  started.then((answer) => {
    const reply = answer(event.data)
    self.postMessage(reply, [reply.buffer])
    self.pclAnswered += 1
  }).catch(fail)
})
