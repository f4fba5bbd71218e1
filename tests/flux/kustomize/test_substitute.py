"""Tests for harness.substitute, the emulation of Flux post-build substitution.

Expected values follow fluxcd/pkg envsubst (eval_test.go, parse_test.go) and its source, so a
failure here means the harness would render something the cluster would not.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.flux.kustomize.substitute import (
    VARIABLE_NAME_PATTERN,
    VARIABLE_NAME_RE,
    SubstitutionError,
    VariableRef,
    envsubst,
    referenced_variables,
    validate_variable_names,
)

PATH = "/home/bozo/ideas/thoughts.for.today"
MIXED = "abcABC123ABCabc"


def _error(text: str, variables: dict[str, str] | None = None, **kw: bool) -> SubstitutionError:
    with pytest.raises(SubstitutionError) as info:
        envsubst(text, variables or {}, **kw)
    return info.value


# ------------------------------------------------------------------------------------------
# Operators with a set value
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "variables", "expected"),
    [
        ("${v}", {"v": "abc"}, "abc"),
        ("${#v}", {"v": "abcdEFGH28ij"}, "12"),
        ("${v^}", {"v": "abcdEFGH28ij"}, "AbcdEFGH28ij"),
        ("${v^^}", {"v": "abcdEFGH28ij"}, "ABCDEFGH28IJ"),
        ("${v,}", {"v": "ABCDEFGH28IJ"}, "aBCDEFGH28IJ"),
        ("${v,,}", {"v": "ABCDEFGH28IJ"}, "abcdefgh28ij"),
        ("${v:11}", {"v": PATH}, "ideas/thoughts.for.today"),
        ("${v:11:5}", {"v": PATH}, "ideas"),
        ("${v:-5}", {"v": PATH}, PATH),  # ":-" is the default operator, not an offset
        ("${v:1:-1}", {"v": "abcde"}, "bcd"),
        ("${v:3:-3}", {"v": "abcde"}, ""),
        ("${v:-2:1}", {"v": "abcde"}, "abcde"),
        ("${v:x}", {"v": "abcde"}, "abcde"),  # unparsable offset: whole value, like bash
        ("${v:1:x}", {"v": "abcde"}, "abcde"),
        ("${v:9}", {"v": "abcde"}, ""),
        ("${v:2:99}", {"v": "abcde"}, "cde"),
        ("${v:+2}", {"v": "abcde"}, "abcde"),
        ("${v=xyz}", {"v": "abc"}, "abc"),
        ("${v:=xyz}", {"v": "abc"}, "abc"),
        ("${v:-xyz}", {"v": "abc"}, "abc"),
        ("${v:+xyz}", {"v": "abc"}, "abc"),  # not bash's "alternate value": a default
        ("${v:?xyz}", {"v": "abc"}, "abc"),  # not bash's error: a default
        ("${v#*.}", {"v": "bash.string.txt"}, "string.txt"),
        ("${v##*.}", {"v": "bash.string.txt"}, "txt"),
        ("${v%.*}", {"v": "bash.string.txt"}, "bash.string"),
        ("${v%%.*}", {"v": "bash.string.txt"}, "bash"),
        ("${v/abc/xyz}", {"v": MIXED}, "xyzABC123ABCabc"),
        ("${v//abc/xyz}", {"v": MIXED}, "xyzABC123ABCxyz"),
        ("${v/#abc/XYZ}", {"v": MIXED}, "XYZABC123ABCabc"),
        ("${v/%abc/XYZ}", {"v": MIXED}, "abcABC123ABCXYZ"),
        ("${v/#ABC/XYZ}", {"v": MIXED}, MIXED),
        ("${v/#/prefix-}", {"v": "value"}, "prefix-value"),
        ("${v/%/-suffix}", {"v": "value"}, "value-suffix"),
        ("${v/./}", {"v": "foo.bar"}, "foobar"),
        ("${v//./}", {"v": "a.b.c"}, "abc"),
        ("${v/#a/}", {"v": "abc"}, "abc"),  # upstream needs a replacement for /# and /%
        ("${v///-}", {"v": "ab"}, "-a-b-"),  # Go's strings.Replace with an empty pattern
        (r"${v/\//-}", {"v": "foo/bar"}, "foo-bar"),
        (r"${v//\//-}", {"v": "foo/bar/baz"}, "foo-bar-baz"),
        (r"${v/\\/|}", {"v": "a\\b"}, "a|b"),
        ("${v/a//b}", {"v": "xa"}, "xb"),  # runs of "/" all belong to the delimiter
        ("${v/*/x}", {"v": "a*b"}, "axb"),  # "/" forms replace literal text, not globs
        ("${v^,}", {"v": "abc"}, "abc"),  # mixed casing operator falls back to the value
    ],
)
def test_operators_on_set_variable(text: str, variables: dict[str, str], expected: str) -> None:
    """Every operator form, with values from upstream's own test table where it has one."""
    assert envsubst(text, variables) == expected
    assert envsubst(text, variables, strict=True) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${v}", ""),
        ("${#v}", "0"),
        ("${v^}", ""),
        ("${v^^}", ""),
        ("${v,}", ""),
        ("${v,,}", ""),
        ("${v:1}", ""),
        ("${v:1:2}", ""),
        ("${v#*}", ""),
        ("${v##*}", ""),
        ("${v%*}", ""),
        ("${v%%*}", ""),
        ("${v/a/b}", ""),
        ("${v//a/b}", ""),
        ("${v/#a/b}", ""),
        ("${v/%a/b}", ""),
        ("${v/#/b}", "b"),
        ("${v=d}", "d"),
        ("${v:=d}", "d"),
        ("${v:-d}", "d"),
        ("${v:+d}", "d"),
        ("${v:?d}", "d"),
        ("${v:=}", ""),
        ("${v:=a b c}", "a b c"),
    ],
)
@pytest.mark.parametrize("variables", [{}, {"v": ""}], ids=["unset", "empty"])
def test_unset_and_empty_behave_alike_when_lenient(
    text: str, expected: str, variables: dict[str, str]
) -> None:
    """Lenient mode reads unset as empty, and every default form covers both cases."""
    assert envsubst(text, variables) == expected


