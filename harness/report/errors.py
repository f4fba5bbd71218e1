"""Error lines: one per failed target, the same failure of many helm targets said once."""

from __future__ import annotations

from collections.abc import Container, Iterable

from harness.core.model import TargetResult


def error_line(name: str, message: str | None) -> str:
    return f"error: {name}: {message}"


def _names(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def unreachable(results: Iterable[TargetResult]) -> set[str]:
    """The failed helm targets whose chart could not be fetched."""
    return {
        r.name
        for r in results
        if not r.ok and r.target.helm is not None and r.target.helm.unreachable
    }


def error_lines(
    errors: Iterable[tuple[str, str | None]], unfetched: Container[str] = ()
) -> list[str]:
    """`error: NAME: MESSAGE` per failed target, except the helm targets whose chart could not
    be fetched (`unfetched`): those failing with one message (it names the chart's source
    and says the error) are one line, where the first of them was, naming them all, so 30
    releases of one unreachable repository do not repeat its URL and Go error 30 times."""
    slots: list[str | list[str]] = []
    groups: dict[str | None, list[str]] = {}
    messages: dict[int, str | None] = {}
    for name, message in errors:
        if name not in unfetched:
            slots.append(error_line(name, message))
            continue
        if message not in groups:
            groups[message] = []
            slots.append(groups[message])
            messages[id(groups[message])] = message
        groups[message].append(name)
    out = []
    for slot in slots:
        if isinstance(slot, str):
            out.append(slot)
        elif len(slot) == 1:
            out.append(error_line(slot[0], messages[id(slot)]))
        else:
            out.append(
                f"error: {messages[id(slot)]} (chart not fetched for {len(slot)} helm "
                f"targets: {_names(slot)})"
            )
    return out
