"""Go's text/template, as flux-operator runs a ResourceSet's templates: `<< >>` delimiters,
`missingkey=error`, slim-sprig's hermetic functions and flux-operator's own (`inputs`,
`toYaml`, `mustToYaml`, `slugify`).

Written after Go's `text/template/parse` lexer and parser and `text/template` exec: trim
markers (`<<- ` and ` ->>`), comments, pipelines, variables (`:=`, `=`), `if`/`else if`/
`range` (with `else`, `break`, `continue`)/`with`, parentheses, field chains on a function's
result (`inputs.tenant`), Go's truth, comparison and printing rules. Values are Go's: an
int64 is `int` here, a float64 `float` (inputs decode as flux-operator decodes them:
`from_json_value`; sprig's `fromJson` gives float64 only). A function slim-sprig has that
this module does not implement fails with `UnsupportedError`, never with a guess; so do
`define`, `template` and `block` (flux-operator templates have no named templates to call).

Checked against flux-operator's own build goldens (internal/builder and the CLI's
`build resourceset` testdata): the same objects, and the same YAML text.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import hashlib
import json
import math
import posixpath
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

LEFT, RIGHT = "<<", ">>"
_SPACE = " \t\r\n"


class TemplateError(Exception):
    """A template that fails to parse or execute (flux-operator fails the build alike)."""


class UnsupportedError(TemplateError):
    """A construct flux-operator accepts that this evaluator does not implement."""


# -- lexer ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tok:
    kind: str  # text, left, right, ident, field, var, string, number, char, bool, nil,
    # dot, pipe, lparen, rparen, declare, assign, comma, space, eof
    value: str
    pos: int


_KEYWORDS = frozenset(
    {"if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"}
)
_NUMBER = re.compile(
    r"[+-]?(0[xX][0-9a-fA-F_]+(\.[0-9a-fA-F_]*)?([pP][+-]?\d+)?|0[bB][01_]+|0[oO][0-7_]+|"
    r"(\d[\d_]*)?\.?\d[\d_]*([eE][+-]?\d+)?|\d[\d_]*\.)"
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _lex(src: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    n = len(src)
    while pos < n:
        start = src.find(LEFT, pos)
        if start < 0:
            out.append(_Tok("text", src[pos:], pos))
            break
        text = src[pos:start]
        inner = start + len(LEFT)
        trim_left = src.startswith("-", inner) and inner + 1 < n and src[inner + 1] in _SPACE
        if trim_left:
            text = text.rstrip(_SPACE)
            inner += 2
        if text:
            out.append(_Tok("text", text, pos))
        # a comment: `<</* ... */>>`
        probe = inner
        if src.startswith("/*", probe):
            end = src.find("*/", probe + 2)
            if end < 0:
                raise TemplateError("unclosed comment")
            after = end + 2
            trim_right = False
            if src.startswith(" -" + RIGHT, after) or (
                after < n and src[after] in _SPACE and src.startswith("-" + RIGHT, after + 1)
            ):
                trim_right = True
                after = src.find(RIGHT, after)
            if not src.startswith(RIGHT, after):
                raise TemplateError("comment ends before closing delimiter")
            pos = after + len(RIGHT)
            if trim_right:
                while pos < n and src[pos] in _SPACE:
                    pos += 1
            continue
        out.append(_Tok("left", LEFT, start))
        pos = _lex_action(src, inner, out)
    out.append(_Tok("eof", "", n))
    return out


def _lex_action(src: str, pos: int, out: list[_Tok]) -> int:
    """Tokens of one action from `pos`; returns where the text after it starts."""
    n = len(src)
    depth = 0
    while True:
        if pos >= n:
            raise TemplateError("unclosed action")
        c = src[pos]
        if c in _SPACE:
            end = pos
            while end < n and src[end] in _SPACE:
                end += 1
            if src.startswith("-" + RIGHT, end) and end > pos:
                out.append(_Tok("right", RIGHT, end))
                end += 1 + len(RIGHT)
                while end < n and src[end] in _SPACE:
                    end += 1
                return end
            out.append(_Tok("space", src[pos:end], pos))
            pos = end
            continue
        if src.startswith(RIGHT, pos) and depth == 0:
            out.append(_Tok("right", RIGHT, pos))
            return pos + len(RIGHT)
        if c == "|":
            out.append(_Tok("pipe", c, pos))
            pos += 1
        elif c == "(":
            depth += 1
            out.append(_Tok("lparen", c, pos))
            pos += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                raise TemplateError("unexpected right paren")
            out.append(_Tok("rparen", c, pos))
            pos += 1
        elif c == ",":
            out.append(_Tok("comma", c, pos))
            pos += 1
        elif src.startswith(":=", pos):
            out.append(_Tok("declare", ":=", pos))
            pos += 2
        elif c == "=":
            out.append(_Tok("assign", "=", pos))
            pos += 1
        elif c == '"':
            end = pos + 1
            while end < n and src[end] != '"':
                if src[end] == "\\":
                    end += 1
                if end < n and src[end] == "\n":
                    raise TemplateError("unterminated quoted string")
                end += 1
            if end >= n:
                raise TemplateError("unterminated quoted string")
            out.append(_Tok("string", src[pos : end + 1], pos))
            pos = end + 1
        elif c == "`":
            end = src.find("`", pos + 1)
            if end < 0:
                raise TemplateError("unterminated raw quoted string")
            out.append(_Tok("string", src[pos : end + 1], pos))
            pos = end + 1
        elif c == "'":
            end = pos + 1
            while end < n and src[end] != "'":
                end += 2 if src[end] == "\\" else 1
            out.append(_Tok("char", src[pos : end + 1], pos))
            pos = end + 1
        elif c == "$":
            m = _IDENT.match(src, pos + 1)
            name = "$" + (m.group(0) if m else "")
            out.append(_Tok("var", name, pos))
            pos += len(name)
        elif c == ".":
            m = _IDENT.match(src, pos + 1)
            if m:
                out.append(_Tok("field", m.group(0), pos))
                pos = m.end()
            elif pos + 1 < n and src[pos + 1].isdigit():
                m2 = _NUMBER.match(src, pos)
                assert m2 is not None
                out.append(_Tok("number", m2.group(0), pos))
                pos = m2.end()
            else:
                out.append(_Tok("dot", ".", pos))
                pos += 1
        elif c.isdigit() or (
            c in "+-" and pos + 1 < n and (src[pos + 1].isdigit() or src[pos + 1] == ".")
        ):
            m = _NUMBER.match(src, pos)
            if m is None or not m.group(0):
                raise TemplateError(f"bad number syntax: {src[pos : pos + 10]!r}")
            out.append(_Tok("number", m.group(0), pos))
            pos = m.end()
        elif c.isalpha() or c == "_":
            m = _IDENT.match(src, pos)
            assert m is not None
            word = m.group(0)
            kind = "bool" if word in ("true", "false") else "nil" if word == "nil" else "ident"
            out.append(_Tok(kind, word, pos))
            pos = m.end()
        else:
            raise TemplateError(f"unrecognized character in action: {c!r}")


# -- parse tree ----------------------------------------------------------------------------


@dataclass
class _Node:
    pass


@dataclass
class _Text(_Node):
    text: str


@dataclass
class _Cmd(_Node):
    args: list[Any]  # operands: ("field", names) ("var", name, names) ("ident", name)
    # ("chain", operand, names) ("const", value) ("dot",) ("nil",) ("pipe", _Pipe)


@dataclass
class _Pipe(_Node):
    decl: list[str]
    is_assign: bool
    cmds: list[_Cmd]


@dataclass
class _Action(_Node):
    pipe: _Pipe


@dataclass
class _Branch(_Node):
    kind: str  # if, range, with
    pipe: _Pipe
    body: list[_Node]
    orelse: list[_Node] = field(default_factory=list)


@dataclass
class _Loop(_Node):
    kind: str  # break, continue


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.i = 0
        self.vars: list[list[str]] = [["$"]]
        self.range_depth = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def next(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def next_non_space(self) -> _Tok:
        while self.peek().kind == "space":
            self.i += 1
        return self.next()

    def peek_non_space(self) -> _Tok:
        while self.peek().kind == "space":
            self.i += 1
        return self.peek()

    def parse(self) -> list[_Node]:
        nodes, end = self.list_until(())
        if end != "eof":
            raise TemplateError(f"unexpected {{{{{end}}}}}")
        return nodes

    def list_until(self, stops: tuple[str, ...]) -> tuple[list[_Node], str]:
        nodes: list[_Node] = []
        while True:
            tok = self.next()
            if tok.kind == "eof":
                if stops:
                    raise TemplateError("unexpected EOF")
                return nodes, "eof"
            if tok.kind == "text":
                nodes.append(_Text(tok.value))
                continue
            assert tok.kind == "left"
            word = self.peek_non_space()
            if word.kind == "ident" and word.value in _KEYWORDS:
                kw = word.value
                if kw in ("end", "else"):
                    if kw not in stops and not (kw == "else" and "else" in stops):
                        raise TemplateError(f"unexpected {{{{{kw}}}}}")
                    self.next_non_space()
                    if kw == "end" and self.next_non_space().kind != "right":
                        raise TemplateError("unexpected token in end")
                    return nodes, kw
                self.next_non_space()
                nodes.append(self.keyword(kw))
                continue
            pipe = self.pipeline("command", decl_ok=True)
            nodes.append(_Action(pipe))

    def keyword(self, kw: str) -> _Node:
        if kw in ("define", "template", "block"):
            raise UnsupportedError(
                f"{{{{{kw}}}}} is not supported by harness's ResourceSet templates"
            )
        if kw in ("break", "continue"):
            if self.range_depth == 0:
                raise TemplateError(f"{{{{{kw}}}}} outside {{{{range}}}}")
            if self.next_non_space().kind != "right":
                raise TemplateError(f"unexpected token in {{{{{kw}}}}}")
            return _Loop(kw)
        return self.branch(kw)

    def branch(self, kw: str) -> _Branch:
        self.vars.append([])
        try:
            pipe = self.pipeline(kw, decl_ok=True, range_ok=kw == "range")
            if kw == "range":
                self.range_depth += 1
            body, end = self.list_until(("end", "else"))
            if kw == "range":
                self.range_depth -= 1
            orelse: list[_Node] = []
            if end == "else":
                nxt = self.peek_non_space()
                if kw in ("if", "with") and nxt.kind == "ident" and nxt.value == kw:
                    self.next_non_space()  # `else if` / `else with`: a nested branch
                    orelse = [self.branch(kw)]
                    return _Branch(kw, pipe, body, orelse)
                if self.next_non_space().kind != "right":
                    raise TemplateError("unexpected token after else")
                orelse, end = self.list_until(("end",))
            return _Branch(kw, pipe, body, orelse)
        finally:
            self.vars.pop()

    def pipeline(self, context: str, decl_ok: bool, range_ok: bool = False) -> _Pipe:
        decl: list[str] = []
        is_assign = False
        save = self.i
        tok = self.peek_non_space()
        if decl_ok and tok.kind == "var":
            self.next_non_space()
            after = self.peek_non_space()
            if after.kind in ("declare", "assign"):
                self.next_non_space()
                decl = [tok.value]
                is_assign = after.kind == "assign"
            elif after.kind == "comma" and range_ok:
                self.next_non_space()
                second = self.next_non_space()
                if second.kind != "var":
                    raise TemplateError("range can only initialize variables")
                op = self.next_non_space()
                if op.kind not in ("declare", "assign"):
                    raise TemplateError("expected := in range")
                decl = [tok.value, second.value]
                is_assign = op.kind == "assign"
            else:
                self.i = save
        if decl and not is_assign:
            self.vars[-1].extend(decl)
        elif decl:
            for name in decl:
                self.check_var(name)
        cmds: list[_Cmd] = []
        while True:
            tok = self.peek_non_space()
            if tok.kind in ("right", "rparen"):
                self.next_non_space()
                if tok.kind == "rparen" and context != "paren":
                    raise TemplateError("unexpected right paren")
                if tok.kind == "right" and context == "paren":
                    raise TemplateError("unclosed left paren")
                break
            cmds.append(self.command())
            tok = self.peek_non_space()
            if tok.kind == "pipe":
                self.next_non_space()
                continue
        if not cmds:
            raise TemplateError(f"missing value for {context}")
        return _Pipe(decl, is_assign, cmds)

    def command(self) -> _Cmd:
        args: list[Any] = []
        while True:
            tok = self.peek()
            if tok.kind == "space":
                self.next()
                continue
            if tok.kind in ("right", "rparen", "pipe"):
                break
            op = self.operand()
            if op is None:
                raise TemplateError(f"unexpected {tok.value!r} in operand")
            args.append(op)
            nxt = self.peek()
            if nxt.kind not in ("space", "right", "rparen", "pipe"):
                raise TemplateError(f"unexpected {nxt.value!r} in operand")
        if not args:
            raise TemplateError("empty command")
        return _Cmd(args)

    def operand(self) -> Any:
        node = self.term()
        if node is None:
            return None
        if self.peek().kind == "field":
            names = []
            while self.peek().kind == "field":
                names.append(self.next().value)
            if node[0] == "field":
                return ("field", node[1] + tuple(names))
            if node[0] == "var":
                return ("var", node[1], node[2] + tuple(names))
            if node[0] in ("const", "nil", "dot"):
                raise TemplateError("unexpected . after term")
            return ("chain", node, tuple(names))
        return node

    def term(self) -> Any:
        tok = self.next()
        if tok.kind == "ident":
            if tok.value not in FUNCS and tok.value not in _BUILTINS:
                if tok.value in _SLIM_SPRIG:
                    raise UnsupportedError(
                        f"function {go_quote(tok.value)} is not supported by harness"
                    )
                raise TemplateError(f"function {go_quote(tok.value)} not defined")
            return ("ident", tok.value)
        if tok.kind == "dot":
            return ("dot",)
        if tok.kind == "nil":
            return ("nil",)
        if tok.kind == "var":
            self.check_var(tok.value)
            return ("var", tok.value, ())
        if tok.kind == "field":
            return ("field", (tok.value,))
        if tok.kind == "bool":
            return ("const", tok.value == "true")
        if tok.kind in ("number", "char"):
            return ("const", _number(tok.value, tok.kind))
        if tok.kind == "string":
            return ("const", _unquote(tok.value))
        if tok.kind == "lparen":
            return ("pipe", self.pipeline("paren", decl_ok=True))
        self.i -= 1
        return None

    def check_var(self, name: str) -> None:
        if not any(name in scope for scope in self.vars):
            raise TemplateError(f"undefined variable {go_quote(name)}")


def _number(text: str, kind: str) -> Any:
    if kind == "char":
        value = _unquote('"' + text[1:-1].replace('"', '\\"') + '"')
        if len(value) != 1:
            raise TemplateError(f"malformed character constant: {text}")
        return ord(value)
    clean = text.replace("_", "")
    try:
        if re.fullmatch(r"[+-]?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|\d+)", clean):
            if re.fullmatch(r"[+-]?0\d+", clean):
                return int(clean, 8)
            return int(clean, 0)
        if clean.lower().startswith(("0x", "-0x", "+0x")):
            return float.fromhex(clean)
        return float(clean)
    except ValueError:
        raise TemplateError(f"bad number syntax: {text!r}") from None


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ESCAPES |= {"\\": "\\", '"': '"', "'": "'"}


def _unquote(text: str) -> str:
    if text.startswith("`"):
        return text[1:-1].replace("\r", "")
    body = text[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = body[i + 1] if i + 1 < len(body) else ""
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            digits = body[i + 2 : i + 2 + width]
            if len(digits) != width:
                raise TemplateError(f"invalid syntax: {text}")
            out.append(chr(int(digits, 16)))
            i += 2 + width
        elif e.isdigit():
            out.append(chr(int(body[i + 1 : i + 4], 8)))
            i += 4
        else:
            raise TemplateError(f"invalid syntax: {text}")
    return "".join(out)


# -- execution -----------------------------------------------------------------------------


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


_MISSING = object()  # Go's invalid reflect.Value ("<no value>")


class Template:
    """One parsed template; `execute` renders it with `inputs` as the `inputs` function."""

    def __init__(self, source: str) -> None:
        self.nodes = _Parser(_lex(source)).parse()

    def execute(self, inputs: Any) -> str:
        out: list[str] = []
        state = _State(inputs, [[("$", None)]])
        self._walk(self.nodes, None, state, out)
        return "".join(out)

    def _walk(self, nodes: Sequence[_Node], dot: Any, st: _State, out: list[str]) -> None:
        for node in nodes:
            if isinstance(node, _Text):
                out.append(node.text)
            elif isinstance(node, _Action):
                value = st.pipe(node.pipe, dot)
                if not node.pipe.decl:
                    out.append(_print(value))
            elif isinstance(node, _Loop):
                raise _Break() if node.kind == "break" else _Continue()
            elif isinstance(node, _Branch):
                self._branch(node, dot, st, out)

    def _branch(self, node: _Branch, dot: Any, st: _State, out: list[str]) -> None:
        st.vars.append([])
        try:
            if node.kind == "range":
                self._range(node, dot, st, out)
                return
            value = st.pipe(node.pipe, dot, declare_range=False)
            if truth(value):
                self._walk(node.body, value if node.kind == "with" else dot, st, out)
            elif node.orelse:
                self._walk(node.orelse, dot, st, out)
        finally:
            st.vars.pop()

    def _range(self, node: _Branch, dot: Any, st: _State, out: list[str]) -> None:
        value = st.pipe(node.pipe, dot, declare_range=True)
        items: list[tuple[Any, Any]]
        if isinstance(value, dict):
            items = [(k, value[k]) for k in sorted(value)]
        elif isinstance(value, (list, tuple)):
            items = list(enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool):
            items = [(i, i) for i in range(value)]
        elif value is None or value is _MISSING:
            items = []
        else:
            raise TemplateError(f"range can't iterate over {_print(value)}")
        if not items:
            if node.orelse:
                self._walk(node.orelse, dot, st, out)
            return
        decl = node.pipe.decl
        for key, elem in items:
            if len(decl) == 1:
                st.set(decl[0], elem, node.pipe.is_assign)
            elif len(decl) == 2:
                st.set(decl[0], key, node.pipe.is_assign)
                st.set(decl[1], elem, node.pipe.is_assign)
            try:
                self._walk(node.body, elem, st, out)
            except _Break:
                break
            except _Continue:
                continue


@dataclass
class _State:
    inputs: Any
    vars: list[list[tuple[str, Any]]]

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.vars):
            for key, value in reversed(scope):
                if key == name:
                    return value
        raise TemplateError(f"undefined variable: {name}")

    def set(self, name: str, value: Any, assign: bool) -> None:
        if assign:
            for scope in reversed(self.vars):
                for i, (key, _v) in enumerate(scope):
                    if key == name:
                        scope[i] = (name, value)
                        return
            raise TemplateError(f"undefined variable: {name}")
        self.vars[-1].append((name, value))

    def pipe(self, pipe: _Pipe, dot: Any, declare_range: bool = False) -> Any:
        value: Any = _MISSING
        final: Any = _MISSING
        for cmd in pipe.cmds:
            value = self.command(cmd, dot, final)
            final = value
        if not declare_range:
            for name in pipe.decl:
                self.set(name, value, pipe.is_assign)
        return value

    def command(self, cmd: _Cmd, dot: Any, final: Any) -> Any:
        first = cmd.args[0]
        kind = first[0]
        if kind == "ident":
            return self.call(first[1], cmd.args[1:], dot, final)
        if kind in ("field", "var", "chain"):
            if len(cmd.args) > 1 or final is not _MISSING:
                raise TemplateError(f"{_describe(first)} is not a method but has arguments")
        elif len(cmd.args) > 1 or final is not _MISSING:
            raise TemplateError(f"can't give argument to non-function {_describe(first)}")
        return self.arg(first, dot)

    def arg(self, node: Any, dot: Any) -> Any:
        kind = node[0]
        if kind == "const":
            return node[1]
        if kind == "nil":
            raise TemplateError("nil is not a command")
        if kind == "dot":
            return dot
        if kind == "field":
            return _fields(dot, node[1])
        if kind == "var":
            return _fields(self.lookup(node[1]), node[2])
        if kind == "ident":
            return self.call(node[1], [], dot, _MISSING)
        if kind == "chain":
            return _fields(self.arg(node[1], dot), node[2])
        if kind == "pipe":
            self.vars.append([])
            try:
                return self.pipe(node[1], dot)
            finally:
                self.vars.pop()
        raise TemplateError(f"can't handle {node!r}")

    def call(self, name: str, args: Sequence[Any], dot: Any, final: Any) -> Any:
        if name in ("and", "or"):
            values = list(args) + ([("const", final)] if final is not _MISSING else [])
            if not values:
                raise TemplateError(f"wrong number of args for {name}: want at least 1 got 0")
            result: Any = _MISSING
            for node in values:
                result = self.arg(node, dot)
                if truth(result) == (name == "or"):
                    return result
            return result
        values = [self.arg(a, dot) for a in args]
        if final is not _MISSING:
            values.append(final)
        if name == "inputs":
            if values:
                raise TemplateError("wrong number of args for inputs: want 0")
            return self.inputs
        fn = _BUILTINS.get(name) or FUNCS[name]
        values = [None if v is _MISSING else v for v in values]
        try:
            return fn(*values)
        except TemplateError:
            raise
        except ZeroDivisionError:
            raise TemplateError(f"error calling {name}: integer divide by zero") from None
        except (TypeError, AttributeError):
            # Go's reflect.Call refuses an argument of the wrong type before calling
            kinds = ", ".join(_type_name(v) for v in values)
            raise TemplateError(f"wrong type for value in call to {name} ({kinds})") from None
        except (ValueError, KeyError, IndexError) as exc:
            raise TemplateError(f"error calling {name}: {exc}") from None


def _describe(node: Any) -> str:
    if node[0] == "field":
        return "." + ".".join(node[1])
    if node[0] == "var":
        return ".".join((node[1], *node[2]))
    return str(node[1]) if len(node) > 1 else node[0]


def _fields(value: Any, names: Sequence[str]) -> Any:
    for name in names:
        if isinstance(value, dict):
            if name not in value:
                raise TemplateError(f"map has no entry for key {go_quote(name)}")
            value = value[name]
        elif value is None or value is _MISSING:
            raise TemplateError(f"nil data; no entry for key {go_quote(name)}")
        else:
            raise TemplateError(f"can't evaluate field {name} in type {_type_name(value)}")
    return value


# -- Go values -----------------------------------------------------------------------------


def truth(value: Any) -> bool:
    """Go template truth: false, 0, nil, and empty strings, slices and maps are false."""
    if value is None or value is _MISSING:
        return False
    if isinstance(value, (bool, int, float, str, list, tuple, dict)):
        return bool(value)
    return True


def _print(value: Any) -> str:
    if value is _MISSING or value is None:
        return "<no value>"
    return go_str(value)


def go_str(value: Any) -> str:
    """`fmt.Sprint` of a Go value as json.Unmarshal builds it."""
    if value is _MISSING:
        return "<no value>"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_str(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(go_str(v) for v in value) + "]"
    return str(value)


def go_float(value: float) -> str:
    """strconv.FormatFloat(v, 'g', -1, 64), as fmt's %v prints a float64: %e form when
    the exponent is below -4 or at least 6 (so 1000000 prints as 1e+06)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign = "-" if value < 0 else ""
    digits, exp = _shortest(value)
    if exp < -4 or exp >= 6:
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp >= 0:
        whole = digits[: exp + 1].ljust(exp + 1, "0")
        frac = digits[exp + 1 :]
        return sign + whole + ("." + frac if frac else "")
    return sign + "0." + "0" * (-exp - 1) + digits


