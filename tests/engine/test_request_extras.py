"""A request's multimodal items and prompt embeddings in a scenario file, the CLI and the
engine: bad values get one line naming the action, good ones reach vLLM's Request."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from engine.lab.cli.main import main
from engine.lab.play.scenario import ScenarioError
from engine.lab.play.scenario_file import parse_toml, scenario_from_dict
from engine.lab.play.vllm.timeline import build_timeline

PROMPT = '"1..24"'


def file_text(request: str, engines: str = "") -> str:
    return f"""{engines}
[pool]
num_gpu_blocks = 20
block_size = 4

[[steps]]
do = "add_request"
id = "A"
prompt = "1..24"

[[steps]]
do = "add_request"
id = "img"
prompt = {PROMPT}
{request}

[[steps]]
do = "run_until_idle"
"""


BAD = [
    (
        'mm_items = [{identifier = "cat", offset = 8, length = 6}, '
        '{identifier = "dog", offset = 10, length = 2}]',
        "steps #2 (img): the items 'cat' (tokens 8..13) and 'dog' (tokens 10..11) overlap",
    ),
    (
        'mm_items = [{identifier = "cat", offset = 20, length = 6}]',
        "steps #2 (img): the item 'cat' (tokens 20..25) goes past the prompt's end "
        "(24 tokens, the last is 23)",
    ),
    (
        'mm_items = [{identifier = "cat", offset = -1, length = 6}]',
        "steps #2 (img): the item 'cat' has a negative offset (-1)",
    ),
    (
        'mm_items = [{identifier = "cat", offset = 2, length = 0}]',
        "steps #2 (img): the item 'cat' needs a length of at least 1, not 0",
    ),
    (
        'mm_items = [{identifier = "cat", offset = 2}]',
        "steps #2 (img): mm_items needs identifier, offset, length in each entry",
    ),
    (
        'prompt_embeds = {name = "notes", offset = 22, length = 4}',
        "steps #2 (img): prompt_embeds (tokens 22..25) goes past the prompt's end",
    ),
    (
        'prompt_embeds = {name = "notes", offset = -2, length = 4}',
        "steps #2 (img): prompt_embeds has a negative offset (-2)",
    ),
]


@pytest.mark.parametrize(("request_toml", "message"), BAD)
def test_a_bad_item_in_a_file_gets_one_message_naming_the_action(
    request_toml: str, message: str
) -> None:
    with pytest.raises(ScenarioError) as raised:
        parse_toml(file_text(request_toml))
    assert message in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize(("request_toml", "message"), BAD[:3])
def test_the_cli_prints_the_message_in_one_line_and_exits_2(
    request_toml: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(file_text(request_toml), encoding="utf-8")
    assert main(["--file", str(path)], out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_prompt_embeds_on_sglang_are_refused_with_the_reason() -> None:
    text = file_text(
        'prompt_embeds = {name = "notes", offset = 4, length = 4}', 'engines = ["vllm", "sglang"]'
    )
    with pytest.raises(ScenarioError, match="prompt_embeds is not modelled on SGLang"):
        parse_toml(text)


def play(request: dict[str, Any]) -> list[Any]:
    data = {
        "pool": {"num_gpu_blocks": 20, "block_size": 4},
        "modes": ["default"],
        "steps": [
            {"do": "add_request", "id": "A", "prompt": "1..24", **request},
            {"do": "run_until_idle"},
        ],
    }
    timeline = build_timeline(scenario_from_dict(data), "default", trace=False)
    return list(timeline.steps[-1].snapshot.request("A").chain)


def test_items_given_in_any_order_key_the_blocks_they_reach() -> None:
    chain = play({"mm_items": "dog:14:2, cat:8:6"})
    assert [link.extra_keys for link in chain] == [
        None,
        None,
        "('mm', 'cat', 0)",
        "('mm', 'cat', -4), ('mm', 'dog', 2)",
        None,
        None,
    ]


def test_prompt_embeds_zero_their_tokens_and_key_every_block_with_a_digest() -> None:
    chain = play({"prompt_embeds": {"name": "notes", "offset": 4, "length": 4}})
    assert chain[1].token_ids == (0, 0, 0, 0)
    assert all(
        link.extra_keys and "('prompt_embeds', 'sha256:" in link.extra_keys for link in chain
    )
    other = play({"prompt_embeds": {"name": "other", "offset": 4, "length": 4}})
    assert chain[0].hash_label == other[0].hash_label  # rows of zeros, the same
    assert chain[1].hash_label != other[1].hash_label  # other embeddings, other hash
