import { box, button, el } from './dom.js'

// The playground editor, a part of the stepping page (app/views/editor.py is its Python
// half): the learner's pool and script. A change of any field asks Python to play the
// fields (`edit`, every field's text); the newest waits for the one in flight, so edits
// play in order and none stale. The reply says each field's message; the edited timeline
// comes as a new document (player.js keeps the mode and step). Python writes the fields
// (`editor`) only when it opens a playground itself (a copy, an import, Start empty, an
// address): each time with a new serial. Before Python (the static site's playground
// link) the app's worker answers `edit` (app/page/early_page.js); the buttons' requests
// wait for Python.

const TEXT_FIELDS = { title: 'input', num_gpu_blocks: 'input', block_size: 'input',
  setup: 'textarea', script: 'textarea' }
const CHECKBOX = 'sglang'

// A file's bytes as base64 (the request is JSON), in slices a call's arguments can hold.
function base64(buffer) {
  const bytes = new Uint8Array(buffer)
  let binary = ''
  for (let at = 0; at < bytes.length; at += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000))
  }
  return btoa(binary)
}

export function render({ model, view }) {
  const text = model.editor_text
  const root = el('section', 'playground')
  root.insertAdjacentHTML('afterbegin', text.heading)
  const controls = {}
  const said = {}
  const message = (name) => {
    said[name] = el('div', `pg-said pg-said-${name}`)
    said[name].hidden = true
    return said[name]
  }
  const field = (name) => {
    const item = el('div', `pg-field pg-field-${name}`)
    const label = el('label', 'pg-label')
    const control = name === CHECKBOX ? el('input') : el(TEXT_FIELDS[name])
    control.id = `pg-${name}`
    label.htmlFor = control.id
    label.textContent = text.labels[name]
    control.setAttribute('aria-label', text.labels[name])
    if (name === CHECKBOX) {
      control.type = 'checkbox'
      item.append(control, label)
      control.addEventListener('change', edit)
    } else {
      if (control.tagName === 'INPUT') { control.type = 'text' }
      control.maxLength = text.max_chars  // (a longer text is refused, never played cut)
      control.spellcheck = false
      item.append(label, control)
      control.addEventListener('input', edit)
    }
    controls[name] = control
    return item
  }
  const exporting = button('pg-button', text.export, () => {
    model.ask({ ask: 'export' }).then(({ toml, filename }) => {
      if (toml === undefined) { return }
      const link = el('a')
      link.href = URL.createObjectURL(new Blob([toml], { type: 'application/toml' }))
      link.download = filename
      link.click()
      setTimeout(() => URL.revokeObjectURL(link.href), 10_000)
    })
  })
  const importing = el('input')
  importing.type = 'file'
  importing.accept = '.toml'
  importing.setAttribute('aria-label', text.import)
  const importLabel = el('label', 'pg-import')
  importLabel.append(el('span', 'pg-label', text.import), importing)
  const empty = button('pg-button', text.empty, () => model.ask({ ask: 'empty' }))
  root.append(
    field('title'),
    box('pg-pool',
      box('pg-pool-field', field('num_gpu_blocks'), message('num_gpu_blocks')),
      box('pg-pool-field', field('block_size'), message('block_size'))),
    field(CHECKBOX), message('engines'),
    field('setup'), message('setup'),
    field('script'), message('script'),
  )
  root.insertAdjacentHTML('beforeend', text.help)
  root.append(box('pg-buttons', exporting, importLabel, empty), message('file'))

  // Each field's message (HTML from Python: escaped there), shown when it says something.
  function say(messages) {
    for (const [name, html] of Object.entries(messages || {})) {
      if (!said[name]) { continue }
      said[name].innerHTML = html
      said[name].hidden = !html
    }
  }
  const texts = () => Object.fromEntries(Object.entries(controls).map(
    ([name, control]) => [name, name === CHECKBOX ? control.checked : control.value]))
  let playing = false  // an edit in flight
  let again = false  // the fields changed meanwhile
  function edit() {
    if (playing) { again = true; return }
    playing = true
    model.ask({ ask: 'edit', fields: texts() }).then((reply) => say(reply.messages))
      .finally(() => {
        playing = false
        if (again) { again = false; edit() }
      })
  }

  importing.addEventListener('change', async () => {
    const file = importing.files[0]
    if (!file) { return }
    const request = { ask: 'import', size: file.size }
    if (file.size <= text.max_bytes) { request.data = base64(await file.arrayBuffer()) }
    importing.value = ''  // (the same file picked again is a new pick)
    model.ask(request).then((reply) => say(reply.messages))
  })

  // What Python writes: shown or not, and the fields anew when it opened a playground.
  let serial = null
  function fill() {
    const editor = model.editor
    view.el.hidden = !editor.shown
    if (editor.serial === serial) { return }
    serial = editor.serial
    for (const [name, value] of Object.entries(editor.fields || {})) {
      if (!controls[name]) { continue }
      if (name === CHECKBOX) { controls[name].checked = value === true } else { controls[name].value = value }
    }
    say(editor.messages)
  }
  fill()
  model.on('editor', fill)
  return root
}
