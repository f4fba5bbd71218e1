"""Flux post-build variable substitution, emulated.

kustomize-controller runs ``envsubst.Eval`` from ``github.com/fluxcd/pkg/envsubst`` (a fork of
``drone/envsubst``) over each rendered resource.  This module reproduces that evaluator for
one template string, including its quirks, so that the harness renders what the cluster
would get.  The scanner and parser follow the upstream state machine closely because its
behaviour on odd input (escapes, malformed braces, multi-byte text) *is* the specification.

Upstream facts this relies on (see ``tests/test_substitute.py`` for executable versions):

* Only ``${...}`` is expanded; ``$var`` and a lone ``$`` stay literal.  Outside ``${...}``,
  ``$$`` becomes ``$`` and the character after it is never special, so ``$${x}`` is ``${x}``.
* Go strings are bytes: ``${#v}`` is the UTF-8 byte length and ``${v:pos:len}`` slices bytes.
* Every default-like operator (``=``, ``:=``, ``:-``, ``:+``, ``:?``) means "value, or the
  default when the value is empty"; ``${v-d}``, ``${v+d}`` and ``${v?d}`` do not parse.
* ``#``/``##``/``%``/``%%`` take glob patterns (``*`` also matches ``/``); the ``/`` forms
  replace a literal substring.
* Arguments are evaluated before the variable itself, so in strict mode a reference nested
  inside a default must be set even when the default is not used.
* A NUL character ends the template: the scanner uses rune 0 as its end-of-input marker.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DEFAULT_OPERATORS",
    "VARIABLE_NAME_PATTERN",
    "VARIABLE_NAME_RE",
    "SubstitutionError",
    "VariableRef",
    "envsubst",
    "referenced_variables",
    "validate_variable_names",
]

# The regex kustomize-controller checks variable names against, as written upstream (Go RE2,
# where the POSIX classes are ASCII-only).  Used verbatim in error messages.
VARIABLE_NAME_PATTERN = "^[_[:alpha:]][_[:alpha:][:digit:]]*$"
# The same language in Python syntax; \Z because Python's $ would accept a trailing newline.
VARIABLE_NAME_RE = re.compile(r"^[_A-Za-z][_A-Za-z0-9]*\Z")

# Parse error texts (fluxcd/pkg envsubst/parse/parse.go).
ERR_BAD_SUBSTITUTION = "bad substitution"
ERR_MISSING_CLOSING_BRACE = "missing closing brace"
ERR_PARSE_VARIABLE_NAME = "unable to parse variable name"
ERR_PARSE_FUNC_SUBSTITUTION = "unable to parse substitution within function"
ERR_PARSE_DEFAULT_FUNCTION = "unable to parse default function"
# Strict-mode error text (fluxcd/pkg envsubst/template.go), followed by ': "NAME"'.
ERR_VAR_NOT_SET = "variable not set (strict mode)"

# Operators that supply their own fallback and therefore tolerate an unset variable in strict
# mode (template.go isDefaultOp).  Only "=", ":=", ":-", ":+" and ":?" can be parsed.
DEFAULT_OPERATORS: frozenset[str] = frozenset({"-", "+", "=", "?", ":-", ":+", ":=", ":?"})

ErrorKind = Literal["parse", "unset", "name"]


class SubstitutionError(ValueError):
    """A template that Flux would reject; ``str()`` is Flux's own message.

    ``kind`` is ``"parse"`` (malformed template), ``"unset"`` (strict mode, variable missing)
    or ``"name"`` (invalid key in the variables map).  ``variable`` names the offending
    variable when it is known.
    """

    def __init__(
        self, message: str, *, variable: str | None = None, kind: ErrorKind = "parse"
    ) -> None:
        super().__init__(message)
        self.message = message
        self.variable = variable
        self.kind: ErrorKind = kind


@dataclass(frozen=True)
class VariableRef:
    """One ``${...}`` that substitution evaluates.

    ``offset`` is the index of its ``$`` in the original text and ``expression`` the source
    text from that ``$`` to the matching ``}``, as written.  ``has_default`` is true for the
    default-like operators, which tolerate the variable being unset.
    """

    name: str
    has_default: bool
    expression: str
    offset: int


# --------------------------------------------------------------------------------------------
# Scanner: a port of envsubst/parse/scan.go working on UTF-8 bytes with Go's rune decoding.
# --------------------------------------------------------------------------------------------

_EOF = 0  # Go's scanner returns rune(0) at end of input, so a NUL also reads as the end.
_RUNE_ERROR = 0xFFFD

_TOKEN_ILLEGAL = 0
_TOKEN_EOF = 1
_TOKEN_IDENT = 2
_TOKEN_LBRACK = 3
_TOKEN_RBRACK = 4

_SCAN_IDENT = 1
_SCAN_LBRACK = 2
_SCAN_RBRACK = 4
_SCAN_ESCAPE = 8

_ESC_DOLLAR = 1
_ESC_BACKSLASH = 2
_ESC_ALL = _ESC_DOLLAR | _ESC_BACKSLASH

_DOLLAR = ord("$")
_LBRACE = ord("{")
_RBRACE = ord("}")
_BACKSLASH = ord("\\")
_SLASH = ord("/")
_COLON = ord(":")
_HASH = ord("#")
_PERCENT = ord("%")
_EQUAL = ord("=")

_Accept = Callable[[int, int], bool]


def _decode_rune(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode one rune like Go's utf8.DecodeRune: invalid input is (U+FFFD, 1)."""
    lead = buf[pos]
    if lead < 0x80:
        return lead, 1
    if 0xC2 <= lead <= 0xDF:
        size = 2
    elif 0xE0 <= lead <= 0xEF:
        size = 3
    elif 0xF0 <= lead <= 0xF4:
        size = 4
    else:
        return _RUNE_ERROR, 1
    try:
        char = buf[pos : pos + size].decode("utf-8")
    except UnicodeDecodeError:
        return _RUNE_ERROR, 1
    return ord(char), size


