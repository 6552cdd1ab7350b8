"""Parent side of a capture: spawn the child, stream its progress, commit or clean up. No torch.

The child writes into a staging folder next to the output; only a finished (or cleanly failed)
capture is renamed into place. A cancel, a crash or a kill removes the staging and work folders,
so nothing half-written is left behind. A timeout keeps what the trace had recorded, marked failed.
What the child is asked (``CaptureSpec``) and how it answers (exit codes, events) is capture/spec.py;
running a child process is capture/job.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.bundle.io import (
    BundleError,
    check_out,
    commit_staging_dir,
    fresh_path,
    make_staging_dir,
    read_bundle,
    save_manifest,
)
from kernelscope.bundle.model import Bundle
from kernelscope.capture import compile_cache
from kernelscope.capture.collect import write_bundle_from_work
from kernelscope.capture.job import WORK_PREFIX, ChildJob, make_work_dir, read_events
from kernelscope.capture.lifeline import install_parent_signal_handlers, kill_group
from kernelscope.capture.spec import (
    EXIT_FAILED,
    EXIT_NO_BUNDLE,
    EXIT_OK,
    MODES,
    PREVIEW_ARCHES,
    CaptureOptions,
    CaptureSpec,
)
from kernelscope.target import Target


@dataclass
class CaptureResult:
    status: str  # "ok", "failed", "cancelled", "crashed"
    out: Path | None
    message: str = ""
    kind: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    bundle: Bundle | None = None


class CaptureError(Exception):
    """A capture that produced no bundle; one line for the user."""

    def __init__(self, message: str, kind: str = ""):
        super().__init__(message)
        self.kind = kind


class Capture(ChildJob):
    """One capture in a child process. ``run()`` blocks; ``cancel()`` may be called from any thread."""

    def __init__(self, spec: CaptureSpec, out: str | os.PathLike, *, replace: bool = False,
                 python: str | None = None, on_event: Callable[[dict[str, Any]], None] | None = None,
                 work_root: str | os.PathLike | None = None):
        super().__init__(python, on_event)
        self.spec = spec
        self.out = Path(out)
        self.replace = replace
        self.work_root = work_root

    @property
    def options(self) -> CaptureOptions:
        return self.spec.options

    def _request(self, work: Path, staging: Path, event_fd: int) -> dict[str, Any]:
        return {"work": str(work), "staging": str(staging), "event_fd": event_fd, "t_spawn": time.time(),
                "spec": self.spec.to_dict()}

    def run(self) -> CaptureResult:
        try:
            check_out(self.out, replace=self.replace)
        except BundleError as exc:
            raise CaptureError(str(exc), "exists") from exc
        t0 = time.time()
        staging = make_staging_dir(self.out)
        work = make_work_dir(WORK_PREFIX, self.work_root)
        committed = False
        try:
            child = self._run_child("kernelscope.capture.child", work,
                                    lambda fd: self._request(work, staging, fd), self.options.timeout)
            rc, stderr_tail, timed_out = child.rc, child.stderr, child.timed_out
            seconds = time.time() - t0
            if self.cancelled:
                return CaptureResult("cancelled", None, "capture cancelled", "cancelled", self.events, seconds)
            if timed_out:
                bundle = self._partial_bundle(work, staging, f"compile timed out after {self.options.timeout:g} s "
                                              "(the child was stopped); raise --timeout or simplify the function")
                commit_staging_dir(staging, self.out, replace=self.replace)
                committed = True
                bundle.root = str(self.out)
                return CaptureResult("failed", self.out, bundle.error, "timeout", self.events, seconds, bundle)
            if rc in (EXIT_OK, EXIT_FAILED) and (staging / "bundle.json").is_file():
                commit_staging_dir(staging, self.out, replace=self.replace)
                committed = True
                bundle = read_bundle(self.out)
                status = "ok" if rc == EXIT_OK else "failed"
                if status == "ok" and not self.options.preview:
                    compile_cache.keep(work)  # Inductor's entries, for the benches that follow
                return CaptureResult(status, self.out, bundle.error, bundle.error_kind, self.events, seconds, bundle)
            message = self._crash_message(rc, stderr_tail)
            if rc == EXIT_NO_BUNDLE:  # failed before compiling anything: the child wrote no bundle on purpose
                kind = next((e.get("kind", "") for e in reversed(self.events) if e.get("phase") == "error"), "")
                return CaptureResult("failed", None, message, kind, self.events, seconds)
            return CaptureResult("crashed", None, message, "crash", self.events, seconds)
        finally:
            if not committed:
                shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(work, ignore_errors=True)

    def _crash_message(self, rc: int, stderr_tail: str) -> str:
        for event in reversed(self.events):
            if event.get("phase") == "error":
                return str(event.get("message"))
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            hint = " (the system's out-of-memory killer does this: try smaller --args shapes)" \
                if name == "SIGKILL" and not self.cancelled else ""
            return f"the capture process was killed by {name}{hint}"
        tail = [line for line in stderr_tail.strip().split("\n") if line.strip()]
        last = tail[-1] if tail else ""
        return f"the capture process exited with status {rc}" + (f": {last[:300]}" if last else "")

    def _partial_bundle(self, work: Path, staging: Path, message: str) -> Bundle:
        for child in staging.iterdir():  # the child may have started writing; rebuild from the raw trace
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink()
        spec = self.spec
        bundle = Bundle(target={**spec.target, "origin": "capture"}, options=spec.options.bundle_options(), status="failed",
                        error=message, error_kind="timeout")
        bundle.target["args"] = spec.args_text
        write_bundle_from_work(work, staging, bundle, user_file=spec.file)
        save_manifest(bundle, staging)
        return bundle


def default_out(target: Target) -> Path:
    """Where a capture goes when -o is not given: a fresh folder under ./kernelscope-captures."""
    return fresh_path("kernelscope-captures", target.name)


# Re-exported: callers that knew these here (the contract is capture/spec.py, the job capture/job.py).
__all__ = ["Capture", "CaptureError", "CaptureOptions", "CaptureResult", "CaptureSpec", "BundleError", "ChildJob",
           "MODES", "PREVIEW_ARCHES", "WORK_PREFIX", "default_out", "install_parent_signal_handlers", "kill_group",
           "make_work_dir", "read_events"]
