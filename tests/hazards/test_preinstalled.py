"""preinstalled: what exists before Flux, read from bootstrap files, Talos/k3s and the config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.core import run
from harness.core.config import Preinstalled, load
from harness.core.errors import ConfigError
from harness.core.filefacts import FileFacts
from harness.core.run import Run
from harness.hazards.context import LintContext
from harness.hazards.preinstalled import Inventory, load_documents, neutralise, scan
from tests.conftest import write_tree
from tests.hazards import layouts
from tests.hazards.snap import flux, ks, path, snapshot

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
"""


def _scan(repo: Path, *results: object, entries: tuple[Preinstalled, ...] = ()) -> Inventory:
    snap = snapshot(*results) if results else snapshot()  # type: ignore[arg-type]
    return scan(LintContext(snap, repo=repo), entries)


def test_gotmpl_text_is_read_as_yaml() -> None:
    text = layouts.RELEASE_GOTMPL + "values:\n  - '{{ .Release.Name }}'\n"
    assert "{{" not in neutralise(text)
    (doc,) = load_documents(text)
    assert doc == {"chart": "TEMPLATED", "version": "TEMPLATED", "values": ["TEMPLATED"]}
    assert load_documents("a: [unclosed\n---\nb: 1\n") == [{"b": 1}]


def test_helmfiles_installed_and_crds_only(tmp_path: Path) -> None:
    repo = write_tree(tmp_path, {k: v for k, v in layouts.home_ops().items() if "helmfile" in k})
    inv = _scan(repo)
    cilium = inv.release("cluster", "kube-system", "cilium")
    assert cilium is not None and cilium.file == "bootstrap/helmfile/apps.yaml"
    assert "installs release kube-system/cilium" in cilium.how
    kps = inv.release("cluster", "observability", "kube-prometheus-stack")
    assert kps is not None and "--include-crds" in kps.how
    # CRDs judged by release name (known installer), also for a group no HelmRelease names
    assert inv.crd("cluster", "monitoring.coreos.com", "ServiceMonitor") is kps
    assert inv.crd("cluster", "cert-manager.io", "Certificate") is not None
    assert inv.crd("cluster", "example.com", "Widget") is None
    # the templates/ directory and the bases file hold no releases
    assert {p.file for p in inv.provisions} == {
        "bootstrap/helmfile/apps.yaml",
        "bootstrap/helmfile/crds.yaml",
    }


def test_release_args_inherited_from_a_template(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path,
        {
            "helmfile.yaml.gotmpl": (
                "templates:\n  crds:\n    args: [--include-crds]\n"
                "releases:\n  - name: snapshot-controller\n    namespace: kube-system\n"
                "    chart: piraeus/snapshot-controller\n    inherit:\n      - template: crds\n"
                "  - name: old\n    namespace: x\n    installed: false\n"
                "  - name: '{{ .Values.name }}'\n"
            )
        },
    )
    (p,) = _scan(repo).provisions
    assert p.release == ("kube-system", "snapshot-controller") and "--include-crds" in p.how
    assert _scan(repo).crd("c", "snapshot.storage.k8s.io", "VolumeSnapshotClass") == p


def test_bootstrap_manifests_outside_the_flux_tree_only(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path,
        {
            "bootstrap/crds/widgets.yaml": CRD,
            "clusters/dev/bootstrap/crds.yaml": CRD.replace("example.com", "flux.example.com"),
        },
    )
    root = flux("dev", "flux-system", ks("flux-system", path="./clusters/dev"))
    inv = _scan(repo, root)
    widget = inv.crd("dev", "example.com", "Widget")
    assert widget is not None and widget.how.startswith("bootstrap manifest bootstrap/crds")
    # inside the Flux tree: Flux applies it, ordering rules apply as usual
    assert inv.crd("dev", "flux.example.com", "Widget") is None


