"""What hashing a block costs, as measured in the page's own Python
(engine.lab.shared.hash_cost): a table per function, and what that means for one prompt."""

from __future__ import annotations

from app.render.glossary import term
from app.render.html import esc
from engine.lab.shared.hash_cost import HashCostReport

# The agent-prompt scenario's prompt: the chapter's example of a long shared prefix.
EXAMPLE_PROMPT_TOKENS = 2_200


def render_hash_cost(report: HashCostReport, where: str) -> str:
    rows = []
    for cost in report.costs:
        if cost.us_per_block is None:
            shown = f"needs the {esc(cost.missing)} package, which this page does not have"
            value = ""
        else:
            shown = f"{cost.us_per_block:,.2f} µs"
            value = f' data-us="{cost.us_per_block:.4f}"'
        rows.append(
            f'<tr data-name="{esc(cost.name)}"{value}><td><code>{esc(cost.name)}</code></td>'
            f"<td{' class=num' if value else ''}>{shown}</td><td>{esc(cost.what)}</td></tr>"
        )
    blocks = EXAMPLE_PROMPT_TOKENS // report.block_size
    default = report.cost("sha256").us_per_block or 0.0
    return (
        '<section class="box hash-cost" data-testid="hash-cost" aria-label="hashing cost">'
        f"<p>Per block of {report.block_size} tokens, the fastest of three runs over "
        f"{report.blocks:,} chained blocks, measured {esc(where)} just now "
        f"({term('hash-algo')} names vLLM's "
        "choices):</p>"
        '<table class="compact"><thead><tr><th>function</th><th class=num>per block</th>'
        f"<th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f'<p data-testid="hash-cost-example">A {EXAMPLE_PROMPT_TOKENS:,}-token prompt has '
        f"{blocks:,} full blocks: at that rate, sha256 hashes them in about "
        f"{blocks * default / 1000:,.2f} ms here, once, when the request is built.</p>"
        "</section>"
    )
