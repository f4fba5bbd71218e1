"""model: the data passed between stages is immutable."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.core.model import RendererInfo, Snapshot, Target, TargetResult


def test_a_snapshot_cannot_be_changed_after_it_was_made() -> None:
    result = TargetResult(target=Target(name="a", kind="path", path=Path("a")))
    made = {"a": result}
    skipped = {"b": "external source"}
    snapshot = Snapshot(RendererInfo("kubectl", "v1"), made, "head", skipped)
    made["c"] = result  # the maker's dicts are copied, not shared
    skipped.clear()
    assert list(snapshot.results) == ["a"] and dict(snapshot.skipped) == {"b": "external source"}
    with pytest.raises(TypeError):
        snapshot.results["c"] = result  # type: ignore[index]
    with pytest.raises(TypeError):
        snapshot.skipped["c"] = "x"  # type: ignore[index]
    again = dataclasses.replace(snapshot, label="other")
    with pytest.raises(TypeError):
        again.results["c"] = result  # type: ignore[index]
    assert again.results == snapshot.results
    assert dataclasses.replace(again, label="head") == snapshot
