"""`harness images` on a small repo and on examples/homelab; the "Images" summary of `diff`
and `comment` for a renovate-style bump of the example."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import EXAMPLE, Result, kustomization
from tests.gitkit import commit_all
from tests.homelab import edit

Cli = Callable[..., Result]
Repo = Callable[[dict[str, str | bytes]], Path]

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
  template:
    spec:
      initContainers:
      - name: wait
        image: registry.local:5000/tools/wait:1@sha256:{digest}
      containers:
      - name: migrate
        image: app
"""


def test_a_path_repo_lists_its_images_and_errors(make_repo: Repo, cli: Cli) -> None:
    repo = make_repo(
        {
            "job/kustomization.yaml": kustomization("job.yaml"),
            "job/job.yaml": JOB.format(digest="ab" * 32),
            "bad/kustomization.yaml": "resources: [\n",
        }
    )
    res = cli("images", "--repo", repo, "-q")
    assert res.code == 2
    assert "error: bad:" in res.stderr
    assert res.stdout.splitlines() == [
        "cluster  workload           container    image",
        "-        batch/Job/migrate  wait (init)  registry.local:5000/tools/wait:1@sha256:"
        + "ab" * 32,
        "-        batch/Job/migrate  migrate      app",
        "2 image(s) in 1 object(s), 0 cluster(s)",
    ]
    data = json.loads(cli("images", "--repo", repo, "-q", "-o", "json").stdout)
    assert data["schema"] == "harness.images/v1"
    wait, app = data["images"]
    assert wait == {
        "cluster": None,
        "workload": "batch/Job/migrate",
        "kind": "Job",
        "namespace": None,
        "name": "migrate",
        "container": "wait",
        "field": "initContainers",
        "image": f"registry.local:5000/tools/wait:1@sha256:{'ab' * 32}",
        "registry": "registry.local:5000",
        "repository": "registry.local:5000/tools/wait",
        "identity": "registry.local:5000/tools/wait",
        "tag": "1",
        "digest": f"sha256:{'ab' * 32}",
        "targets": ["job"],
    }
    assert (app["image"], app["identity"], app["tag"]) == ("app", "docker.io/library/app", None)
    assert data["errors"][0]["target"] == "bad"


def test_homelab_images_per_cluster(cli: Cli) -> None:
    res = cli("images", "--repo", EXAMPLE, "-q", "--cluster", "prod")
    assert res.code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1] == "12 image(s) in 13 object(s), 1 cluster(s)"
    sonarr = next(line for line in lines if "/sonarr " in line)
    assert sonarr.split() == [
        "prod",
        "apps/Deployment/media/sonarr",
        "sonarr",
        "lscr.io/linuxserver/sonarr:4.0.11",
    ]
    assert {line.split()[0] for line in lines[1:-1]} == {"prod"}
    missing = cli("images", "--repo", EXAMPLE, "-q", "--cluster", "nope")
    assert (missing.code, missing.stderr.strip()) == (
        2,
        "error: --cluster nope: no such cluster (clusters: dev, prod)",
    )


def test_an_image_bump_is_the_first_thing_diff_and_comment_say(homelab: Path, cli: Cli) -> None:
    root = homelab.parent.parent
    commit_all(root, "base")
    edit(homelab / "apps/wave-1/sonarr/sonarr.yaml", "sonarr:4.0.11", "sonarr:4.0.12")
    for rel in ("platform/keycloak/postgres.yaml", "apps/wave-0/nextcloud-db/postgres.yaml"):
        edit(homelab / rel, "docker.io/library/postgres:16.6", "postgres:16.6")  # respelt only
    text = cli("diff", "--repo", homelab, "-q")
    assert text.code == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[3:6] == [
        "images: 1 change in 2 containers",
        "  lscr.io/linuxserver/sonarr: 4.0.11 -> 4.0.12 "
        "(apps/Deployment/media/sonarr in dev, prod)",
        "",
    ]
    (image,) = json.loads(cli("diff", "--repo", homelab, "-q", "-o", "json").stdout)["images"]
    assert (image["op"], image["before"]["tag"], image["after"]["tag"]) == (
        "changed",
        "4.0.11",
        "4.0.12",
    )
    assert image["workloads"] == [
        {"cluster": c, "workload": "apps/Deployment/media/sonarr", "container": "sonarr"}
        for c in ("dev", "prod")
    ]
    body = cli("comment", "--repo", homelab, "-q").stdout
    images = body.split("**Images** (1)\n\n")[1].split("\n")[0]
    assert images == (
        "- `lscr.io/linuxserver/sonarr`: `4.0.11` -> `4.0.12` "
        "(apps/Deployment/media/sonarr in dev, prod)"
    )
    assert body.index("**Images**") < body.index("**What changes**")
