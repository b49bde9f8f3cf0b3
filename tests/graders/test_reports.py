"""Reports that can always be stored, whatever the submission printed or named."""

import json
import math

from graders.reports import REPLACEMENT, clean_string, storable


def test_nul_and_lone_surrogates_become_replacement_characters():
    assert clean_string("a\x00b") == f"a{REPLACEMENT}b"
    cleaned = clean_string("W\ud800x")
    assert cleaned.startswith("W") and cleaned.endswith("x") and REPLACEMENT in cleaned
    cleaned.encode("utf-8")  # what the database driver does: it must not raise
    assert clean_string("plain \N{GREEK SMALL LETTER ALPHA} text\n\t") == (
        "plain \N{GREEK SMALL LETTER ALPHA} text\n\t"
    )


def test_storable_cleans_every_string_and_figure_at_any_depth():
    report = {
        "reason": "x\x00",
        "logs": {"stdout": "\ud83d"},
        "timing": {"speedup": math.nan, "samples_s": [math.inf, 1.5, -math.inf]},
        "integrity": {"violations": ("a\x00", 2)},
        7: True,
        "k\x00": None,
    }

    cleaned = storable(report)

    text = json.dumps(cleaned, allow_nan=False)  # no NaN: jsonb refuses it
    assert "\\u0000" not in text and "\x00" not in text
    assert cleaned["timing"] == {"speedup": None, "samples_s": [None, 1.5, None]}
    assert cleaned["integrity"]["violations"] == [f"a{REPLACEMENT}", 2]
    assert cleaned["7"] is True and f"k{REPLACEMENT}" in cleaned
    assert storable(cleaned) == cleaned  # already clean: unchanged


def test_storable_bounds_depth_and_names_what_is_not_json():
    deep: list = []
    node = deep
    for _ in range(200):
        node.append([])
        node = node[0]
    cleaned = storable({"deep": deep, "odd": object()})
    json.dumps(cleaned)
    assert cleaned["odd"].startswith("<object object at")
