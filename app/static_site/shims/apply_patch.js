// Part of the app's worker: applies one patch from the page in Python. Panel's worker put
// every patch in one Python global (`patch`) and ran the code that applies it on a later
// turn of the event loop (runPythonAsync), so a second message handled before that turn
// replaced the first: two messages that waited together (the worker busy in Python, or
// slow on a loaded machine) applied the second twice and the first never, and a knob's
// new value or a click was lost. Each patch is its own code's local here.
const APPLY_PATCH = `
from panel.io.pyodide import _convert_json_patch
from panel.io.state import state
state.curdoc.apply_json_patch(_convert_json_patch(patch), setter='js')
`

function applyPatch(patch) {  // eslint-disable-line no-unused-vars
  const scope = self.pyodide.toPy({})
  scope.set('patch', patch)
  return self.pyodide.runPythonAsync(APPLY_PATCH, { locals: scope }).finally(() => scope.destroy())
}
