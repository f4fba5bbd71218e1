"""Container images: every image a render deploys, per cluster and workload, and what a
change does to them (renovate PRs are mostly image bumps: this is what a reviewer reads
first).

A workload is any object holding a Pod template: Pods, Deployments, StatefulSets,
DaemonSets, ReplicaSets, ReplicationControllers, Jobs, CronJobs and PodTemplates, rendered by
a path, Flux or helm target (a HelmRelease's workloads appear with `--helm`). Its containers,
initContainers and ephemeralContainers each name one image. A path target's use is left out
where a cluster's target deploys the same workload with the same image (its namespace
given by the Kustomization when the path leaves it empty): the cluster's copy says it.

Two more places name images without a Pod template, read where nothing rendered them (what
renovate bumps in a Flux repo): a HelmRelease's `spec.values` (every mapping with a string
`repository` and a `tag` or `digest`, `registry` prepended when present, and every string
`image:` value that reads as a reference), unless a helm target of that HelmRelease rendered
(`--helm`: its workloads say the images); and an OCIRepository's artifact (`spec.url` without
`oci://`, `spec.ref.tag`/`digest`), as field `ociRepository`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.compare.snapshots import same_targets
from harness.core import imageref, parsed
from harness.core.imageref import ImageRef
from harness.core.model import DocId, Document, Snapshot, TargetResult

# kind -> the keys from the object to its Pod spec
POD_SPECS: Mapping[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "PodTemplate": ("template", "spec"),
}
FIELDS = ("initContainers", "containers", "ephemeralContainers", "values", "ociRepository")
HELMRELEASE = ("helm.toolkit.fluxcd.io", "HelmRelease")
OCIREPOSITORY = ("source.toolkit.fluxcd.io", "OCIRepository")
VALUES_DEPTH = 12  # how deep a HelmRelease's values are searched for images


@dataclass(frozen=True, order=True)
class ImageUse:
    """One container's image in one workload of one cluster ("" for path targets), with
    the targets rendering it."""

    cluster: str
    workload: DocId
    field: str  # containers, initContainers, ephemeralContainers, values or ociRepository
    container: str
    image: ImageRef
    targets: tuple[str, ...] = ()


@dataclass(frozen=True, order=True)
class Place:
    """Where an image changes: a container of a workload in a cluster."""

    cluster: str
    workload: DocId
    container: str


@dataclass(frozen=True)
class ImageChange:
    """One image change said once, with every place it happens: `before`/`after` None for
    an image that is new or gone (`op` "added"/"removed")."""

    op: str  # "changed", "added" or "removed"
    before: ImageRef | None
    after: ImageRef | None
    places: tuple[Place, ...]

    @property
    def repository(self) -> str:
        """As written on the head (else the base)."""
        ref = self.after or self.before
        return ref.repository if ref is not None else ""

    @property
    def clusters(self) -> tuple[str, ...]:
        return tuple(sorted({p.cluster for p in self.places}))


def _pod_spec(obj: Any, kind: str) -> dict[str, Any] | None:
    node = obj
    for key in POD_SPECS[kind]:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node if isinstance(node, dict) else None


def _containers(spec: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(field, container name, image) of every container naming an image."""
    for field in FIELDS:
        items = spec.get(field)
        if not isinstance(items, list):
            continue
        for index, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("image"), str):
                continue
            name = item.get("name")
            yield field, name if isinstance(name, str) else f"[{index}]", item["image"]


def _values_images(node: Any, path: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(values path, reference) of each image a HelmRelease's values name."""
    if depth > VALUES_DEPTH:
        return
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _values_images(item, f"{path}[{index}]", depth + 1)
        return
    if not isinstance(node, dict):
        return
    repository, tag, digest = node.get("repository"), node.get("tag"), node.get("digest")
    if isinstance(repository, str) and repository and (_scalar(tag) or _scalar(digest)):
        registry = node.get("registry")
        text = f"{registry}/{repository}" if isinstance(registry, str) and registry else repository
        text += f":{tag}" if _scalar(tag) else ""
        text += f"@{digest}" if _scalar(digest) and "@" not in text else ""
        yield path, text
        return
    for key, value in node.items():
        where = f"{path}.{key}"
        if key == "image" and isinstance(value, str) and imageref.parse(value).valid:
            yield where, value
        else:
            yield from _values_images(value, where, depth + 1)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool) and value != ""


def _oci_image(obj: Any) -> str | None:
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if not isinstance(spec, dict):
        return None
    url = spec.get("url")
    if not isinstance(url, str) or not url.startswith("oci://"):
        return None
    ref = spec.get("ref")
    ref = ref if isinstance(ref, dict) else {}
    text = url.removeprefix("oci://")
    tag, digest = ref.get("tag"), ref.get("digest")
    text += f":{tag}" if _scalar(tag) else ""
    text += f"@{digest}" if _scalar(digest) else ""
    return text


