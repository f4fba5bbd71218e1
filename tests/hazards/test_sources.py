"""sources: references of pre-substitution documents, memoised per shared parsed object."""

from __future__ import annotations

from harness.core.model import DocId
from harness.core.run import Run
from harness.hazards.sources import SourceDoc, references, strings, walk_strings

OBJ = {
    "kind": "ConfigMap",
    "metadata": {"name": "x"},
    "data": {"a": "${A}", "b": "${B:=1} and $${ESCAPED}", "script": "#!/bin/sh\necho ${c}\n"},
}


def test_references_of_one_shared_object_name_each_document_as_their_source() -> None:
    first = SourceDoc(DocId("", "ConfigMap", "", "x"), OBJ, "a.yaml")
    second = SourceDoc(DocId("", "ConfigMap", "", "x"), OBJ, "b.yaml")
    refs1, errors1 = references(first)
    refs2, errors2 = references(second)
    assert [(r.name, r.has_default, r.field, r.script) for r in refs1] == [
        ("A", False, "data.a", False),
        ("B", True, "data.b", False),
        ("c", False, "data.script", True),
    ]
    assert [r.source for r in refs1] == [first] * 3 and [r.source for r in refs2] == [second] * 3
    assert [r.name for r in refs2] == [r.name for r in refs1] and errors1 == errors2 == []
    refs1.clear()  # a caller's list is its own
    assert len(references(first)[0]) == 3


def test_a_patch_and_a_document_of_the_same_text_are_told_apart() -> None:
    text = "#!/bin/sh\necho ${c}\n"
    as_doc = references(SourceDoc(None, {"run": text}, None))[0]
    as_patch = references(SourceDoc(None, {"run": text}, None, patch=True))[0]
    assert as_doc[0].script and not as_patch[0].script


def test_parse_errors_are_kept_and_strings_match_the_walk() -> None:
    bad = {"data": {"x": "${unterminated"}}
    refs, errors = references(SourceDoc(None, bad, None))
    assert refs == [] and len(errors) == 1 and errors[0].startswith("data.x: ")
    assert strings(OBJ) == tuple(walk_strings(OBJ))
    with Run().entered():  # memoised in the run: one walk
        assert strings(OBJ) is strings(OBJ)
