"""Error lines: one per failed target; many helm targets failing on one unreachable chart
source are one line with the error once (issue 32: one ~300-character line per release)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.model import HelmInfo, Target, TargetResult
from harness.report.errors import error_lines, unreachable
from harness.report.text import print_errors

GRAFANA = (
    'HelmRepository/observability/grafana: Get "https://grafana.github.io/helm-charts/'
    'index.yaml": dial tcp: lookup grafana.github.io: no such host'
)


def _helm(name: str, error: str, *, fetched: bool = False) -> TargetResult:
    info = HelmInfo(source="HelmRepository/observability/grafana", unreachable=not fetched)
    return TargetResult(Target(name, "helm", Path("/repo"), "dev", info), error=error)


def _path(name: str, error: str) -> TargetResult:
    return TargetResult(Target(name, "path", Path("/repo") / name), error=error)


def test_one_line_per_unreachable_source_where_its_first_target_was(
    capsys: pytest.CaptureFixture[str],
) -> None:
    print_errors(
        [
            _path("apps", "apps/kustomization.yaml: kustomize: no such file"),
            _helm("dev/observability/alloy", GRAFANA),
            _helm("dev/observability/loki", GRAFANA),
            _path("broken", "broken/kustomization.yaml: kustomize: bad"),
            _helm("prod/observability/alloy", GRAFANA),
            _helm("prod/observability/loki", GRAFANA),
            _helm(
                "prod/observability/tempo", "values: spec.values must be a mapping", fetched=True
            ),
        ]
    )
    assert capsys.readouterr().err.splitlines() == [
        "error: apps: apps/kustomization.yaml: kustomize: no such file",
        f"error: {GRAFANA} (chart not fetched for 4 helm targets: dev/observability/alloy, "
        "dev/observability/loki, prod/observability/alloy and 1 more)",
        "error: broken: broken/kustomization.yaml: kustomize: bad",
        "error: prod/observability/tempo: values: spec.values must be a mapping",
    ]


def test_a_lone_unreachable_target_keeps_its_own_line() -> None:
    results = [_helm("dev/observability/loki", GRAFANA), _path("ok", "x")]
    assert unreachable(results) == {("dev/observability/loki", "")}
    lines = error_lines([(r.name, r.error, "") for r in results], unreachable(results))
    assert lines == [f"error: dev/observability/loki: {GRAFANA}", "error: ok: x"]


def test_different_messages_of_one_source_stay_apart() -> None:
    other = GRAFANA.replace("no such host", "connection refused")
    lines = error_lines(
        [("a", GRAFANA, "head"), ("b", other, "head"), ("c", GRAFANA, "head")],
        unfetched={("a", "head"), ("b", "head"), ("c", "head")},
    )
    assert lines == [
        f"error: {GRAFANA} (head; chart not fetched for 2 helm targets: a, c)",
        f"error: b (head): {other}",
    ]
