"""substitution: every ${VAR} is defined, defaulted or escaped, on the pre-substitution source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.hazards.rules import substitution
from harness.hazards.rules.substitution import RULE
from tests.hazards.snap import by_id, cm, flux, helmrelease, ks, lint_ctx, obj, path, snapshot

ROOT = "flux-system"
CILIUM_SRC = helmrelease("cilium", "kube-system", k8sServiceHost="${K3S_API_HOST}")


def _snap(
    platform: dict[str, Any] | None = None,
    *,
    dev_vars: dict[str, str] | None = None,
    prod_vars: dict[str, str] | None = None,
    source: tuple[dict[str, Any], ...] = (CILIUM_SRC,),
    rendered: tuple[dict[str, Any], ...] = (),
    extra: tuple[Any, ...] = (),
) -> Any:
    platform = platform or ks("platform", subst_from=["cluster-vars"])
    dev = dev_vars if dev_vars is not None else {"K3S_API_HOST": "192.168.1.10"}
    prod = prod_vars if prod_vars is not None else {"K3S_API_HOST": "192.168.2.10"}
    return snapshot(
        path("platform", *source),
        flux("dev", ROOT, platform, cm("cluster-vars", "flux-system", **dev)),
        flux("dev", "platform", *rendered),
        flux("prod", ROOT, platform, cm("cluster-vars", "flux-system", **prod)),
        flux("prod", "platform", *rendered),
        *extra,
    )


def _lint(snap: Any, repo: Path | None = None) -> dict[str, Any]:
    return by_id(RULE.check_snapshot(lint_ctx(snap, repo)))


def test_defined_variables_pass_and_are_counted() -> None:
    ctx = lint_ctx(_snap())
    assert RULE.check_snapshot(ctx) == []
    assert substitution.assertions(ctx) == 2  # (dev|prod, platform, K3S_API_HOST)


def test_missing_postbuild_is_an_error_naming_variable_and_file(tmp_path: Path) -> None:
    (tmp_path / "platform").mkdir()
    (tmp_path / "platform/helmrelease.yaml").write_text(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\n"
        "metadata: {name: cilium, namespace: kube-system}\n"
        "spec: {values: {k8sServiceHost: '${K3S_API_HOST}'}}\n"
    )
    apps = ks("apps", subst_from=["cluster-vars"])  # makes K3S_API_HOST a known variable
    snap = _snap(
        ks("platform"),
        rendered=(CILIUM_SRC,),
        extra=(flux("dev", "apps", apps), flux("prod", "apps", apps)),
    )
    found = _lint(snap, tmp_path)
    f = found["substitution:dev:platform:K3S_API_HOST:literal"]
    assert f.severity == "error"
    assert "${K3S_API_HOST}" in f.message and "platform/helmrelease.yaml" in f.message
    assert "ships literally" in f.message and "no postBuild" in f.message
    assert "substitution:prod:platform:K3S_API_HOST:literal" in found


def test_unknown_literal_without_postbuild_is_info() -> None:
    dash = cm("dash", "monitoring", json='{"ds": "${DS_PROMETHEUS}"}')
    found = _lint(_snap(ks("platform"), source=(dash,), rendered=(dash,)))
    assert found["substitution:dev:platform:DS_PROMETHEUS:literal"].severity == "info"


def test_unset_variable_names_the_cluster_whose_values_lack_it() -> None:
    found = _lint(_snap(prod_vars={"OTHER": "x"}))
    f = found["substitution:prod:platform:K3S_API_HOST:unset"]
    assert f.severity == "error"
    assert "dev define it for platform but prod's ConfigMap/cluster-vars do not" in f.message
    assert list(found) == ["substitution:prod:platform:K3S_API_HOST:unset"]


def test_defaults_inline_substitute_secrets_and_disabled_documents() -> None:
    source = (
        cm("a", "x", v="${WITH_DEFAULT:=1}", w="${INLINE}", s="${FROM_SECRET}"),
        obj(
            "ConfigMap",
            "skip",
            "x",
            annotations={"kustomize.toolkit.fluxcd.io/substitute": "disabled"},
            data={"v": "${NOT_CHECKED}"},
        ),
    )
    platform = ks("platform", subst_from=["cluster-vars"], substitute={"INLINE": "i"})
    platform["spec"]["postBuild"]["substituteFrom"].append({"kind": "Secret", "name": "creds"})
    secret = obj("Secret", "creds", "flux-system", data={"FROM_SECRET": "c2VjcmV0"})
    snap = _snap(
        platform,
        source=source,
        extra=(flux("dev", "secrets", secret), flux("prod", "secrets", secret)),
    )
    assert _lint(snap) == {}


def test_scripts_must_escape_shell_variables() -> None:
    script = (
        "#cloud-config\nruncmd:\n  - echo ${HOSTNAME}\n  - echo $${ESCAPED}\n"
        "  - cd ${home:-/root}\n"
    )
    vm = obj("VirtualMachine", "unifi", "vms", "kubevirt.io/v1", spec={"userData": script})
    found = _lint(_snap(source=(vm,), dev_vars={"A": "1"}, prod_vars={"A": "2"}))
    f = found["substitution:dev:platform:HOSTNAME:script"]
    assert f.severity == "error" and "$${HOSTNAME}" in f.message and "spec.userData" in f.message
    g = found["substitution:dev:platform:home:default"]
    assert g.severity == "warning" and "$${home:-/root}" in g.message
    assert not any("ESCAPED" in i for i in found)


def test_without_strict_mode_unset_variables_misbehave_instead_of_failing() -> None:
    from harness.hazards.context import LintContext

    script = "#cloud-config\nruncmd:\n  - echo ${HOSTNAME}\n"
    vm = obj("VirtualMachine", "unifi", "vms", "kubevirt.io/v1", spec={"userData": script})
    snap = _snap(source=(vm, CILIUM_SRC), dev_vars={"A": "1"}, prod_vars={"A": "2"})
    strict = by_id(RULE.check_snapshot(LintContext(snap)))
    assert strict["substitution:dev:platform:K3S_API_HOST:unset"].severity == "error"
    lax = by_id(RULE.check_snapshot(LintContext(snap, strict=False)))
    unset = lax["substitution:dev:platform:K3S_API_HOST:unset"]
    assert unset.severity == "warning" and "empty string" in unset.message
    script_finding = lax["substitution:dev:platform:HOSTNAME:script"]
    assert script_finding.severity == "warning" and "strict mode is off" in script_finding.message


def test_missing_non_optional_source_defers_to_the_target_error() -> None:
    snap = snapshot(
        path("platform", CILIUM_SRC),
        flux("dev", ROOT, ks("platform", subst_from=["absent"])),
        flux("dev", "platform", error="substituteFrom ConfigMap/absent not found"),
    )
    assert _lint(snap) == {}


def test_overlay_left_on_the_base_default_is_flagged() -> None:
    base_vars = cm("cluster-vars", "flux-system", K3S_API_HOST="192.168.0.10")
    snap = _snap(
        prod_vars={"K3S_API_HOST": "192.168.0.10"},
        extra=(path("clusters/base", base_vars),),
    )
    found = _lint(snap)
    f = found["substitution:prod:K3S_API_HOST:inherited"]
    assert (
        f.severity == "warning" and "clusters/base" in f.message and "dev sets its own" in f.message
    )


def test_generator_directory_is_scanned_from_files(tmp_path: Path) -> None:
    vms = tmp_path / "apps/vms/unifi"
    vms.mkdir(parents=True)
    (vms / "vm.yaml").write_text(
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\n"
        "metadata: {name: unifi, namespace: vms}\n"
        "spec:\n  userData: |\n    #!/bin/sh\n    echo ${HOSTNAME}\n"
    )
    snap = snapshot(
        flux("dev", ROOT, ks("apps-vms", "./apps/vms", subst_from=["v"]), cm("v", ROOT, A="1")),
        flux("dev", "apps-vms", error='variable not set (strict mode): "HOSTNAME"'),
    )
    found = _lint(snap, tmp_path)
    f = found["substitution:dev:apps-vms:HOSTNAME:script"]
    assert "apps/vms/unifi/vm.yaml" in f.message
    ctx = lint_ctx(snap)  # without the repo the generated path is unknown: not checked
    assert RULE.check_snapshot(ctx) == []
    assert substitution.analyse(ctx).unchecked == ["dev/flux-system/apps-vms"]


def test_literal_advice_is_postbuild_never_an_escape_flux_would_not_undo() -> None:
    """Without postBuild Flux never unescapes: `$${VAR}` would ship as `$${VAR}`."""
    dash = cm("dash", "monitoring", json='{"ds": "${DS_PROMETHEUS}"}')
    info = _lint(_snap(ks("platform"), source=(dash,), rendered=(dash,)))
    f = info["substitution:dev:platform:DS_PROMETHEUS:literal"]
    assert "Flux leaves it as written" in f.message and "right today" in f.message
    assert "if substitution is ever added to platform, it must become $${DS_PROMETHEUS}" in (
        f.message
    )
    apps = ks("apps", subst_from=["cluster-vars"])
    host = cm("host", "x", url="${K3S_API_HOST}")
    error = _lint(
        _snap(
            ks("platform"),
            source=(host,),
            rendered=(host,),
            extra=(flux("dev", "apps", apps), flux("prod", "apps", apps)),
        )
    )["substitution:dev:platform:K3S_API_HOST:literal"]
    assert error.severity == "error"
    assert "add postBuild.substituteFrom" in error.message
    assert "escape it as" not in error.message


def test_a_script_s_own_variables_without_postbuild_are_no_finding() -> None:
    script = (
        "#!/bin/sh\nset -e\nfor f in ${files}; do echo ${1} ${f}; done\n"
        'tmp=$(mktemp)\necho "${tmp}"\n'
    )
    job = cm("backup-script", "x", **{"run.sh": script})
    assert _lint(_snap(ks("platform"), source=(job,), rendered=(job,))) == {}


def test_a_flux_default_outside_a_script_is_no_shell_expansion() -> None:
    """`${minRunners:=1}` in a HelmRelease value is Flux's own default syntax."""
    runners = helmrelease("runners", "arc", minRunners="${minRunners:=1}")
    assert _lint(_snap(source=(runners, CILIUM_SRC))) == {}


