"""Reading a Flux object's spec field by field, one way for every kind.

Kustomizations (api.py) and HelmReleases (helm/release.py) are read with these same
helpers, so a value the API server would reject is rejected the same way everywhere: a
label or annotation value must be a string (the CRDs' schemas say so; an unquoted `true`
or `3` fails `kubectl apply`), a mapping must be a mapping, a list a list. A bad field is a
`SpecError` whose message names it (`spec.postBuild.substitute.PORT must be a string`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class SpecError(ValueError):
    """A field of a Flux object that its CRD would reject; the message names it."""


def mapping(parent: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """`parent[key]` as a mapping (absent: empty); `where` names it in the error."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a mapping")
    return value


def list_of(parent: Mapping[str, Any], key: str, where: str | None = None) -> list[Any]:
    """`parent[key]` as a list (absent: empty); named `spec.<key>` unless `where` says."""
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecError(f"{where or 'spec.' + key} must be a list")
    return value


def scalar(parent: Mapping[str, Any], key: str, where: str) -> str | None:
    """A string field that YAML may have typed as a number (`path: 1`): its text; a bool or
    a collection is an error."""
    value = parent.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise SpecError(f"{where} must be a string")
    return str(value)


def string(parent: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> Any:
    """A string field; absent or empty is None (an error when `required`)."""
    value = parent.get(key)
    if value is None or value == "":
        if required:
            raise SpecError(f"{where} is required")
        return None
    if not isinstance(value, str):
        raise SpecError(f"{where} must be a string")
    return value


def item(value: Any, where: str, *, non_empty: bool = False) -> str:
    """One string of a list (`components[2]`, `valuesFiles`)."""
    if non_empty:
        if not isinstance(value, str) or not value:
            raise SpecError(f"{where} must hold non-empty strings")
    elif not isinstance(value, str):
        raise SpecError(f"{where} must be a string")
    return value


def string_map(value: Any, where: str) -> dict[str, str]:
    """Labels, annotations, substitute variables, selectors: string keys to string values."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a mapping")
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(v, str):
            raise SpecError(f"{where}.{k} must be a string, got {type(v).__name__}")
        out[str(k)] = v
    return out