# ------------------------------------------------------------------------------------------
# Strict mode
# ------------------------------------------------------------------------------------------

TRANSFORMS = [
    "${v}",
    "${#v}",
    "${v^}",
    "${v^^}",
    "${v,}",
    "${v,,}",
    "${v:0}",
    "${v:0:10}",
    "${v/p/r}",
    "${v//p/r}",
    "${v/#p/r}",
    "${v/%p/r}",
    "${v#p}",
    "${v##p}",
    "${v%p}",
    "${v%%p}",
]


@pytest.mark.parametrize("text", TRANSFORMS)
def test_strict_unset_raises_for_every_non_default_form(text: str) -> None:
    """Upstream fixed fluxcd/flux2#5836: transformations no longer hide a missing variable."""
    err = _error(text, strict=True)
    assert str(err) == 'variable not set (strict mode): "v"'
    assert err.variable == "v"
    assert err.kind == "unset"
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("text", TRANSFORMS)
def test_strict_accepts_empty_string(text: str) -> None:
    """A variable set to "" exists, so strict mode must not complain: every form gives
    what it gives for "" (the length 0, else the empty string)."""
    assert envsubst(text, {"v": ""}, strict=True) == ("0" if text == "${#v}" else "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${v=d}", "d"),
        ("${v:=d}", "d"),
        ("${v:-d}", "d"),
        ("${v:+d}", "d"),
        ("${v:?d}", "d"),
    ],
)
def test_strict_default_forms_tolerate_unset(text: str, expected: str) -> None:
    """Default-like operators exist precisely for the unset case."""
    assert envsubst(text, {}, strict=True) == expected


def test_strict_evaluates_nested_default_eagerly() -> None:
    """Arguments are evaluated before the variable, so an unused default still must resolve."""
    err = _error("${a:=${b}}", {"a": "set"}, strict=True)
    assert str(err) == 'variable not set (strict mode): "b"'
    assert err.variable == "b"
    assert envsubst("${a:=${b:-x}}", {"a": "set"}, strict=True) == "set"
    assert envsubst("${a:=${b}}", {"a": "set"}) == "set"


def test_strict_reports_first_evaluated_variable() -> None:
    """The error names the variable Flux would name: evaluation is left to right."""
    assert _error("${x} ${y}", strict=True).variable == "x"
    assert _error("${outer/${inner}/r}", strict=True).variable == "inner"


def test_lenient_unset_is_empty() -> None:
    """Without strict, an unset variable renders as nothing (Flux before v1.9's gate)."""
    assert envsubst("a${missing}b", {}) == "ab"


