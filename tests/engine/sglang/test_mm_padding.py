"""SGLang keeps images apart by their token ids: pad values from the item's hash replace
its placeholder tokens (SGLang 0.5.23, ``schedule_batch.py`` ``_compute_pad_values`` and
``mm_utils.py`` ``pad_mm_tokens``). The expected values were printed by SGLang's own
``_compute_pad_values``, taken from the 0.5.23 wheel, for the same identity."""

from __future__ import annotations

import hashlib

from engine.sglang.mm_utils import MM_PAD_SHIFT_VALUE, MultimodalDataItem, pad_mm_tokens

CAT_PADS = (2069397368407442390, 2937457180098063596, 543779535613215230, 1380377279639513893)


def item(name: str, start: int, end: int) -> MultimodalDataItem:
    made = MultimodalDataItem("image", [(start, end)])
    made.set_identity(hashlib.sha256(name.encode()).digest())
    return made


def test_pad_values_are_sglangs_and_above_every_text_token() -> None:
    assert item("cat", 0, 0).pad_values == CAT_PADS
    assert all(v > MM_PAD_SHIFT_VALUE for v in CAT_PADS)


def test_an_items_span_inclusive_becomes_its_pad_values_repeated() -> None:
    ids = list(range(1, 13))
    padded = pad_mm_tokens(ids, [item("cat", 2, 7)])
    assert padded == [1, 2, *CAT_PADS, *CAT_PADS[:2], 9, 10, 11, 12]
    assert ids == list(range(1, 13))  # the input stays as it was


def test_two_images_get_other_ids_and_the_same_image_the_same() -> None:
    ids = [7] * 8
    cat, dog = pad_mm_tokens(ids, [item("cat", 2, 5)]), pad_mm_tokens(ids, [item("dog", 2, 5)])
    assert cat[:2] == dog[:2] and cat[2] != dog[2]
    assert cat == pad_mm_tokens(ids, [item("cat", 2, 5)])


def test_a_span_cut_by_the_prompts_end_pads_what_is_left() -> None:
    assert pad_mm_tokens([1, 2, 3], [item("cat", 1, 9)]) == [1, *CAT_PADS[:2]]
