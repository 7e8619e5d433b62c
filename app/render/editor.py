"""The playground editor's own words around its fields (app/views/editor.py lays them out)."""

from __future__ import annotations

EDITOR_HEADING = '<h2 class="pg-heading">Playground</h2>'

_SYNTAX = (
    "One action per line: <code>add_request ID max_tokens=N cache_salt=S "
    "prompt_logprobs=N lora_name=S prompt: 1..12, 40, 41</code> (or <code>text: plain "
    "words</code>; images as <code>mm_items=cat:8:6,dog:20:6</code>, identifier:offset:length "
    "of each image's placeholder tokens, and a run given as embeddings as "
    "<code>prompt_embeds=notes:16:4</code>), <code>step</code>, <code>step N</code>, "
    "<code>run_until_idle</code>, "
    "<code>reset_prefix_cache</code> (as the mode says) or <code>reset_prefix_cache "
    "default|preempt|keep</code>, <code>abort ID</code>, <code>http_reset "
    "query=keep_running_requests=true</code> (the reset over HTTP, its flags in the "
    "query; <code>check_flags=false</code> skips the server's flag check). A line "
    "starting with # is a note."
)

EDITOR_HELP = f'<p class="pg-help">{_SYNTAX}</p>'
