"""Shortened values are marked, and never cut inside a digest."""

from __future__ import annotations

from harness.compare.docdiff import FieldChange
from harness.report.values import ELLIPSIS, short_change, short_fields, shorten

DIGEST = "sha256:" + "0123456789abcdef" * 4


def test_short_values_are_whole_and_long_ones_say_what_is_missing() -> None:
    assert shorten("v1.2.3", 20) == "v1.2.3"
    cut = shorten("word " * 100, 40)
    assert cut == "word word word word word word word word…(+461 chars)"  # at a word


def test_a_digest_is_kept_whole_or_left_out_whole() -> None:
    image = f"ghcr.io/example/app@{DIGEST}"
    kept = shorten(f"{image} and a long tail of other text", 40)
    assert DIGEST in kept and kept.endswith("chars)")
    two = shorten("x" * 30 + " " + DIGEST + " " + DIGEST, 40)
    assert two.split(ELLIPSIS)[0].endswith(DIGEST)  # the one the limit fell in, whole
    huge = shorten("x" * 30 + " " + "ab" * 100, 40)  # a hash too long to keep: left out
    assert huge == "x" * 30 + "…(+200 chars)"
    other = "sha256:" + "fedcba9876543210" * 4
    change = FieldChange("spec.image", "changed", f"a@{DIGEST}", f"a@{other}")
    line = short_change(change, limit=30)
    assert line == f"spec.image: a@{DIGEST} -> a@{other}"  # both whole, whatever the limit


def test_multi_line_strings_show_their_first_changed_line() -> None:
    change = FieldChange("data.cfg", "changed", "a: 1\nb: 2\nc: 3\n", "a: 1\nb: 5\nc: 4\n")
    assert short_change(change) == "data.cfg: b: 2 -> b: 5 (line 2 of 3; 1 more changed line)"
    three = [FieldChange(f"data.k{i}", "changed", "1", "2") for i in range(5)]
    assert short_fields(three) == (
        "data.k0: 1 -> 2; data.k1: 1 -> 2; data.k2: 1 -> 2; +2 more fields"
    )
