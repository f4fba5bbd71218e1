"""The config file is optional; every key validated, unknown keys rejected with the file named."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.core import config, limits
from harness.core.errors import ConfigError


def test_defaults_without_file(tmp_path: Path) -> None:
    cfg = config.load(tmp_path)
    assert cfg.goldens == tmp_path.resolve() / "goldens"
    assert cfg.kubectl_flags == ("--load-restrictor", "LoadRestrictionsNone")
    assert cfg.timeout == 60.0
    assert cfg.strict is True
    assert cfg.source_file is None


def test_values_are_read(make_repo: Callable[[dict[str, str | bytes]], Path]) -> None:
    repo = make_repo(
        {
            "harness.yaml": (
                "goldens: ../g\ninclude: [apps/**]\nexclude: apps/old\ntimeout: 5\n"
                "kubectl_flags: [--enable-helm]\nsources: {tenants: ./tenants}\n"
                "suppress:\n- rule: crd-order\n  reason: installed by hand\n"
            )
        }
    )
    (repo.parent / ".git").mkdir()  # the checkout holds ../g
    cfg = config.load(repo)
    assert cfg.goldens == (repo / "../g").resolve()
    assert cfg.include == ("apps/**",)
    assert cfg.exclude == ("apps/old",)
    assert cfg.timeout == 5.0
    assert cfg.kubectl_flags == ("--enable-helm",)
    assert cfg.sources == {"tenants": "./tenants"}
    assert cfg.suppress[0].rule == "crd-order"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("goldns: x\n", "unknown config key"),
        ("- a\n", "must be a mapping"),
        ("timeout: soon\n", "timeout must be a non-negative number"),
        ("include: 3\n", "include must be a list of strings"),
        ("suppress:\n- rule: x\n", r"suppress\[0\] needs a reason"),
        ("a: [1\n", "cannot read config"),
    ],
)
def test_bad_config_names_the_file(
    make_repo: Callable[[dict[str, str | bytes]], Path], text: str, message: str
) -> None:
    repo = make_repo({"harness.yaml": text})
    with pytest.raises(ConfigError, match=message) as info:
        config.load(repo)
    assert "harness.yaml" in str(info.value)


@pytest.mark.parametrize(
    ("text", "enabled", "targets", "kube", "apis"),
    [
        ("", False, (), "v1.36.0", ()),
        ("helm: true\n", True, (), "v1.36.0", ()),
        ("helm: ['*/media/*']\n", True, ("*/media/*",), "v1.36.0", ()),
        ("helm:\n  kube_version: v1.33.4+k3s1\n", True, (), "v1.33.4+k3s1", ()),
        ("helm:\n  kube_version: '1.30'\n  enabled: false\n", False, (), "1.30", ()),
        (
            "helm:\n  targets: [prod/*]\n  api_versions: [monitoring.coreos.com/v1/PodMonitor]\n",
            True,
            ("prod/*",),
            "v1.36.0",
            ("monitoring.coreos.com/v1/PodMonitor",),
        ),
    ],
)
def test_helm_settings(
    tmp_path: Path,
    text: str,
    enabled: bool,
    targets: tuple[str, ...],
    kube: str,
    apis: tuple[str, ...],
) -> None:
    (tmp_path / "harness.yaml").write_text(text)
    cfg = config.load(tmp_path)
    assert (cfg.helm, cfg.helm_targets, cfg.helm_kube_version, cfg.helm_api_versions) == (
        enabled,
        targets,
        kube,
        apis,
    )


def test_kube_version_per_cluster(tmp_path: Path) -> None:
    """A mapping names clusters; "*" (else the default) is every other cluster's."""
    (tmp_path / "harness.yaml").write_text(
        "helm:\n  enabled: false\n  kube_version: {staging: v1.33.4+k3s1, '*': '1.35'}\n"
    )
    cfg = config.load(tmp_path)
    assert (cfg.helm_kube_version, cfg.helm_kube_versions) == ("1.35", {"staging": "v1.33.4+k3s1"})
    assert [cfg.kube_version_of(c) for c in ("staging", "prod")] == ["v1.33.4+k3s1", "1.35"]
    (tmp_path / "harness.yaml").write_text("helm: {kube_version: {staging: v1.30.0}}\n")
    assert config.load(tmp_path).kube_version_of("prod") == "v1.36.0"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("helm: {kube_version: latest}\n", "helm.kube_version 'latest' is not a Kubernetes"),
        ("helm: {kube_version: 1.30}\n", "helm.kube_version must be a string: quote it"),
        ("helm: {api_versions: [HTTPRoute]}\n", "helm.api_versions entry 'HTTPRoute' must be"),
        ("helm: {kube: v1.30.0}\n", "unknown helm key(s): kube"),
        ("helm: {enabled: yes please}\n", "helm.enabled must be true or false"),
        ("helm: []\n", "helm must be true, false, a list of helm target globs or a mapping"),
        ("helm: {chart_metadata: {a: b}}\n", "helm: chart_metadata must be a list of strings"),
        ("helm: {kube_version: {dev: 1.30}}\n", "helm.kube_version.dev must be a string: quote"),
        ("helm: {kube_version: {dev: v2}}\n", "helm.kube_version.dev 'v2' is not a Kubernetes"),
    ],
)
def test_bad_helm_settings(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "harness.yaml").write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        config.load(tmp_path)


