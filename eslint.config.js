// The linter for the browser code: the components' ES modules (app/**/*.js) and the
// static site's scripts. `npm ci && npx eslint` (tests/run.sh runs it).
import js from '@eslint/js'
import globals from 'globals'

export default [
  { ignores: ['site/', 'node_modules/', '.cache/'] },
  js.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: { ...globals.browser },
    },
    rules: {
      eqeqeq: 'error',
      'no-var': 'error',
      'prefer-const': 'error',
    },
  },
  {
    // Inline <script>s of the static site's page (app/static_site/patches.py inserts them).
    files: ['app/static_site/shims/*.js'],
    languageOptions: { sourceType: 'script' },
  },
  {
    // An inline module of the page's <head>: the address's early page.
    files: ['app/static_site/shims/early_page_start.js'],
    languageOptions: { sourceType: 'module' },
  },
  {
    // Part of the Pyodide worker's script.
    files: [
      'app/static_site/shims/install_locked.js',
      'app/static_site/shims/early_in_worker.js',
      'app/static_site/shims/apply_patch.js',
    ],
    languageOptions: { globals: { ...globals.worker } },
  },
  {
    // A worker of its own, which loads Pyodide.
    files: ['app/static_site/shims/side_worker.js'],
    languageOptions: { globals: { ...globals.worker, loadPyodide: 'readonly' } },
  },

  {
    // Benchmarks that run Pyodide in Node.
    files: ['benchmarks/*.mjs'],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    files: ['eslint.config.js'],
    languageOptions: { globals: { ...globals.node } },
  },
]
