"""Secret-derived values become markers before anything keeps them.

One rule, applied where documents are made (documents.py), so goldens, the render cache,
shard JSON and every output only ever see markers:

- every value of a Secret's `data`/`stringData` is a marker, whether or not the Secret
  carries a `sops:` block; only a SOPS ciphertext (`ENC[AES256_GCM,...]`), the masks
  `flux build` writes over encrypted values and the empty value stay as they are (they
  reveal nothing; an empty value substitutes as empty, which Flux reads back as null);
- a `kubectl.kubernetes.io/last-applied-configuration` annotation holds a whole object
  as JSON: it is redacted like the object it holds;
- a Flux Kustomization whose `spec.patches` writes a Secret shows those values as markers
  too, in the patch text it carries;
- a value that leaves a Secret (Flux `substituteFrom`, Helm `valuesFrom`, and so whatever a
  substituted HelmRelease's values or post-renderers carry) travels as the marker of the
  Secret key it came from, never as its plaintext.

A marker is `<redacted sha256:<16 hex>>` over the object's identity, the key and the value:
it changes when the value does, so a rotated Secret still shows as a (masked) change. With
`HARNESS_MASK_KEY` set it is `<redacted hmac-sha256:<16 hex>>`, an HMAC under that key, so a
guessable value cannot be confirmed from committed goldens by hashing candidates.

Beside the rule, one scrub per run (`Known`; `known()` is the current run's): every Secret
value the run has seen (in a build's input files, its generated Secrets, its rendered
Secrets, a substituteFrom or valuesFrom source), plain and base64, is replaced by a marker
in every string harness emits, whatever route carried it there (an error line that quotes
a value, a name). Values shorter than `MIN_LENGTH` are left alone: such values are too
often ordinary words (a username equal to a namespace), and the rule above still masks them
where they are copied.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import contextvars
import hashlib
import hmac
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from harness.core import run

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
    (or none) hold other markers. The key itself never appears, only an HMAC of a constant.
    The variables a tree's Secrets take (`substituted`) decide what a Kustomization masks,
    so they key entries apart too."""
    secret = os.environ.get(ENV_KEY)
    names = _SUBSTITUTED.get()
    extra = ""
    if names:
        extra = "+" + hashlib.sha256("\0".join(sorted(names)).encode()).hexdigest()[:16]
    if not secret:
        return "sha256" + extra
    tag = hmac.new(secret.encode(), b"harness marker key identity", hashlib.sha256)
    return f"hmac-sha256:{tag.hexdigest()[:16]}{extra}"


# The names of the Flux variables the tree being rendered puts into a Secret
# (render/discover.py `secret_variables`): a Flux Kustomization's inline
# `postBuild.substitute` value for one of them is a Secret's value. A context variable, set
# for one render of one tree (a diff renders two), copied into the threads it starts.
_SUBSTITUTED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "harness_secret_variables", default=frozenset()
)


@contextlib.contextmanager
def substituted(names: frozenset[str]) -> Iterator[None]:
    """Inside, `names` are the variables the tree's Secrets take (one render of one tree)."""
    token = _SUBSTITUTED.set(names)
    try:
        yield
    finally:
        _SUBSTITUTED.reset(token)


def secret_variables() -> frozenset[str]:
    """The variables the tree being rendered puts into a Secret (`substituted`)."""
    return _SUBSTITUTED.get()


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


# -- the run's scrub ---------------------------------------------------------------------

# A form (plain, base64, a line of a multi-line value) shorter than this is not scrubbed
# from emitted text: short values are ordinary words too often (`grafana`, `admin`).
MIN_LENGTH = 8


