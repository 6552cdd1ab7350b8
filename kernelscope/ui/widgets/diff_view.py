"""DiffView: two captures compared kernel by kernel, and the unified diffs of the selected kernel.

The matching and the diffs come from kernelscope.report.diff (pure, shared with `kernelscope diff`);
this widget only lays them out: a summary line, a table of kernel matches (replaced, changed, added,
removed, same), tabs for the selected kernel's source and Triton stage diffs, and a CodeView that
marks each hunk (``m`` jumps to the next). The diff is computed in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Header, Static, Tab, Tabs

from kernelscope.bundle.io import read_bundle
from kernelscope.bundle.model import Bundle
from kernelscope.report.data import fmt_ms
from kernelscope.report.diff import (
    ADDED,
    REMOVED,
    SAME,
    STATUS_ORDER,
    BundleDiff,
    KernelChange,
    diff_bundles,
    diffs_for,
    option_changes,
)
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.ui.widgets.key_footer import KeyFooter
from kernelscope.units import shorten_kernel_name

STATUS_MARK = {"replaced": "≈ replaced", "changed": "~ changed", "added": "+ added", "removed": "- removed",
               "same": "= same"}


def _short(spec: str) -> str:
    """A target as it fits a line: a sample name as is, a path by its last two parts."""
    parts = [p for p in spec.replace("\\", "/").split("/") if p]
    return "/".join(parts[-2:]) if len(parts) > 2 else spec


def _diff_lexer():
    from pygments.lexers.diff import DiffLexer

    return DiffLexer()


class DiffView(Vertical):
    """Kernel match table of bundle A vs bundle B, and unified diffs of the highlighted kernel."""

    BINDINGS = [Binding("s", "toggle_same", "Hide/show same")]

    DEFAULT_CSS = """
    DiffView { height: 1fr; }
    DiffView #diff-summary { height: auto; padding: 0 1; }
    DiffView #diff-kernels { height: 1fr; min-height: 5; }
    DiffView #diff-changes { height: auto; max-height: 6; padding: 0 1; color: $text-muted; }
    DiffView #diff-text { height: 2fr; }
    """

    @dataclass
    class Ready(Message):
        """The comparison is computed."""

        diff: BundleDiff

    @dataclass
    class Failed(Message):
        error: str

    def __init__(self, bundle_a: Bundle | str, bundle_b: Bundle | str, *, name: str | None = None,
                 id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.bundle_a = bundle_a
        self.bundle_b = bundle_b
        self.diff: BundleDiff | None = None
        self.hide_same = False
        self.entry: KernelChange | None = None

    def compose(self) -> ComposeResult:
        yield Static("comparing…", id="diff-summary", markup=False)
        table: DataTable = DataTable(id="diff-kernels", cursor_type="row", zebra_stripes=True)
        yield table
        yield Static("", id="diff-changes", markup=False)
        yield Tabs(id="diff-tabs")
        yield CodeView(id="diff-text")

    def on_mount(self) -> None:
        self.query_one("#diff-kernels", DataTable).add_columns("", "A", "B", "kind", "time A -> B")
        self.query_one("#diff-text", CodeView).set_placeholder("select a kernel to see its diffs")
        self._compute()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def _compute(self) -> None:
        try:
            a = self.bundle_a if isinstance(self.bundle_a, Bundle) else read_bundle(self.bundle_a)
            b = self.bundle_b if isinstance(self.bundle_b, Bundle) else read_bundle(self.bundle_b)
            self.post_message(self.Ready(diff_bundles(a, b)))
        except Exception as exc:  # one line in the view; the app stays up
            self.post_message(self.Failed(f"{exc.__class__.__name__}: {exc}" if not str(exc).strip()
                                          else str(exc)))

    @on(Failed)
    def _failed(self, event: Failed) -> None:
        self.query_one("#diff-summary", Static).update(f"cannot compare: {event.error}")

    @on(Ready)
    def _ready(self, event: Ready) -> None:
        self.diff = event.diff
        d = event.diff
        counts = d.counts()
        ka, kb = len(d.a.kernels), len(d.b.kernels)
        la, lb = (sum(k.launches for k in x.kernels) for x in (d.a, d.b))
        options = option_changes(d.a, d.b)
        self.query_one("#diff-summary", Static).update(
            f"A {_short(d.a.target.get('spec', '?'))}  vs  B {_short(d.b.target.get('spec', '?'))}"
            + (f"  ({'; '.join(options)})" if options else "") + "\n"
            f"kernels {ka} -> {kb}, launches per call {la} -> {lb}, graph breaks {len(d.a.graph_breaks)} -> "
            f"{len(d.b.graph_breaks)}"
            + (f", recompiles {len(d.a.recompiles)} -> {len(d.b.recompiles)}" if d.a.recompiles or d.b.recompiles
               else "")
            + ":  " + ", ".join(f"{counts[s]} {s}" for s in STATUS_ORDER if counts[s]))
        self._fill_table()

    def visible_entries(self) -> list[KernelChange]:
        if self.diff is None:
            return []
        return [e for e in self.diff.entries if not (self.hide_same and e.status == SAME)]

    def _fill_table(self) -> None:
        table = self.query_one("#diff-kernels", DataTable)
        at = table.cursor_row
        table.clear()
        rows = self._rows(short_kinds=False)
        fit = self._name_width(rows)
        if fit is not None:  # narrow: the kinds as the kernel list tags them (poi, ext), the names get the room
            rows = self._rows(short_kinds=True)
            fit = self._name_width(rows)

        def names(ns: list[str]) -> Text:
            return Text("\n".join(shorten_kernel_name(n, fit) if fit else n for n in ns) or "-")

        for i, (e, a, b, kind, time) in enumerate(rows):
            table.add_row(STATUS_MARK[e.status], names(a), names(b), Text(kind), time,
                          height=max(len(e.a), len(e.b), 1), key=str(i))
        if rows and at:
            table.move_cursor(row=min(at, len(rows) - 1))

    def _rows(self, *, short_kinds: bool) -> list:
        from kernelscope.ui.xref import KIND_TAGS

        def tag(kind: str) -> str:
            return KIND_TAGS.get(kind, kind) if short_kinds else kind

        rows = []
        for e in self.visible_entries():
            kinds_a = ", ".join(tag(k.kind) for k in e.a)
            kinds_b = ", ".join(tag(k.kind) for k in e.b)
            kind = kinds_b if kinds_a in ("", kinds_b) else (kinds_a if not kinds_b else f"{kinds_a} -> {kinds_b}")
            time = "" if e.time_a_ms is None and e.time_b_ms is None else \
                f"{fmt_ms(e.time_a_ms) or '-'} -> {fmt_ms(e.time_b_ms) or '-'}"
            rows.append((e, [k.name for k in e.a], [k.name for k in e.b], kind, time))
        return rows

    def _name_width(self, rows: list) -> int | None:
        """The cells each of the A and B names gets where the full names would push the kind and the
        times off the screen (None: they fit); a name then keeps its distinguishing end."""
        width = self.size.width or self.app.size.width
        longest = max((len(n) for _, a, b, _, _ in rows for n in (*a, *b)), default=0)
        marks = max((len(STATUS_MARK[e.status]) for e, *_ in rows), default=0)
        kinds = max((len(k) for *_, k, _ in rows), default=0)
        times = max([len("time A -> B")] + [len(t) for *_, t in rows])
        room = (width - marks - max(kinds, 4) - times - 5 * 2 - 2) // 2  # 5 columns' padding, the scrollbar
        return None if longest <= room else max(room, 12)

    def on_resize(self) -> None:
        if self.diff is not None:
            self._fill_table()

    def action_toggle_same(self) -> None:
        self.hide_same = not self.hide_same
        self._fill_table()

    @on(DataTable.RowHighlighted, "#diff-kernels")
    async def _row(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            await self._show_entry(int(event.row_key.value))

    async def _show_entry(self, index: int) -> None:
        entries = self.visible_entries()
        if not 0 <= index < len(entries) or self.diff is None:
            return
        e = self.entry = entries[index]
        changes = [c for c in e.changes if c != e.text_summary]  # the tabs below carry the line counts
        self.query_one("#diff-changes", Static).update("\n".join(changes) or
                                                       ("no difference after normalising paths and hashes"
                                                        if e.status == SAME else ""))
        tabs = self.query_one("#diff-tabs", Tabs)
        await tabs.clear()
        texts = diffs_for(self.diff, e) if e.status not in (ADDED, REMOVED) else []
        for t in texts:
            label = t.label + (f" +{t.added} -{t.removed}" if t.unified else " =" if t.equal else " ·")
            await tabs.add_tab(Tab(label, id=f"diff-tab-{t.label}"))
        view = self.query_one("#diff-text", CodeView)
        if not texts:
            side = "A" if e.status == REMOVED else "B"
            view.set_placeholder(f"only in {side}: nothing to compare" if e.status in (ADDED, REMOVED)
                                 else "no generated source on either side (extern calls)")
            return
        first = next((t for t in texts if t.unified), texts[0])
        tabs.active = f"diff-tab-{first.label}"
        self._show_text(first.label)

    @on(Tabs.TabActivated, "#diff-tabs")
    def _tab(self, event: Tabs.TabActivated) -> None:
        if event.tab is not None and event.tab.id:
            self._show_text(event.tab.id.removeprefix("diff-tab-"))

    def _show_text(self, label: str) -> None:
        if self.entry is None or self.diff is None:
            return
        view = self.query_one("#diff-text", CodeView)
        t = next((x for x in diffs_for(self.diff, self.entry) if x.label == label), None)
        if t is None:
            return
        if not t.unified:
            view.set_placeholder(f"{t.label}: {t.note}" if t.note else
                                 f"{t.label}: the same in A and B (after normalising temp paths and hashes)")
            return
        view.set_text(t.unified, _diff_lexer)
        view.set_marks([i for i, line in enumerate(t.unified.split("\n")) if line.startswith("@@")], jump=False)

    @property
    def shown_text(self) -> str:
        return self.query_one("#diff-text", CodeView).text


class DiffApp(App):
    """A window around one DiffView: ``kernelscope diff A B --ui`` (and pilot tests)."""

    TITLE = "kernelscope diff"
    BINDINGS = [Binding("question_mark", "keys", "Keys", key_display="?"), Binding("q", "quit", "Quit")]

    def __init__(self, bundle_a: Bundle | str, bundle_b: Bundle | str) -> None:
        super().__init__()
        self.bundle_a, self.bundle_b = bundle_a, bundle_b

    def compose(self) -> ComposeResult:
        yield Header()
        yield DiffView(self.bundle_a, self.bundle_b)
        yield KeyFooter()

    def action_keys(self) -> None:
        """? : every key, in a panel that scrolls (as in the explorer)."""
        from kernelscope.ui.screens.keys import KeysScreen

        if not isinstance(self.screen, KeysScreen):
            self.push_screen(KeysScreen(self.screen))
