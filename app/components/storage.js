// The browser's storage where it allows it (a sandboxed frame, storage off, private mode:
// nothing read, nothing kept): `area` 'localStorage' across visits, 'sessionStorage' for
// this browser tab.
export function stored(name, area = 'localStorage') {
  try { return window[area].getItem(name) } catch { return null }
}

export function store(name, value, area = 'localStorage') {
  try { window[area].setItem(name, value) } catch { /* not kept */ }
}