# ------------------------------------------------------------------------------------------
# Escapes and dollars
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$${v}", "${v}"),
        ("$$", "$"),
        ("$$v", "$v"),
        ("$$$", "$$"),
        ("$$$$", "$$"),
        ("$$$${v}", "$${v}"),
        ("$$${v}", "$V"),
        ("$v", "$v"),
        ("$ {v}", "$ {v}"),
        ("a$", "a$"),
        ("$", "$"),
        ("price: 5$", "price: 5$"),
        ("${v}$", "V$"),
        ("}text", "}text"),
        ("{v}", "{v}"),
        ("http://github.com", "http://github.com"),
        (r"\\.\pipe\pipename", r"\\.\pipe\pipename"),
        ("\\\\something ${v}", "\\\\something V"),
        ("some ${v}$${v$${v}$v${v}", "some V${v${v}$vV"),
        ("something $${v=${d}}", "something ${v=D}"),
        ("${a:=$$}", "$$"),  # no "$$" escape inside a default argument
        ("${a:=$${v}}", "$V"),
        ("${v/V/$$}", "$"),  # but there is one inside replace arguments
        ("${a#$%:*{}", ""),
    ],
)
def test_dollar_handling(text: str, expected: str) -> None:
    """Only ${ starts a reference; $$ collapses to $ at top level and in replace arguments."""
    assert envsubst(text, {"v": "V", "d": "D"}) == expected


def test_substituted_values_are_not_rescanned() -> None:
    """A value that looks like a template is inserted verbatim, as upstream does."""
    assert envsubst("${a}", {"a": "${b}", "b": "no"}) == "${b}"
    assert envsubst("${a}", {"a": "$$"}) == "$$"


def test_nul_ends_the_template() -> None:
    """Upstream's scanner treats rune 0 as end of input, silently dropping the rest."""
    assert envsubst("ab\x00cd", {}) == "ab"
    assert envsubst("${v}\x00${w}", {"v": "V"}, strict=True) == "V"
    assert envsubst("${v}", {"v": "a\x00b"}) == "a\x00b"


# ------------------------------------------------------------------------------------------
# Parse errors
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message", "variable"),
    [
        ("${v-d}", "missing closing brace", "v"),
        ("${v+d}", "missing closing brace", "v"),
        ("${v?d}", "missing closing brace", "v"),
        ("${v", "missing closing brace", "v"),
        ("${v.x}", "missing closing brace", "v"),
        ("x ${v y}", "missing closing brace", "v"),
        ("${", "unable to parse variable name", None),
        ("${}", "unable to parse variable name", None),
        ("${-v}", "unable to parse variable name", None),
        ("${ v}", "unable to parse variable name", None),
        ("${v:}", "unable to parse substitution within function", "v"),
        ("${v#}", "unable to parse substitution within function", "v"),
        ("${v%}", "unable to parse substitution within function", "v"),
        ("${v:=abc", "unable to parse substitution within function", "v"),
        ("${v:=${w}", "unable to parse substitution within function", "v"),
        ("${#}", "bad substitution", None),
        ("${#v", "bad substitution", "v"),
        ("${#v:1}", "bad substitution", "v"),
        ("${v^^^}", "bad substitution", "v"),
        ("${v//x}", "bad substitution", "v"),
        ("${v/x}", "bad substitution", "v"),
        ("${v:1:2", "bad substitution", "v"),
        ("${v:é}", "bad substitution", "v"),  # upstream unread quirk after ":"
        ("${a:=${}}", "unable to parse variable name", None),
    ],
)
def test_parse_errors(text: str, message: str, variable: str | None) -> None:
    """Malformed templates fail with upstream's messages in both modes."""
    for strict in (False, True):
        err = _error(text, {"v": "x", "w": "y"}, strict=strict)
        assert str(err) == message
        assert err.variable == variable
        assert err.kind == "parse"


def test_variable_names_follow_go_unicode_classes() -> None:
    """Inside ${} a name is any run of Unicode letters, digits and "_", unlike the key regex."""
    assert envsubst("${1}", {"1": "one"}) == "one"
    assert envsubst("${héllo}", {"héllo": "hi"}) == "hi"
    with pytest.raises(SubstitutionError, match="missing closing brace"):  # "²" is No, not Nd
        envsubst("${x²}", {})


