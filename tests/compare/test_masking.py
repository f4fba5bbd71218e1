"""Secret values never reach an output: `***`, and which side of a change it was."""

from __future__ import annotations

from harness.compare import masking
from harness.compare.masking import MaskedLine

MARKER = "<redacted sha256:0123456789abcdef>"


def test_a_secret_field_change_says_which_side() -> None:
    assert masking.mask_change("Secret", ("data", "password"), "a", "b", changed=True) == (
        "*** (before)",
        "*** (after)",
        True,
    )
    assert masking.mask_change("Secret", ("data",), {"k": "a"}, None, changed=True) == (
        {"k": "***"},
        None,
        True,
    )


def test_other_fields_pass_unless_they_hold_a_marker() -> None:
    assert masking.mask_change("Secret", ("metadata", "name"), "a", "b", changed=True) == (
        "a",
        "b",
        False,
    )
    assert masking.mask_change("ConfigMap", ("data", "k"), "a", "b", changed=True) == (
        "a",
        "b",
        False,
    )
    copied = masking.mask_change("Deployment", ("spec", "x"), [MARKER], ["plain"], changed=False)
    assert copied == (["***"], ["***"], True)


def test_markers_are_masked_wherever_they_sit() -> None:
    value = {"env": [{"value": f"pre-{MARKER}-post"}, {"value": "plain"}], "n": 3}
    assert masking.mask_markers(value) == {
        "env": [{"value": "pre-***-post"}, {"value": "plain"}],
        "n": 3,
    }
    assert masking.has_marker(value) and not masking.has_marker({"a": ["b", 1]})


def test_secret_lines_of_a_secret_and_of_a_marker_elsewhere() -> None:
    secret = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n"
        "stringData:\n  password: hunter2\n  cert: |\n    line one\n    line two\ntype: Opaque\n"
    )
    assert masking.secret_lines(secret, "Secret") == {
        5: MaskedLine("  password: ", "password"),
        6: MaskedLine("  cert: ", "cert"),
        7: MaskedLine("    ", "cert"),
        8: MaskedLine("    ", "cert"),
    }
    deployment = f"kind: Deployment\nspec:\n  token: {MARKER}\n"
    assert masking.secret_lines(deployment, "Deployment") == {2: MaskedLine("  token: ", "token")}
