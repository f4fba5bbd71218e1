"""Go text/template as flux-operator runs it: vectors checked against Go's documented rules
(trim markers, missing keys, int64 and float64 printing, comparisons, slim-sprig and
flux-operator's functions)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.flux import gotemplate
from harness.flux.gotemplate import TemplateError, UnsupportedError, render

INPUTS: dict[str, Any] = {
    "tenant": "team1",
    "replicas": 2,  # an integer input is an int64 (apimachinery's json)
    "ratio": 2.5,  # any other number a float64
    "enabled": True,
    "nothing": None,
    "components": ["ingress", "cert-manager"],
    "app": {"version": "6.7.x", "env": {"b": "2", "a": "1"}},
    "empty": "",
}

# (template, expected output): each a case Go's text/template + slim-sprig answers so
VECTORS = [
    ("<< inputs.tenant >>", "team1"),
    ("name: << inputs.tenant >>-x", "name: team1-x"),
    ("<< inputs.app.version | quote >>", '"6.7.x"'),
    ("<< inputs.replicas >>", "2"),
    ("<< float64 1000000 >>", "1e+06"),
    ("<< inputs.ratio >>", "2.5"),
    ("<< inputs.replicas | int >>", "2"),
    ("<< inputs.ratio | int >>", "2"),
    ("<< inputs.nothing >>", "<no value>"),
    ("<< inputs.enabled | quote >>", '"true"'),
    ("<< inputs.enabled >>", "true"),
    ("a  <<- inputs.tenant ->>  \n b", "ateam1b"),
    ("a <<-3>> b", "a -3 b"),  # `<<-3` is the number -3, not a trim marker
    ("x\n  <<- /* comment */ ->>\n  y", "xy"),
    ('<< get inputs "name" | default inputs.tenant >>', "team1"),
    ('<< get inputs "tenant" | default "x" >>', "team1"),
    ('<< inputs.empty | default "fallback" >>', "fallback"),
    ("<< if inputs.enabled >>on<< else >>off<< end >>", "on"),
    ("<< if inputs.empty >>a<< else if inputs.tenant >>b<< end >>", "b"),
    ('<< if eq inputs.tenant "team1" >>enabled<< else >>disabled<< end >>', "enabled"),
    ("<< if eq inputs.replicas 2 >>two<< end >>", "two"),
    ("<< if eq inputs.ratio 2.5 >>half<< end >>", "half"),
    ("<< range $c := inputs.components >>[<< $c >>]<< end >>", "[ingress][cert-manager]"),
    (
        "<< range $i, $c := inputs.components >><< $i >>=<< $c >> << end >>",
        "0=ingress 1=cert-manager ",
    ),
    ("<< range $k, $v := inputs.app.env >><< $k >><< $v >><< end >>", "a1b2"),
    ("<< range inputs.empty_list >>x<< else >>none<< end >>", None),  # missing key: error
    ("<< range list 1 2 3 >><< if eq . 2 >><< continue >><< end >><< . >><< end >>", "13"),
    ("<< range list 1 2 3 >><< if eq . 2 >><< break >><< end >><< . >><< end >>", "1"),
    ("<< with inputs.app >><< .version >><< end >>", "6.7.x"),
    ("<< $x := 1 >><< if true >><< $x = 2 >><< end >><< $x >>", "2"),
    ("<< inputs.app.env | toYaml >>", 'a: "1"\nb: "2"\n'),
    ("k: << inputs.components | toYaml | nindent 2 >>", "k: \n  - ingress\n  - cert-manager\n  "),
    ("<< inputs.app | toJson >>", '{"env":{"a":"1","b":"2"},"version":"6.7.x"}'),
    ('<< "Team One & Co" | slugify >>', "team-one-and-co"),
    ("<< inputs.tenant | upper | trunc 3 >>", "TEA"),
    ('<< printf "%s-%d" inputs.tenant 3 >>', "team1-3"),
    ("<< len inputs.components >>", "2"),
    ("<< index inputs.components 1 >>", "cert-manager"),
    ('<< index inputs.app "version" >>', "6.7.x"),
    ('<< join "," inputs.components >>', "ingress,cert-manager"),
    ('<< splitList "/" "a/b" | last >>', "b"),
    ("<< add 1 inputs.replicas >>", "3"),
    ("<< inputs.app.env | keys | sortAlpha >>", "[a b]"),
    ('<< dict "a" 1 | toJson >>', '{"a":1}'),
    ("<< inputs.app.env >>", "map[a:1 b:2]"),
    ('<< "a" | sha256sum | trunc 8 >>', "ca978112"),
    ('<< ternary "y" "n" inputs.enabled >>', "y"),
    ('<< regexReplaceAll "(t)eam" inputs.tenant "${1}ier" >>', "tier1"),
    ('<< "x" | squote >>', "'x'"),
    ("<< and inputs.enabled inputs.tenant >>", "team1"),
    ("<< or inputs.empty inputs.tenant >>", "team1"),
    ("<< not inputs.enabled >>", "false"),
    ("<< (inputs.tenant) >>", "team1"),
    ('<< "0755" | int >> << "08" | int >> << atoi "08" >>', "493 0 8"),  # cast: base 0
    ('<< title "don\'t stop" >>', "Don'T Stop"),  # strings.Title: ' separates words
    ('<< fromJson "not json" >>', "<no value>"),
]


@pytest.mark.parametrize(("source", "expected"), VECTORS)
def test_vector(source: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(TemplateError):
            render(source, INPUTS)
        return
    assert render(source, INPUTS) == expected


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("<< inputs.missing >>", "map has no entry for key"),
        ("<< inputs.app.missing >>", "map has no entry for key"),
        ("<< inputs.nothing.x >>", "nil data; no entry for key"),
        ("<< inputs.tenant.x >>", "can't evaluate field x in type string"),
        ("<< eq inputs.ratio 2 >>", "incompatible types for comparison"),
        ("<< nope >>", 'function "nope" not defined'),
        ("<< upper inputs.replicas >>", "wrong type for value in call to upper"),
        ("<< 1 | nope2 >>", 'function "nope2" not defined'),
        ("<< if true >>x", "unexpected EOF"),
        ("<< end >>", "unexpected"),
        ("<< $undefined >>", "undefined variable"),
        ('<< fail "stop" >>', "stop"),
    ],
)
def test_errors_are_go_errors(source: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message.replace("(", r"\(")):
        render(source, INPUTS)


def test_unimplemented_slim_sprig_functions_are_unsupported_never_guessed() -> None:
    with pytest.raises(UnsupportedError, match="toDecimal"):
        render('<< toDecimal "1" >>', INPUTS)
    with pytest.raises(UnsupportedError):
        render('<< define "x" >>a<< end >>', INPUTS)


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (2.0, "2"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-3.25, "-3.25"),
        (1e21, "1e+21"),
    ],
)
def test_float64_prints_as_go_does(value: float, printed: str) -> None:
    assert gotemplate.go_float(value) == printed


def test_go_yaml_sorts_keys_and_quotes_what_would_read_as_another_type() -> None:
    doc = {"b": "yes", "a": "<< inputs.x >>", "c": "line1\nline2", "d": 1.0, "e": "*"}
    assert gotemplate.go_yaml(doc) == (
        "a: << inputs.x >>\nb: \"yes\"\nc: |-\n  line1\n  line2\nd: 1\ne: '*'\n"
    )


@pytest.mark.parametrize(
    ("value", "held"),
    [(2, 2), (2.0, 2), (2.5, 2.5), (1e21, 1e21), ({"a": [1.0, "x"]}, {"a": [1, "x"]})],
)
def test_inputs_decode_as_apimachinery_json_does(value: Any, held: Any) -> None:
    decoded = gotemplate.from_json_value(value)
    assert decoded == held
    assert type(decoded) is type(held)
