"""Chart dependencies a chart directory declares but does not vendor in `charts/`.

Helm's template engine silently renders a chart without a missing subchart, so a local
chart whose `Chart.yaml` dependencies are not built would lose whole components without a
word. source-controller builds them before packaging; harness does the same on a copy (the
repo is never written): `file://` dependencies are resolved against the original chart
directory and must stay inside the source, others are downloaded by Helm's dependency
update, which `--offline` refuses.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.cache import replay
from harness.core import safefile, yamlload
from harness.flux.helm import sdk

BUILT = ("ok", "unpacked")


class DependencyError(Exception):
    """The dependencies cannot be built; the message is the target's one-line error."""


def ensure(chart: Path, root: Path, into: Path, *, offline: bool) -> tuple[Path, bool]:
    """(`chart` when nothing is missing, else a built copy under `into`; whether a
    dependency was downloaded from a repository, which the render cache never keeps)."""
    try:
        listed = sdk.module().dependency_list(str(chart))
    except Exception as exc:  # the SDK's own error types
        raise DependencyError(f"chart dependencies: {exc}") from None
    missing = [d for d in listed if d.get("status") not in BUILT]
    if not missing:
        return chart, False
    remote = [d for d in missing if not str(d.get("repository", "")).startswith("file://")]
    if offline and remote:
        names = ", ".join(f"{d.get('name')} {d.get('version')}" for d in remote)
        raise DependencyError(
            f"--offline: chart dependencies {names} are not in charts/ and must be downloaded"
        )
    if remote:
        replay.taint("a chart dependency comes from a Helm repository")
    copy = into / "deps" / chart.name
    shutil.copytree(chart, copy, ignore=safefile.special_names)
    _absolute_file_repositories(copy, chart, root)
    try:
        sdk.module().dependency_update(str(copy))
    except Exception as exc:
        text = " ".join(str(exc).split())
        raise DependencyError(f"chart dependencies: {text}") from None
    return copy, bool(remote)


def _absolute_file_repositories(copy: Path, original: Path, root: Path) -> None:
    meta_path = copy / "Chart.yaml"
    meta = yamlload.load(safefile.read_text(meta_path))
    if not isinstance(meta, dict):
        return
    for dep in meta.get("dependencies") or []:
        repo = str(dep.get("repository", "")) if isinstance(dep, dict) else ""
        if not repo.startswith("file://"):
            continue
        target = (original / repo.removeprefix("file://")).resolve()
        if not target.is_relative_to(root.resolve()):
            raise DependencyError(f"chart dependency {repo} is outside its source")
        dep["repository"] = f"file://{target}"
    meta_path.write_text(yamlload.dump(meta), encoding="utf-8")