def _shortest(value: float) -> tuple[str, int]:
    """The shortest digits that round-trip (Python's repr and Go agree on them) and the
    decimal exponent of the first digit."""
    tup = decimal.Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, tup.digits)).lstrip("0")
    assert isinstance(tup.exponent, int)
    point = len("".join(map(str, tup.digits))) + tup.exponent  # digits before the point
    point -= len("".join(map(str, tup.digits))) - len(digits)
    return digits.rstrip("0") or "0", point - 1


def _type_name(value: Any) -> str:
    if value is None or value is _MISSING:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, (list, tuple)):
        return "[]interface {}"
    return type(value).__name__


def _kind(value: Any) -> str:
    """Go's reflect.Kind name of a value."""
    if value is None:
        return "invalid"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, (list, tuple)):
        return "slice"
    return "struct"


def _basic(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return "other"


def _eq(arg1: Any, *args: Any) -> bool:
    if not args:
        raise TemplateError("missing argument for comparison")
    k1 = _basic(arg1)
    for arg in args:
        k2 = _basic(arg)
        if k1 != k2:
            if arg1 is None or arg is None:
                if arg1 is None and arg is None:
                    return True
                continue
            raise TemplateError("incompatible types for comparison")
        if k1 == "other":
            if arg1 is None or arg is None:
                if arg1 is arg:
                    return True
                continue
            raise TemplateError(f"non-comparable type {_print(arg1)}: {_type_name(arg1)}")
        if arg1 == arg:
            return True
    return False


def _lt(a: Any, b: Any) -> bool:
    ka, kb = _basic(a), _basic(b)
    if ka != kb or ka in ("bool", "other"):
        if ka in ("bool", "other"):
            raise TemplateError("invalid type for comparison")
        raise TemplateError("incompatible types for comparison")
    return bool(a < b)


def _len(value: Any) -> int:
    if isinstance(value, (str, list, tuple, dict)):
        return len(value.encode() if isinstance(value, str) else value)
    raise TemplateError(f"len of type {_type_name(value)}")


def _index(item: Any, *keys: Any) -> Any:
    for key in keys:
        if isinstance(item, dict):
            if not isinstance(key, str):
                raise TemplateError("value has type int; should be string")
            item = item.get(key)
        elif isinstance(item, (list, tuple, str)):
            if isinstance(key, bool) or not isinstance(key, int):
                raise TemplateError(f"cannot index slice/array with type {_type_name(key)}")
            if not 0 <= key < len(item):
                raise TemplateError(f"index out of range: {key}")
            item = item[key] if not isinstance(item, str) else item.encode()[key]
        elif item is None:
            raise TemplateError("index of untyped nil")
        else:
            raise TemplateError(f"can't index item of type {_type_name(item)}")
    return item


def _go_sprint(*args: Any) -> str:
    out = []
    for i, arg in enumerate(args):
        if i > 0 and not isinstance(arg, str) and not isinstance(args[i - 1], str):
            out.append(" ")
        out.append(go_str(arg))
    return "".join(out)


_VERB = re.compile(r"%([-+# 0]*)(\d+|\*)?(?:\.(\d+|\*)?)?([a-zA-Z%])")


def _printf(fmt: str, *args: Any) -> str:
    """fmt.Sprintf for the verbs templates use (%s %d %v %q %t %f %x %%)."""
    out: list[str] = []
    pos = 0
    arg_i = 0
    for m in _VERB.finditer(fmt):
        out.append(fmt[pos : m.start()])
        pos = m.end()
        flags, width, prec, verb = m.group(1), m.group(2), m.group(3), m.group(4)
        if verb == "%":
            out.append("%")
            continue
        if width == "*" or prec == "*":
            raise UnsupportedError("printf: '*' width is not supported by harness")
        if arg_i >= len(args):
            out.append(f"%!{verb}(MISSING)")
            continue
        arg = args[arg_i]
        arg_i += 1
        out.append(_format_one(flags, width, prec, verb, arg))
    out.append(fmt[pos:])
    if arg_i < len(args):
        extra = ", ".join(f"{_type_name(a)}={go_str(a)}" for a in args[arg_i:])
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)


