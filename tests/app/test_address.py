"""One place reads and writes the page's address: app/components/address.js, with
app/data/url.py's names (given to it, never copied); its functions run in node."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app.data import timelines, url
from app.static_site.patches import EARLY_MESSAGE

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
ADDRESS = APP / "components" / "address.js"
# What touches the page's address: its location, its history and their events, a query
# parsed.
TOUCHES = re.compile(
    r"\bwindow\.location\b|\bdocument\.location\b|(?<![\w.])location\.(search|href|assign)"
    r"|\bhistory\.|\bpopstate\b|\bhashchange\b|\bURLSearchParams\b"
)
# The static site's shims patched into Panel's worker and page: no module can import
# address.js there. Each with why it may.
SHIMS = {
    # (the page's location handed to Panel's worker, as Panel's own page does)
    "app/static_site/shims/early_worker.js": r"\bwindow\.location\b",
    # (in the worker: the playground parameter of the address the page handed it)
    "app/static_site/shims/early_in_worker.js": r"\bURLSearchParams\b",
}


def code_lines(path: Path) -> list[tuple[int, str]]:
    """The file's lines without their comments (a comment may name what it avoids)."""
    lines = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code = re.sub(r"(^|\s)//.*$", "", line)
        if code.strip():
            lines.append((number, code))
    return lines


def touches(path: Path, root: Path = ROOT) -> list[str]:
    """Each line of a module's code that touches the page's address."""
    allowed = SHIMS.get(path.relative_to(root).as_posix())
    found = []
    for number, code in code_lines(path):
        for match in TOUCHES.finditer(code):
            if allowed is None or not re.fullmatch(allowed, match[0]):
                found.append(f"{path.relative_to(root)}:{number}: {code.strip()}")
    return found


def test_only_address_js_touches_the_pages_address() -> None:
    files = sorted(p for p in APP.rglob("*.js") if p != ADDRESS)
    assert len(files) > 20 and any(p.name == "player.js" for p in files)
    found = [line for path in files for line in touches(path)]
    assert found == [], "the address is address.js's:\n" + "\n".join(found)
    assert touches(ADDRESS)  # (the pattern finds what it looks for)


