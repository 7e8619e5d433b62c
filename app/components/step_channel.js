// The page-wide step channel: the controls write {key, step} here and fire STEP_EVENT.
const STEP_EVENT = 'pcl-step'
export function announce(key, step) {
  globalThis.__pclStep = { key, step }
  document.dispatchEvent(new CustomEvent(STEP_EVENT))
}
// Where to be: the channel's position if `holds` its timeline, else the model's own.
export function position(model, holds) {
  const channel = globalThis.__pclStep
  return channel && holds(channel.key) ? channel : { key: model.key, step: model.step }
}
export function onStep(model, callback) {
  document.addEventListener(STEP_EVENT, callback)
  model.on('remove', () => document.removeEventListener(STEP_EVENT, callback))
}
