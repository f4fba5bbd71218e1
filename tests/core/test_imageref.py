"""Image references split as the distribution grammar reads them; identity applies Docker's
defaults, display keeps what the user wrote."""

from __future__ import annotations

import pytest

from harness.core.imageref import parse, short_version

DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("text", "registry", "path", "tag", "digest"),
    [
        ("nginx", "", "nginx", "", ""),
        ("nginx:1.25", "", "nginx", "1.25", ""),
        ("library/nginx:1.25", "", "library/nginx", "1.25", ""),
        ("ghcr.io/org/app:v1.2.3", "ghcr.io", "org/app", "v1.2.3", ""),
        ("registry.local:5000/team/app:2", "registry.local:5000", "team/app", "2", ""),
        ("localhost:5000/app", "localhost:5000", "app", "", ""),
        ("localhost/app:1", "localhost", "app", "1", ""),
        (f"ghcr.io/org/app@{DIGEST}", "ghcr.io", "org/app", "", DIGEST),
        (f"quay.io/org/app:v2@{DIGEST}", "quay.io", "org/app", "v2", DIGEST),
        ("my-registry:5000/app@" + DIGEST, "my-registry:5000", "app", "", DIGEST),
    ],
)
def test_a_reference_splits_into_its_parts(
    text: str, registry: str, path: str, tag: str, digest: str
) -> None:
    ref = parse(text)
    assert (ref.valid, ref.registry, ref.path, ref.tag, ref.digest) == (
        True,
        registry,
        path,
        tag,
        digest,
    )
    assert ref.text == text  # shown as written


def test_identity_applies_docker_hub_defaults_only() -> None:
    assert parse("nginx:1").identity == "docker.io/library/nginx"
    assert parse("docker.io/library/nginx:1").identity == "docker.io/library/nginx"
    assert parse("index.docker.io/nginx").identity == "docker.io/library/nginx"
    assert parse("bitnami/redis:7").identity == "docker.io/bitnami/redis"
    assert parse("ghcr.io/nginx:1").identity == "ghcr.io/nginx"
    assert parse("nginx:1").repository == "nginx"


def test_spellings_of_one_image_are_the_same_image() -> None:
    assert parse("nginx:1.25").same_image(parse("docker.io/library/nginx:1.25"))
    assert parse("nginx").same_image(parse("nginx:latest"))
    assert not parse("nginx:1.25").same_image(parse("nginx:1.26"))
    assert not parse(f"app:1@{DIGEST}").same_image(parse("app:1"))
    assert not parse("ghcr.io/a/app:1").same_image(parse("quay.io/a/app:1"))


@pytest.mark.parametrize("text", ["${IMAGE}", "Upper/Case:1", "app:bad tag", "app@sha256:xyz", ""])
def test_an_unreadable_reference_keeps_its_text(text: str) -> None:
    ref = parse(text)
    assert (ref.valid, ref.repository, ref.identity) == (False, text, text)


def test_a_version_shortens_its_digest_for_a_reader() -> None:
    assert parse(f"app:1@{DIGEST}").version == f"1@{DIGEST}"
    assert short_version(f"1@{DIGEST}") == "1@sha256:0123456789ab"
    assert short_version(f"@{DIGEST}") == "@sha256:0123456789ab"
    assert short_version("v1.2.3") == "v1.2.3"
