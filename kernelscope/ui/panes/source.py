"""Your source: the function compiled, the selected kernel's lines marked; several files get a list."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult

from kernelscope.ui.panes.base import Pane, python_lexer
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.ui.widgets.source_files import SourceFiles
from kernelscope.units import base_name


class SourcePane(Pane):
    pane_id, pane_title, pane_key, pane_tab = "source", "Your source", "2", "Source"

    def compose(self) -> ComposeResult:
        yield SourceFiles(id="source-files")
        yield CodeView(id="source")

    @property
    def view(self) -> CodeView:
        return self.query_one("#source", CodeView)

    def load(self) -> None:
        view, src = self.view, self.explorer.index.source()
        if not src.rows:
            view.set_placeholder("This capture holds no copy of your source and recorded no user lines.")
            return
        heat, sites = self._heat(), self._sites()
        if src.copied:
            file = src.file or self.explorer.index.source_file
            here = {line for f, line in sites if same_file(f, file)}
            labels = (lambda i: _glyph(heat.get((file, i + 1), 0.0), i + 1 in here) + str(i + 1)) \
                if heat or here else None
            view.set_document(TextDoc(src.text, python_lexer), cursor=(src.first_line or 1) - 1, labels=labels)
            self.set_subtitle(base_name(src.file) + ("  (gutter: device time per line)" if heat else "")
                              + ("  (» a line compiles were called from: enter, its graphs)" if here else ""))
        else:
            rows = src.rows
            view.set_document(TextDoc(src.text, python_lexer), labels=lambda i: (
                _glyph(heat.get((rows[i].file, rows[i].line), 0.0), _is_site(sites, rows[i].file, rows[i].line))
                if heat or sites else "") + str(rows[i].line))
            self.set_subtitle(f"{base_name(src.file)}: no copy in bundle; recorded lines only")

    def forget_bench(self) -> None:
        """A bench stored new results: the gutter's device time per line is drawn again."""
        self._heat_of = None
        if self.is_mounted:
            self.load()

    def _sites(self) -> set[tuple[str, int]]:
        """(file, line) of each line of the user's code a compile was called from (Graph.call_site), for a
        program kernelscope ran (its script is copied; a captured function is its own call site)."""
        bundle = self.explorer.bundle
        if bundle.target.get("origin") not in ("run", "record"):
            return set()
        return {(g.call_site["file"], g.call_site.get("line")) for g in bundle.graphs
                if g.called_elsewhere() and g.call_site.get("line") is not None}

    def _site_kernels(self, file: str, line: int) -> list:
        """The kernels of the graphs compiled from ``file:line``, in list order."""
        bundle = self.explorer.bundle
        graphs = {g.id for g in bundle.graphs if g.called_elsewhere() and g.call_site.get("line") == line
                  and same_file(str(g.call_site.get("file")), file)}
        return [k for k in self.explorer.index.kernels_in_order() if k.graph in graphs]

    def _heat(self) -> dict[tuple[str, int], float]:
        """(file, line) -> share of the compiled call's device time (a benched bundle), else empty."""
        from kernelscope.report.lines import heat_by_line

        bundle = self.explorer.bundle
        cached = getattr(self, "_heat_of", None)
        if cached is None or cached[0] is not bundle:
            if self.explorer.line_times_later:
                return {}  # a benched job's: worked out after the first frame (ExplorerScreen), drawn then
            self._heat_of = (bundle, heat_by_line(bundle))
        return self._heat_of[1]

    def show_selection(self, graph, kernel) -> None:
        self._show_kernel_file(kernel)
        self.mark(kernel)

    def _show_kernel_file(self, kernel) -> None:
        """Several source files: show the file of the kernel's innermost line unless the one in view
        holds one of its innermost lines (not only a call site); the file list says how many lines
        of the kernel each file holds."""
        index = self.explorer.index
        files = index.source_files()
        if len(files) <= 1:
            return
        counts = index.files_for_kernel(kernel)
        home = index.home_file(kernel) if kernel else None
        inner = {u.file for u in kernel.user_lines + kernel.library_lines} if kernel else set()
        if home and index.source_file not in inner:
            self.show_file(home)
        self.query_one(SourceFiles).load(files, index.source_file, counts)

    def show_file(self, file: str) -> None:
        index, kernel = self.explorer.index, self.explorer.kernel
        if file != index.source_file and index.set_source_file(file):
            self.load()
            self.mark(kernel)
        self.query_one(SourceFiles).load(index.source_files(), index.source_file, index.files_for_kernel(kernel))

    def next_file(self) -> bool:
        """The next file that holds lines of the selected kernel (every file when it has none)."""
        index = self.explorer.index
        files = [e["file"] for e in index.source_files()]
        if len(files) <= 1:
            self.notify("this capture has one source file", timeout=2)
            return False
        counts = index.files_for_kernel(self.explorer.kernel)
        ring = [f for f in files if f in counts] or files
        cur = index.source_file
        self.show_file(ring[(ring.index(cur) + 1) % len(ring)] if cur in ring else ring[0])
        return True

    def mark(self, kernel) -> None:
        view = self.view
        if not view.is_placeholder:
            view.set_marks(self.explorer.index.source_rows_for_kernel(kernel) if kernel else [],
                           jump=not view.has_focus)

    @on(SourceFiles.Chosen)
    def _file_chosen(self, event: SourceFiles.Chosen) -> None:
        event.stop()
        self.show_file(event.file)
        self.screen.set_focus(self.view)

    @on(CodeView.LineActivated, "#source")
    def _line(self, event: CodeView.LineActivated) -> None:
        event.stop()
        index = self.explorer.index
        kernels = index.kernels_for_source_row(event.index)
        src = index.source()
        row = src.rows[event.index] if event.index < len(src.rows) else None
        what = f"line {row.line}" if row else "this line"
        if not kernels:  # a line a compile was called from: the kernels of the graphs it compiled
            file, line = (src.file, event.index + 1) if src.copied else (row.file, row.line) if row else ("", 0)
            kernels = self._site_kernels(file, line) if file else []
            what = f"the graphs compiled from line {line}" if kernels else what
        self.post_message(self.Fed({k.id for k in kernels}))
        self._say_line_time(event.index)
        self.post_message(self.Follow(("source", event.index), kernels, what))

    def _say_line_time(self, row_index: int) -> None:
        """Enter on a line with device time (a benched bundle): its kernels with their times."""
        from kernelscope.report.lines import line_tables

        if self.explorer.line_times_later:
            self.notify("device time per line: still being worked out from every graph's launches", timeout=4)
            return
        got = line_tables(self.explorer.bundle) if self._heat() else None
        if not got:
            return
        src, index = self.explorer.index.source(), self.explorer.index
        row = src.rows[row_index] if not src.copied and row_index < len(src.rows) else None
        key = (row.file, row.line) if row is not None else (index.source_file, row_index + 1)
        for table in got[0]:
            hit = next((lt for lt in table.lines if (lt.file, lt.line) == key), None)
            if hit is not None:
                self.notify(line_time_note(hit, got[1]["total_us"]), title=f"line {key[1]}: device time", timeout=8)
                return