def test_chart_metadata_keys_default_and_override(tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text("helm: true\n")
    assert config.load(tmp_path).helm_chart_metadata == (
        "helm.sh/chart",
        "app.kubernetes.io/version",
        "chart",
        "checksum/*",
    )
    (tmp_path / "harness.yaml").write_text("helm:\n  chart_metadata: [helm.sh/chart]\n")
    assert config.load(tmp_path).helm_chart_metadata == ("helm.sh/chart",)
    (tmp_path / "harness.yaml").write_text("helm:\n  chart_metadata: []\n")
    assert config.load(tmp_path).helm_chart_metadata == ()


def test_goldens_outside_the_checkout_or_not_a_directory_is_an_error(
    make_repo: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    """The config comes with the tree (a pull request's too): `update` must never be told
    to write outside the checkout, by a relative path, an absolute one or a symlink."""
    repo = make_repo({"harness.yaml": "goldens: ../../../../tmp/x\n", "a-file": "x"})
    (repo / ".git").mkdir()
    outside = tmp_path / "outside"
    with pytest.raises(config.ConfigError, match="outside the checkout"):
        config.load(repo)
    (repo / "harness.yaml").write_text(f"goldens: {outside}\n")
    with pytest.raises(config.ConfigError, match="outside the checkout"):
        config.load(repo)
    (repo / "link").symlink_to(outside)
    (repo / "harness.yaml").write_text("goldens: link/goldens\n")
    with pytest.raises(config.ConfigError, match="outside the checkout"):
        config.load(repo)
    (repo / "harness.yaml").write_text("goldens: a-file\n")
    with pytest.raises(config.ConfigError, match=r"goldens 'a-file' \(.*\) is not a directory"):
        config.load(repo)
    (repo / "harness.yaml").write_text(f"goldens: {repo / 'inside'}\n")
    assert config.load(repo).goldens == (repo / "inside").resolve()
    assert not outside.exists()


def test_limits_default_and_configured(tmp_path: Path) -> None:
    assert config.load(tmp_path).limits == limits.DEFAULT
    (tmp_path / "harness.yaml").write_text(
        "limits: {file_bytes: 1MiB, output_bytes: 1000000, memory_bytes: 2GiB,"
        " archive_bytes: 1MiB, archive_entries: 50}\n"
    )
    loaded = config.load(tmp_path)
    assert loaded.limits == limits.Limits(
        file_bytes=1024 * 1024,
        output_bytes=1000000,
        memory_bytes=2 * 1024**3,
        archive_bytes=1024 * 1024,
        archive_entries=50,
    )
    assert loaded.notes == ()


def test_a_tree_cannot_loosen_its_own_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a pull request's `limits: {memory_bytes: 0}` lifted the bound its own billion
    laughs would hit. A looser value is held to the ceiling, with one note each."""
    monkeypatch.delenv(limits.ENV, raising=False)
    (tmp_path / "harness.yaml").write_text(
        "limits: {memory_bytes: 0, file_bytes: 32MiB, output_bytes: 1MiB}\n"
    )
    loaded = config.load(tmp_path)
    assert loaded.limits == limits.Limits(output_bytes=1024 * 1024)
    where = tmp_path / "harness.yaml"
    assert loaded.notes == (
        f"{where}: limits.memory_bytes 0 (none) is looser than 4 GiB, which applies: a tree "
        "cannot loosen its own bounds (set HARNESS_LIMITS=memory_bytes=... where harness "
        "runs to allow it)",
        f"{where}: limits.file_bytes 32MiB is looser than 16 MiB, which applies: a tree "
        "cannot loosen its own bounds (set HARNESS_LIMITS=file_bytes=... where harness runs "
        "to allow it)",
    )
    monkeypatch.setenv(limits.ENV, "memory_bytes=0, file_bytes=64MiB")  # the runner's word
    loaded = config.load(tmp_path)
    assert loaded.limits == limits.Limits(
        memory_bytes=0, file_bytes=32 * 1024 * 1024, output_bytes=1024 * 1024
    )
    assert loaded.notes == ()
    monkeypatch.setenv(limits.ENV, "memory=1G")
    with pytest.raises(ConfigError, match=r"^\$HARNESS_LIMITS: unknown limit 'memory'"):
        config.load(tmp_path)
    monkeypatch.setenv(limits.ENV, "file_bytes=lots")
    with pytest.raises(ConfigError, match=r"^\$HARNESS_LIMITS: 'file_bytes=lots' is not"):
        config.load(tmp_path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("limits: 5\n", "limits must be a mapping"),
        ("limits: {files: 5}\n", "unknown limits key(s): files"),
        ("limits: {file_bytes: 0}\n", "limits.file_bytes must be a size in bytes"),
        ("limits: {output_bytes: lots}\n", "limits.output_bytes must be a size in bytes"),
        ("limits: {memory_bytes: -1}\n", "limits.memory_bytes must be a size in bytes (an "),
        ("limits: {archive_entries: 10k}\n", "limits.archive_entries must be a positive integer"),
    ],
)
def test_bad_limits(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "harness.yaml").write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        config.load(tmp_path)


def test_a_config_that_is_a_fifo_is_an_error_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "harness.yaml")
    with pytest.raises(ConfigError) as info:
        config.load(tmp_path, tmp_path / "harness.yaml")
    assert str(info.value) == (
        f"{tmp_path / 'harness.yaml'}: cannot read config: "
        f"{tmp_path / 'harness.yaml'}: not a regular file (a FIFO)"
    )