DIST_SCRIPT = (
    '#!/bin/sh\nset -e\nfor src in /config/*.dist; do\n  cp -n "$src" "$${src%.dist}"\ndone\n'
)


def test_an_escape_without_postbuild_ships_as_written() -> None:
    """Issue 33: `$${src%.dist}` in a Kustomization with no postBuild reaches the script as
    `$${src%.dist}` (nothing unescapes it; `$$` is the shell's pid): a finding whose
    advice, followed, leaves no finding."""
    job = cm("init-config", "x", **{"run.sh": DIST_SCRIPT})
    found = _lint(_snap(ks("platform"), source=(job,), rendered=(job,)))
    f = found["substitution:dev:platform:$${src%.dist}:escaped"]
    assert f.severity == "error"
    assert f.message == (
        "$${src%.dist} in ConfigMap/x/init-config data.run.sh ships as written: platform has "
        "no postBuild, so Flux never turns $$ into $ and the script gets $${src%.dist} (in a "
        "shell `$$` is its process id); write ${src%.dist}: without substitution Flux leaves "
        "it as written."
    )
    assert "substitution:prod:platform:$${src%.dist}:escaped" in found
    followed = cm("init-config", "x", **{"run.sh": DIST_SCRIPT.replace("$${", "${")})
    assert _lint(_snap(ks("platform"), source=(followed,), rendered=(followed,))) == {}


