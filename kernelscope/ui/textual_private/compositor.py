"""SparseCompositor: a frame draws the widgets that were changed, not every widget on screen.

Checked against Textual 8.2.8 (``textual._compositor``: ``Compositor.render_partial_update``,
``render_full_update`` and ``_render_chops``, redone here); on only where ``FAST.compositor`` (see
``kernelscope.ui.textual_private``).

Textual draws a partial update over the bounding box of every region marked for
repaint: on the explorer, moving the selection repaints the FX graph (left), the output code (right),
the kernels list and the Info pane, so the box is the whole screen, and every one of ~40 widgets (tabs,
pane borders, the footer ...) was asked for its lines and each of its lines cut at every widget edge
again, at each key. Only the cells inside the repainted regions are sent to the terminal, so a widget
that touches none of them, or a line of it that holds none, or whose cells there are all covered by
widgets in front (a container behind its children), cannot change what is shown: this compositor
leaves them out. The cells sent are the same, chop for chop. A full update (a new screen's first frame, a
resize) is drawn the same way, over the whole screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.geometry import Region
from textual.strip import Strip

from kernelscope.ui.textual_private import FAST

try:
    from textual._compositor import ChopsUpdate, Compositor, LayoutUpdate
except ImportError:  # a Textual laid out otherwise: FAST.compositor is off, the class below never made
    ChopsUpdate = Compositor = LayoutUpdate = object  # type: ignore[misc,assignment]

if TYPE_CHECKING:
    from textual.screen import Screen


def use_sparse_compositor(screen: Screen) -> None:
    """Give a screen a SparseCompositor in place of Textual's (before it is mounted); where the fast path
    is off, the screen keeps Textual's own."""
    if FAST.compositor and type(getattr(screen, "_compositor", None)) is Compositor:
        screen._compositor = SparseCompositor()


class SparseCompositor(Compositor):
    """Textual's Compositor whose partial updates render only what the repainted regions touch."""

    def render_partial_update(self) -> ChopsUpdate | None:
        update_regions = self._dirty_regions.copy()
        self._dirty_regions.clear()
        if not update_regions:
            return None
        screen_region = self.size.region
        crop = Region.from_union(list(update_regions)).intersection(screen_region)
        spans = list(self._regions_to_spans(update_regions))
        by_line: dict[int, list[tuple[int, int]]] = {}
        for y, x1, x2 in spans:
            by_line.setdefault(y, []).append((x1, x2))
        chops = self._sparse_chops(crop, update_regions, by_line)
        chop_ends = [cut_set[1:] for cut_set in self.cuts]
        return ChopsUpdate(chops, spans, chop_ends)

    def render_full_update(self, simplify: bool = False) -> LayoutUpdate:
        """Textual's full update (8.2.8), drawn as a partial update of the whole screen is: the containers
        behind their children (the screen, the pane grid) are not drawn, and a line that fills one chop is
        not cut. The first frame of a screen is one (~25 ms of the explorer's start). Exported screenshots
        (``simplify``) take Textual's own."""
        if simplify:
            return super().render_full_update(simplify=simplify)
        screen_region = self.size.region
        self._dirty_regions.clear()
        whole = [(0, screen_region.width)]
        chops = self._sparse_chops(screen_region, {screen_region}, dict.fromkeys(screen_region.line_range, whole))
        return LayoutUpdate([chop.values() for chop in chops], screen_region)

    def _sparse_chops(self, crop: Region, regions: set[Region],
                      by_line: dict[int, list[tuple[int, int]]]) -> list[dict[int, Strip | None]]:
        """Textual's _render_chops (8.2.8), for the widgets that overlap a repainted region, on the lines
        where a repainted span crosses them. Front to back: the first strip given for a chop wins."""
        cuts = self.cuts
        chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
        intersection = Region.intersection
        crop_overlaps = crop.overlaps
        for widget, (region, clip) in self.visible_widgets.items():
            if not crop_overlaps(clip):
                continue
            shown = intersection(region, clip)
            if not shown.area or not any(shown.overlaps(r) for r in regions):
                continue
            x0, last_cut = shown.x, shown.right
            wanted = []  # (y, this widget's cuts on line y) where it fills a chop
            for y in shown.line_range:
                line_spans = by_line.get(y)
                if line_spans is None:
                    continue
                chops_line = chops[y]
                line_cuts = [cut for cut in cuts[y] if last_cut >= cut >= x0]
                # A chop is wanted when no widget in front has filled it and a repainted span crosses it:
                # a container's lines behind its children want none and are not drawn or cut at all.
                if _wants(chops_line, line_cuts, line_spans):
                    wanted.append((y, line_cuts))
            if not wanted:
                continue
            lines = widget.render_lines(Region(x0 - region.x, shown.y - region.y, shown.width, shown.height))
            top = shown.y
            for y, line_cuts in wanted:
                chops_line = chops[y]
                strip = lines[y - top]
                if len(line_cuts) == 2 and strip.cell_length == line_cuts[1] - x0:
                    chops_line[x0] = strip  # one chop, the whole line: what divide gives, without its work
                    continue
                for cut, piece in zip(line_cuts, strip.divide([cut - x0 for cut in line_cuts[1:]])):
                    if chops_line.get(cut) is None:
                        chops_line[cut] = piece
        return cast("list[dict[int, Strip | None]]", chops)


def _wants(chops_line: dict[int, Strip | None], line_cuts: list[int], spans: list[tuple[int, int]]) -> bool:
    """Whether a chop between these cuts is still empty and crossed by one of these spans."""
    a = line_cuts[0]
    for b in line_cuts[1:]:
        if chops_line.get(a, 0) is None:
            for x1, x2 in spans:
                if x1 < b and x2 > a:
                    return True
        a = b
    return False
