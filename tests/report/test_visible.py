"""visible: control, bidi and invisible characters shown as escapes; the run's Secret values
as markers, in the same pass every text output takes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.core import redaction
from harness.report.visible import visible


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
    redaction.KNOWN.add("s3cr3t-canary-value")
    line = visible("yaml: cannot decode !!str `s3cr3t-canary-value` as a !!int\n")
    assert line == (
        f"yaml: cannot decode !!str `{redaction.marker('', '', 's3cr3t-canary-value')}` "
        "as a !!int\\n"
    )