def test_bootstrap_kustomize_target_and_its_namespaces(tmp_path: Path) -> None:
    target = path(
        "bootstrap/kustomize",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "external-secrets"}},
    )
    inv = _scan(tmp_path, target)
    ns = inv.namespace("any", "external-secrets")
    assert ns is not None and "kustomize directory bootstrap/kustomize" in ns.how


def test_talos_inline_and_extra_manifests(tmp_path: Path) -> None:
    contents = CRD + "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: cilium-secrets\n"
    indented = "".join(f"          {line}\n" for line in contents.splitlines())
    repo = write_tree(
        tmp_path,
        {
            "talos/talconfig.yaml": (
                "clusterName: home\ncontrolPlane:\n  inlineManifests:\n    - name: cilium\n"
                f"      contents: |\n{indented}"
                "  extraManifests:\n"
                "    - https://github.com/kubernetes-sigs/gateway-api/releases/download/"
                "v1.3.0/experimental-install.yaml\n"
            )
        },
    )
    inv = _scan(repo)
    widget = inv.crd("c", "example.com", "Widget")
    assert widget is not None and "Talos inline manifest 'cilium'" in widget.how
    assert inv.namespace("c", "cilium-secrets") is widget
    assert inv.crd("c", "cilium.io", "CiliumLoadBalancerIPPool") is widget  # judged by name
    gateway = inv.crd("c", "gateway.networking.k8s.io", "HTTPRoute")
    assert gateway is not None and "not fetched" in gateway.how


def test_a_rescan_of_an_unchanged_tree_knows_its_files_by_their_stat(tmp_path: Path) -> None:
    """`harness watch` scans again on every save: a file that names no Talos manifests is
    known from its stat, and one edited to name them is read again and found."""
    talos = "clusterName: home\ncontrolPlane:\n  extraManifests:\n    - https://x.example/a.yaml\n"
    repo = write_tree(
        tmp_path, {"talos/talconfig.yaml": "clusterName: home\n", "apps/a.yaml": "a: 1\n"}
    )
    for rel in ("talos/talconfig.yaml", "apps/a.yaml"):
        os.utime(repo / rel, (1_000_000_000, 1_000_000_000))  # not racily new
    with Run(files=FileFacts()).entered():
        assert _scan(repo).provisions == ()
        facts = run.files()
        assert facts.get(str(repo / "apps/a.yaml"), "talos-manifests")[1] == "0"
        (repo / "talos/talconfig.yaml").write_text(talos)
        os.utime(repo / "talos/talconfig.yaml", (1_000_000_100, 1_000_000_100))
        (p,) = _scan(repo).provisions
        assert p.file == "talos/talconfig.yaml" and "not fetched" in p.how


def test_k3s_auto_deploy_manifests(tmp_path: Path) -> None:
    chart = (
        "apiVersion: helm.cattle.io/v1\nkind: HelmChart\nmetadata:\n  name: traefik\n"
        "  namespace: kube-system\nspec:\n  chart: traefik\n  targetNamespace: traefik\n"
    )
    repo = write_tree(
        tmp_path,
        {"k3s/server/manifests/traefik.yaml": chart, "ansible/k3s/manifests/crd.yaml.j2": CRD},
    )
    inv = _scan(repo)
    traefik = inv.release("c", "traefik", "traefik")
    assert traefik is not None and "HelmChart installs release traefik/traefik" in traefik.how
    assert inv.crd("c", "traefik.io", "IngressRoute") is traefik
    assert inv.crd("c", "example.com", "Widget") is not None


def test_files_below_a_cluster_directory_apply_to_that_cluster(tmp_path: Path) -> None:
    repo = write_tree(tmp_path, {"bootstrap/prod/crds.yaml": CRD})
    two = (flux("dev", "flux-system", ks("a")), flux("prod", "flux-system", ks("a")))
    inv = _scan(repo, *two)
    assert inv.crd("prod", "example.com", "Widget") is not None
    assert inv.crd("dev", "example.com", "Widget") is None


