"""The dissector: annotated field trees turned into text, HTML and table rows."""
from .text import format_tree, hexdump

__all__ = ["format_tree", "hexdump"]
