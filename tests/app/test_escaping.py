"""Every renderer escapes through `esc`: it must equal the standard library's escaping."""

from __future__ import annotations

import html

from hypothesis import given
from hypothesis import strategies as st

from app.render.html import esc


@given(st.one_of(st.text(), st.integers(), st.floats(allow_nan=False), st.none()))
def test_esc_escapes_as_the_standard_library_does(value: object) -> None:
    assert esc(value) == html.escape(str(value), quote=True)


def test_markup_in_user_text_is_escaped() -> None:
    assert esc("<b onclick='x'>&\"") == "&lt;b onclick=&#x27;x&#x27;&gt;&amp;&quot;"
