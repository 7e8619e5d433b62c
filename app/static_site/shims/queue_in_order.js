// Inside the page's send_change (so no page-wide global): what waits while the app's
// worker is busy. Panel queued only a property's changes then and sent any other event (a
// button's click) at once, so a click overtook the knob changes queued before it and
// Python ran it on the knobs' old values. Here every event waits, in order; a property's
// newer value replaces an older one only when no other event (a click) came between them.
function queuedInOrder(queue, event) {  // eslint-disable-line no-unused-vars
  const change = (e) => Boolean(e.model && e.attr)
  if (!change(event)) { return [...queue, event] }
  let since = queue.length
  while (since > 0 && change(queue[since - 1])) { since -= 1 }
  const replaced = (old, i) => i >= since && old.model === event.model && old.attr === event.attr
  return [...queue.filter((old, i) => !replaced(old, i)), event]
}
