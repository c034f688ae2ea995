"""Class changes in one restyle: Textual restyles a node and its subtree on each class change,
so a widget moving from one status class to another changes them all at once, or not at all."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from textual.dom import DOMNode


def set_classes_of(node: DOMNode, wanted: Collection[str], family: Iterable[str]) -> bool:
    """Give `node` the classes `wanted` among those of `family` (the others of the family are
    removed); one restyle when something changed, none otherwise. Whether it changed."""
    have = node.classes
    stale = [c for c in family if c in have and c not in wanted]
    missing = [c for c in wanted if c not in have]
    if not stale and not missing:
        return False
    node.remove_class(*stale, update=False)
    node.add_class(*missing, update=False)
    if node.is_attached:  # a node is styled when it is mounted: not before
        node.update_node_styles()
    return True
