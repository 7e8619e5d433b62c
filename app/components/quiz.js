import { isTrue, queryParameter } from './address.js'
import { follow } from './position.js'
import { el } from './dom.js'
import { store, stored } from './storage.js'

// Predict, then see (quiz.py): the questions of the step shown, answered in the browser,
// at the position the player (player.js) announces.
// In the embed the quiz shares a tab row with the narration (panel_tabs.js): it asks to
// be seen while a question waits, and gives the place back at a step with none.
const REVEAL_EVENT = 'pcl-reveal'
const CONCEAL_EVENT = 'pcl-conceal'

function load(name) {
  try { return JSON.parse(stored(name)) || {} } catch { return {} }
}
const save = (name, value) => store(name, JSON.stringify(value))

export function render({ model }) {
  const root = el('section', 'quiz')
  root.dataset.testid = 'quiz'
  if (model.compact) { root.classList.add('compact') }
  root.setAttribute('aria-label', 'Predict, then see')
  const saved = load(model.storage_key)
  saved.answers = saved.answers || {}
  const asked = queryParameter(model.address.quiz)
  // The address decides if it says; else the full page is on unless switched off.
  let on = asked !== null ? isTrue(asked, model.address) : (!model.compact && !saved.off)

  const score = () => {
    const given = Object.values(saved.answers)
    return [given.filter((a) => a.right).length, given.length]
  }

  function verdict(q, given) {
    const line = el('p', 'verdict ' + (given.right ? 'right' : 'wrong'))
    line.dataset.testid = 'verdict'
    line.append(el('b', '', given.right ? 'Right. ' : 'Not quite. '),
      document.createTextNode(q.explain + ' Step forward to see it.'))
    if (model.compact) {  // the embed has no score bar: the score goes here
      const [right, total] = score()
      line.append(el('span', 'score', ` (${right} of ${total} right)`))
    }
    return line
  }

  function question(q, id) {
    const box = el('fieldset', 'question')
    box.dataset.testid = 'question'
    box.dataset.kind = q.kind
    box.append(el('legend', '', q.prompt))
    const options = el('div', 'options')
    const given = saved.answers[id]
    q.options.forEach((text, i) => {
      const button = el('button', 'option', text)
      button.dataset.index = String(i)
      if (given) {
        button.disabled = true
        if (i === q.answer) { button.classList.add('right') }
        if (i === given.choice && !given.right) { button.classList.add('wrong') }
        if (i === given.choice) { button.setAttribute('aria-pressed', 'true') }
      }
      button.addEventListener('click', () => {
        saved.answers[id] = { choice: i, right: i === q.answer }
        save(model.storage_key, saved)
        show()
      })
      options.append(button)
    })
    box.append(options)
    if (given) { box.append(verdict(q, given)) }
    return box
  }

  // The player's position, with the document's questions (quiz.py).
  let heard = { key: '', step: 0, questions: {} }
  function show() {
    const at = heard
    const steps = at.questions[at.key] || []
    const here = on ? (steps[at.step] || []) : []
    root.replaceChildren()
    // A timeline with no question anywhere (SGLang's) has nothing to switch on or score.
    const asks = steps.some((questions) => questions && questions.length)
    root.hidden = (model.compact && !on) || !asks
    const bar = el('div', 'bar')
    const toggle = el('label', 'toggle')
    const box = el('input')
    box.type = 'checkbox'
    box.checked = on
    box.dataset.testid = 'quiz-toggle'
    box.addEventListener('change', () => {
      on = box.checked
      saved.off = !on
      save(model.storage_key, saved)
      show()
    })
    toggle.append(box, document.createTextNode(' Predict, then see'))
    const [right, total] = score()
    const tally = el('span', 'score', `${right} of ${total} right`)
    tally.dataset.testid = 'quiz-score'
    tally.dataset.right = String(right)
    tally.dataset.total = String(total)
    bar.append(toggle, tally)
    if (!model.compact) { root.append(bar) }  // the embed: the address decides, no switch
    root.dataset.at = `${at.key}@${at.step}`
    root.dataset.on = String(on)
    const id = (i) => `${at.key}@${at.step}#${i}`
    if (!model.compact) {
      here.forEach((q, i) => root.append(question(q, id(i))))
      return
    }
    // The embed: one question at a time, the first not answered yet (else the last).
    const waiting = here.findIndex((q, i) => !saved.answers[id(i)])
    const shown = waiting >= 0 ? waiting : here.length - 1
    if (waiting > 0) {  // the answer just given stays in view above the next question
      root.append(verdict(here[waiting - 1], saved.answers[id(waiting - 1)]))
    }
    if (shown >= 0) {
      const box = question(here[shown], id(shown))
      if (here.length > 1) { box.firstChild.dataset.of = `${shown + 1} of ${here.length}` }
      root.append(box)
    }
    if (!on) { return }
    const wanted = waiting >= 0 ? REVEAL_EVENT : here.length ? '' : CONCEAL_EVENT
    if (wanted) {
      requestAnimationFrame(() => root.dispatchEvent(
        new CustomEvent(wanted, { bubbles: true, composed: true })))
    }
  }
  show()
  follow(model, (at) => {
    const questions = at.questions || heard.questions
    if (!(at.key in questions) && root.dataset.at) { return }  // still on its way: keep
    heard = { ...at, questions }
    show()
  })
  return root
}
