"""The pipeline view's pass mode: the MLIR/LLVM passes of a kernel's compile listed on the left,
the selected pass's diff (or its IR before or after) on the right. A mixin of PipelineView."""

from __future__ import annotations


class PassView:
    """Pass mode of PipelineView (uses its panes, logs and pass state)."""

    def _pass_log(self):
        for log in reversed(self.logs):
            if log.kind == self.log_kind:
                return log
        return None

    def _show_passes(self) -> None:
        if self._passes_state in ("idle", "failed") and not self.logs:
            if self._passes_state == "idle":
                self._passes_state = "loading"
                self.load_passes(recompute=False)
            else:
                self.left.set_text(f"[{self.status_text}]", "text", "passes")
                return
        if self._passes_state == "loading":
            self.left.set_text("computing the pass pipeline (a Triton compile in a child process)...", "text", "passes")
            self.right.set_text("", "text", "")
            self._set_status("passes: loading")
            return
        log = self._pass_log()
        if log is None:
            self.left.set_text(f"[no {self.log_kind.upper()} passes]", "text", "passes")
            return
        self.visible_passes = log.changed_only() if self.changed_only else list(log.passes)
        marks = {True: "*", False: " ", None: "?"}
        rows = [
            f"{marks[p.changed]} {p.index:3d} {p.name}  [{p.stage}] {p.scope if p.scope != 'builtin.module' else ''}"
            for p in self.visible_passes
        ] or ["(no passes changed the IR)"]
        filt = ", changed only" if self.changed_only else ""
        self.left.set_text("\n".join(rows), "text", f"{log.kind.upper()} passes ({len(rows)}{filt})")
        self._show_pass_detail(1)

    def _show_pass_detail(self, row: int) -> None:
        log = self._pass_log()
        if log is None or not self.visible_passes:
            self.right.set_text("", "text", "")
            return
        p = self.visible_passes[max(0, min(row, len(self.visible_passes)) - 1)]
        if self.pass_view == "diff":
            text = log.diff(p) or "(this pass changed nothing)"
            lexer = "diff"
        else:
            text = (log.before(p) if self.pass_view == "before" else log.after(p)) or "(not dumped)"
            lexer = "llir" if log.kind != "mlir" else "ttgir"
        self.right.set_text(text, lexer, f"{self.pass_view}: {p.name}")
        state = {True: "changed", False: "unchanged", None: "unknown"}[p.changed]
        # What a pass is and did first, where the dump came from last: at 80 columns a long pass name
        # (TritonGPURemoveLayoutConversions) pushed its number and its state off the line.
        what = f"pass {p.index} {p.name}: {state} · {p.arg or p.kind} on {p.scope}"
        self._set_status(what + (f" · {log.origin}" if log.origin else ""), what, f"pass {p.index} {p.name}: {state}")

    def action_toggle_changed(self) -> None:
        if self.mode == "passes":
            self.changed_only = not self.changed_only
            self.show()

    def action_cycle_pass_view(self) -> None:
        if self.mode == "passes":
            views = ("diff", "before", "after")
            self.pass_view = views[(views.index(self.pass_view) + 1) % len(views)]
            self._show_pass_detail(self.left.cursor_line)

    def action_toggle_pass_log(self) -> None:
        if self.mode != "passes":  # over the stages l pans right, as in every code pane (h pans left)
            focused = self.app.focused
            pane = focused if focused in (self.left, self.right) else self.left
            pane.action_pan(8)
            return
        if self.logs:
            kinds = [k for k in ("mlir", "llvm") if any(log.kind == k for log in self.logs)]
            self.log_kind = kinds[(kinds.index(self.log_kind) + 1) % len(kinds)] if self.log_kind in kinds else kinds[0]
            self.show()

    def action_recompute(self) -> None:
        if self.mode == "passes" and self._passes_state != "loading":
            self.notify("recomputing the passes: a Triton compile in a child process", timeout=3)
            self._passes_state = "loading"
            self.logs = []
            self.show()
            self.load_passes(recompute=True)