def _format_one(flags: str, width: str | None, prec: str | None, verb: str, arg: Any) -> str:
    if verb in ("v", "s"):
        if verb == "s" and (isinstance(arg, (int, float, bool)) or arg is None):
            return f"%!s({_type_name(arg)}={go_str(arg)})"
        text = go_str(arg)
        if prec is not None and verb == "s":
            text = text[: int(prec)]
    elif verb == "d":
        if isinstance(arg, bool) or not isinstance(arg, int):
            return f"%!d({_type_name(arg)}={go_str(arg)})"
        text = str(arg)
    elif verb == "q":
        if not isinstance(arg, str):
            raise UnsupportedError("printf %q of a non-string is not supported by harness")
        text = go_quote(arg)
    elif verb == "t":
        if not isinstance(arg, bool):
            return f"%!t({_type_name(arg)}={go_str(arg)})"
        text = "true" if arg else "false"
    elif verb == "f" and isinstance(arg, float):
        text = f"{arg:.{int(prec) if prec is not None else 6}f}"
    elif verb in "xX" and isinstance(arg, (int, str)) and not isinstance(arg, bool):
        text = format(arg, verb) if isinstance(arg, int) else arg.encode().hex()
        text = text.upper() if verb == "X" else text
    else:
        raise UnsupportedError(f"printf verb %{verb} with {_type_name(arg)} is not supported")
    if width:
        w = int(width)
        if "-" in flags:
            text = text.ljust(w)
        elif "0" in flags and verb in "dfxX":
            text = text.rjust(w, "0")
        else:
            text = text.rjust(w)
    return text


