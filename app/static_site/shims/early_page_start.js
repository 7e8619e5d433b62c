// In <head>: the address's page before Python (app/page/early_page.js). The tag's
// data-early-pages: [app/data/url.py's names for it, the early pages' folder].
import { start } from './app/page/early_page.js'

const [config, folder] = JSON.parse(
  document.querySelector('script[data-early-pages]').dataset.earlyPages,
)
start(config, folder)