HEAT = " ▁▂▃▄▅▆▇█"
SITE = "»"  # a line compiles were called from (a blank heat cell)


def _glyph(share: float, site: bool) -> str:
    glyph = heat_glyph(share)
    return SITE if site and glyph == " " else glyph


def same_file(a: str, b: str) -> bool:
    """Two paths of one file (a trace's, a copy's): equal, or the same file name."""
    return a == b or base_name(a) == base_name(b)


def _is_site(sites: set[tuple[str, int]], file: str, line: int) -> bool:
    return any(line == s_line and same_file(s_file, file) for s_file, s_line in sites)


def heat_glyph(share: float) -> str:
    """One cell of heat for a line's share of the call's device time (blank: none)."""
    if share <= 0:
        return " "
    return HEAT[max(1, min(len(HEAT) - 1, round(share * (len(HEAT) - 1))))]


def line_time_note(lt, total_us: float) -> str:
    from kernelscope.report.lines import fmt_us

    share = 100 * lt.total_us / total_us if total_us else 0.0
    rows = [f"{fmt_us(lt.exclusive_us)} exclusive, {fmt_us(lt.shared_us)} shared ({share:.0f}% of the call)"]
    for k in sorted(lt.kernels, key=lambda k: -k["us"])[:8]:
        rows.append(f"{k['name'][:40]}  {fmt_us(k['us'])}{'  shared' if k['shared'] else ''}")
    return "\n".join(rows)
