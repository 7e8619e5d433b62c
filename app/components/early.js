// On <body> while the static site's pre-rendered copy steps before Python (early_steps.js).
export const EARLY = 'pcl-early'
// Marks the parts of the page that work without Python.
export const WORKS_EARLY = 'data-early'