def go_quote(text: str) -> str:
    """strconv.Quote: Go's double-quoted string with escapes."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\a":
            out.append("\\a")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\v":
            out.append("\\v")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x80 or ch.isprintable():
            out.append(ch)
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _not(value: Any) -> bool:
    return not truth(value)


def _gt(a: Any, b: Any) -> bool:
    return not _lt(a, b) and not _eq(a, b)


_BUILTINS: dict[str, Callable[..., Any]] = {
    "not": _not,
    "len": _len,
    "index": _index,
    "print": _go_sprint,
    "printf": _printf,
    "println": lambda *a: " ".join(go_str(x) for x in a) + "\n",
    "eq": _eq,
    "ne": lambda a, b: not _eq(a, b),
    "lt": _lt,
    "le": lambda a, b: _lt(a, b) or _eq(a, b),
    "gt": _gt,
    "ge": lambda a, b: not _lt(a, b),
    "and": lambda *a: a,  # evaluated lazily in _State.call
    "or": lambda *a: a,
    "inputs": lambda: None,  # bound per execution in _State.call
}


# -- slim-sprig and flux-operator's functions ----------------------------------------------


def strval(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode()
    return go_str(value)


def to_int64(value: Any) -> int:
    """cast.ToInt64: strings parsed (0 on error), floats truncated, bools 1/0, nil 0."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return -(2**63)
        return int(value)
    if isinstance(value, str):
        text = value
        if "." in text:
            head, _, tail = text.partition(".")
            if tail.strip("0") == "":
                text = head
        return _parse_int(text)
    return 0


