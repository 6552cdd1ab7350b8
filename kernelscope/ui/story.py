"""The numbers a talk is about, for one bundle: eager N kernels / M transfers -> compiled n / m, and the
measured time when the bundle was benched. Read from the bundle's bench results when present, else
computed from its graphs the way ``kernelscope bench --counts`` does (kernelscope.bench.counts is pure
Python). Also which kernel tells the story: the first fused kernel with a source, and a talk step's kernel by name. No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelscope.bundle.bench_record import measured_device
from kernelscope.bundle.model import Bundle, Kernel
from kernelscope.units import plural


@dataclass
class Story:
    eager_kernels: int | None = None
    eager_transfers: int | None = None
    compiled_kernels: int | None = None
    compiled_transfers: int | None = None
    eager_us: float | None = None  # measured median end to end, when benched
    compiled_us: float | None = None
    eager_device_us: float | None = None  # the same call's kernels alone (the profiler's device time)
    compiled_device_us: float | None = None
    inputs: tuple[str, ...] = ()  # the shapes it was measured at
    device: str = ""  # where it was measured
    recapture: str = ""  # what ran when it was not the bundle's own compile ("a CPU re-capture of a preview")
    other_inputs: bool = False  # measured at other shapes than the capture's heading shows
    source: str = ""  # "bench" (stored) or "graphs" (computed now)
    problem: str = ""  # why there are no counts

    def counts_line(self) -> str:
        if self.eager_kernels is None or self.compiled_kernels is None:
            return f"no counts: {self.problem}" if self.problem else "no counts"
        return (f"eager {plural(self.eager_kernels, 'kernel')} / {plural(self.eager_transfers or 0, 'transfer')}"
                f"  →  compiled {plural(self.compiled_kernels, 'kernel')} / "
                f"{plural(self.compiled_transfers or 0, 'transfer')}")

    def time_line(self) -> str:
        if self.eager_us is None or self.compiled_us is None:
            return "not benched: `kernelscope bench BUNDLE` measures it"
        speed = self.eager_us / self.compiled_us if self.compiled_us else 0.0
        where = f" on {self.device}" if self.device else ""
        where += f", {self.recapture}" if self.recapture else ""
        where += f", at ({', '.join(self.inputs)})" if self.other_inputs and self.inputs else ""
        line = f"measured{where}: eager {_time(self.eager_us)}  →  compiled {_time(self.compiled_us)}  ({speed:.2f}x)"
        device = self.device_line()
        return f"{line}\n{device}" if device else line

    def device_line(self) -> str:
        """The kernels' own time beside end to end, and why the two disagree when the host decides."""
        e, c = self.eager_device_us, self.compiled_device_us
        if e is None or c is None or not c:
            return ""
        line = f"kernels alone: eager {_time(e)}  →  compiled {_time(c)}  ({e / c:.2f}x)"
        if self.compiled_us and self.eager_us and self.compiled_us > self.eager_us and c <= e:
            line += "; end to end is host-bound at this size: the call's launch and Python overhead outweigh its kernels"
        return line


def _time(us: float) -> str:
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.1f} µs"


def story(bundle: Bundle) -> Story:
    run = (bundle.extra.get("bench") or {}).get("run") if isinstance(bundle.extra, dict) else None
    s = Story()
    counts = run.get("counts") if isinstance(run, dict) else None
    if isinstance(counts, dict) and "eager" in counts and "compiled" in counts:
        s.source = "bench"
    else:
        try:
            from kernelscope.bench.bundle_plan import computed_counts

            counts = computed_counts(bundle)
            s.source = "graphs"
        except Exception as exc:  # a bundle whose graphs cannot be read: say so, show the rest
            s.problem = f"{exc.__class__.__name__}: {exc}"
            counts = None
    if counts:
        s.eager_kernels = counts["eager"].get("kernels")
        s.eager_transfers = counts["eager"].get("transfers")
        s.compiled_kernels = counts["compiled"].get("kernels")
        s.compiled_transfers = counts["compiled"].get("transfers")
    if isinstance(run, dict):
        try:
            s.eager_us = float(run["eager"]["e2e"]["median_us"])
            s.compiled_us = float(run["compiled"]["e2e"]["median_us"])
        except (KeyError, TypeError, ValueError):
            s.eager_us = s.compiled_us = None
        try:
            s.eager_device_us = float(run["eager"]["kernel_us"])
            s.compiled_device_us = float(run["compiled"]["kernel_us"])
        except (KeyError, TypeError, ValueError):
            s.eager_device_us = s.compiled_device_us = None
        inputs = run.get("inputs")
        s.inputs = tuple(str(x) for x in inputs) if isinstance(inputs, list) else ()
        dev = run.get("device") if isinstance(run.get("device"), dict) else {}
        measured_on = str(dev.get("device") or "")
        name = measured_device(dev)
        s.device = (f"CPU ({name})" if name else "CPU") if measured_on == "cpu" else str(name or measured_on)
        captured_on = str(run.get("captured_on") or "")
        preview = bundle.preview if isinstance(getattr(bundle, "preview", None), dict) else None
        if preview and measured_on:
            s.recapture = (f"a {measured_on.upper() if measured_on == 'cpu' else measured_on} re-capture of a preview"
                           f" for {preview.get('arch', '?')} (not the previewed kernels)")
        elif captured_on and measured_on and captured_on != measured_on:
            s.recapture = f"a {measured_on.upper() if measured_on == 'cpu' else measured_on} re-capture of a {captured_on} capture"
        target = bundle.target if isinstance(bundle.target, dict) else {}
        captured = [str(x) for x in target.get("inputs") or []]
        s.other_inputs = bool(captured) and bool(s.inputs) and list(s.inputs) != captured
    return s


def story_kernel(bundle: Bundle, order: list[Kernel]) -> Kernel | None:
    """The kernel a talk shows: the first generated (fused) kernel with a source, else the first one."""
    with_source = [k for k in order if k.lang != "extern" and k.source]
    fused = [k for k in with_source if "fused" in k.name]
    return (fused or with_source or order or [None])[0]


def find_kernel(kernels: list, wanted: str):
    """A kernel by its exact name, else the first whose name contains ``wanted``."""
    if not wanted:
        return None
    return next((k for k in kernels if k.name == wanted), None) or next((k for k in kernels if wanted in k.name), None)
