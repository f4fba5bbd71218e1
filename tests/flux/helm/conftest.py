"""Real chart servers on 127.0.0.1: an HTTP chart repository and an OCI registry."""

from __future__ import annotations

import functools
import http.server
import os
import platform
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.flux.helm import sdk
from tests.conftest import write_tree
from tests.flux.helm.charts import chart_files


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own chart cache; the user's is never touched."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(cache))
    monkeypatch.delenv("HARNESS_HELM", raising=False)
    return cache


@pytest.fixture(scope="session")
def helm_binary() -> Path:
    """A real `helm`: `$HARNESS_TEST_HELM`, else one beside the interpreter (where
    scripts/fetch_helm.py puts it in CI), else on PATH."""
    for candidate in (
        os.environ.get("HARNESS_TEST_HELM"),
        str(Path(sys.executable).parent / "helm"),
        shutil.which("helm"),
    ):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return Path(candidate)
    if os.environ.get("CI") and platform.system() == "Linux" and platform.machine() == "x86_64":
        pytest.fail("no helm binary (.ci/run installs one with scripts/fetch_helm.py)")
    pytest.skip("no helm binary: python scripts/fetch_helm.py DIR, or set HARNESS_TEST_HELM")


def package(tmp: Path, version: str, *, gadget_crd: bool = True) -> Path:
    """A packaged `demo` chart .tgz built by the SDK from the test chart."""
    src = write_tree(
        tmp / f"src-{version}", chart_files(version, gadget_crd=gadget_crd, prefix="demo/")
    )
    out = tmp / "packages"
    out.mkdir(exist_ok=True)
    return sdk.package(src / "demo", out)


@dataclass
class ChartRepo:
    url: str
    root: Path
    server: http.server.ThreadingHTTPServer

    def publish(self, archive: Path) -> None:
        shutil.copy(archive, self.root / archive.name)
        sdk.module().repo_index_generate(str(self.root))

    @property
    def requests(self) -> list[str]:
        return getattr(self.server, "log", [])


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        self.server.log.append(self.path)  # type: ignore[attr-defined]


@pytest.fixture
def chart_repo(tmp_path: Path) -> Iterator[ChartRepo]:
    """An HTTP chart repository (index.yaml + .tgz) served on 127.0.0.1 by this test."""
    root = tmp_path / "repo-server"
    root.mkdir()
    handler = functools.partial(_Handler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.log = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield ChartRepo(f"http://127.0.0.1:{server.server_port}", root, server)
    finally:
        server.shutdown()
        server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def oci_registry(tmp_path: Path) -> Iterator[str]:
    """Debian's docker-registry (CNCF distribution) on 127.0.0.1; yields `host:port`."""
    binary = shutil.which("docker-registry")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("docker-registry is not installed (.ci/run installs the Debian package)")
        pytest.skip("docker-registry not installed (apt-get install docker-registry)")
    port = _free_port()
    config = tmp_path / "registry.yml"
    config.write_text(
        "version: 0.1\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {tmp_path / 'registry'}\nhttp:\n  addr: 127.0.0.1:{port}\n",
        encoding="utf-8",
    )
    proc = subprocess.Popen(
        [binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 300  # a hang guard: the loop ends on the port
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("docker-registry did not start")
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=300)
