// Replaces the pre-render's embed call: that copy instead of the page's own, on the
// page's own root elements (the live render maps onto them by their data-root-id).
(window.__pclCopy || Promise.resolve(null)).then((copy) => {
  if (!document.body.classList.contains('pn-loading')) { return }  // live already
  if (!copy) {
    root.Bokeh.embed.embed_items(docs_json, render_items)
    return
  }
  const own = render_items[0]
  const roots = {}
  copy.root_ids.forEach((id, i) => { roots[id] = own.roots[own.root_ids[i]] })
  root.Bokeh.embed.embed_items(copy.docs_json,
    [{ docid: copy.docid, roots: roots, root_ids: copy.root_ids }])
});
