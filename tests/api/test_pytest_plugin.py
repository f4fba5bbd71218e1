"""The pytest plugin as a user meets it: a `tests/test_policy.py` over a repo, run by pytest
(pytester, in-process) with the plugin loaded from its entry point; passing and failing
policies, the root from the command line or the ini file, and a plugin inert until used."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from harness.api import calls, model
from tests.conftest import fresh_python, kustomization

pytest_plugins = ["pytester"]
# imported here, before any inner run: pytester's in-process runs forget the modules they
# imported, and a second import would give the API's classes a second identity
LOADED = (calls, model)

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: apps
spec:
  template:
    spec:
      containers:
      - name: {name}
        image: {image}
{resources}"""
RESOURCES = "        resources:\n          requests: {cpu: 10m, memory: 16Mi}\n"

POLICY = """
def test_every_deployment_has_resources(harness_snapshot):
    missing = [
        f"{doc.target}: {doc.id} container {c['name']}"
        for doc in harness_snapshot.documents(kind="Deployment")
        for c in doc.object["spec"]["template"]["spec"]["containers"]
        if not c.get("resources")
    ]
    assert missing == []


def test_no_latest_tags(harness_snapshot):
    latest = [
        f"{i.workload} {i.container}: {i.ref.text}"
        for i in harness_snapshot.images
        if i.ref.tag in (None, "latest") and i.ref.digest is None
    ]
    assert latest == []


def test_everything_renders(harness_snapshot):
    assert [t.name for t in harness_snapshot.errors] == []
"""


def _repo(pytester: pytest.Pytester, web_image: str, web_resources: str) -> None:
    files = {
        "deploy/apps/kustomization.yaml": kustomization("web.yaml", "db.yaml"),
        "deploy/apps/web.yaml": DEPLOYMENT.format(
            name="web", image=web_image, resources=web_resources
        ),
        "deploy/apps/db.yaml": DEPLOYMENT.format(
            name="db", image="postgres:16.6", resources=RESOURCES
        ),
        "tests/test_policy.py": POLICY,
    }
    for rel, text in files.items():
        path = pytester.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_a_policy_over_a_compliant_repo_passes(pytester: pytest.Pytester) -> None:
    _repo(pytester, "ghcr.io/o/web:1.2.3", RESOURCES)
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-root", "deploy")
    result.assert_outcomes(passed=3)


def test_a_policy_names_what_breaks_it(pytester: pytest.Pytester) -> None:
    _repo(pytester, "ghcr.io/o/web", "")
    pytester.makeini("[pytest]\nharness_root = deploy\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*Left contains one more item: 'apps: apps/Deployment/apps/web container web'",
            "*Left contains one more item: 'apps/Deployment/apps/web web: ghcr.io/o/web'",
        ]
    )


def test_a_repo_that_cannot_render_fails_the_test_with_one_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_policy=POLICY)
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-root", "nowhere")
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(["*harness: repo */nowhere: not a directory*"])


def test_the_plugin_imports_nothing_until_a_fixture_is_used() -> None:
    """pytest loads it in every session, this project's own included."""
    script = (
        "import sys, harness.api.pytest_plugin\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('harness'))))"
    )
    loaded = fresh_python(script).split()
    assert loaded == ["harness", "harness.api", "harness.api.pytest_plugin"]
    assert sys.modules["harness.api.pytest_plugin"].__name__ in loaded  # the entry point's


INGRESS = """\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: apps
spec:
{tls}  rules:
  - host: web.example.com
"""
FLUX_APPS = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""


def _documented_policies() -> str:
    """The example policies of docs/python-api.md, as a user copies them."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "python-api.md").read_text()
    return page.split("## Three example policies")[1].split("```python\n")[1].split("```")[0]


def _cluster_repo(pytester: pytest.Pytester, compliant: bool) -> None:
    tls = "  tls:\n  - hosts: [web.example.com]\n    secretName: web-tls\n" if compliant else ""
    files = {
        "clusters/prod/flux-system/kustomization.yaml": kustomization("apps.yaml"),
        "clusters/prod/flux-system/apps.yaml": FLUX_APPS,
        "apps/kustomization.yaml": kustomization("web.yaml", "ingress.yaml"),
        "apps/web.yaml": DEPLOYMENT.format(
            name="web",
            image="ghcr.io/o/web:1" if compliant else "ghcr.io/o/web:latest",
            resources=RESOURCES if compliant else "",
        ),
        "apps/ingress.yaml": INGRESS.format(tls=tls),
        "tests/test_policy.py": _documented_policies(),
    }
    for rel, text in files.items():
        path = pytester.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.mark.parametrize("compliant", [True, False])
def test_the_documented_policies_hold_on_a_cluster_repo(
    pytester: pytest.Pytester, compliant: bool
) -> None:
    _cluster_repo(pytester, compliant)
    result = pytester.runpytest("-p", "no:cacheprovider")
    if compliant:
        result.assert_outcomes(passed=3)
        return
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines_random(
        [
            "*'prod: apps/Deployment/apps/web container web'*",
            "*'prod: apps/Deployment/apps/web web: ghcr.io/o/web:latest'*",
            "*'prod: networking.k8s.io/Ingress/apps/web'*",
        ]
    )