class Known:
    """The Secret values one run has seen, scrubbed from every string it emits.

    Per run: cleared where the run's memos are (`reset`), so one run's values never leave
    it. Thread-safe: builds learn values from the render pool. The marker of a scrubbed form
    depends on the form alone, so the same text reads the same whichever Secret (or cache
    state) taught it. What the tree shows outside any Secret (`shown`) is kept as text and
    searched for the known values only when the scrub is next used, in one pass: most runs
    know no plaintext value and never search."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self._forms: dict[str, frozenset[str]] = {}  # a value -> what it may appear as
        self._texts: list[str] = []  # what the tree shows outside any Secret
        # texts not read yet (`shown_later`): read only when a search needs them
        self._later: list[Callable[[], list[str]]] = []
        self._searched = 0  # texts already searched for every value in `_checked`
        self._checked: frozenset[str] = frozenset()
        self._public: set[str] = set()  # values the tree shows as a word: names
        self._markers: dict[str, str] = {}
        self._pattern: re.Pattern[str] | None = None
        self._stale = False

    def __len__(self) -> int:
        return len(self._compiled()[1])

    def reset(self) -> None:
        with self._lock:
            self._clear()

    def shown(self, text: str) -> None:
        """Text the tree shows outside any Secret (a manifest, a kustomization file): a
        value it holds as a whole word (a username equal to a namespace, `keycloak`, or to
        part of a name, `keycloak-db`) is a name the tree prints anyway, not scrubbed."""
        if text:
            with self._lock:
                self._texts.append(text)
                self._stale = True

    def shown_later(self, texts: Callable[[], list[str]]) -> None:
        """`shown` of the texts `texts()` returns, called only if the scrub is searched
        (it knows a plaintext value): most runs know none, and a file whose texts are
        remembered by its stat is then neither read nor decoded. `texts()` returns what it
        can no longer vouch for (a file changed since) as nothing: a value not taken for
        a name is scrubbed, the safe side."""
        with self._lock:
            self._later.append(texts)
            self._stale = True

    def add(self, value: Any, *, encoded: bool = False) -> None:
        """Learn one Secret value; `encoded` for a `data` value (base64 of the plaintext)."""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            return
        text = str(value)
        if kept(text):
            return
        forms = [text]
        if encoded:
            plain = _decoded(text)
            if plain is not None:
                forms.append(plain)
        self._learn(forms)

    def add_all(self, values: Iterable[Any]) -> None:
        for value in values:
            self.add(value)

    def _learn(self, values: Iterable[str]) -> None:
        learned: dict[str, frozenset[str]] = {}
        for value in values:
            if value in self._forms or value in learned:
                continue
            forms = {value, base64.b64encode(value.encode("utf-8", "surrogateescape")).decode()}
            forms.update(line.strip() for line in value.splitlines())
            found = frozenset(f for f in forms if len(f) >= MIN_LENGTH and not kept(f))
            if found:
                learned[value] = found
        if learned:
            with self._lock:
                self._forms = {**self._forms, **learned}
                self._stale = True

    def scrub(self, text: str) -> str:
        """`text` with every known form replaced by its marker (markers already there stay)."""
        if not self._forms or not text:
            return text
        pattern, markers = self._compiled()
        if pattern is None:
            return text
        return pattern.sub(lambda m: markers.get(m.group(0), m.group(0)), text)

    def scrub_all(self, data: Any) -> Any:
        """`data` (JSON-like: dicts, lists, strings) with `scrub` applied to every string,
        keys included; `data` itself when nothing changes."""
        if not self._forms:
            return data
        if isinstance(data, str):
            return self.scrub(data)
        if isinstance(data, dict):
            items = [(self.scrub_all(k), self.scrub_all(v)) for k, v in data.items()]
            if all(a is k and b is v for (a, b), (k, v) in zip(items, data.items(), strict=True)):
                return data
            return dict(items)
        if isinstance(data, (list, tuple)):
            out = [self.scrub_all(v) for v in data]
            return data if all(a is b for a, b in zip(out, data, strict=True)) else out
        return data

    def _compiled(self) -> tuple[re.Pattern[str] | None, dict[str, str]]:
        with self._lock:
            if self._stale:
                self._search()
                self._markers = {
                    form: marker("", "", form)
                    for value, forms in self._forms.items()
                    if value.strip() not in self._public
                    for form in forms
                }
                self._pattern = None
                self._stale = False
            markers = self._markers
            if self._pattern is None and markers:
                # a marker is matched first and kept, so a value inside one is never touched
                self._pattern = re.compile(f"{MARKER.pattern}|{_trie(sorted(markers))}")
            return self._pattern, markers

    def _search(self) -> None:
        """Find which known values the shown texts hold as a word: new values in every
        text, every value in new texts (each text searched once per set of values)."""
        values = {v.strip() for v in self._forms} - self._public
        values = {v for v in values if v and "\n" not in v}
        if values and self._later:
            later, self._later = self._later, []
            for load in later:
                self._texts.extend(t for t in load() if t)
        new = values - self._checked
        jobs: list[tuple[set[str], list[str]]] = []
        if new:
            jobs.append((new, self._texts[: self._searched]))
        if values:
            jobs.append((values, self._texts[self._searched :]))
        for wanted, texts in jobs:
            if not wanted or not texts:
                continue
            word = re.compile(f"(?<![A-Za-z0-9])(?=({_trie(sorted(wanted))})(?![A-Za-z0-9]))")
            for text in texts:
                self._public.update(m.group(1) for m in word.finditer(text))
        self._checked = frozenset(self._checked | values)
        self._searched = len(self._texts)


def _trie(words: list[str]) -> str:
    """One regex matching any of `words`, longest first, as a trie: matching stays linear
    in the text however many values a run knows."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        ends = "" in node
        branches = [re.escape(c) + build(child) for c, child in sorted(node.items()) if c]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if ends:
            return f"(?:{body})?"
        return body

    return build(root)


def _decoded(value: str) -> str | None:
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


# Outside any run (a library call, a unit test) one process-wide scrub answers; a run has
# its own (core/run.py), so a run never masks, or reveals, another run's values.
_OUTSIDE = Known()


def known() -> Known:
    """The scrub of the current command's run: every Secret value it has seen (a watch's
    fresh starts share it, since what one answer printed the next may print again)."""
    current = run.current()
    if current is None:
        return _OUTSIDE
    table = current.root.table(Known)
    found = table.get(Known)
    if found is None:
        found = table.setdefault(Known, Known())
    assert isinstance(found, Known)
    return found


def reset() -> None:
    """The scrub outside any run forgets what it learnt (tests of this module)."""
    _OUTSIDE.reset()