def _runes(data: bytes) -> Iterator[tuple[int, int, int]]:
    """Yield (offset, rune, width) like Go's ``for i, r := range s``."""
    pos = 0
    while pos < len(data):
        rune, width = _decode_rune(data, pos)
        yield pos, rune, width
        pos += width


def _encode_rune(rune: int) -> bytes:
    return chr(rune).encode("utf-8")


def _is_letter(rune: int) -> bool:
    return unicodedata.category(chr(rune)) in ("Lu", "Ll", "Lt", "Lm", "Lo")


def _is_digit(rune: int) -> bool:
    return unicodedata.category(chr(rune)) == "Nd"


def _accept_rune(r: int, i: int) -> bool:
    return True


def _accept_ident(r: int, i: int) -> bool:
    return r == ord("_") or _is_letter(r) or _is_digit(r)


def _accept_colon(r: int, i: int) -> bool:
    return r == _COLON


def _accept_one_hash(r: int, i: int) -> bool:
    return r == _HASH and i == 1


def _accept_not_closing(r: int, i: int) -> bool:
    return r != _RBRACE


def _accept_hash_func(r: int, i: int) -> bool:
    return r == _HASH and i < 3


def _accept_percent_func(r: int, i: int) -> bool:
    return r == _PERCENT and i < 3


def _accept_default_func(r: int, i: int) -> bool:
    return (i == 1 and r == _COLON) or (i == 2 and r in (_EQUAL, ord("-"), ord("?"), ord("+")))


def _accept_replace_func(r: int, i: int) -> bool:
    return (i == 1 and r == _SLASH) or (i == 2 and r in (_SLASH, _HASH, _PERCENT))


def _accept_one_equal(r: int, i: int) -> bool:
    return i == 1 and r == _EQUAL


def _accept_one_colon(r: int, i: int) -> bool:
    return i == 1 and r == _COLON


def _reject_colon_close(r: int, i: int) -> bool:
    return r not in (_COLON, _RBRACE)


def _accept_slash(r: int, i: int) -> bool:
    return r == _SLASH


def _accept_not_slash(r: int, i: int) -> bool:
    return r != _SLASH


def _accept_casing_func(r: int, i: int) -> bool:
    return r in (ord(","), ord("^")) and i < 3