def _reads_images(doc_id: DocId) -> bool:
    """Whether a document of this identity can name an image (a workload, a HelmRelease, an
    OCIRepository)."""
    return doc_id.kind in POD_SPECS or (doc_id.group, doc_id.kind) in (HELMRELEASE, OCIREPOSITORY)


def _doc_uses(doc: Document) -> Iterator[tuple[str, str, str]]:
    """(field, container or values path, reference) of each image one document names."""
    kind = doc.id.kind
    pair = (doc.id.group, kind)
    try:
        obj = parsed.load(doc.text)
    except Exception:  # a document kubectl printed is YAML; never fail a listing on one
        return
    if pair == HELMRELEASE:
        release = obj.get("spec") if isinstance(obj, dict) else None
        values = release.get("values") if isinstance(release, dict) else None
        for where, text in _values_images(values, "spec.values"):
            yield "values", where, text
        return
    if pair == OCIREPOSITORY:
        artifact = _oci_image(obj)
        if artifact is not None:
            yield "ociRepository", "spec.ref", artifact
        return
    spec = _pod_spec(obj, kind)
    if spec is not None:
        yield from _containers(spec)


def _result_uses(result: TargetResult) -> Iterator[tuple[DocId, str, str, str]]:
    for doc in result.documents:
        if _reads_images(doc.id):
            for field, container, image in _doc_uses(doc):
                yield doc.id, field, container, image


def _rendered_releases(snapshot: Snapshot) -> set[tuple[str, str, str]]:
    """(cluster, namespace, name) of each HelmRelease a helm target rendered."""
    out = set()
    for result in snapshot.results.values():
        if result.target.kind == "helm" and result.ok:
            cluster, _, rest = result.name.partition("/")
            namespace, _, name = rest.partition("/")
            out.add((cluster, namespace, name.removesuffix("@helm")))
    return out


def _order(use: ImageUse) -> tuple[str, str, int, str, str]:
    return (use.cluster, str(use.workload), FIELDS.index(use.field), use.container, use.image.text)


_Uses = tuple[tuple[DocId, str, str, str], ...]


_Found = dict[tuple[str, DocId, str, str, str], list[str]]
_Named = tuple[str, str, str]  # (group, kind, name) of a workload
_DocUses = dict[tuple[DocId, str], tuple[tuple[str, str, str], ...]]


def images_of(
    snapshot: Snapshot,
    clusters: Iterable[str] = (),
    *,
    memo: dict[tuple[tuple[DocId, str], ...], _Uses] | None = None,
) -> tuple[ImageUse, ...]:
    """Every image of every rendered target (failed ones have none), each use once, sorted by
    cluster, workload and container; only `clusters`' when given. `memo` (identities and
    sha256 of a target's documents -> their uses) lets the two sides of a diff read each
    unchanged target's documents once."""
    rendered = _rendered_releases(snapshot)
    found: _Found = defaultdict(list)
    for result in snapshot.results.values():
        if not result.ok:
            continue
        cluster = result.target.cluster or ""
        if memo is None:
            result_uses: _Uses = tuple(_result_uses(result))
        else:
            key = tuple((doc.id, doc.sha256) for doc in result.documents)
            if key not in memo:
                memo[key] = tuple(_result_uses(result))
            result_uses = memo[key]
        for doc_id, field, container, image in result_uses:
            if field == "values" and (cluster, doc_id.namespace, doc_id.name) in rendered:
                continue  # the release's own workloads say its images
            found[(cluster, doc_id, field, container, image)].append(result.name)
    return _uses(found, set(clusters))


def _uses(found: _Found, wanted: set[str]) -> tuple[ImageUse, ...]:
    """The uses of `found`, a path target's left out where a cluster deploys the same."""
    # what the clusters deploy, also by name alone (a path leaves the namespace to Flux)
    deployed = {key[1:] for key in found if key[0]}
    loose = {(d.group, d.kind, d.name, *rest) for (d, *rest) in deployed}
    uses = []
    for (cluster, doc_id, field, container, image), targets in found.items():
        if not cluster:
            named = (doc_id.group, doc_id.kind, doc_id.name, field, container, image)
            if (doc_id, field, container, image) in deployed or (
                not doc_id.namespace and named in loose
            ):
                continue
        if wanted and cluster not in wanted:
            continue
        uses.append(
            ImageUse(cluster, doc_id, field, container, imageref.parse(image), tuple(targets))
        )
    return tuple(sorted(uses, key=_order))


def _named(doc_id: DocId) -> _Named:
    return (doc_id.group, doc_id.kind, doc_id.name)


def _read(doc: Document, memo: _DocUses) -> tuple[tuple[str, str, str], ...]:
    key = (doc.id, doc.sha256)  # as images_of's memo: the same bytes name the same images
    found = memo.get(key)
    if found is None:
        found = memo[key] = tuple(_doc_uses(doc))
    return found


