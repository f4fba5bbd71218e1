"""Secret-derived values become markers before anything keeps them.

One rule, applied where documents are made (documents.py), so goldens, the render cache,
shard JSON and every output only ever see markers:

- every value of a Secret's `data`/`stringData` is a marker, whether or not the Secret
  carries a `sops:` block; only a SOPS ciphertext (`ENC[AES256_GCM,...]`), the masks
  `flux build` writes over encrypted values and the empty value stay as they are (they
  reveal nothing; an empty value substitutes as empty, which Flux reads back as null);
- a `kubectl.kubernetes.io/last-applied-configuration` annotation holds a whole object
  as JSON: it is redacted like the object it holds;
- a value that leaves a Secret (Flux `substituteFrom`, Helm `valuesFrom`, and so whatever a
  substituted HelmRelease's values or post-renderers carry) travels as the marker of the
  Secret key it came from, never as its plaintext.

A marker is `<redacted sha256:<16 hex>>` over the object's identity, the key and the value:
it changes when the value does, so a rotated Secret still shows as a (masked) change. With
`HARNESS_MASK_KEY` set it is `<redacted hmac-sha256:<16 hex>>`, an HMAC under that key, so a
guessable value cannot be confirmed from committed goldens by hashing candidates.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from typing import Any

ENV_KEY = "HARNESS_MASK_KEY"
PREFIX = "<redacted "
MARKER = re.compile(r"<redacted (?:sha256|hmac-sha256):[0-9a-f]{16}>")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# What `flux build` writes over SOPS-encrypted Secret values (plain, base64, and the
# dockerconfigjson forms). They reveal nothing, so redaction leaves them readable.
SOPS_MASK = "**SOPS**"
SOPS_MASKED_VALUES = frozenset(
    {
        SOPS_MASK,
        "KipTT1BTKio=",
        '{"mask":"**SOPS**"}',
        "eyJtYXNrIjoiKipTT1BTKioifQ==",
    }
)
# A SOPS ciphertext: the only Secret value that may stay as it is.
_ENCRYPTED = re.compile(
    r"ENC\[[A-Z0-9_]+,data:[A-Za-z0-9+/=]*,iv:[A-Za-z0-9+/=]+,tag:[A-Za-z0-9+/=]+,type:[a-z]+\]"
)


def marker(owner: object, key: str, value: Any) -> str:
    """The marker of `value` under `key` of the object `owner` (its identity).

    Salted with the identity and key so one common password does not give one marker
    everywhere; keyed with `HARNESS_MASK_KEY` when it is set. The empty value is its own
    marker: it reveals nothing, and a marker in its place would substitute as a string
    where Flux substitutes nothing (`key: ${EMPTY}` is `key: null`)."""
    if value == "":
        return ""
    message = f"{owner}\0{key}\0{value}".encode("utf-8", "surrogateescape")
    secret = os.environ.get(ENV_KEY)
    if secret:
        digest = hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()[:16]
        return f"{PREFIX}hmac-sha256:{digest}>"
    return f"{PREFIX}sha256:{hashlib.sha256(message).hexdigest()[:16]}>"


def mode() -> str:
    """Which markers this process writes, for cache keys: entries made under another key
    (or none) hold other markers. The key itself never appears, only an HMAC of a constant."""
    secret = os.environ.get(ENV_KEY)
    if not secret:
        return "sha256"
    tag = hmac.new(secret.encode(), b"harness marker key identity", hashlib.sha256)
    return f"hmac-sha256:{tag.hexdigest()[:16]}"


def is_marker(value: Any) -> bool:
    """A marker or a SOPS mask: already safe, never redacted twice."""
    return isinstance(value, str) and (
        MARKER.fullmatch(value) is not None or value in SOPS_MASKED_VALUES
    )


def is_encrypted(value: Any) -> bool:
    return isinstance(value, str) and _ENCRYPTED.fullmatch(value) is not None


def kept(value: Any) -> bool:
    """A Secret value that may be shown as it is: a marker, a mask, SOPS ciphertext, or
    the empty value."""
    return value == "" or is_marker(value) or is_encrypted(value)


def contains_marker(text: str) -> bool:
    return PREFIX in text and MARKER.search(text) is not None
