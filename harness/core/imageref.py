"""Container image references: what the user wrote, and the identity two references share.

A reference is `[registry[:port]/]path[:tag][@digest]`, as the distribution reference
grammar reads it: the first path component is a registry when it holds a `.` or a `:`, or is
`localhost`; a `:` after the last `/` starts the tag; `@` starts the digest. Nothing written
is rewritten for display (`nginx` stays `nginx`); only `identity` applies Docker's defaults
(`docker.io`, `library/` for a one-component path, `index.docker.io` as `docker.io`), so
`nginx:1.25` and `docker.io/library/nginx:1.25` are the same image. An unparseable reference
(an unsubstituted `${VAR}`, a typo) keeps its text as its repository and compares by text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DOCKER_HUB = "docker.io"
_HUB_ALIASES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}")
_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")


@dataclass(frozen=True, order=True)
class ImageRef:
    """One image reference as written, split into its parts (`registry` "" when unnamed)."""

    text: str
    registry: str = ""
    path: str = ""
    tag: str = ""
    digest: str = ""
    valid: bool = True

    @property
    def repository(self) -> str:
        """The repository as written, without tag or digest (`ghcr.io/org/app`, `nginx`)."""
        return f"{self.registry}/{self.path}" if self.registry else self.path

    @property
    def identity(self) -> str:
        """The repository with Docker's defaults applied: what two references compare by."""
        if not self.valid:
            return self.text
        registry = self.registry.lower() or DOCKER_HUB
        if registry in _HUB_ALIASES:
            registry = DOCKER_HUB
            path = self.path if "/" in self.path else f"library/{self.path}"
            return f"{registry}/{path}"
        return f"{registry}/{self.path}"

    @property
    def version(self) -> str:
        """What changes in a bump: `tag`, `@digest`, `tag@digest`, or "" (implicitly latest)."""
        if self.digest:
            return f"{self.tag}@{self.digest}"
        return self.tag

    def same_image(self, other: ImageRef) -> bool:
        """The same repository and version, however each was spelled (`:latest` is the
        implicit tag only for Docker, so an absent tag equals `latest`)."""
        return self.identity == other.identity and _version_key(self) == _version_key(other)


def _version_key(ref: ImageRef) -> tuple[str, str]:
    if not ref.valid:
        return ("", "")
    return (ref.tag or ("" if ref.digest else "latest"), ref.digest.lower())


def parse(text: str) -> ImageRef:
    """`text` split into registry, path, tag and digest; `valid=False` (the whole text as its
    path) when it is no reference the grammar reads."""
    rest, digest = text, ""
    if "@" in rest:
        rest, _, digest = rest.partition("@")
        if not _DIGEST.fullmatch(digest):
            return ImageRef(text, path=text, valid=False)
    tag = ""
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon > slash:
        rest, tag = rest[:colon], rest[colon + 1 :]
        if not _TAG.fullmatch(tag):
            return ImageRef(text, path=text, valid=False)
    registry, path = "", rest
    first, sep, remainder = rest.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, remainder
    if not path or not all(_COMPONENT.fullmatch(c) for c in path.split("/")):
        return ImageRef(text, path=text, valid=False)
    return ImageRef(text, registry=registry, path=path, tag=tag, digest=digest)


def short_version(version: str, hex_chars: int = 12) -> str:
    """A version for a reader: a digest's hex cut to `hex_chars` (`sha256:0123456789ab`)."""
    head, at, digest = version.partition("@")
    if not at and not _DIGEST.fullmatch(version):
        return version
    if not at:
        head, digest = "", version
    algorithm, _, hexes = digest.partition(":")
    cut = f"{algorithm}:{hexes[:hex_chars]}" if len(hexes) > hex_chars else digest
    return f"{head}@{cut}" if head or at else cut