def test_config_entries(tmp_path: Path) -> None:
    entries = (
        Preinstalled(reason="talos", crds=("cert-manager.io", "example.com/Widget")),
        Preinstalled(reason="script", helmreleases=("kube-system/cilium",), clusters=("dev",)),
    )
    inv = _scan(tmp_path, entries=entries)
    assert inv.crd("x", "cert-manager.io", "Certificate") is not None
    assert inv.crd("x", "example.com", "Gadget") is None
    assert inv.crd("dev", "cilium.io", "CiliumNetworkPolicy") is not None
    assert inv.crd("prod", "cilium.io", "CiliumNetworkPolicy") is None
    assert "declared preinstalled in harness.yaml: script" in inv.provisions[1].how


def test_config_key_is_validated(tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text(
        "preinstalled:\n  - crds: [cert-manager.io, snapshot.storage.k8s.io/VolumeSnapshot]\n"
        "    helmreleases: kube-system/cilium\n    clusters: [dev]\n    reason: bootstrap\n"
    )
    (entry,) = load(tmp_path).preinstalled
    assert entry.crds == ("cert-manager.io", "snapshot.storage.k8s.io/VolumeSnapshot")
    assert entry.helmreleases == ("kube-system/cilium",) and entry.clusters == ("dev",)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("preinstalled: {crds: [a.io]}", "preinstalled must be a list"),
        ("preinstalled: [{crds: [a.io]}]", "preinstalled[0] needs a reason"),
        ("preinstalled: [{reason: r}]", "needs crds, helmreleases or namespaces"),
        ("preinstalled: [{crds: [certmanager], reason: r}]", "must be an API group"),
        ("preinstalled: [{crds: [a.io/], reason: r}]", "must be an API group"),
        ("preinstalled: [{helmreleases: [cilium], reason: r}]", "must be namespace/name"),
        ("preinstalled: [{crd: [a.io], reason: r}]", "unknown key(s): crd"),
        ("preinstalled: [{crds: [1], reason: r}]", "crds must be a list of strings"),
    ],
)
def test_bad_config_entries_are_one_clear_error(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / "harness.yaml").write_text(text + "\n")
    with pytest.raises(ConfigError, match=None) as info:
        load(tmp_path)
    assert error in str(info.value) and "harness.yaml" in str(info.value)


def test_the_goldens_hidden_dirs_and_symlinked_dirs_are_not_scanned(tmp_path: Path) -> None:
    """The walk reads the repo's own files once: not the goldens (they repeat rendered
    manifests), hidden directories, or a directory reached again through a symlink."""
    real = write_tree(
        tmp_path / "real",
        {
            "bootstrap/crds/widgets.yaml": CRD,
            "goldens/bootstrap/gadgets.yaml": CRD.replace("widget", "gadget").replace(
                "Widget", "Gadget"
            ),
            ".hidden/bootstrap/things.yaml": CRD.replace("widget", "thing").replace(
                "Widget", "Thing"
            ),
        },
    )
    (real / "alias").symlink_to(real / "bootstrap", target_is_directory=True)
    repo = tmp_path / "link"
    repo.symlink_to(real, target_is_directory=True)  # the repo itself through a symlink
    snap = snapshot()
    inv = scan(LintContext(snap, repo=repo, goldens=repo / "goldens"))
    assert [(p.file, p.how.split(" (")[0]) for p in inv.provisions] == [
        ("bootstrap/crds/widgets.yaml", "bootstrap manifest bootstrap/crds/widgets.yaml")
    ]
    assert inv.crd("", "example.com", "Gadget") is None