def test_the_check_finds_a_module_that_reads_the_address(tmp_path: Path) -> None:
    for line in (
        "const q = new URLSearchParams(window.location.search)",
        "window.addEventListener('popstate', f)",
        "window.history.replaceState(null, '', u)",
        "location.assign('?x')",
    ):
        module = APP / "components" / "player.js"
        copy = tmp_path / "app" / "components" / "player.js"
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(module.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
        assert [f for f in touches(copy, tmp_path) if line in f], line


def test_the_address_names_are_url_pys_alone() -> None:
    """No second copy of url.py's constants in the app's Python or JavaScript."""
    for path in [*APP.rglob("*.py"), *APP.rglob("*.js")]:
        if path == APP / "data" / "url.py":
            continue
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^(POSITION_PARAMETERS|TRUE_VALUES|EMBED_SUFFIX) =", text, re.M), path
        assert "'1', 'true', 'yes', 'on'" not in text, path


NODE = shutil.which("node")
SCRIPT = """
import * as address from %(module)s
const log = []
const history = {
  state: null,
  pushState: (_s, _t, url) => { log.push(['push', url]); setHere(url) },
  replaceState: (_s, _t, url) => { log.push(['replace', url]); setHere(url) },
}
const listeners = {}
const location = { pathname: '/app/', search: %(search)s, hash: '',
  assign: (url) => log.push(['load', url]) }
function setHere(url) { location.search = url.slice(url.indexOf('?')) }
globalThis.window = {
  location, history,
  addEventListener: (type, f) => { listeners[type] = f },
  removeEventListener: (type) => { delete listeners[type] },
}
const names = %(names)s
const config = [%(pages)s, 'start', 'reset', names, 'playground', %(message)s]
const page = { query: '?scenario=reset', default_scenario: 'reset',
  lasts: { 'reset/default': 9, 'reset/keep': 12 } }
const embedPage = { ...page, query: '?scenario=reset&embed=1' }
const opened = (search, p = page) => address.openedAt(p, search, names)
const out = {
  pages: ['', '?utm_source=x', '?scenario=reset&utm_source=x', '?embed=1', '?embed=yes&step=2',
    '?playground=abc', '?playground=abc&embed=1', '?scenario=nope', '?step=3&fbclid=y',
    '?lab=small-pool'].map((s) => address.pageName(config, s)),
  opened: [
    opened('?scenario=reset&mode=keep&step=3&utm_source=x&fbclid=y'),
    opened('?scenario=reset&mode=keep&step=3&quiz=1'),
    opened('?scenario=reset&mode=keep&step=3&embed=1'),
    opened('?scenario=reset&mode=keep&step=3&embed=1', embedPage),
    opened('?scenario=reset&embed=true', embedPage),
    opened('?scenario=reset&lab=small-pool'),
    opened('?mode=keep&step=13'),
    opened('?mode=turbo'),
    opened('?step=abc'),
  ],
  start: ['', '?quiz=1', '?mode=keep', '?embed=on'].map((s) => address.startAsked(names, s)),
}
const queries = { 'reset/default': { scenario: 'reset', mode: 'default' },
  'reset/keep': { scenario: 'reset', mode: 'keep' } }
out.addressed = address.addressedIn(queries, names, (k, s) => s <= 12)
const writer = address.addressWriter(names, 0)
writer.soon({ scenario: 'reset', mode: 'keep', step: '4' }, names.position)
writer.soon({ scenario: 'reset', mode: 'keep', step: '5' }, names.position)
await new Promise((done) => setTimeout(done, 5))
writer.soon({ scenario: 'cache-salt', mode: 'default', step: '0' }, names.position)
writer.flush()
writer.soon({ scenario: 'eviction-order', mode: 'default', step: '1' }, names.position)
writer.soon({ scenario: 'cache-salt', mode: 'default', step: '2' }, names.position)
writer.flush()
let popped = null
const stop = address.onBackForward((q) => { popped = q })
listeners.popstate()
stop()
out.popped = popped
out.followed = Object.keys(listeners)
address.loadPage({ scenario: 'lora' }, ['embed', 'quiz'])
out.log = log
console.log(JSON.stringify(out))
"""


def run_address(search: str) -> dict[str, object]:
    if NODE is None:
        pytest.skip("no node to run the module")
    script = SCRIPT % {
        "module": json.dumps(ADDRESS.as_uri()),
        "search": json.dumps(search),
        "names": json.dumps(url.browser_names()),
        "pages": json.dumps(["reset", "reset-embed", "cache-salt"]),
        "message": json.dumps(EARLY_MESSAGE),
    }
    ran = subprocess.run(
        [NODE, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=30
    )
    assert ran.returncode == 0, ran.stderr
    result: dict[str, object] = json.loads(ran.stdout)
    return result


def test_the_early_page_opens_every_address_python_opens_as_it_is() -> None:
    ran = run_address("?scenario=reset&mode=keep&step=3&embed=1&utm_source=x")
    assert ran["pages"] == [
        "start",
        "start",  # (a parameter parse_link ignores names no position)
        "reset",
        "reset-embed",
        "reset-embed",
        "playground",
        None,  # (a playground's embed: Python's)
        "reset",  # (an unknown scenario: the default's page says so)
        "reset",
        "start",  # (the lab's loading page covers it: start_page.js)
    ]
    keep3 = {"key": "reset/keep", "step": 3, "notices": []}
    assert ran["opened"] == [
        keep3,  # unknown parameters ignored, as the live page does
        keep3,  # quiz: the questions' panel reads it
        None,  # the embed's address: another page
        keep3,
        None,  # another spelling of the layout: Python's
        None,  # the lab
        None,  # a notice to give (step 13 of 12), and this page has none to say
        None,
        None,
    ]
    assert ran["start"] == [True, True, False, False]


def test_the_address_is_written_once_after_steps_and_a_new_scenario_is_an_entry() -> None:
    ran = run_address("?scenario=reset&mode=default&step=0&embed=1&utm_source=x")
    assert ran["addressed"] == ["reset/default", 0]
    assert ran["log"] == [
        # two steps in quick succession: one write, the other parameters kept
        ["replace", "/app/?scenario=reset&mode=keep&step=5&embed=1&utm_source=x"],
        ["push", "/app/?scenario=cache-salt&mode=default&step=0&embed=1&utm_source=x"],
        # a new scenario within the wait: the entry left takes its position first
        ["push", "/app/?scenario=eviction-order&mode=default&step=1&embed=1&utm_source=x"],
        ["push", "/app/?scenario=cache-salt&mode=default&step=2&embed=1&utm_source=x"],
        # another scenario's page, in the layout the address has
        ["load", "/app/?scenario=lora&embed=1"],
    ]
    assert ran["popped"] == "?scenario=cache-salt&mode=default&step=2&embed=1&utm_source=x"
    assert ran["followed"] == []


FIDELITY = """
import * as address from %(module)s
const [config, pages, searches] = %(given)s
console.log(JSON.stringify(searches.map((search) => {
  const name = address.pageName(config, search)
  const page = pages[name]
  const at = page ? address.openedAt(page, search, config[3]) : null
  return [name, at && { key: at.key, step: at.step, html: address.noticeHtml(page, at.notices) }]
})))
"""
# Addresses with values parse_link corrects, each with a notice.
CORRECTED = [
    "?scenario=reset&step=99",
    "?step=99",
    "?mode=turbo",
    "?mode=lpm",  # an SGLang policy the flagship does not play
    "?scenario=lpm-fallback&mode=keep",
    "?scenario=nope",
    "?scenario=",
    "?scenario=nope&mode=keep&step=5",
    "?scenario=nope&mode=x&step=y",  # three notices
    "?scenario=reset&step=",
    "?scenario=reset&step=-1",
    "?scenario=reset&step=3.0",
    "?scenario=reset&step=99999999999999999999",
    "?mode=a%24%24b%241",  # `$$`, `$1`: patterns to String.replace
    "?mode=PCLITEM1&step=PCLVALUE",  # the marks themselves
    "?scenario=PCLVALUE",
    "?mode=constructor",
    "?mode=__proto__&step=x",
    "?scenario=reset&embed=1&step=99&utm_source=x",
    "?scenario=cache-salt&mode=preempt&step=1000",
    "?mode=keep&step=%20%203%20",  # (no notice: spaces around a step are dropped)
    "?scenario=nope&embed=1",
    # Quoted as Python's repr does, then as HTML.
    "?mode=it%27s",
    "?mode=%3Cb%3E",
    "?mode=a%24%26b",
    "?scenario=%22x%22",
    "?scenario=nope&mode=back%5Cslash",
    "?mode=a%27b%22c",
    "?mode=" + "x" * 80,
    "?mode=%C3%BC%F0%9F%98%80",  # (a letter, a symbol outside the BMP)
    "?step=%C2%B2",  # (a digit, no number)
    "?step=%D9%A3",
]
# Values the page cannot quote as parse_link does (unprintable, or cut to the quote limit):
# Python's page says them.
PYTHONS = [
    "?mode=a%0Ab",
    "?mode=tab%09",
    "?mode=zero%E2%80%8Bwidth",  # (a format character)
    "?mode=" + "x" * 81,
    "?mode=" + "x" * 79 + "%5C",  # (its backslash doubled: 81)
    "?scenario=nope&mode=%7F",
    "?scenario=reset-embed",  # (another layout's page: its own, Python's)
]


def test_the_early_page_says_what_the_live_page_says_of_an_address_it_corrects() -> None:
    """Each address Python opens with a notice: the early page opens at the position Python
    opens, with the notice's very HTML (url.py's own texts, filled in); a value it cannot quote
    as Python does leaves the address to Python."""
    if NODE is None:
        pytest.skip("no node to run the module")
    from app.page.early_page import addresses_facts
    from app.render.html import render_notice

    pages = {}
    for name, query in url.early_pages().items():
        if name == url.START_PAGE:
            continue
        scenario = url.parse_link(query).scenario
        modes = timelines.modes(scenario)
        lasts = {f"{scenario}/{m}": timelines.last_step(scenario, m) for m in modes}
        pages[name] = addresses_facts(query, scenario, lasts)
    config = [list(pages), url.START_PAGE, timelines.default_scenario(), url.browser_names(), None]
    searches = CORRECTED + PYTHONS
    script = FIDELITY % {
        "module": json.dumps(ADDRESS.as_uri()),
        "given": json.dumps([config, pages, searches]),
    }
    ran = subprocess.run(
        [NODE, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=30
    )
    assert ran.returncode == 0, ran.stderr
    for search, (name, at) in zip(searches, json.loads(ran.stdout), strict=True):
        link = url.parse_link(search)
        if search in PYTHONS:
            assert at is None, search
            continue
        assert name == url.early_page_of(link), search
        assert at == {
            "key": f"{link.scenario}/{link.mode}",
            "step": link.step,
            "html": render_notice(link.notices),
        }, search
        assert link.notices or "%20" in search, search  # (each corrects something)


def test_a_step_that_is_a_digit_but_no_number_gets_a_notice() -> None:
    link = url.parse_link("?scenario=reset&step=²")
    assert link.step == 0
    assert link.notices == ("Ignored step='²': steps go from 0 to 9. Showing 0.",)
