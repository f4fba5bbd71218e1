"""Fit a Markdown comment into a size budget by dropping detail, never by cutting text.

Comments over GitHub's 65,536-character limit are rejected or cut mid-fence by other tools.
Here every piece arrives pre-rendered in several renderings, richest first, each balanced on
its own (fences and `<details>` closed), so fitting only ever chooses among whole strings:

1. entries (one per document) are degraded one step at a time, largest first, so one huge
   diff is truncated before many small ones lose anything;
2. then whole sections (one per target) collapse to their counts line, last section first;
3. then the last sections are dropped behind one "N more" note.

`split` instead packs whole sections into `part N/M` bodies, each within the budget, cutting a
section only between entries when it cannot fit one part on its own. Sizes are measured in
UTF-8 bytes, which is never less than GitHub's character count.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.report.visible import visible

DEFAULT_BUDGET = 65536
MIN_BUDGET = 1024
DEFAULT_MAX_PARTS = 10
DEFAULT_MARKER_ID = "harness:comment"
_MARKER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:._/-]*$")
_MARKER = re.compile(
    r"<!-- (?P<id>[A-Za-z0-9][A-Za-z0-9:._/-]*)(?: part=(?P<n>\d+)/(?P<m>\d+))? -->"
)


def size(text: str) -> int:
    """The measure every budget uses: UTF-8 bytes (>= characters, however GitHub counts)."""
    return len(text.encode("utf-8"))


# -- Markdown building blocks (balanced by construction) ---------------------------------------


def valid_marker_id(marker_id: str) -> bool:
    """Ids end up inside an HTML comment; `--` or `>` would end it early."""
    return bool(_MARKER_ID.match(marker_id)) and "--" not in marker_id


def marker(marker_id: str = DEFAULT_MARKER_ID, part: int | None = None, parts: int = 1) -> str:
    """`<!-- harness:comment -->`, or `<!-- harness:comment part=2/3 -->` for one of several."""
    if not valid_marker_id(marker_id):
        raise ValueError(f"invalid comment marker id {marker_id!r}")
    suffix = f" part={part}/{parts}" if part is not None else ""
    return f"<!-- {marker_id}{suffix} -->"


def find_marker(body: str) -> tuple[str, int, int] | None:
    """(id, part, parts) of the first marker in a comment body; a plain marker is part 1/1."""
    match = _MARKER.search(body)
    if match is None:
        return None
    n, m = match.group("n"), match.group("m")
    return match.group("id"), int(n) if n else 1, int(m) if m else 1


def fence(body: str, info: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    body = visible(body, newlines=True)
    if body and not body.endswith("\n"):
        body += "\n"
    return f"{ticks}{info}\n{body}{ticks}\n"


def code(text: str) -> str:
    """Inline code that survives backticks and pipes (GFM tables split cells on `|`)."""
    text = visible(text.replace("\n", " ")).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def escape_text(text: str) -> str:
    """Plain text that must not turn into HTML or Markdown structure."""
    text = _html(visible(text.replace("\n", " ")))
    return re.sub(r"([\\`*_\[\]|#~])", r"\\\1", text)


def _html(text: str) -> str:
    """`&` and `<` are all that can start markup in HTML text; `>` stays readable."""
    return visible(text).replace("&", "&amp;").replace("<", "&lt;")


def details(summary: str, body: str, open_: bool = False) -> str:
    """A `<details>` block; `summary` is plain text (escaped here), `body` Markdown.

    The blank lines around the body are what lets GitHub render Markdown inside the HTML.
    """
    attr = " open" if open_ else ""
    return (
        f"<details{attr}>\n<summary>{_html(summary)}</summary>\n\n{body.rstrip()}\n\n</details>\n\n"
    )


def details_open(summary: str) -> str:
    """The opening half of `details`, for sections whose entries are fitted one by one."""
    return f"<details>\n<summary>{_html(summary)}</summary>\n\n"


DETAILS_CLOSE = "\n</details>\n\n"


def truncate_lines(text: str, max_lines: int, max_line: int = 400) -> tuple[str, int]:
    """The first `max_lines` lines, each cut to `max_line` chars; and how many lines were left out.

    Cutting inside a line is safe because the result always goes into a fence built by `fence`.
    """
    lines = text.splitlines()
    kept = [
        line if len(line) <= max_line else line[:max_line] + " [... line cut]"
        for line in lines[:max_lines]
    ]
    return "\n".join(kept) + ("\n" if kept else ""), max(0, len(lines) - max_lines)


# -- What the engine fits -------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One document's details: renderings richest first; the last (the floor) names it."""

    variants: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.variants:
            raise ValueError("an entry needs at least one rendering")


