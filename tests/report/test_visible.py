"""visible: control, bidi and invisible characters shown as escapes, never obeyed; the run's
Secret values as markers, in the same pass every text output takes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.core import redaction
from harness.report.visible import visible


def test_terminal_escapes_and_line_breaks_are_shown() -> None:
    assert visible("apps/\x1b[31mred\x1b[0m") == "apps/\\x1b[31mred\\x1b[0m"
    assert visible("a\nb\r\n::error::x") == "a\\nb\\r\\n::error::x"
    assert visible("bell\x07 del\x7f c1\x9b") == "bell\\x07 del\\x7f c1\\x9b"


def test_tabs_and_printable_text_pass_unchanged() -> None:
    assert visible("key:\tvalue é ✓") == "key:\tvalue é ✓"
    assert visible("") == ""


def test_newlines_kept_for_a_documents_text() -> None:
    text = "data:\n  k: v\x1b]8;;http://x\x07\n"
    assert visible(text, newlines=True) == "data:\n  k: v\\x1b]8;;http://x\\x07\n"
    assert visible("a\r\nb", newlines=True) == "a\\r\nb"


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    redaction.reset()
    yield
    redaction.reset()


def test_bidi_and_zero_width_characters_are_escaped() -> None:
    shown = visible("apps/\u202etxt.exe\u2066x\u2069\u200b\u200f\u061c\ufeff\u00ad")
    assert shown == "apps/\\u202etxt.exe\\u2066x\\u2069\\u200b\\u200f\\u061c\\ufeff\\xad"
    assert visible("a\x1b[31m\nb", newlines=True) == "a\\x1b[31m\nb"
    assert visible("café ünïcode 名前") == "café ünïcode 名前"  # printable text stays


def test_a_known_secret_value_leaves_as_its_marker() -> None:
    redaction.known().add("s3cr3t-canary-value")
    line = visible("yaml: cannot decode !!str `s3cr3t-canary-value` as a !!int\n")
    assert line == (
        f"yaml: cannot decode !!str `{redaction.marker('', '', 's3cr3t-canary-value')}` "
        "as a !!int\\n"
    )
