// The workload benchmark under Pyodide, in Node: the same engine files, the same script.
//
//   node benchmarks/bench_workload_node.mjs PYODIDE_DIR [--script NAME] [its arguments]
//
// NAME is a benchmark of this folder that needs the engine only (default
// bench_workload.py; bench_lab_engine.py also runs here).
// PYODIDE_DIR holds pyodide.mjs, pyodide.asm.wasm and python_stdlib.zip (site/pyodide
// after `python build.py`, or the pyodide npm package). The run, and its pool operations
// replayed on this project's BlockPool (on vLLM's too would need vLLM's source in Node's
// reach: --vllm is not passed on).
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const [pyodideDir, ...rest] = process.argv.slice(2);
const named = rest[0] === "--script";
const script = named ? rest[1] : "bench_workload.py";
const benchArgs = named ? rest.slice(2) : rest;
if (!pyodideDir) {
  console.error("usage: node benchmarks/bench_workload_node.mjs PYODIDE_DIR [arguments]");
  process.exit(2);
}
const project = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const indexURL = resolve(pyodideDir) + "/";
const { loadPyodide } = await import(pathToFileURL(indexURL + "pyodide.mjs").href);
const pyodide = await loadPyodide({ indexURL });
pyodide.FS.mkdirTree("/project");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: project }, "/project");
pyodide.globals.set("bench_args", pyodide.toPy(benchArgs));
pyodide.globals.set("bench_script", script);
await pyodide.runPythonAsync(`
import runpy, sys
sys.argv = [bench_script, *bench_args]
runpy.run_path("/project/benchmarks/" + bench_script, run_name="__main__")
`);