def _parse_int(text: str) -> int:
    """strconv.ParseInt(s, 0, 64): a 0x, 0o, 0b or leading-0 (octal) prefix sets the base;
    anything it refuses is 0 (cast's answer to an error)."""
    sign = -1 if text.startswith("-") else 1
    body = text[1:] if text[:1] in "+-" else text
    prefixed = body[:2].lower() in ("0x", "0o", "0b")
    try:
        if prefixed:
            value = int(body, 0)
        elif len(body) > 1 and body.startswith("0"):
            value = int(body[1:], 8)
        elif body.isascii() and body.isdigit():
            value = int(body, 10)
        else:
            return 0
    except ValueError:
        return 0
    if "_" in body and not prefixed:
        return 0  # Go allows underscores only with a base prefix
    value *= sign
    return value if -(2**63) <= value < 2**63 else 0


def to_float64(value: Any) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return 0.0
    return 0.0


def empty(value: Any) -> bool:
    if value is None or value is _MISSING:
        return True
    if isinstance(value, (str, list, tuple, dict)):
        return len(value) == 0
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value == 0
    return False


def _default(default: Any, *given: Any) -> Any:
    if not given or empty(given[0]):
        return default
    return given[0]


def _strslice(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [strval(v) for v in value if v is not None]
    return [strval(value)]


def _quote(*values: Any) -> str:
    return " ".join(go_quote(strval(v)) for v in values if v is not None)


def _squote(*values: Any) -> str:
    return " ".join(f"'{strval(v)}'" for v in values if v is not None)


def _indent(spaces: int, text: str) -> str:
    pad = " " * spaces
    return pad + text.replace("\n", "\n" + pad)


def _trunc(count: int, text: str) -> str:
    raw = text.encode()
    if count < 0 and len(raw) + count > 0:
        return raw[len(raw) + count :].decode(errors="replace")
    if count >= 0 and len(raw) > count:
        return raw[:count].decode(errors="replace")
    return text


def _substr(start: int, end: int, text: str) -> str:
    if start < 0:
        return text[:end]
    if end < 0 or end > len(text):
        return text[start:]
    return text[start:end]


def go_yaml(value: Any) -> str:
    """sigs.k8s.io/yaml.Marshal of a JSON value: keys sorted, integral floats as integers."""
    if value is None:
        return "null\n"
    return yaml.dump(
        _jsonish(value),
        Dumper=_GoDumper,
        default_flow_style=False,
        sort_keys=True,
        allow_unicode=True,
        width=80,
    )


def _jsonish(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {str(k): _jsonish(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonish(v) for v in value]
    return value


class _GoDumper(yaml.SafeDumper):
    """PyYAML's emitter shaped like go-yaml v2's: literal blocks for multi-line strings,
    double quotes where a plain scalar would read as another type."""


def _go_str_repr(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    resolved = dumper.resolve(yaml.ScalarNode, data, (True, False))  # type: ignore[no-untyped-call]
    # PyYAML's own `yaml` (`*`, `&`, `!`) and `value` (`=`) tags are strings to go-yaml
    if resolved not in (
        "tag:yaml.org,2002:str",
        "tag:yaml.org,2002:yaml",
        "tag:yaml.org,2002:value",
    ):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_GoDumper.add_representer(str, _go_str_repr)


def _to_yaml(value: Any) -> str:
    try:
        return go_yaml(value)
    except yaml.YAMLError:
        return ""


def go_json(value: Any, *, escape_html: bool = True, indent: str | None = None) -> str:
    """encoding/json.Marshal: sorted keys, Go's float format, HTML characters escaped."""
    text = json.dumps(
        _json_floats(value),
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":") if indent is None else (",", ": "),
        indent=indent,
    )
    if escape_html:
        text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _json_floats(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _json_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_floats(v) for v in value]
    return value


def _from_json(text: str) -> Any:
    """sprig's fromJson: nil when the text is no JSON."""
    try:
        return _floats(json.loads(text))
    except ValueError:
        return None


def _must_from_json(text: str) -> Any:
    try:
        return _floats(json.loads(text))
    except ValueError as exc:
        raise TemplateError(f"error calling mustFromJson: {exc}") from None


def _floats(value: Any) -> Any:
    """encoding/json.Unmarshal into interface{} (sprig's fromJson): every number a float64."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_floats(v) for v in value]
    return value


def from_json_value(value: Any) -> Any:
    """A ResourceSet input as flux-operator holds it: k8s.io/apimachinery's json.Unmarshal
    decodes an integer as int64 and any other number as float64 (a YAML `2.0` reaches the
    API server as JSON `2`, an integer); a YAML date is the string its JSON holds."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        if value.is_integer() and -(2**63) <= value < 2**63:
            return int(value)
        return value
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): from_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [from_json_value(v) for v in value]
    return value


_ENSUB = {"&": "and", "@": "at"}


def slugify(text: str) -> str:
    """gosimple/slug.Make with flux-operator's settings (63 characters, smart truncate)."""
    slug = "".join(_ENSUB.get(c, c) for c in text.strip())
    if not slug.isascii():
        raise UnsupportedError("slugify of non-ASCII text is not supported by harness")
    slug = slug.lower()
    slug = re.sub(r"[^a-zA-Z0-9\-_]", "-", slug)
    slug = re.sub(r"-+", "-", slug)
    slug = slug.strip("-_")
    if len(slug) > 63:
        cut = slug.rfind("-", 0, 64)
        slug = slug[:cut] if cut >= 0 else slug[:63]
    return slug


def _go_regex(pattern: str) -> re.Pattern[str]:
    if re.search(r"\\[pPQE]|\[\[:", pattern):
        raise UnsupportedError(f"regular expression {pattern!r} is not supported by harness")
    try:
        return re.compile(pattern.replace("(?P<", "(?P<"))
    except re.error as exc:
        raise TemplateError(f"error parsing regexp: {exc}") from None


def _expand(template: str) -> Callable[[re.Match[str]], str]:
    def sub(m: re.Match[str]) -> str:
        def one(g: re.Match[str]) -> str:
            name = g.group(1) or g.group(2)
            if name == "$":
                return "$"
            try:
                key: int | str = int(name)
            except ValueError:
                key = name
            try:
                return m.group(key) or ""
            except (IndexError, error_type):
                return ""

        error_type = re.error
        return re.sub(r"\$(?:\{(\w+)\}|(\w+|\$))", one, template)

    return sub


def _regex_replace_all(regex: str, text: str, repl: str) -> str:
    return _go_regex(regex).sub(_expand(repl), text)


def _regex_find_all(regex: str, text: str, n: int) -> list[str]:
    found = [m.group(0) for m in _go_regex(regex).finditer(text)]
    return found if n < 0 else found[:n]


def _regex_split(regex: str, text: str, n: int) -> list[str]:
    if n == 0:
        return []
    parts = _go_regex(regex).split(text, maxsplit=0 if n < 0 else n - 1)
    return parts


def _dict(*pairs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i in range(0, len(pairs), 2):
        key = strval(pairs[i])
        out[key] = pairs[i + 1] if i + 1 < len(pairs) else ""
    return out


def _get(d: Mapping[str, Any], key: str) -> Any:
    return d.get(key, "")


def _set(d: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    d[key] = value
    return d


def _unset(d: dict[str, Any], key: str) -> dict[str, Any]:
    d.pop(key, None)
    return d


def _listify(value: Any, name: str) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    raise TemplateError(f"Cannot {name} on type {_type_name(value)}")


def _first(value: Any) -> Any:
    items = _listify(value, "find first")
    return items[0] if items else None


def _last(value: Any) -> Any:
    items = _listify(value, "find last")
    return items[-1] if items else None


def _rest(value: Any) -> Any:
    items = _listify(value, "find rest")
    return items[1:] if items else None


def _initial(value: Any) -> Any:
    items = _listify(value, "find initial")
    return items[:-1] if items else None


def _uniq(value: Any) -> list[Any]:
    out: list[Any] = []
    for item in _listify(value, "uniq"):
        if not any(_deep_equal(item, o) for o in out):
            out.append(item)
    return out


def _deep_equal(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _without(value: Any, *omit: Any) -> list[Any]:
    return [v for v in _listify(value, "without") if not any(_deep_equal(v, o) for o in omit)]


def _has(needle: Any, haystack: Any) -> bool:
    if haystack is None:
        return False
    return any(_deep_equal(needle, v) for v in _listify(haystack, "has"))


def _compact(value: Any) -> list[Any]:
    return [v for v in _listify(value, "compact") if not empty(v)]


def _concat(*lists: Any) -> list[Any]:
    out: list[Any] = []
    for item in lists:
        out.extend(_listify(item, "concat"))
    return out


def _until_step(start: int, stop: int, step: int) -> list[int]:
    if step == 0 or (step > 0 and start >= stop) or (step < 0 and start <= stop):
        return []
    return list(range(start, stop, step))


def _keys(*dicts: Mapping[str, Any]) -> list[str]:
    return [k for d in dicts for k in d]


def _pluck(key: str, *dicts: Mapping[str, Any]) -> list[Any]:
    return [d[key] for d in dicts if key in d]


def _dig(*args: Any) -> Any:
    if len(args) < 3:
        raise TemplateError("dig needs at least three arguments")
    *keys, default, d = args
    for key in keys:
        if not isinstance(d, dict) or key not in d:
            return default
        d = d[key]
    return d


def _ternary(true_value: Any, false_value: Any, cond: bool) -> Any:
    return true_value if cond else false_value


def _title(text: str) -> str:
    out = []
    prev = " "
    for ch in text:
        out.append(ch.upper() if not (prev.isalnum() or prev == "_") else ch)
        prev = ch
    return "".join(out)


def _round(value: Any, places: Any, *roundon: Any) -> float:
    on = to_float64(roundon[0]) if roundon else 0.5
    val = to_float64(value)
    pow_ = math.pow(10, to_int64(places))
    digit = pow_ * val
    _, frac = math.modf(digit)
    rounded = math.ceil(digit) if frac >= on else math.floor(digit)
    return rounded / pow_


def _b64dec(text: str) -> str:
    try:
        return base64.b64decode(text, validate=True).decode(errors="replace")
    except ValueError as exc:
        return str(exc)


def _adler32(text: str) -> str:
    return str(zlib.adler32(text.encode()))


def _fail(msg: str) -> str:
    raise TemplateError(msg)


def _must_yaml(value: Any) -> str:
    return go_yaml(value)


def _kind_is(kind: str, value: Any) -> bool:
    return _kind(value) == kind


def _split(sep: str, text: str) -> dict[str, str]:
    return {f"_{i}": part for i, part in enumerate(text.split(sep))}


def _splitn(sep: str, n: int, text: str) -> dict[str, str]:
    parts = text.split(sep, n - 1) if n > 0 else ([] if n == 0 else text.split(sep))
    return {f"_{i}": part for i, part in enumerate(parts)}


def _plural(one: str, many: str, count: int) -> str:
    return one if count == 1 else many


def _max(first: Any, *rest: Any) -> int:
    return max([to_int64(first), *(to_int64(r) for r in rest)])


def _min(first: Any, *rest: Any) -> int:
    return min([to_int64(first), *(to_int64(r) for r in rest)])


def _seq(*params: int) -> str:
    if len(params) == 1:
        start, end, step = 1, params[0], 1 if params[0] >= 1 else -1
    elif len(params) == 2:
        start, end = params
        step = 1 if end >= start else -1
    elif len(params) == 3:
        start, step, end = params
        if (end < start and step > 0) or (end > start and step < 0) or step == 0:
            return ""
    else:
        return ""
    stop = end + (1 if step > 0 else -1)
    return " ".join(str(i) for i in range(start, stop, step))


FUNCS: dict[str, Callable[..., Any]] = {
    # flux-operator's own
    "toYaml": _to_yaml,
    "mustToYaml": _must_yaml,
    "slugify": slugify,
    # slim-sprig strings
    "hello": lambda: "Hello!",
    "trunc": _trunc,
    "trim": lambda s: s.strip(" \t\n\r\v\f\u0085\u00a0"),
    "upper": lambda s: s.upper(),
    "lower": lambda s: s.lower(),
    "title": _title,
    "substr": _substr,
    "repeat": lambda count, s: s * max(count, 0),
    "trimall": lambda a, b: b.strip(a),
    "trimAll": lambda a, b: b.strip(a),
    "trimSuffix": lambda a, b: b[: -len(a)] if a and b.endswith(a) else b,
    "trimPrefix": lambda a, b: b[len(a) :] if b.startswith(a) else b,
    "contains": lambda sub, s: sub in s,
    "hasPrefix": lambda sub, s: s.startswith(sub),
    "hasSuffix": lambda sub, s: s.endswith(sub),
    "quote": _quote,
    "squote": _squote,
    "cat": lambda *v: " ".join(strval(x) for x in v if x is not None),
    "indent": _indent,
    "nindent": lambda n, s: "\n" + _indent(n, s),
    "replace": lambda old, new, src: src.replace(old, new),
    "plural": _plural,
    "sha1sum": lambda s: hashlib.sha1(s.encode()).hexdigest(),
    "sha256sum": lambda s: hashlib.sha256(s.encode()).hexdigest(),
    "adler32sum": _adler32,
    "toString": strval,
    "atoi": lambda s: int(s) if re.fullmatch(r"[+-]?[0-9]+", s) else 0,
    "int64": to_int64,
    "int": to_int64,
    "float64": to_float64,
    "seq": _seq,
    "split": _split,
    "splitList": lambda sep, s: s.split(sep) if sep else list(s),
    "splitn": _splitn,
    "toStrings": _strslice,
    "until": lambda n: list(range(n)) if n >= 0 else list(range(0, n, -1)),
    "untilStep": _until_step,
    "add1": lambda i: to_int64(i) + 1,
    "add": lambda *i: sum(to_int64(x) for x in i),
    "sub": lambda a, b: to_int64(a) - to_int64(b),
    "div": lambda a, b: int(to_int64(a) / to_int64(b)),
    "mod": lambda a, b: int(math.fmod(to_int64(a), to_int64(b))),
    "mul": lambda a, *v: math.prod([to_int64(a), *(to_int64(x) for x in v)]),
    "biggest": _max,
    "max": _max,
    "min": _min,
    "maxf": lambda a, *v: max([to_float64(a), *(to_float64(x) for x in v)]),
    "minf": lambda a, *v: min([to_float64(a), *(to_float64(x) for x in v)]),
    "ceil": lambda a: float(math.ceil(to_float64(a))),
    "floor": lambda a: float(math.floor(to_float64(a))),
    "round": _round,
    "join": lambda sep, v: sep.join(_strslice(v)),
    "sortAlpha": lambda v: sorted(_strslice(v)),
    # defaults
    "default": _default,
    "empty": empty,
    "coalesce": lambda *v: next((x for x in v if not empty(x)), None),
    "all": lambda *v: all(not empty(x) for x in v),
    "any": lambda *v: any(not empty(x) for x in v),
    "compact": _compact,
    "mustCompact": _compact,
    "fromJson": _from_json,
    "mustFromJson": _must_from_json,
    "toJson": go_json,
    "toPrettyJson": lambda v: go_json(v, indent="  "),
    "toRawJson": lambda v: go_json(v, escape_html=False),
    "mustToJson": go_json,
    "mustToPrettyJson": lambda v: go_json(v, indent="  "),
    "mustToRawJson": lambda v: go_json(v, escape_html=False),
    "ternary": _ternary,
    # reflection
    "typeOf": _type_name,
    "typeIs": lambda t, v: _type_name(v) == t,
    "kindOf": _kind,
    "kindIs": _kind_is,
    "deepEqual": _deep_equal,
    # paths
    "base": lambda p: posixpath.basename(p.rstrip("/")) or ("/" if p.startswith("/") else "."),
    "dir": lambda p: posixpath.dirname(p) or ".",
    "clean": lambda p: posixpath.normpath(p) if p else ".",
    "ext": lambda p: posixpath.splitext(p)[1],
    "isAbs": lambda p: p.startswith("/"),
    # encoding
    "b64enc": lambda s: base64.b64encode(s.encode()).decode(),
    "b64dec": _b64dec,
    "b32enc": lambda s: base64.b32encode(s.encode()).decode(),
    # data structures
    "tuple": lambda *v: list(v),
    "list": lambda *v: list(v),
    "dict": _dict,
    "get": _get,
    "set": _set,
    "unset": _unset,
    "hasKey": lambda d, k: k in d,
    "pluck": _pluck,
    "keys": _keys,
    "pick": lambda d, *k: {x: d[x] for x in k if x in d},
    "omit": lambda d, *k: {x: v for x, v in d.items() if x not in k},
    "values": lambda d: list(d.values()),
    "append": lambda v, x: [*_listify(v, "append"), x],
    "push": lambda v, x: [*_listify(v, "push"), x],
    "mustAppend": lambda v, x: [*_listify(v, "append"), x],
    "mustPush": lambda v, x: [*_listify(v, "push"), x],
    "prepend": lambda v, x: [x, *_listify(v, "prepend")],
    "mustPrepend": lambda v, x: [x, *_listify(v, "prepend")],
    "first": _first,
    "mustFirst": _first,
    "rest": _rest,
    "mustRest": _rest,
    "last": _last,
    "mustLast": _last,
    "initial": _initial,
    "mustInitial": _initial,
    "reverse": lambda v: list(reversed(_listify(v, "reverse"))),
    "mustReverse": lambda v: list(reversed(_listify(v, "reverse"))),
    "uniq": _uniq,
    "mustUniq": _uniq,
    "without": _without,
    "mustWithout": _without,
    "has": _has,
    "mustHas": _has,
    "concat": _concat,
    "dig": _dig,
    "fail": _fail,
    # regular expressions (RE2 patterns Python's re reads alike)
    "regexMatch": lambda r, s: _go_regex(r).search(s) is not None,
    "mustRegexMatch": lambda r, s: _go_regex(r).search(s) is not None,
    "regexFindAll": _regex_find_all,
    "mustRegexFindAll": _regex_find_all,
    "regexFind": lambda r, s: m.group(0) if (m := _go_regex(r).search(s)) else "",
    "mustRegexFind": lambda r, s: m.group(0) if (m := _go_regex(r).search(s)) else "",
    "regexReplaceAll": _regex_replace_all,
    "mustRegexReplaceAll": _regex_replace_all,
    "regexReplaceAllLiteral": lambda r, s, repl: _go_regex(r).sub(lambda _m: repl, s),
    "mustRegexReplaceAllLiteral": lambda r, s, repl: _go_regex(r).sub(lambda _m: repl, s),
    "regexSplit": _regex_split,
    "mustRegexSplit": _regex_split,
    "regexQuoteMeta": lambda s: re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", s),
}

# slim-sprig's hermetic functions harness does not implement: named, so a template using
# one fails as unsupported rather than "not defined"
_SLIM_SPRIG = frozenset(
    {
        "ago",
        "duration",
        "durationRound",
        "must_date_modify",
        "mustDateModify",
        "mustToDate",
        "toDate",
        "unixEpoch",
        "toDecimal",
        "randInt",
        "osBase",
        "osClean",
        "osDir",
        "osExt",
        "osIsAbs",
        "osAbs",
        "b32dec",
        "slice",
        "mustSlice",
        "chunk",
        "mustChunk",
        "urlParse",
        "urlJoin",
        "typeIsLike",
    }
)


def render(source: str, inputs: Any) -> str:
    """Parse and execute one template (the `inputs` function returns `inputs`)."""
    return Template(source).execute(inputs)
