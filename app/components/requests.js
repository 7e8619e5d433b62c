// An id-to-promise channel: `ask(request)` sends it with a new id (`send(request, id)`) and
// returns a promise that `settle(id, reply, error)` resolves with the reply, or rejects
// with the error (an id not waiting: nothing). The early page asks the app's worker so.
export function channel(send) {
  let last = 0
  const waiting = new Map()  // id -> the caller's {resolve, reject}
  const ask = (request) => new Promise((resolve, reject) => {
    last += 1
    waiting.set(last, { resolve, reject })
    send(request, last)
  })
  const settle = (id, reply, error) => {
    const done = waiting.get(id)
    if (!done) { return }
    waiting.delete(id)
    if (error === undefined) { done.resolve(reply) } else { done.reject(new Error(error)) }
  }
  return { ask, settle }
}

// The stepping page's one channel to Python (step_page.py): a request carries an id and
// a name (`ask`); Python's reply, JSON text, carries the id back. Python answers in the
// order it is asked. Before Python (the static site's early page) nobody answers: the
// request waits, and the status line says it was asked (early_page.js).
export function requester(model) {
  const { ask, settle } = channel((request, id) => model.send_msg({ ...request, id }))
  model.on('reply_json', () => {  // (each reply carries its request's id: never the same)
    let reply
    try { reply = JSON.parse(model.reply_json) } catch { return }
    settle(reply.id, reply)
  })
  return ask
}