@dataclass(frozen=True)
class Section:
    """One target: `open` + entries + `close` when expanded, one `collapsed` line otherwise.

    `open_continued` starts a chunk of a section that had to be spread over several parts.
    """

    key: str
    open: str
    entries: tuple[Entry, ...]
    close: str
    collapsed: str
    open_continued: str = ""
    partial_note: str = "\n_... and {count} more not shown: the comment size limit._\n"


@dataclass(frozen=True)
class Layout:
    """A whole comment: head renderings (richest first) always shown, then the sections.

    `more_note` is formatted with `count` for sections dropped entirely; `part_header` with
    `n`, `m` heads parts 2..M of a split comment. `degraded_footer` replaces `footer` when
    anything had to be left out, so the reader knows where to find the rest.
    """

    head: tuple[str, ...]
    sections: tuple[Section, ...] = ()
    footer: str = ""
    degraded_footer: str = ""
    more_note: str = "\n_... and {count} more targets not shown: the comment size limit._\n"
    part_header: str = "**harness**: part {n}/{m} (continued)\n\n"
    marker_id: str = DEFAULT_MARKER_ID

    def __post_init__(self) -> None:
        if not self.head:
            raise ValueError("a layout needs a head")


@dataclass(frozen=True)
class Fitted:
    """The chosen rendering and what it cost, for callers that report or test degradation."""

    bodies: tuple[str, ...]
    degraded_entries: int = 0
    collapsed_sections: int = 0
    omitted_sections: int = 0
    partial_sections: int = 0


class _State:
    """Which rendering each entry and section currently uses, and the running total size."""

    def __init__(self, sections: Sequence[Section]) -> None:
        self.sections = sections
        self.sizes = [[[size(v) for v in e.variants] for e in s.entries] for s in sections]
        self.level = [[0] * len(s.entries) for s in sections]
        self.frame = [size(s.open) + size(s.close) for s in sections]
        self.collapsed_size = [size(s.collapsed) for s in sections]
        self.section_size = [
            self.frame[i] + sum(sz[0] for sz in self.sizes[i]) for i in range(len(sections))
        ]
        self.collapsed = [False] * len(sections)
        self.partial: list[int | None] = [None] * len(sections)
        self._hidden: dict[int, list[int]] = {}
        self.degraded = 0

    def entry_size(self, i: int, j: int) -> int:
        return self.sizes[i][j][self.level[i][j]]

    def total(self, upto: int | None = None) -> int:
        count = len(self.sections) if upto is None else upto
        return sum(
            self.collapsed_size[i] if self.collapsed[i] else self.section_size[i]
            for i in range(count)
        )

    def degrade_to(self, room: int, cap: int | None = None) -> int:
        """Degrade entries largest first until the expanded total fits `room`.

        `cap` first forces every entry under that size (one part must hold any single entry).
        Returns the resulting total.
        """
        heap: list[tuple[int, int, int]] = []
        for i, per_entry in enumerate(self.sizes):
            for j, sz in enumerate(per_entry):
                if len(sz) > 1:
                    heap.append((-sz[self.level[i][j]], i, j))
        heapq.heapify(heap)
        total = self.total()
        while heap:
            neg, i, j = heap[0]
            over_cap = cap is not None and -neg > cap
            if total <= room and not over_cap:
                break
            heapq.heappop(heap)
            sizes = self.sizes[i][j]
            if self.level[i][j] + 1 >= len(sizes):
                continue
            before = sizes[self.level[i][j]]
            self.level[i][j] += 1
            after = sizes[self.level[i][j]]
            self.degraded += self.level[i][j] == 1
            self.section_size[i] += after - before
            if not self.collapsed[i]:
                total += after - before
            if self.level[i][j] + 1 < len(sizes):
                heapq.heappush(heap, (-after, i, j))
        return total

    def render_section(
        self, i: int, entries: Sequence[int] | None = None, cont: bool = False
    ) -> str:
        section = self.sections[i]
        if self.collapsed[i]:
            return section.collapsed
        shown = self.partial[i]
        if entries is None:
            entries = range(len(section.entries) if shown is None else shown)
        opener = section.open_continued if cont and section.open_continued else section.open
        body = "".join(section.entries[j].variants[self.level[i][j]] for j in entries)
        if shown is not None:
            body += self.partial_note(i, shown)
        return opener + body + section.close

    def partial_note(self, i: int, shown: int) -> str:
        if i not in self._hidden:
            counts = [0]
            for entry in reversed(self.sections[i].entries):
                counts.append(counts[-1] + bool(entry.variants[-1].strip()))
            self._hidden[i] = counts[::-1]
        return self.sections[i].partial_note.format(count=self._hidden[i][shown])

    def shorten(self, i: int, avail: int) -> int | None:
        """Show only the first entries of section `i` within `avail`; its new size, or None
        when not even one entry fits (then the section collapses instead)."""
        used = self.frame[i]
        best: tuple[int, int] | None = None
        for j in range(len(self.sections[i].entries)):
            used += self.entry_size(i, j)
            if used > avail:
                break
            total = used + size(self.partial_note(i, j + 1))
            if total <= avail:
                best = (j + 1, total)
        if best is None or best[0] == len(self.sections[i].entries):
            return None
        self.partial[i] = best[0]
        return best[1]


