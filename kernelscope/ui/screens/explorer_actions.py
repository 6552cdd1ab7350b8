"""The explorer's actions that leave it for another screen or a new capture: back, recompile, recapture,
edit, the Triton pipeline, bench, diff and the job view, and which of them a bundle can offer at all
(``check_action``: the footer and ``?`` list only keys that work). A mixin of ExplorerScreen, which
holds ``bundle``, ``previous``, ``request``, ``kernel`` and ``select``/``select_kernel``."""

from __future__ import annotations

from kernelscope.bundle.no_code import has_output_code
from kernelscope.ui.messages import EditRequested, GoBack, RecompileRequested


class ExplorerActions:
    # -- actions that leave the screen -----------------------------------------------------------
    def action_back(self) -> None:
        self.post_message(GoBack())

    # Keys that cannot work on this bundle are not offered (the footer and ? read active_bindings, which
    # leaves out an action check_action says False to): recompile, recapture and edit need the target a
    # capture names (a bundle from a log or a run has none), diff an earlier capture or a way to make one,
    # the job view more than one graph, bench a function to rerun or output code to run.
    _NEEDS_TARGET = frozenset({"recompile_form", "recapture", "edit"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self._NEEDS_TARGET:
            return self._request() is not None
        if action == "diff":
            return self.previous is not None or self._request() is not None
        if action == "job":
            return len(self.bundle.graphs) > 1
        if action == "bench":  # a capture reruns its function; any other bundle runs its own output code
            return self._request() is not None or has_output_code(self.bundle)
        return True

    def _request(self):
        from kernelscope.ui.capture_request import CaptureRequest

        if self.request is not None:
            return self.request
        return CaptureRequest.from_bundle_target(self.bundle.target, self.bundle.options)

    def action_recompile_form(self) -> None:
        req = self._request()
        if req is None:
            self.notify("this bundle came from a log, not a target; there is nothing to recompile",
                        severity="warning")
            return
        self.post_message(RecompileRequested(req, previous=self.bundle, ask=True))

    def action_recapture(self) -> None:
        req = self._request()
        if req is None:
            self.notify("this bundle came from a log, not a target; there is nothing to recapture", severity="warning")
            return
        self.post_message(RecompileRequested(req, previous=self.bundle, ask=False))

    def action_edit(self) -> None:
        req = self._request()
        if req is None:
            self.notify("this bundle came from a log, not a target; there is no function to edit", severity="warning")
            return
        self.post_message(EditRequested(req, previous=self.bundle))

    def action_pipeline(self) -> None:
        from kernelscope.ui.screens.tools import PipelineScreen

        if self.kernel is None or self.kernel.lang != "triton":
            if not any(k.lang == "triton" for k in self.bundle.kernels):
                # A CPU capture has C++ kernels only: say how to get Triton stages without a GPU.
                self.notify("no Triton kernels here (a CPU capture emits C++): capture with a preview device "
                            "(c, device 'preview sm_90') or `kernelscope capture TARGET --preview sm_90` for the "
                            "Triton stages a GPU would get", severity="warning", timeout=6, markup=False)
                return
            self.notify("select a Triton kernel to step through its pipeline", severity="warning")
            return
        self.app.push_screen(PipelineScreen(self.bundle, self.kernel))

    def action_bench(self) -> None:
        from kernelscope.ui.screens.tools import BenchScreen

        self.app.push_screen(BenchScreen(self.bundle))

    def action_job(self) -> None:
        from kernelscope.ui.screens.tools import JobScreen

        self.app.push_screen(JobScreen(self.bundle), self._open_graph)

    def _open_graph(self, graph_id: str | None) -> None:
        """The first kernel of a graph the job screen chose (its row when it has none)."""
        if not graph_id:
            return
        graph = next((g for g in self.bundle.graphs if g.id == graph_id), None)
        kernel = next(iter(self.bundle.kernels_of(graph_id)), None)
        if kernel is not None:
            self.select_kernel(kernel)
        elif graph is not None:
            self.select(graph, None)

    def action_diff(self) -> None:
        from kernelscope.ui.screens.tools import DiffScreen

        if self.previous is None:
            self.notify("no earlier capture to compare with: recompile (c) or edit (e) first", severity="warning")
            return
        self.app.push_screen(DiffScreen(self.previous, self.bundle))
