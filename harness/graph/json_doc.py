"""The Kustomization graph as `harness.graph/v1` JSON (docs/json-schemas.md)."""

from __future__ import annotations

import json
from typing import Any

from harness.graph.view import Edge, Graph, Mark, Node

SCHEMA = "harness.graph/v1"


def _marks(marks: tuple[Mark, ...]) -> list[dict[str, str]]:
    return [
        {"id": m.id, "rule": m.rule, "severity": m.severity, "message": m.message} for m in marks
    ]


def _node(node: Node) -> dict[str, Any]:
    return {
        "id": node.target,
        "cluster": node.cluster,
        "namespace": node.namespace,
        "name": node.name,
        "display": node.display,
        "documents": node.documents,
        "prune": node.prune,
        "path": node.path,
        "error": node.error,
        "missing": node.missing,
        "change": node.change,
        "moved_in": node.moved_in,
        "moved_out": node.moved_out,
        "marks": list(node.marks),
        "hazards": _marks(node.hazards),
        "group": node.group,
        "members": list(node.members),
    }


def _edge(edge: Edge) -> dict[str, Any]:
    return {
        "kind": edge.kind,
        "from": f"{edge.cluster}/{edge.source[0]}/{edge.source[1]}",
        "to": f"{edge.cluster}/{edge.target[0]}/{edge.target[1]}",
        "label": edge.label,
        "documents": list(edge.documents),
        "change": edge.change,
        "hazards": _marks(edge.hazards),
    }


def to_dict(graph: Graph) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "base": graph.base_label,
        "head": graph.head_label,
        "focus": list(graph.focus),
        "depth": graph.depth,
        "hidden_nodes": graph.hidden_nodes,
        "hidden_edges": dict(graph.hidden_edges),
        "grouped": graph.grouped,
        "counts": graph.counts(),
        "clusters": [
            {
                "name": view.cluster,
                "nodes": [_node(n) for n in view.nodes],
                "edges": [_edge(e) for e in view.edges],
            }
            for view in graph.clusters
        ],
    }


def render(graph: Graph) -> str:
    return json.dumps(to_dict(graph), indent=2) + "\n"