def _check_budget(budget: int) -> None:
    if budget < MIN_BUDGET:
        raise ValueError(f"comment budget {budget} is below the minimum of {MIN_BUDGET}")


def _marker_line(marker_id: str, part: int | None = None, parts: int = 1) -> str:
    """The marker goes last, so the verdict is the body's first line; a blank line keeps it
    out of whatever block precedes it."""
    return "\n" + marker(marker_id, part, parts) + "\n"


def _footer_size(layout: Layout) -> int:
    return max(size(layout.footer), size(layout.degraded_footer))


def _join(*pieces: str) -> str:
    return "".join(pieces)


def fit(layout: Layout, budget: int = DEFAULT_BUDGET) -> Fitted:
    """One comment body within `budget`: degrade entries, collapse, then drop sections."""
    _check_budget(budget)
    mark = _marker_line(layout.marker_id)
    for index, head in enumerate(layout.head):
        fixed = size(mark) + size(head) + _footer_size(layout)
        last = index == len(layout.head) - 1
        if fixed > (budget if last else budget // 2):
            continue
        fitted = _fit_sections(layout, budget - fixed)
        if fitted is not None:
            body, stats = fitted
            footer = layout.degraded_footer if any(stats) else layout.footer
            return Fitted((_join(head, body, footer, mark),), *stats)
    return Fitted((_last_resort(mark, layout.head[-1], budget),), 0, 0, len(layout.sections))


def _fit_sections(layout: Layout, room: int) -> tuple[str, tuple[int, int, int, int]] | None:
    sections = layout.sections
    state = _State(sections)
    total = state.degrade_to(room)
    collapsed = partial = 0
    for i in reversed(range(len(sections))):
        if total <= room:
            break
        rest = total - state.section_size[i]
        shortened = state.shorten(i, room - rest)
        if shortened is not None:
            total = rest + shortened
            partial += 1
            break
        state.partial[i] = None
        total = rest + state.collapsed_size[i]
        state.collapsed[i] = True
        collapsed += 1
    shown = len(sections)
    omitted = 0
    while total > room and shown > 0:
        shown -= 1
        omitted += 1
        note = size(layout.more_note.format(count=omitted))
        total = state.total(shown) + note
    if total > room:
        return None
    body = "".join(state.render_section(i) for i in range(shown))
    if omitted:
        body += layout.more_note.format(count=omitted)
        collapsed -= sum(1 for i in range(shown, len(sections)) if state.collapsed[i])
    return body, (state.degraded, collapsed, omitted, partial)


def _last_resort(mark: str, head: str, budget: int) -> str:
    """Only reachable with an absurd head: keep the first line, as plain text, and the marker."""
    first = head.splitlines()[0] if head.strip() else "harness"
    note = "\n\n_(comment truncated: the summary alone exceeds the size limit)_\n"
    room = max(0, budget - size(mark) - size(note))
    cut = escape_text(first).encode("utf-8")[:room].decode("utf-8", errors="ignore")
    return cut.rstrip("\\") + note + mark


# -- Split ---------------------------------------------------------------------------------


def split(
    layout: Layout, budget: int = DEFAULT_BUDGET, max_parts: int = DEFAULT_MAX_PARTS
) -> Fitted:
    """`part N/M` bodies, each within `budget`, whole sections per part where possible.

    Used only when one comment would have to leave something out. Entries are then degraded
    only as far as needed for everything to fit in `max_parts` parts; sections never collapse,
    so together the parts list every entry at least by its floor (even if that takes more
    than `max_parts` parts). A result of one part is a plain comment without part numbers.
    """
    _check_budget(budget)
    single = fit(layout, budget)
    if not any(
        (
            single.degraded_entries,
            single.collapsed_sections,
            single.omitted_sections,
            single.partial_sections,
        )
    ):
        return single
    part_mark = _marker_line(layout.marker_id, 99, 99)
    header = layout.part_header.format(n=99, m=99)
    overhead = size(part_mark) + size(header) + _footer_size(layout) + 8
    head = next((h for h in layout.head if size(h) + overhead <= budget // 2), layout.head[-1])
    room = budget - overhead
    first_room = room - size(head) - size(_FIRST_PART_NOTE.format(m=99))
    if first_room <= 0:
        return single
    capacity = room * max_parts - size(head)
    packed: list[list[str]] = []
    state = _State(layout.sections)
    for _ in range(12):
        state = _State(layout.sections)
        largest_frame = max(state.frame, default=0)
        state.degrade_to(int(capacity * 0.92), cap=room - largest_frame)
        packed = _pack(state, first_room, room)
        if len(packed) <= max_parts or all(
            lvl == len(sz) - 1
            for lv, szs in zip(state.level, state.sizes, strict=True)
            for lvl, sz in zip(lv, szs, strict=True)
        ):
            break
        capacity = int(capacity * 0.8)
    parts = len(packed)
    if parts == 1:
        footer = layout.degraded_footer if state.degraded else layout.footer
        body = _join(head, "".join(packed[0]), footer, _marker_line(layout.marker_id))
        return Fitted((body,), state.degraded, 0, 0)
    bodies = []
    for n, chunks in enumerate(packed, start=1):
        top = head if n == 1 else layout.part_header.format(n=n, m=parts)
        mark = _marker_line(layout.marker_id, n, parts)
        if n == 1:
            top = top.rstrip("\n") + _FIRST_PART_NOTE.format(m=parts)
        footer = layout.degraded_footer if state.degraded and n == parts else layout.footer
        bodies.append(_join(top, "".join(chunks), footer, mark))
    return Fitted(tuple(bodies), state.degraded, 0, 0)


_FIRST_PART_NOTE = "\n\n_Part 1/{m}: the details continue in the next comments._\n\n"


def _pack(state: _State, first_room: int, room: int) -> list[list[str]]:
    """Sections into parts in order; a section larger than a part is cut between entries."""
    parts: list[list[str]] = [[]]
    free = first_room
    for i, section in enumerate(state.sections):
        whole = state.section_size[i]
        if whole <= free:
            parts[-1].append(state.render_section(i))
            free -= whole
            continue
        if whole <= room:
            parts.append([state.render_section(i)])
            free = room - whole
            continue
        frame = state.frame[i] - size(section.open) + size(section.open_continued or section.open)
        chunk: list[int] = []
        used = state.frame[i]
        cont = False
        if free < state.frame[i] + (state.entry_size(i, 0) if section.entries else 0):
            parts.append([])
            free = room
        for j in range(len(section.entries)):
            sz = state.entry_size(i, j)
            if chunk and used + sz > free:
                parts[-1].append(state.render_section(i, chunk, cont))
                parts.append([])
                free = room
                chunk, used, cont = [], frame, True
            chunk.append(j)
            used += sz
        parts[-1].append(state.render_section(i, chunk, cont))
        free -= used
    # Part 1 stays even when empty: it carries the head, and its room was the smaller one.
    return [p for n, p in enumerate(parts) if p or n == 0]