def test_crds_read_in_full_serve_their_versions_to_charts(tmp_path: Path) -> None:
    """The `.Capabilities.APIVersions` a preinstalled CRD adds (flux/helm/capabilities.py):
    only CRD objects read in full know their versions; a name-judged one adds none."""
    versioned = CRD.replace(
        "  scope: Namespaced\n",
        "  scope: Namespaced\n  versions:\n    - {name: v1, served: true}\n"
        "    - {name: v1alpha1, served: false}\n",
    )
    repo = write_tree(
        tmp_path,
        {
            "bootstrap/crds/widgets.yaml": versioned,
            "talos/talconfig.yaml": (
                "controlPlane:\n  extraManifests:\n"
                "    - https://example.com/gateway-api/standard-install.yaml\n"
            ),
        },
    )
    root = flux("dev", "flux-system", ks("flux-system", path="./clusters/dev"))
    inv = _scan(repo, root)
    assert inv.apis("dev") == {"example.com/v1", "example.com/v1/Widget"}


# -- the scan remembered across runs (preinstalled._Record) ------------------------------------

_TALOS = "machine:\n  inlineManifests:\n    - name: crds\n      contents: |\n" + "".join(
    "        " + line + "\n" for line in CRD.splitlines()
)
_HELMFILE = "releases:\n  - name: cilium\n    namespace: kube-system\n    chart: cilium/cilium\n"
_STEP = [1_000_000_000]


def _settle(repo: Path, *only: str) -> None:
    """Every file and directory (or `only` these) dated well in the past (not racily new),
    each step later than the last, as an editor's saves would be."""
    _STEP[0] += 10
    if only:
        for rel in only:
            os.utime(repo / rel, (_STEP[0], _STEP[0]))
        return
    for dirpath, _dirs, files in os.walk(repo):
        for name in [*files, ""]:
            os.utime(os.path.join(dirpath, name), (_STEP[0], _STEP[0]))


def _fresh_scan(repo: Path, cache_dir: Path) -> tuple[Inventory, int]:
    """A scan as a fresh process makes it (its own file facts, the cache reopened), and
    how many files it read."""
    import harness.cache.store as cache_mod
    from harness.core import safefile

    cache = cache_mod.open_cache(cache_mod.Settings(enabled=True, directory=cache_dir))
    reads = [0]
    real = safefile.read_text

    def counting(path: Path, *args: object, **kwargs: object) -> str:
        reads[0] += 1
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    safefile.read_text = counting  # type: ignore[assignment]
    try:
        with Run(files=FileFacts()).entered():
            inv = scan(LintContext(snapshot(), repo=repo), (), "harness.yaml", cache)
    finally:
        safefile.read_text = real
    return inv, reads[0]


def _plain_scan(repo: Path) -> Inventory:
    with Run(files=FileFacts()).entered():
        return _scan(repo)


def test_an_unchanged_tree_is_answered_from_the_record_reading_no_file(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path / "repo",
        {
            "bootstrap/helmfile/apps.yaml": _HELMFILE,
            "apps/a.yaml": "a: 1\n",
            "apps/b.yaml": "b: 1\n",
        },
    )
    _settle(repo)
    first, read = _fresh_scan(repo, tmp_path / "cache")
    assert read == 3 and first == _plain_scan(repo)
    again, read = _fresh_scan(repo, tmp_path / "cache")
    assert read == 0 and again == first


