"""FittedLine: a one-line label that shows the longest of its wordings that fits its width.

A screen's header or status line is one row high: a sentence longer than the terminal was cut inside a
word or a path (`Pick a sample (en`, `scratch: /tmp/kernelscope-scr`). Each such line names its wordings,
longest first; the last is the one that must fit 80 columns.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.widgets import Static


def fitted(variants: tuple[str, ...], width: int) -> str:
    """The first of ``variants`` within ``width`` cells, else the last (the shortest wording)."""
    for text in variants:
        if cell_len(text) <= width:
            return text
    return variants[-1] if variants else ""


class FittedLine(Static):
    def __init__(self, *variants: str, **kwargs) -> None:
        super().__init__(markup=False, **kwargs)
        self.variants = variants

    def set_variants(self, *variants: str) -> None:
        self.variants = variants
        self.refresh()

    def render(self) -> str:
        width = self.content_region.width or self.size.width
        return fitted(self.variants, width) if width else (self.variants[0] if self.variants else "")
