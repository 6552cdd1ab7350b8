"""What a job's explorer reads once its first frame is drawn: the kernels of every graph (its first frame
read one graph's: ui/widgets/known_kernels.py) and, after a bench, the device time per line (every graph's
launches, from every graph's detail file: seconds for a thousand graphs), worked out in a thread while the
Source and Info panes show the rest. Mixed into ExplorerScreen."""

from __future__ import annotations

from textual import work

from kernelscope.bundle.model import Bundle
from kernelscope.job_summary import is_job
from kernelscope.report.lines import line_tables, line_tables_ready
from kernelscope.ui.widgets.kernel_table import KernelTable
from kernelscope.ui.widgets.known_kernels import read_by_graph


def job_loading(bundle: Bundle) -> tuple[bool, bool]:
    """(the list starts with one graph's kernels, the device time per line is worked out later)."""
    return read_by_graph(bundle), is_job(bundle) and not line_tables_ready(bundle)


class JobLoading:
    """ExplorerScreen's reading after the first frame (see the module's text)."""

    bundle: Bundle
    lazy_index: bool
    line_times_later: bool

    def load_rest_of_job(self) -> None:
        if self.lazy_index:
            self.app.after_first_frame(self._whole_index)
        if self.line_times_later:
            self.app.after_first_frame(self._work_out_line_times)

    def _whole_index(self) -> None:
        """A job's kernels read whole (its first frame read one graph's): search and links reach them all."""
        if self.is_attached:
            self.query_one(KernelTable).ensure_whole(self.index.kernels_in_order)

    # No arguments: Textual names a worker by the repr of its arguments, and a bundle's repr reads every detail.
    @work(thread=True, exclusive=True, group="line-times", exit_on_error=False)
    def _work_out_line_times(self) -> None:
        bundle = self.bundle
        line_tables(bundle)
        self.app.call_from_thread(self._line_times_ready, bundle)

    def _line_times_ready(self, bundle: Bundle) -> None:
        if bundle is self.bundle and self.is_attached:
            self.line_times_later = False
            for pane_id in ("source", "info"):
                self.pane(pane_id).forget_bench()