@pytest.mark.parametrize(
    "change",
    [
        "edit the helmfile",
        "add a bootstrap CRD",
        "remove the helmfile",
        "talos in a plain file",
        "rename to yaml",
        "add a directory",
        "edit a plain file",
        "save a plain file by rename",
        "add a file no scan reads",
        "a directory becomes a symlink",
    ],
)
def test_a_change_of_what_the_scan_read_or_walked_misses(tmp_path: Path, change: str) -> None:
    """Whatever changed in the tree, the record answers what a scan finds."""
    repo = write_tree(
        tmp_path / "repo",
        {
            "bootstrap/helmfile/apps.yaml": _HELMFILE,
            "apps/a.yaml": "a: 1\n",
            "apps/notes.txt": _TALOS,
            "apps/sub/c.yaml": "c: 1\n",
            "elsewhere/k3s/server/manifests/crd.yaml": CRD,
        },
    )
    _settle(repo)
    first, _read = _fresh_scan(repo, tmp_path / "cache")
    if change == "edit the helmfile":
        (repo / "bootstrap/helmfile/apps.yaml").write_text(_HELMFILE.replace("cilium", "calico"))
    elif change == "add a bootstrap CRD":
        (repo / "bootstrap/crds.yaml").write_text(CRD)
    elif change == "remove the helmfile":
        (repo / "bootstrap/helmfile/apps.yaml").unlink()
    elif change == "talos in a plain file":
        (repo / "apps/a.yaml").write_text(_TALOS)
    elif change == "rename to yaml":
        (repo / "apps/notes.txt").rename(repo / "apps/talos.yaml")
    elif change == "add a directory":
        write_tree(repo / "k3s/server/manifests", {"crd.yaml": CRD})
    elif change == "save a plain file by rename":  # as editors save: the directory moves
        (repo / "apps/a.yaml.new").write_text("a: 2\n")
        (repo / "apps/a.yaml.new").rename(repo / "apps/a.yaml")
    elif change == "add a file no scan reads":
        (repo / "apps/README.md").write_text(_TALOS)
    elif change == "a directory becomes a symlink":  # the walk lists it but does not enter
        (repo / "apps/sub/c.yaml").unlink()
        (repo / "apps/sub").rmdir()
        (repo / "apps/sub").symlink_to(repo / "elsewhere")
    else:
        (repo / "apps/a.yaml").write_text("a: 2\n")
        _settle(repo, "apps/a.yaml")  # its directory's stat stays: the same names
    found, read = _fresh_scan(repo, tmp_path / "cache")
    assert found == _plain_scan(repo)
    if change in ("edit a plain file", "save a plain file by rename"):
        assert read == 1  # only the changed file, asked whether it names Talos manifests
    elif change == "add a file no scan reads":
        assert read == 0 and found == first
    elif change == "a directory becomes a symlink":
        assert read > 0 and found == first  # walked again: the symlink is not entered
    else:
        assert found != first


def test_a_racily_new_tree_is_not_recorded(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", {"bootstrap/helmfile/apps.yaml": _HELMFILE})
    _fresh_scan(repo, tmp_path / "cache")  # just written: its stat may not move on a change
    _inv, read = _fresh_scan(repo, tmp_path / "cache")
    assert read == 1


@pytest.mark.parametrize(
    "payload",
    [
        {"dirs": "x", "files": [], "provisions": []},
        {"dirs": [], "files": [["a", 2, 1, 2, 3, 4]], "provisions": []},
        {"dirs": [], "files": [["../../etc/passwd", 0, 1, 2, 3, 4]], "provisions": []},
        {"dirs": [["/etc", 1, 2, 3, 4]], "files": [], "provisions": []},
        {"dirs": [], "files": [], "provisions": [{"source": 1}]},
        {"dirs": [], "files": [], "provisions": [{"source": "s", "file": "f", "how": "h"}]},
        {"dirs": [["/", True, 1, 2, 3]], "files": [], "provisions": []},
        {"dirs": [], "files": []},
    ],
)
def test_a_garbled_record_is_a_miss(tmp_path: Path, payload: dict[str, object]) -> None:
    import harness.cache.store as cache_mod
    from harness.hazards.preinstalled import _Record, _Scanner

    repo = write_tree(tmp_path / "repo", {"bootstrap/helmfile/apps.yaml": _HELMFILE})
    _settle(repo)
    expected, _read = _fresh_scan(repo, tmp_path / "cache")
    cache = cache_mod.open_cache(cache_mod.Settings(enabled=True, directory=tmp_path / "cache"))
    record = _Record(cache, _Scanner(repo, set(), set(), []))
    cache.put(record.key, payload)  # type: ignore[union-attr]
    found, read = _fresh_scan(repo, tmp_path / "cache")
    assert found == expected and read == 1
