"""Error lines: one per failed target, the same failure of many helm targets said once."""

from __future__ import annotations

from collections.abc import Container, Iterable

from harness.core.model import TargetResult


def error_line(name: str, message: str | None) -> str:
    return f"error: {name}: {message}"


def _names(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def unreachable(results: Iterable[TargetResult], side: str = "") -> set[tuple[str, str]]:
    """`(name, side)` of the failed helm targets whose chart could not be fetched."""
    return {
        (r.name, side)
        for r in results
        if not r.ok and r.target.helm is not None and r.target.helm.unreachable
    }


Failure = tuple[str, str | None, str]  # target, message, the diff's side ("" outside a diff)


def error_lines(errors: Iterable[Failure], unfetched: Container[tuple[str, str]] = ()) -> list[str]:
    """`error: NAME: MESSAGE` per failed target, except the helm targets whose chart could not
    be fetched (`unfetched`): those failing with one message (it names the chart's source
    and says the error) are one line, where the first of them was, naming them all, so 30
    releases of one unreachable repository do not repeat its URL and Go error 30 times.
    A diff's side (`base`, `head`) is said after each name (`error: a (head): ...`);
    `unfetched` holds `(name, side)` pairs."""
    slots: list[str | tuple[str, str | None, list[str]]] = []
    groups: dict[tuple[str, str | None], list[str]] = {}
    for name, message, side in errors:
        if (name, side) not in unfetched:
            slots.append(error_line(f"{name} ({side})" if side else name, message))
            continue
        if (side, message) not in groups:
            groups[(side, message)] = []
            slots.append((side, message, groups[(side, message)]))
        groups[(side, message)].append(name)
    out = []
    for slot in slots:
        if isinstance(slot, str):
            out.append(slot)
            continue
        side, message, names = slot
        if len(names) == 1:
            out.append(error_line(f"{names[0]} ({side})" if side else names[0], message))
        else:
            where = f"{side}; " if side else ""
            out.append(
                f"error: {message} ({where}chart not fetched for {len(names)} helm targets: "
                f"{_names(names)})"
            )
    return out
