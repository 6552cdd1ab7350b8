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
        if src.copied:
            view.set_document(TextDoc(src.text, python_lexer), cursor=(src.first_line or 1) - 1)
            self.set_subtitle(base_name(src.file))
        else:
            rows = src.rows
            view.set_document(TextDoc(src.text, python_lexer), labels=lambda i: str(rows[i].line))
            self.set_subtitle(f"{base_name(src.file)}: no copy in bundle; recorded lines only")

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
        self.post_message(self.Fed({k.id for k in kernels}))
        row = index.source().rows[event.index] if event.index < len(index.source().rows) else None
        self.post_message(self.Follow(("source", event.index), kernels, f"line {row.line}" if row else "this line"))
