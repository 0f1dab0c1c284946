"""The FieldNode invariant, checked: per coordinate space, leaves tile the buffer exactly once, in order."""
from __future__ import annotations

from kafkalab.protocol.tree import FieldNode


def _space_leaves(node: FieldNode):
    """Leaves of ``node``'s coordinate space. A ``deflated`` node whose only children are inflated buffers
    covers its compressed bytes itself (tree.leaves() would skip them)."""
    for child in node.children:
        if child.buffer is not None:
            continue
        if child.children and not all(g.buffer is not None for g in child.children):
            yield from _space_leaves(child)
        else:
            yield child


def _check_space(node: FieldNode, start: int, end: int) -> None:
    pos = start
    for leaf in _space_leaves(node):
        assert leaf.start == pos, f"{leaf.path}: starts at {leaf.start}, expected {pos}"
        assert leaf.end >= leaf.start, leaf.path
        pos = leaf.end
    assert pos == end, f"{node.path}: leaves end at {pos}, expected {end}"
    _check_spans(node)


def _check_spans(node: FieldNode) -> None:
    for child in node.children:
        if child.buffer is not None:
            continue
        if child.children and not all(g.buffer is not None for g in child.children):
            inner = [g for g in child.children if g.buffer is None]
            assert child.start == inner[0].start and child.end == inner[-1].end, child.path
            _check_spans(child)


def check_tree(root: FieldNode, base: int, length: int) -> None:
    """Every byte of the frame once, and every inflated buffer's bytes once."""
    _check_space(root, base, base + length)
    for node in root.walk():
        if node.buffer is not None:
            _check_space(node, 0, len(node.buffer))
