// In <head>: an address with a copy of its own (another scenario, the compact layout)
// fetches it at once. Copies are gzip files: unpacked here unless the host already did.
// The tag's data-copies: [copy names, the page's own, default scenario, compact suffix,
// embed values that mean true, the parameters that name a position, the copies' folder].
(() => {
  const [COPIES, OWN, DEFAULT, SUFFIX, TRUE, POSITION, DIR] = JSON.parse(
    document.currentScript.dataset.copies,
  )
  const asked = new URLSearchParams(window.location.search)
  const embed = asked.get('embed')
  const compact = embed !== null && TRUE.includes(embed.toLowerCase())
  // No position named: the page's own copy (the start page), unless compact (app/data/url.py).
  const positioned = compact || POSITION.some((param) => asked.has(param))
  const scenario = asked.has('scenario') ? asked.get('scenario') : DEFAULT
  const named = scenario + (compact ? SUFFIX : '')
  // A scenario without a copy is Python's to correct (a notice), on the flagship's copy.
  const fallback = DEFAULT + (compact ? SUFFIX : '')
  const name = !positioned ? OWN : COPIES.includes(named) ? named : fallback
  if (name === OWN || !COPIES.includes(name)) { return }
  const unpack = async (response) => {
    if (!response.ok) { return null }
    const bytes = new Uint8Array(await response.arrayBuffer())
    const packed = bytes[0] === 0x1f && bytes[1] === 0x8b
    if (!packed) { return JSON.parse(new TextDecoder().decode(bytes)) }
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))
    return JSON.parse(await new Response(stream).text())
  }
  window.__pclCopy = fetch(`./${DIR}/${name}.json.gz`).then(unpack).catch(() => null)
})()