class _Scanner:
    """Go's scanner, except that escapes are recorded instead of cut out of the buffer.

    Upstream ``skip()`` deletes the escape byte and leaves the position alone, which in effect
    consumes the escaped character too.  Recording the deleted offset and stepping over the
    escaped byte behaves the same while keeping offsets valid in the original text.
    """

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0
        self.start = 0
        self.width = 0
        self.mode = 0
        self.escape_chars = 0
        self.accept: _Accept = _accept_rune
        self._skipped: list[int] = []

    def read(self) -> int:
        if self.pos >= len(self.buf):
            self.width = 0
            return _EOF
        rune, width = _decode_rune(self.buf, self.pos)
        self.width = width
        self.pos += width
        return rune

    def unread(self) -> None:
        self.pos -= self.width

    def skip(self) -> None:
        self._skipped.append(self.pos - 1)
        self.pos += 1

    def peek(self) -> int:
        rune = self.read()
        self.unread()
        return rune

    def text(self) -> bytes:
        """The most recently scanned token, with escape bytes removed."""
        raw = self.buf[self.start : self.pos]
        if not self._skipped:
            return raw
        drop = {offset - self.start for offset in self._skipped}
        return bytes(b for index, b in enumerate(raw) if index not in drop)

    def _consumed(self) -> int:
        return self.pos - self.start - len(self._skipped)

    def scan(self) -> int:
        self.start = self.pos
        self._skipped = []
        rune = self.read()
        if rune == _EOF:
            return _TOKEN_EOF
        if self._scan_lbrack(rune):
            return _TOKEN_LBRACK
        if self._scan_rbrack(rune):
            return _TOKEN_RBRACK
        if self._scan_ident(rune):
            return _TOKEN_IDENT
        return _TOKEN_ILLEGAL

    def _scan_ident(self, rune: int) -> bool:
        if not self.mode & _SCAN_IDENT:
            return False
        if self._scan_escaped(rune):
            self.skip()
        elif not self.accept(rune, self._consumed()):
            return False
        # Plain text between references: nothing but "$" or NUL can end or alter the token.
        plain_text = self.accept is _accept_rune and not self.escape_chars & _ESC_BACKSLASH
        while True:
            if plain_text:
                self._jump_to_special()
            rune = self.read()
            if rune == _EOF:
                self.unread()
                break
            if self._scan_lbrack(rune):
                self.unread()
                self.unread()
                break
            if self._scan_escaped(rune):
                self.skip()
                continue
            if not self.accept(rune, self._consumed()):
                self.unread()
                break
        return True

    def _jump_to_special(self) -> None:
        dollar = self.buf.find(b"$", self.pos)
        nul = self.buf.find(b"\x00", self.pos)
        candidates = [index for index in (dollar, nul) if index >= 0]
        self.pos = min(candidates) if candidates else len(self.buf)

    def _scan_lbrack(self, rune: int) -> bool:
        if not self.mode & _SCAN_LBRACK:
            return False
        if rune == _DOLLAR:
            if self.read() == _LBRACE:
                return True
            self.unread()
        return False

    def _scan_rbrack(self, rune: int) -> bool:
        return bool(self.mode & _SCAN_RBRACK) and rune == _RBRACE

    def _scan_escaped(self, rune: int) -> bool:
        if not self.mode & _SCAN_ESCAPE:
            return False
        if rune == _DOLLAR and self.escape_chars & _ESC_DOLLAR and self.peek() == _DOLLAR:
            return True
        if rune == _BACKSLASH and self.escape_chars & _ESC_BACKSLASH:
            return self.peek() in (_SLASH, _BACKSLASH)
        return False


# --------------------------------------------------------------------------------------------
# Parser: a port of envsubst/parse/parse.go.  The top level is a loop instead of recursion.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Text:
    value: bytes


@dataclass(frozen=True)
class _Func:
    param: str
    name: str
    args: tuple[_Node, ...]
    start: int  # byte offset of "$"
    end: int  # byte offset just past "}"


_Node = _Text | _Func


