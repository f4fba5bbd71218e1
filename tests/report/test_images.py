"""`harness images`' table and JSON, from a hand-built snapshot."""

from __future__ import annotations

import json

import pytest

from harness.compare.images import images_of
from harness.report.images import images_payload, print_images
from tests.compare.test_images import deploy
from tests.diffkit import snapshot


def test_the_table_and_the_json_say_the_same_images(capsys: pytest.CaptureFixture[str]) -> None:
    snap = snapshot(
        {
            "dev/flux-system/apps": [deploy("web", "nginx:1", init="busybox")],
            "dev/flux-system/broken": "kustomize: boom",
        }
    )
    uses = images_of(snap)
    print_images(snap, uses)
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "cluster  workload                  container     image",
        "dev      apps/Deployment/apps/web  setup (init)  busybox",
        "dev      apps/Deployment/apps/web  web           nginx:1",
        "2 image(s) in 1 object(s), 1 cluster(s)",
    ]
    assert "dev/flux-system/broken" in err
    payload = json.loads(json.dumps(images_payload(snap, uses)))
    assert [(i["container"], i["image"], i["identity"]) for i in payload["images"]] == [
        ("setup", "busybox", "docker.io/library/busybox"),
        ("web", "nginx:1", "docker.io/library/nginx"),
    ]
    assert payload["errors"] == [{"target": "dev/flux-system/broken", "message": "kustomize: boom"}]
