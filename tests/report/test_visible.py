"""Control characters in names and values are shown as escapes, never obeyed."""

from __future__ import annotations

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