# ------------------------------------------------------------------------------------------
# Nesting
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${a:=x${b}y}", "xBy"),
        ("${a=${b}-suffix}", "B-suffix"),
        ("${a=prefix-${b}}", "prefix-B"),
        ("${a=prefix${b} suffix}", "prefixB suffix"),
        ("${a=${b^^}}", "B"),
        ("${a:=${z:=${b,}}}", "b"),
        ("${n:${one}}", "ello"),
        ("${n:${one}:${two}}", "el"),
        ("${n#${h}}", "ello"),
        ("${n//${l}/${b}}", "heBBo"),
        ("${a:=${n:${one}:${two}}-${b}}", "el-B"),
    ],
)
def test_nesting(text: str, expected: str) -> None:
    """References may appear inside any argument and are evaluated first."""
    variables = {"b": "B", "n": "hello", "one": "1", "two": "2", "h": "h", "l": "l"}
    assert envsubst(text, variables) == expected


def test_deep_nesting_is_a_clean_error() -> None:
    """Python's recursion limit must not leak out as RecursionError."""
    text = "${a:=" * 5000 + "}" * 5000
    with pytest.raises(SubstitutionError):
        envsubst(text, {})


# ------------------------------------------------------------------------------------------
# Glob patterns (drone/envsubst path.Match)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("${v#*/}", "path/to/file", "to/file"),
        ("${v#*/}", "/path/to/file", "path/to/file"),
        ("${v##*/}", "path/to/file", "file"),  # "*" crosses "/", unlike Go's path.Match
        ("${v##*/}", "/path/to/file", "file"),
        ("${v%/*}", "path/to/file", "path/to"),
        ("${v%%/*}", "path/to/file", "path"),
        ("${v#?}", "abc", "bc"),
        ("${v##?}", "éa", "a"),  # "?" decodes one rune ...
        ("${v#?}", "éa", "\udca9a"),  # ... but trimming tries byte prefixes, so "\xc3" wins
        ("${v#??}", "a", "a"),
        ("${v#[abc]}", "bcd", "cd"),
        ("${v#[a-c]*}", "bcd", "cd"),
        ("${v##[a-c]*}", "bcd", ""),
        ("${v#[^a]}", "bcd", "cd"),
        ("${v#[^b]}", "bcd", "bcd"),
        (r"${v#\*}", "*x", "x"),
        (r"${v#\*}", "ax", "ax"),
        ("${v#a*c}", "abcabc", "abc"),
        ("${v##a*c}", "abcabc", ""),
        ("${v#x}", "abc", "abc"),
        ("${v#}", "abc", None),
        ("${v#[}", "abc", "abc"),  # bad pattern: value unchanged
        ("${v#[]a]}", "]a", "]a"),
        ("${v#a[}", "ab", "ab"),
        ("${v%[0-9]}", "abc1", "abc1"),  # upstream reverses the pattern text for suffixes
        ("${v%.t?t}", "a.txt", "a"),
        ("${v%%.*}", "a.b.c", "a"),
        ("${v%.*}", "a.b.c", "a.b"),
    ],
)
def test_glob_patterns(text: str, value: str, expected: str | None) -> None:
    """Remove operators glob like upstream, including its "*" and reversed-suffix quirks."""
    if expected is None:
        with pytest.raises(SubstitutionError):
            envsubst(text, {"v": value})
        return
    assert envsubst(text, {"v": value}) == expected


# ------------------------------------------------------------------------------------------
# Unicode and bytes
# ------------------------------------------------------------------------------------------


def test_unicode_follows_go_byte_semantics() -> None:
    """Go strings are bytes: length and substring count UTF-8 bytes, casing is per rune."""
    assert envsubst("${#v}", {"v": "héllo"}) == "6"
    assert envsubst("${v:1:2}", {"v": "héllo"}) == "é"
    assert envsubst("${v^}", {"v": "élan"}) == "Élan"
    assert envsubst("${v,}", {"v": "Élan"}) == "élan"
    assert envsubst("${v^^}", {"v": "straße"}) == "STRAßE"  # simple case mapping keeps ß
    assert envsubst("${v,,}", {"v": "ΟΔΟΣ"}) == "οδοσ"  # no final-sigma rule
    assert envsubst("${v,,}", {"v": "İ"}) == "i"
    assert envsubst("${v^^}", {"v": "ᾳ"}) == "ᾼ"
    assert envsubst("${v/é/e}", {"v": "café"}) == "cafe"
    assert envsubst("日本 ${v} 語", {"v": "値"}) == "日本 値 語"
    assert envsubst("${v///-}", {"v": "日本"}) == "-日-本-"


