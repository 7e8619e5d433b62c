// The stepping page's one channel to Python (step_page.py): a request carries an id and
// a name (`ask`); Python's reply, JSON text, carries the id back. Python answers in the
// order it is asked. Before Python (the static site's early page) nobody answers: the
// request waits, and the status line says it was asked (early_page.js).
export function requester(model) {
  let last = 0
  const waiting = new Map()  // id -> the caller's resolve
  model.on('reply_json', () => {  // (each reply carries its request's id: never the same)
    let reply
    try { reply = JSON.parse(model.reply_json) } catch { return }
    const done = waiting.get(reply.id)
    if (done) { waiting.delete(reply.id); done(reply) }
  })
  return (request) => new Promise((resolve) => {
    last += 1
    waiting.set(last, resolve)
    model.send_msg({ ...request, id: last })
  })
}