def test_an_escape_where_flux_substitutes_is_right() -> None:
    job = cm("init-config", "x", **{"run.sh": DIST_SCRIPT})
    assert _lint(_snap(source=(job, CILIUM_SRC))) == {}


def test_an_escaped_cluster_variable_in_a_field_is_advised_postbuild() -> None:
    """Written unescaped, `${K3S_API_HOST}` in a plain field would ship a cluster variable
    literally (an error): the advice there is postBuild, with which the escape is right."""
    apps = ks("apps", subst_from=["cluster-vars"])
    host = cm("host", "x", url="https://$${K3S_API_HOST}:6443")
    found = _lint(
        _snap(
            ks("platform"),
            source=(host,),
            rendered=(host,),
            extra=(flux("dev", "apps", apps), flux("prod", "apps", apps)),
        )
    )
    f = found["substitution:dev:platform:$${K3S_API_HOST}:escaped"]
    assert f.severity == "warning"
    assert f.message.endswith(
        "the object gets $${K3S_API_HOST}; if K3S_API_HOST should come from the cluster's "
        "variables, add postBuild.substituteFrom to platform (the escape is then right and "
        "ships ${K3S_API_HOST})."
    )
    with_post_build = ks("platform", subst_from=["cluster-vars"])
    assert _lint(_snap(with_post_build, source=(host, CILIUM_SRC))) == {}