def _decode_name(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogatepass")


class _Parser:
    def __init__(self, data: bytes) -> None:
        self.scanner = _Scanner(data)

    def parse(self) -> list[_Node]:
        nodes: list[_Node] = []
        sc = self.scanner
        while True:
            sc.accept = _accept_rune
            sc.mode = _SCAN_IDENT | _SCAN_LBRACK | _SCAN_ESCAPE
            sc.escape_chars = _ESC_DOLLAR
            token = sc.scan()
            if token == _TOKEN_IDENT:
                nodes.append(_Text(sc.text()))
            elif token == _TOKEN_EOF:
                return nodes
            elif token == _TOKEN_LBRACK:
                nodes.append(self._parse_func(sc.start))
            else:
                raise SubstitutionError(ERR_BAD_SUBSTITUTION)

    def _func(self, name: str, op: str, args: list[_Node], start: int) -> _Func:
        return _Func(name, op, tuple(args), start, self.scanner.pos)

    def _parse_func(self, start: int) -> _Func:
        sc = self.scanner
        sc.escape_chars = _ESC_ALL
        if sc.peek() == _HASH:
            return self._parse_len_func(start)
        sc.accept = _accept_ident
        sc.mode = _SCAN_IDENT
        if sc.scan() != _TOKEN_IDENT:
            raise SubstitutionError(ERR_PARSE_VARIABLE_NAME)
        name = _decode_name(sc.text())
        follow = sc.peek()
        if follow == _COLON:
            return self._parse_default_or_substr(name, start)
        if follow == _EQUAL:
            return self._parse_default_func(name, start)
        if follow in (ord(","), ord("^")):
            return self._parse_casing_func(name, start)
        if follow == _SLASH:
            return self._parse_replace_func(name, start)
        if follow == _HASH:
            return self._parse_remove_func(name, _accept_hash_func, start)
        if follow == _PERCENT:
            return self._parse_remove_func(name, _accept_percent_func, start)
        sc.accept = _accept_ident
        sc.mode = _SCAN_RBRACK
        if sc.scan() != _TOKEN_RBRACK:
            raise SubstitutionError(ERR_MISSING_CLOSING_BRACE, variable=name)
        return self._func(name, "", [], start)

    def _parse_param(self, accept: _Accept, mode: int, name: str) -> _Node:
        sc = self.scanner
        sc.accept = accept
        sc.mode = mode | _SCAN_LBRACK
        token = sc.scan()
        if token == _TOKEN_LBRACK:
            return self._parse_func(sc.start)
        if token in (_TOKEN_IDENT, _TOKEN_RBRACK):
            return _Text(sc.text())
        raise SubstitutionError(ERR_PARSE_FUNC_SUBSTITUTION, variable=name)

    def _scan_operator(self, accept: _Accept, name: str, error: str) -> str:
        sc = self.scanner
        sc.accept = accept
        sc.mode = _SCAN_IDENT
        if sc.scan() != _TOKEN_IDENT:
            raise SubstitutionError(error, variable=name or None)
        return sc.text().decode("ascii")

    def _parse_default_or_substr(self, name: str, start: int) -> _Func:
        sc = self.scanner
        # Upstream: read, peek, unread.  The unread reuses the peeked rune's width, which
        # lands mid-name when a multi-byte character follows ":"; kept for fidelity.
        sc.read()
        follow = sc.peek()
        sc.unread()
        if follow in (_EQUAL, ord("-"), ord("?"), ord("+")):
            return self._parse_default_func(name, start)
        return self._parse_substr_func(name, start)

    def _parse_substr_func(self, name: str, start: int) -> _Func:
        sc = self.scanner
        op = self._scan_operator(_accept_one_colon, name, ERR_BAD_SUBSTITUTION)
        args = [self._parse_param(_reject_colon_close, _SCAN_IDENT, name)]
        sc.accept = _accept_colon
        sc.mode = _SCAN_IDENT | _SCAN_RBRACK
        token = sc.scan()
        if token == _TOKEN_RBRACK:
            return self._func(name, op, args, start)
        if token != _TOKEN_IDENT:
            raise SubstitutionError(ERR_BAD_SUBSTITUTION, variable=name)
        args.append(self._parse_param(_accept_not_closing, _SCAN_IDENT, name))
        self._consume_rbrack(name)
        return self._func(name, op, args, start)

    def _parse_remove_func(self, name: str, accept: _Accept, start: int) -> _Func:
        op = self._scan_operator(accept, name, ERR_BAD_SUBSTITUTION)
        args = [self._parse_param(_accept_not_closing, _SCAN_IDENT, name)]
        self._consume_rbrack(name)
        return self._func(name, op, args, start)

    def _parse_replace_func(self, name: str, start: int) -> _Func:
        sc = self.scanner
        op = self._scan_operator(_accept_replace_func, name, ERR_BAD_SUBSTITUTION)
        args: list[_Node] = []
        if sc.peek() == _SLASH:  # empty pattern, e.g. ${v/#/prefix}
            args.append(_Text(b""))
        else:
            args.append(self._parse_param(_accept_not_slash, _SCAN_IDENT | _SCAN_ESCAPE, name))
        sc.accept = _accept_slash
        sc.mode = _SCAN_IDENT
        if sc.scan() != _TOKEN_IDENT:
            raise SubstitutionError(ERR_BAD_SUBSTITUTION, variable=name)
        if sc.peek() != _RBRACE:
            args.append(self._parse_param(_accept_not_closing, _SCAN_IDENT | _SCAN_ESCAPE, name))
        self._consume_rbrack(name)
        return self._func(name, op, args, start)

    def _parse_default_func(self, name: str, start: int) -> _Func:
        sc = self.scanner
        accept = _accept_one_equal if sc.peek() == _EQUAL else _accept_default_func
        op = self._scan_operator(accept, name, ERR_PARSE_DEFAULT_FUNCTION)
        args: list[_Node] = []
        while sc.peek() != _RBRACE:
            args.append(self._parse_param(_accept_not_closing, _SCAN_IDENT, name))
        self._consume_rbrack(name)
        return self._func(name, op, args, start)

    def _parse_casing_func(self, name: str, start: int) -> _Func:
        op = self._scan_operator(_accept_casing_func, name, ERR_BAD_SUBSTITUTION)
        self._consume_rbrack(name)
        return self._func(name, op, [], start)

    def _parse_len_func(self, start: int) -> _Func:
        sc = self.scanner
        op = self._scan_operator(_accept_one_hash, "", ERR_BAD_SUBSTITUTION)
        sc.accept = _accept_ident
        sc.mode = _SCAN_IDENT
        if sc.scan() != _TOKEN_IDENT:
            raise SubstitutionError(ERR_BAD_SUBSTITUTION)
        name = _decode_name(sc.text())
        self._consume_rbrack(name)
        return self._func(name, op, [], start)

    def _consume_rbrack(self, name: str) -> None:
        sc = self.scanner
        sc.mode = _SCAN_RBRACK
        if sc.scan() != _TOKEN_RBRACK:
            raise SubstitutionError(ERR_BAD_SUBSTITUTION, variable=name or None)


# --------------------------------------------------------------------------------------------
# Glob matching: drone/envsubst path.Match (Go's path.Match with "*" allowed to cross "/").
# --------------------------------------------------------------------------------------------


class _BadPatternError(Exception):
    """Go's path.ErrBadPattern; callers return the value unchanged."""


def _scan_chunk(pattern: bytes) -> tuple[bool, bytes, bytes]:
    star = False
    while pattern[:1] == b"*":
        pattern = pattern[1:]
        star = True
    in_range = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == _BACKSLASH:
            if i + 1 < len(pattern):
                i += 1
        elif c == ord("["):
            in_range = True
        elif c == ord("]"):
            in_range = False
        elif c == ord("*") and not in_range:
            break
        i += 1
    return star, pattern[:i], pattern[i:]


def _get_esc(chunk: bytes) -> tuple[int, bytes]:
    if not chunk or chunk[0] in (ord("-"), ord("]")):
        raise _BadPatternError
    if chunk[0] == _BACKSLASH:
        chunk = chunk[1:]
        if not chunk:
            raise _BadPatternError
    rune, width = _decode_rune(chunk, 0)
    if rune == _RUNE_ERROR and width == 1:
        raise _BadPatternError
    rest = chunk[width:]
    if not rest:
        raise _BadPatternError
    return rune, rest


def _match_chunk(chunk: bytes, s: bytes) -> bytes | None:
    """Match chunk at the start of s; return the remainder, or None on mismatch."""
    while chunk:
        if not s:
            return None
        c = chunk[0]
        if c == ord("["):
            rune, width = _decode_rune(s, 0)
            s = s[width:]
            chunk = chunk[1:]
            negated = chunk[:1] == b"^"
            if negated:
                chunk = chunk[1:]
            matched = False
            ranges = 0
            while True:
                if chunk[:1] == b"]" and ranges > 0:
                    chunk = chunk[1:]
                    break
                lo, chunk = _get_esc(chunk)
                hi = lo
                if chunk[0] == ord("-"):
                    hi, chunk = _get_esc(chunk[1:])
                if lo <= rune <= hi:
                    matched = True
                ranges += 1
            if matched == negated:
                return None
        elif c == ord("?"):
            _, width = _decode_rune(s, 0)
            s = s[width:]
            chunk = chunk[1:]
        else:
            if c == _BACKSLASH:
                chunk = chunk[1:]
                if not chunk:
                    raise _BadPatternError
            if chunk[0] != s[0]:
                return None
            s = s[1:]
            chunk = chunk[1:]
    return s


def _glob_match(pattern: bytes, name: bytes) -> bool:
    """Whether pattern matches all of name; raises _BadPatternError like Go, lazily."""
    while pattern:
        star, chunk, pattern = _scan_chunk(pattern)
        if star and not chunk:
            return True
        rest = _match_chunk(chunk, name)
        if rest is not None and (not rest or pattern):
            name = rest
            continue
        advanced = False
        if star:
            for i in range(len(name)):
                rest = _match_chunk(chunk, name[i + 1 :])
                if rest is not None:
                    if not pattern and rest:
                        continue
                    name = rest
                    advanced = True
                    break
        if not advanced:
            return False
    return not name


# --------------------------------------------------------------------------------------------
# Substitution functions: envsubst/funcs.go, on bytes like Go strings.
# --------------------------------------------------------------------------------------------

_FuncImpl = Callable[[bytes, Sequence[bytes]], bytes]
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_ATOI_RE = re.compile(rb"[+-]?[0-9]+\Z")


def _atoi(raw: bytes) -> int | None:
    """Go's strconv.Atoi: optional sign, ASCII digits, int64 range; None on error."""
    if not _ATOI_RE.match(raw):
        return None
    value = int(raw)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def _upper_rune(rune: int) -> int:
    """Go's unicode.ToUpper (simple case mapping) from Python's full mappings."""
    char = chr(rune)
    for mapped in (char.upper(), char.title()):
        if len(mapped) == 1:
            return ord(mapped)
    return rune


def _lower_rune(rune: int) -> int:
    """Go's unicode.ToLower; only U+0130 has a multi-character full lowercase mapping."""
    mapped = chr(rune).lower()
    if len(mapped) == 1:
        return ord(mapped)
    return ord("i") if rune == 0x130 else rune


def _map_runes(s: bytes, fn: Callable[[int], int]) -> bytes:
    return b"".join(_encode_rune(fn(rune)) for _, rune, _ in _runes(s))


def _to_len(s: bytes, args: Sequence[bytes]) -> bytes:
    return str(len(s)).encode()


def _to_upper(s: bytes, args: Sequence[bytes]) -> bytes:
    return s.upper() if s.isascii() else _map_runes(s, _upper_rune)


def _to_lower(s: bytes, args: Sequence[bytes]) -> bytes:
    return s.lower() if s.isascii() else _map_runes(s, _lower_rune)


def _to_upper_first(s: bytes, args: Sequence[bytes]) -> bytes:
    if not s:
        return s
    rune, width = _decode_rune(s, 0)
    return _encode_rune(_upper_rune(rune)) + s[width:]


def _to_lower_first(s: bytes, args: Sequence[bytes]) -> bytes:
    if not s:
        return s
    rune, width = _decode_rune(s, 0)
    return _encode_rune(_lower_rune(rune)) + s[width:]


def _to_default(s: bytes, args: Sequence[bytes]) -> bytes:
    if not s and args:
        return b"".join(args)
    return s


def _to_substr(s: bytes, args: Sequence[bytes]) -> bytes:
    if not args:
        return s
    pos = _atoi(args[0])
    if pos is None:
        return s  # like bash, an unparsable offset yields the whole value
    size = len(s)
    if pos < 0:
        pos = max(size + pos, 0)
    if len(args) == 1:
        return s[pos:] if pos < size else b""
    length = _atoi(args[1])
    if length is None:
        return s
    if length < 0:  # counts back from the end, so ${v:1:-1} drops both ends
        end = size + length
        return b"" if end < pos else s[pos:end]
    if pos + length >= size:
        return s[pos:] if pos < size else b""
    return s[pos : pos + length]


def _go_replace(s: bytes, old: bytes, new: bytes, n: int) -> bytes:
    """Go's strings.Replace: an empty old matches before and after every rune."""
    if old == new or n == 0:
        return s
    if old:
        return s.replace(old, new, n)
    boundaries = [offset for offset, _, _ in _runes(s)] + [len(s)]
    if n < 0 or len(boundaries) < n:
        n = len(boundaries)
    out = bytearray()
    start = 0
    for i in range(n):
        end = boundaries[i]
        out += s[start:end]
        out += new
        start = end
    out += s[start:]
    return bytes(out)


def _replace_all(s: bytes, args: Sequence[bytes]) -> bytes:
    if not args:
        return s
    return _go_replace(s, args[0], args[1] if len(args) > 1 else b"", -1)


def _replace_first(s: bytes, args: Sequence[bytes]) -> bytes:
    if not args:
        return s
    return _go_replace(s, args[0], args[1] if len(args) > 1 else b"", 1)


def _replace_prefix(s: bytes, args: Sequence[bytes]) -> bytes:
    if len(args) != 2:
        return s  # upstream: ${v/#p/} (no replacement) leaves the value alone
    if s.startswith(args[0]):
        return _go_replace(s, args[0], args[1], 1)
    return s


def _replace_suffix(s: bytes, args: Sequence[bytes]) -> bytes:
    if len(args) != 2:
        return s
    if s.endswith(args[0]):
        return s[: len(s) - len(args[0])] + args[1]
    return s


def _reverse(s: bytes) -> bytes:
    """Go's reverse via []rune: invalid bytes become U+FFFD."""
    return b"".join(_encode_rune(rune) for _, rune, _ in reversed(list(_runes(s))))


def _trim_shortest(s: bytes, pattern: bytes) -> bytes:
    shortest = b""
    for i in range(len(s)):
        candidate = s[: len(s) - i]
        try:
            if _glob_match(pattern, candidate):
                shortest = candidate
        except _BadPatternError:
            return s
    return s[len(shortest) :] if shortest else s


def _trim_longest(s: bytes, pattern: bytes) -> bytes:
    for i in range(len(s)):
        candidate = s[: len(s) - i]
        try:
            if _glob_match(pattern, candidate):
                return s[len(candidate) :]
        except _BadPatternError:
            return s
    return s


def _trim_shortest_prefix(s: bytes, args: Sequence[bytes]) -> bytes:
    return _trim_shortest(s, args[0]) if args else s


def _trim_longest_prefix(s: bytes, args: Sequence[bytes]) -> bytes:
    return _trim_longest(s, args[0]) if args else s


def _trim_shortest_suffix(s: bytes, args: Sequence[bytes]) -> bytes:
    if not args:
        return s
    return _reverse(_trim_shortest(_reverse(s), _reverse(args[0])))


def _trim_longest_suffix(s: bytes, args: Sequence[bytes]) -> bytes:
    if not args:
        return s
    return _reverse(_trim_longest(_reverse(s), _reverse(args[0])))


_FUNCS: dict[str, _FuncImpl] = {
    ",": _to_lower_first,
    ",,": _to_lower,
    "^": _to_upper_first,
    "^^": _to_upper,
    "##": _trim_longest_prefix,
    "%": _trim_shortest_suffix,
    "%%": _trim_longest_suffix,
    ":": _to_substr,
    "/#": _replace_prefix,
    "/%": _replace_suffix,
    "/": _replace_first,
    "//": _replace_all,
}


def _lookup_func(op: str, nargs: int) -> _FuncImpl:
    if op == "#":
        return _trim_shortest_prefix if nargs else _to_len
    return _FUNCS.get(op, _to_default)


# --------------------------------------------------------------------------------------------
# Evaluation and public API.
# --------------------------------------------------------------------------------------------

_Lookup = Callable[[str], tuple[bytes, bool]]


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        # A byte-wise ${v:pos:len} can cut a character in half; keep the bytes recoverable.
        return data.decode("utf-8", "surrogateescape")


def _parse(data: bytes) -> list[_Node]:
    try:
        return _Parser(data).parse()
    except RecursionError as exc:  # Go has no such limit; Python needs a clear error
        raise SubstitutionError("template nesting too deep") from exc


def _eval_node(node: _Node, lookup: _Lookup) -> bytes:
    if isinstance(node, _Text):
        return node.value
    args = [_eval_node(arg, lookup) for arg in node.args]  # before the variable, as upstream
    value, exists = lookup(node.param)
    if not exists and node.name not in DEFAULT_OPERATORS:
        raise SubstitutionError(
            f'{ERR_VAR_NOT_SET}: "{node.param}"', variable=node.param, kind="unset"
        )
    return _lookup_func(node.name, len(args))(value, args)


def envsubst(text: str, variables: Mapping[str, str], *, strict: bool = False) -> str:
    """Evaluate one template the way Flux post-build substitution does.

    Without ``strict``, unset variables read as empty.  With it, an unset variable used
    without a default-like operator raises ``variable not set (strict mode): "NAME"``;
    variables set to the empty string are fine.  Parse errors always raise.
    """
    if "$" not in text and "\x00" not in text:
        return text

    def lookup(name: str) -> tuple[bytes, bool]:
        value = variables.get(name)
        if value is None:
            return b"", not strict
        return _encode(value), True

    nodes = _parse(_encode(text))
    try:
        out = b"".join(_eval_node(node, lookup) for node in nodes)
    except RecursionError as exc:
        raise SubstitutionError("template nesting too deep") from exc
    return _decode(out)


def _char_offsets(text: str, data: bytes) -> Callable[[int], int]:
    if len(data) == len(text):
        return lambda offset: offset
    table = [0] * (len(data) + 1)
    position = 0
    for index, char in enumerate(text):
        width = len(_encode(char))
        for k in range(width):
            table[position + k] = index
        position += width
    table[len(data)] = len(text)

    def to_char(offset: int) -> int:
        return table[offset]

    return to_char


def _walk(nodes: Sequence[_Node]) -> Iterator[_Func]:
    for node in nodes:
        if isinstance(node, _Func):
            yield node
            yield from _walk(node.args)


def referenced_variables(text: str) -> list[VariableRef]:
    """Every ``${...}`` substitution would evaluate, nested ones included, in text order.

    Escaped ``$${...}`` is not a reference.  Raises ``SubstitutionError`` when the text does
    not parse, since Flux would fail on it regardless of the variables.
    """
    if "$" not in text:
        return []
    data = _encode(text)
    to_char = _char_offsets(text, data)
    refs = []
    for func in _walk(_parse(data)):
        start, end = to_char(func.start), to_char(func.end)
        refs.append(
            VariableRef(
                name=func.param,
                has_default=func.name in DEFAULT_OPERATORS,
                expression=text[start:end],
                offset=start,
            )
        )
    return refs


# `$${name...}`: an even run of `$` (each pair an escape) before a `{` that opens what
# would otherwise be a reference
_ESCAPED = re.compile(r"(?<!\$)(?:\$\$)+(\{[_A-Za-z][_A-Za-z0-9]*[^{}]*\})")


def escaped_expressions(text: str) -> list[str]:
    """Each escaped ``$${...}`` of the text (outside any reference), in text order.

    Substitution turns it into ``${...}``; where no substitution runs it stays ``$${...}``,
    which is what a shell or an application then reads.
    """
    if "$${" not in text:
        return []
    try:
        spans = [(r.offset, r.offset + len(r.expression)) for r in referenced_variables(text)]
    except SubstitutionError:
        spans = []
    out = []
    for match in _ESCAPED.finditer(text):
        start = match.start(1) - 2
        if not any(a <= start < b for a, b in spans):
            out.append("$$" + match.group(1))
    return out


def validate_variable_names(variables: Mapping[str, str]) -> None:
    """Reject keys Flux refuses before substituting; the first bad key (map order) is named.

    Flux iterates a Go map, so with several bad keys the one it reports is arbitrary.
    """
    for key in variables:
        if not VARIABLE_NAME_RE.match(key):
            raise SubstitutionError(
                f"'{key}' var name is invalid, must match '{VARIABLE_NAME_PATTERN}'",
                variable=key,
                kind="name",
            )
