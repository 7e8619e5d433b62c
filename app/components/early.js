// On <body> while the static site's early page steps before Python (app/page/early_page.js).
export const EARLY = 'pcl-early'
// Marks the parts of the page that work without Python.
export const WORKS_EARLY = 'data-early'
