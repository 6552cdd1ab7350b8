"""What a job's explorer reads once its first frame is drawn: the kernels of every graph (its first frame
read one graph's: ui/widgets/known_kernels.py) and, after a bench, the device time per line (every graph's
launches, from every graph's detail file: seconds for a thousand graphs), worked out in a thread while the
Source and Info panes show the rest. Mixed into ExplorerScreen."""

from __future__ import annotations

from textual import work
from textual.worker import get_current_worker

from kernelscope.bundle.model import Bundle
from kernelscope.job_summary import is_job
from kernelscope.report.lines import Stopped, give_up, line_tables, line_tables_ready
from kernelscope.textsafe import one_line
from kernelscope.ui.first_frame import once_drawn
from kernelscope.ui.widgets.kernel_table import KernelTable
from kernelscope.ui.widgets.known_kernels import read_by_graph


def job_loading(bundle: Bundle) -> tuple[bool, bool]:
    """(the list starts with one graph's kernels, the device time per line is worked out later)."""
    return read_by_graph(bundle), _line_times_later(bundle)


def _line_times_later(bundle: Bundle) -> bool:
    return not line_tables_ready(bundle) and is_job(bundle)


class JobLoading:
    """ExplorerScreen's reading after the first frame (see the module's text)."""

    bundle: Bundle
    lazy_index: bool
    line_times_later: bool

    def load_rest_of_job(self) -> None:
        """Once this screen is drawn (a bundle opened later waits for its own first frame, not the app's)."""
        if self.lazy_index:
            once_drawn(self, self._whole_index)
        if self.line_times_later:
            once_drawn(self, self._work_out_line_times)

    def line_times_again(self) -> None:
        """A bench stored a new record: a job's device time per line is worked out in the thread again."""
        self.line_times_later = _line_times_later(self.bundle)
        if self.line_times_later:
            self._work_out_line_times()

    def _whole_index(self) -> None:
        """A job's kernels read whole (its first frame read one graph's): search and links reach them all."""
        if self.is_attached:
            self.query_one(KernelTable).ensure_whole(self.index.kernels_in_order)

    # No arguments: Textual names a worker by the repr of its arguments, and a bundle's repr reads every detail.
    @work(thread=True, exclusive=True, group="line-times", exit_on_error=False)
    def _work_out_line_times(self) -> None:
        bundle, worker = self.bundle, get_current_worker()
        try:
            line_tables(bundle, stop=lambda: worker.is_cancelled)
            problem = ""
        except Stopped:
            return  # the screen closed or the app quits: nothing kept, nothing said
        except Exception as exc:  # a damaged detail file: said once, the panes go on without line times
            give_up(bundle)
            problem = f"device time per line: {one_line(str(exc) or type(exc).__name__, 200)}"
        self.app.call_from_thread(self._line_times_ready, bundle, problem)

    def _line_times_ready(self, bundle: Bundle, problem: str) -> None:
        if bundle is self.bundle and self.is_attached:
            self.line_times_later = False
            if problem:
                self.notify(problem, severity="error", timeout=10, markup=False)
            for pane_id in ("source", "info"):
                self.pane(pane_id).forget_bench()