def test_split_character_is_kept_as_surrogate_escape() -> None:
    """A byte slice through a character yields invalid UTF-8; the bytes stay recoverable."""
    out = envsubst("${v:0:1}", {"v": "é"})
    assert out.encode("utf-8", "surrogateescape") == b"\xc3"


def test_multiline_yaml() -> None:
    """A realistic resource: references, defaults, escapes and shell text left alone."""
    text = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-${cluster_env:=dev}
  namespace: ${namespace}
  labels:
    region: "${region,,}"
data:
  script.sh: |
    #!/bin/sh
    echo "$HOME $1 $${literal}"
    test -n "${replicas:-1}"
  image: registry/${app}:${tag:=latest}
"""
    expected = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-dev
  namespace: apps
  labels:
    region: "eu-west-1"
data:
  script.sh: |
    #!/bin/sh
    echo "$HOME $1 ${literal}"
    test -n "3"
  image: registry/web:latest
"""
    variables = {"namespace": "apps", "region": "EU-WEST-1", "replicas": "3", "app": "web"}
    assert envsubst(text, variables, strict=True) == expected
    refs = referenced_variables(text)
    assert [r.name for r in refs] == [
        "cluster_env",
        "namespace",
        "region",
        "replicas",
        "app",
        "tag",
    ]
    assert [r.has_default for r in refs] == [True, False, False, True, False, True]
    for ref in refs:
        assert text[ref.offset :].startswith(ref.expression)
    err = _error(text, {"namespace": "apps", "app": "web"}, strict=True)
    assert err.variable == "region"


# ------------------------------------------------------------------------------------------
# Variable names
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["a", "_", "_a1", "CLUSTER_NAME", "x9", "A_b_C"])
def test_valid_variable_names(key: str) -> None:
    """Keys Flux accepts pass silently."""
    validate_variable_names({key: "v"})
    assert VARIABLE_NAME_RE.match(key)


@pytest.mark.parametrize("key", ["tls.crt", "1abc", "a-b", "", "é", "abc\n", "a b", "ä1"])
def test_invalid_variable_names(key: str) -> None:
    """Flux refuses the whole substitution when any key is outside the ASCII name regex."""
    with pytest.raises(SubstitutionError) as info:
        validate_variable_names({"good": "x", key: "v", "also-bad": "y"})
    err = info.value
    assert err.variable == key
    assert err.kind == "name"
    assert str(err) == f"'{key}' var name is invalid, must match '{VARIABLE_NAME_PATTERN}'"


def test_invalid_name_message_matches_flux() -> None:
    """The exact text from fluxcd/pkg kustomize_varsub.go, as users see it."""
    with pytest.raises(SubstitutionError) as info:
        validate_variable_names({"tls.crt": "x"})
    assert str(info.value) == (
        "'tls.crt' var name is invalid, must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'"
    )


# ------------------------------------------------------------------------------------------
# referenced_variables
# ------------------------------------------------------------------------------------------


def test_referenced_variables_nested_and_escaped() -> None:
    """Nested references are listed after their parent; escaped ones are not references."""
    text = "x ${a:=p${b}q} $${c} ${#d} é${e/${f}/g} $$${h}"
    assert referenced_variables(text) == [
        VariableRef("a", True, "${a:=p${b}q}", 2),
        VariableRef("b", False, "${b}", 8),
        VariableRef("d", False, "${#d}", 21),
        VariableRef("e", False, "${e/${f}/g}", 28),
        VariableRef("f", False, "${f}", 32),
        VariableRef("h", False, "${h}", 42),
    ]


def test_referenced_variables_quirks() -> None:
    """$${ is not an escape inside a default, and a NUL hides everything after it."""
    assert [r.name for r in referenced_variables("${a:=$${b}}")] == ["a", "b"]
    assert referenced_variables("${a}\x00${b}") == [VariableRef("a", False, "${a}", 0)]
    assert referenced_variables("no refs $here $${x}") == []
    assert referenced_variables(r"${v/\//${w}}")[1] == VariableRef("w", False, "${w}", 7)


def test_referenced_variables_rejects_bad_templates() -> None:
    """A lint on an unparsable template must see Flux's parse error."""
    with pytest.raises(SubstitutionError, match="missing closing brace"):
        referenced_variables("ok ${a} ${b-c}")