def _some_images(
    snapshot: Snapshot, rendered: set[tuple[str, str, str]], only: set[_Named], memo: _DocUses
) -> tuple[ImageUse, ...]:
    """`images_of(snapshot)` for the workloads named in `only` (group, kind, name): exactly
    its uses of those, since whether a use counts depends only on the uses of workloads of
    that name (a path target's, on the clusters' of the same name in any namespace)."""
    found: _Found = defaultdict(list)
    names = {name for _g, _k, name in only}
    for result in snapshot.results.values():
        if not result.ok:
            continue
        cluster = result.target.cluster or ""
        for doc in result.documents:
            doc_id = doc.id
            if doc_id.name not in names or _named(doc_id) not in only:
                continue
            for field, container, image in _read(doc, memo):
                if field == "values" and (cluster, doc_id.namespace, doc_id.name) in rendered:
                    continue
                found[(cluster, doc_id, field, container, image)].append(result.name)
    return _uses(found, set())


def _touched(
    base: Snapshot,
    head: Snapshot,
    rendered: tuple[set[tuple[str, str, str]], set[tuple[str, str, str]]],
    memo: _DocUses,
) -> set[_Named]:
    """The workloads whose images may differ between the sides: every one naming an image
    in a target that is not the same on both, and the HelmReleases whose own helm target
    renders on one side only (their values are read on the other)."""
    same = {
        n
        for n in same_targets(base, head)
        if base.results[n].target.kind == head.results[n].target.kind
        and base.results[n].target.cluster == head.results[n].target.cluster
    }
    out: set[_Named] = set()
    for snapshot in (base, head):
        for name, result in snapshot.results.items():
            if name in same or not result.ok:
                continue
            for doc in result.documents:
                if _reads_images(doc.id) and _read(doc, memo):
                    out.add(_named(doc.id))
    for _cluster, _namespace, name in rendered[0] ^ rendered[1]:
        out.add((*HELMRELEASE, name))
    return out


def _failed(snapshot: Snapshot) -> set[str]:
    return {name for name, result in snapshot.results.items() if not result.ok}


def changes(base: Snapshot, head: Snapshot) -> tuple[ImageChange, ...]:
    """What the change does to images: per container of a workload in a cluster, the image
    before and after, compared by identity (`nginx:1` is `docker.io/library/nginx:1`);
    grouped by the references as written. A workload whose target failed on the other side
    is never read as its images added or removed."""
    memo: _DocUses = {}
    # a workload of no other name has the same uses on both sides: no change (and the
    # cost of a diff is the documents it touched, not every image of both renders)
    rendered = (_rendered_releases(base), _rendered_releases(head))
    touched = _touched(base, head, rendered, memo)
    if not touched:
        return ()
    before = _by_place(_some_images(base, rendered[0], touched, memo))
    after = _by_place(_some_images(head, rendered[1], touched, memo))
    failed_head, failed_base = _failed(head), _failed(base)
    grouped: dict[tuple[str, ImageRef | None, ImageRef | None], list[Place]] = defaultdict(list)
    for place in sorted(before.keys() | after.keys()):
        old, new = before.get(place), after.get(place)
        if old is not None and new is not None:
            if old.image.same_image(new.image):
                continue
            grouped[("changed", old.image, new.image)].append(place)
        elif old is not None and not failed_head.intersection(old.targets):
            grouped[("removed", old.image, None)].append(place)
        elif new is not None and not failed_base.intersection(new.targets):
            grouped[("added", None, new.image)].append(place)
    order = {"changed": 0, "added": 1, "removed": 2}
    out = [ImageChange(op, old, new, tuple(places)) for (op, old, new), places in grouped.items()]
    return tuple(
        sorted(out, key=lambda c: (order[c.op], c.repository, _text(c.before), _text(c.after)))
    )


def _text(ref: ImageRef | None) -> str:
    return ref.text if ref is not None else ""


def _by_place(uses: Iterable[ImageUse]) -> dict[Place, ImageUse]:
    """One use per place; a place rendered with two images (duplicate owners) keeps the
    first in order, the duplicate said elsewhere."""
    out: dict[Place, ImageUse] = {}
    for use in uses:
        out.setdefault(Place(use.cluster, use.workload, use.container), use)
    return out


def version_line(change: ImageChange) -> str:
    """`4.0.1 -> 4.0.2`, or the whole references when the repository itself changes; `new
    1.2` / `gone 1.2` for an image added or removed. Digests shortened for a reader."""
    old, new = change.before, change.after
    if old is not None and new is not None:
        if old.identity != new.identity:
            return f"{_short(old.text)} -> {_short(new.text)}"
        return f"{_short_version(old)} -> {_short_version(new)}"
    if new is not None:
        return f"new {_short_version(new)}"
    assert old is not None
    return f"gone {_short_version(old)}"


def _short_version(ref: ImageRef) -> str:
    return imageref.short_version(ref.version) if ref.version else "(no tag)"


def _short(text: str) -> str:
    ref = imageref.parse(text)
    if not ref.valid or not ref.digest:
        return text
    tag = f":{ref.tag}" if ref.tag else ""
    return f"{ref.repository}{tag}{imageref.short_version('@' + ref.digest)}"
