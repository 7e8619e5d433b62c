// Installs packages from the lock with pyodide.loadPackage (in parallel, sha256-checked),
// instead of micropip: its import and resolver cost about a second. Throws what failed.
async function installLocked(packages) {  // eslint-disable-line no-unused-vars
  const failed = []
  await self.pyodide.loadPackage(packages, {
    messageCallback: () => {},
    errorCallback: (msg) => { failed.push(msg) },
  })
  if (failed.length) { throw new Error(failed.join('; ')) }
}