# ------------------------------------------------------------------------------------------
# Properties
# ------------------------------------------------------------------------------------------

NO_DOLLAR = st.text(st.characters(blacklist_characters="$\x00"), max_size=60)
IDENTISH = st.text(string.ascii_letters + string.digits + "_éß", max_size=12)
NAMES = st.sampled_from(["a", "b", "c", "d"])
PLAIN = st.text(string.ascii_letters + " -.:", max_size=4)
VALUES = st.dictionaries(NAMES, st.text(max_size=6), max_size=4)


@st.composite
def templates(draw: st.DrawFn, depth: int = 2) -> tuple[str, list[tuple[str, bool]]]:
    """A template plus the (name, has_default) references it contains, in text order."""
    pieces: list[str] = []
    refs: list[tuple[str, bool]] = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["text", "plain", "default", "upper", "len", "replace"]))
        name = draw(NAMES)
        if kind == "text":
            pieces.append(draw(PLAIN))
            continue
        if kind == "default" and depth > 0:
            inner, inner_refs = draw(templates(depth - 1))
            pieces.append("${" + name + draw(st.sampled_from([":=", ":-", "="])) + inner + "}")
            refs.append((name, True))
            refs.extend(inner_refs)
            continue
        form = {"upper": "${%s^^}", "len": "${#%s}", "replace": "${%s/a/b}"}.get(kind, "${%s}")
        pieces.append(form % name)
        refs.append((name, False))
    return "".join(pieces), refs


@settings(max_examples=150, deadline=None)
@given(NO_DOLLAR, VALUES, st.booleans())
def test_text_without_dollar_is_unchanged(
    text: str, variables: dict[str, str], strict: bool
) -> None:
    """Plain text passes through untouched and never raises."""
    assert envsubst(text, variables, strict=strict) == text
    assert referenced_variables(text) == []


@settings(max_examples=150, deadline=None)
@given(IDENTISH)
def test_escaped_reference_is_literal(x: str) -> None:
    """$${x} is how users keep a literal ${x} in their manifests."""
    assert envsubst("$${" + x + "}", {}) == "${" + x + "}"
    assert envsubst("$${" + x + "}", {}, strict=True) == "${" + x + "}"
    assert referenced_variables("$${" + x + "}") == []


@settings(max_examples=150, deadline=None)
@given(st.text(st.characters(blacklist_characters="\x00"), max_size=40))
def test_doubling_dollars_escapes_any_text(text: str) -> None:
    """Replacing every $ with $$ yields the text itself, whatever it contains."""
    assert envsubst(text.replace("$", "$$"), {"a": "x"}, strict=True) == text


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=40), st.text(max_size=20))
def test_values_are_not_reexpanded(value: str, other: str) -> None:
    """A value containing ${...} or $$ is inserted as is, never evaluated again."""
    variables = {"a": value, "b": other}
    assert envsubst("${a}", variables, strict=True) == value
    assert envsubst("[${a}]", variables) == f"[{value}]"
    assert envsubst("${a}", {"a": "${b}" + value, "b": other}) == "${b}" + value


@settings(max_examples=200, deadline=None)
@given(templates(), VALUES)
def test_strict_fails_exactly_on_undefaulted_unset_refs(
    generated: tuple[str, list[tuple[str, bool]]], variables: dict[str, str]
) -> None:
    """The lint rule (defined or defaulted) predicts strict mode, nested refs included."""
    text, expected_refs = generated
    refs = referenced_variables(text)
    assert [(r.name, r.has_default) for r in refs] == expected_refs
    for ref in refs:
        assert text[ref.offset : ref.offset + len(ref.expression)] == ref.expression
    missing = [r.name for r in refs if not r.has_default and r.name not in variables]
    lenient = envsubst(text, variables)
    if missing:
        with pytest.raises(SubstitutionError) as info:
            envsubst(text, variables, strict=True)
        assert info.value.variable in missing
    else:
        assert envsubst(text, variables, strict=True) == lenient


def test_escaped_expressions_are_the_ones_substitution_would_unescape() -> None:
    from harness.flux.kustomize.substitute import escaped_expressions

    text = 'cp "$src" "$${src%.dist}" $$$${twice} $${x:-y} ${ref} $$${ref2} $$x ${a:=$${b}}'
    assert escaped_expressions(text) == ["$${src%.dist}", "$${twice}", "$${x:-y}"]
    assert escaped_expressions("no escapes ${here}") == []
