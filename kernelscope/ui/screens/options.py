"""OptionsScreen: the small form to (re)compile with other options: inputs, mode, dynamic,
fullgraph, backward, device (or a preview for a GPU arch), grad mode, eval, timeout, passes. Validates in place; a bad args spec is
one line under the form."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Select, Static

from kernelscope.capture.spec import MODES, PREVIEW_ARCHES
from kernelscope.ui.capture_request import CaptureRequest
from kernelscope.ui.wording import in_ui_words

DYNAMIC = (("auto (None)", "auto"), ("True", "on"), ("False", "off"))
GRAD = (("grad on", "grad"), ("torch.no_grad()", "no_grad"), ("torch.inference_mode()", "inference_mode"))
DEVICES = (("auto (cuda when present)", "auto"), ("cpu", "cpu"), ("cuda", "cuda"),
           *((f"preview {a} (no GPU needed)", f"preview:{a}") for a in PREVIEW_ARCHES))


def toggle_label(name: str, value: bool) -> str:
    # A checkbox shows its state by colour only; say it in words too.
    return f"{name}: {'on' if value else 'off'}"


class OptionsScreen(ModalScreen[CaptureRequest | None]):
    BINDINGS = [
        Binding("ctrl+r", "submit", "Compile", priority=True),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, request: CaptureRequest, error: str = "") -> None:
        super().__init__()
        self.request = request
        self.error = error

    def compose(self) -> ComposeResult:
        r = self.request
        dyn = "auto" if r.dynamic is None else ("on" if r.dynamic else "off")
        with Vertical(classes="dialog options-dialog"):
            # The keys go under the title: at 80x24 the form fills the screen and a hint at the end is cut.
            yield Static("Compile options", classes="dialog-title")
            yield Static("tab: next field · enter / ctrl+r: compile · escape: cancel", classes="hint options-hint")
            with Horizontal(classes="field"):
                yield Label("target", classes="field-label")
                yield Input(r.target, id="opt-target")
            with Horizontal(classes="field"):
                yield Label("inputs", classes="field-label")
                yield Input(r.args_text, placeholder="own inputs; e.g. f32[64, 128], f32[128]",
                            id="opt-args")
            with Horizontal(classes="field"):
                yield Label("mode", classes="field-label")
                yield Select([(m, m) for m in MODES], value=r.mode, allow_blank=False, id="opt-mode")
            with Horizontal(classes="field"):
                yield Label("dynamic", classes="field-label")
                yield Select(DYNAMIC, value=dyn, allow_blank=False, id="opt-dynamic")
            with Horizontal(classes="field"):
                yield Label("device", classes="field-label")
                yield Select(DEVICES, value=f"preview:{r.preview}" if r.preview else r.device or "auto", allow_blank=False, id="opt-device")
            with Horizontal(classes="field"):
                yield Label("grad", classes="field-label")
                grad = "inference_mode" if r.inference_mode else "no_grad" if r.no_grad else "grad"
                yield Select(GRAD, value=grad, allow_blank=False, id="opt-grad")
            with Horizontal(classes="field"):
                yield Label("timeout", classes="field-label")
                yield Input("" if r.timeout is None else f"{r.timeout:g}", placeholder="seconds (none)",
                            id="opt-timeout", classes="-short")
                yield Checkbox(toggle_label("passes", r.passes), r.passes, id="opt-passes",
                               tooltip="also dump every MLIR pass of each Triton kernel (GPU or preview)")
            with Horizontal(classes="field"):
                yield Checkbox(toggle_label("eval", r.eval), r.eval, id="opt-eval")
                yield Checkbox(toggle_label("fullgraph", r.fullgraph), r.fullgraph, id="opt-fullgraph")
                yield Checkbox(toggle_label("backward", r.backward), r.backward, id="opt-backward")
            yield Static(f"✗ {in_ui_words(self.error)}" if self.error else "", id="opt-error", markup=False)

    def on_mount(self) -> None:
        self.query_one("#opt-args", Input).focus()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        event.checkbox.label = toggle_label(event.checkbox.id.removeprefix("opt-"), event.value)

    def on_input_submitted(self) -> None:
        self.action_submit()

    def _collect(self) -> CaptureRequest:
        dyn = self.query_one("#opt-dynamic", Select).value
        dev = self.query_one("#opt-device", Select).value
        grad = self.query_one("#opt-grad", Select).value
        return self.request.with_options(
            target=self.query_one("#opt-target", Input).value.strip(),
            args_text=self.query_one("#opt-args", Input).value.strip(),
            mode=str(self.query_one("#opt-mode", Select).value),
            dynamic=None if dyn == "auto" else dyn == "on",
            device=None if dev == "auto" or str(dev).startswith("preview:") else str(dev),
            preview=str(dev).split(":", 1)[1] if str(dev).startswith("preview:") else None,
            fullgraph=self.query_one("#opt-fullgraph", Checkbox).value,
            backward=self.query_one("#opt-backward", Checkbox).value,
            no_grad=grad == "no_grad", inference_mode=grad == "inference_mode",
            eval=self.query_one("#opt-eval", Checkbox).value,
            passes=self.query_one("#opt-passes", Checkbox).value,
            timeout=self._timeout(),
        )

    def _timeout(self) -> float | None:
        """The timeout field in seconds: empty is none; text that is not a number is NaN, which the
        request's check turns into its one-line error."""
        text = self.query_one("#opt-timeout", Input).value.strip()
        if not text:
            return None
        try:
            return float(text)
        except ValueError:
            return float("nan")

    def action_submit(self) -> None:
        from kernelscope.target import TargetError

        req = self._collect()
        try:
            req.check()
        except TargetError as exc:
            error = self.query_one("#opt-error", Static)
            error.update(f"✗ {in_ui_words(str(exc))}")
            error.add_class("-error")
            return
        self.dismiss(req)

    def action_cancel(self) -> None:
        self.dismiss(None)
