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
    files: ['eslint.config.js'],
    languageOptions: { globals: { ...globals.node } },
  },
]
