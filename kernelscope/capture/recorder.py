"""``with kernelscope.record(out): ...``: what a block compiles in the caller's own process, as a bundle.

For the block's length it hangs a handler of its own on torch's structured trace logger (the
records TORCH_TRACE writes: graphs, output code, guards, breaks, compilation metrics) that writes
them, in TORCH_TRACE's format, to a private log; points Triton's and Inductor's caches at private
folders and turns Inductor's FX graph cache off (so every graph is generated and every kernel
compiled while recording, never taken from a warm cache). On exit the log and the caches become a
bundle on the same path as ``kernelscope open`` (capture.collect, ingest.build), marked
``origin: record``. The caller's environment and torch's settings are restored, whatever happens.

Runs where torch is already imported (the caller's process). Private torch names it uses, checked
against torch 2.11 / 2.13: the trace logger's name (capture/torch_hooks.py), the structured trace's
``INTERN_TABLE`` (``interned_strings``) and three config flags (``fresh_compile_patches``); each
degrades to nothing where it is gone (tests/test_run.py checks a record on the CPU).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from kernelscope.bundle import provenance
from kernelscope.bundle.io import BundleError, check_out, commit_staging_dir, make_staging_dir, save_manifest
from kernelscope.bundle.model import Bundle
from kernelscope.capture import torch_hooks
from kernelscope.capture.collect import write_bundle_from_work
from kernelscope.capture.job import WORK_PREFIX, make_work_dir

_GLOG_LEVEL = {"DEBUG": "V", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "C"}


class TraceFileHandler(logging.Handler):
    """Writes structured trace records as TORCH_TRACE does: a glog prefix, the JSON envelope, the
    payload as tab-indented lines (what ingest/tracelog.py reads)."""

    def __init__(self, path: Path):
        super().__init__(logging.DEBUG)
        self.stream = open(path, "w", encoding="utf-8")

    def write_record(self, metadata: dict[str, Any], payload: str | None = None, lineno: int = 0) -> None:
        stamp = time.strftime("%m%d %H:%M:%S")
        line = f"V{stamp}.{int(time.time() % 1 * 1e6):06d} {os.getpid()} kernelscope/recorder.py:{lineno}] " \
               f"{json.dumps(metadata, default=repr)}"
        if payload is not None:
            line += "".join(f"\n\t{piece}" for piece in payload.split("\n"))
        self.stream.write(line + "\n")
        self.stream.flush()

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        try:
            self.acquire()
            try:
                self.write_record(metadata, getattr(record, "payload", None), record.lineno)
            finally:
                self.release()
        except Exception:  # never break the caller's compile
            self.handleError(record)

    def close(self) -> None:
        try:
            self.stream.close()
        finally:
            super().close()


class Recording:
    """The ``kernelscope.record(out)`` context manager. After the block, ``.bundle`` is the bundle
    written (a handle: kernelscope.api.BundleSummary) and ``.out`` its folder."""

    def __init__(self, out: str | os.PathLike, *, replace: bool = False, where: tuple[str, int] | None = None):
        self.out = Path(out)
        self.replace = replace
        self.where = where
        self.bundle: Bundle | None = None
        self._saved_env: dict[str, str | None] = {}
        self._patches: list[Any] = []

    def __enter__(self) -> Recording:
        check_out(self.out, replace=self.replace)
        if "torch" not in sys.modules:
            import torch  # noqa: F401  (the block compiles with it; its logging must be set up first)
        self.t0 = time.time()
        self.work = make_work_dir(WORK_PREFIX)
        for sub in ("trace", "triton", "inductor"):
            (self.work / sub).mkdir()
        self.handler = TraceFileHandler(self.work / "trace" / "record_trace.log")
        for index, text in interned_strings().items():  # stack frames refer to files by these
            self.handler.write_record({"str": [text, index]})
        self.logger = logging.getLogger(torch_hooks.TRACE_LOGGER)
        self.logger.addHandler(self.handler)
        for name, value in (("TRITON_CACHE_DIR", self.work / "triton"), ("TORCHINDUCTOR_CACHE_DIR", self.work / "inductor")):
            self._saved_env[name] = os.environ.get(name)
            os.environ[name] = str(value)
        self._patches = fresh_compile_patches()
        for patch in self._patches:
            patch.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            self._restore()
            self.bundle = self._write(exc)
        finally:
            shutil.rmtree(self.work, ignore_errors=True)
        return False  # the block's own exception goes on

    def _restore(self) -> None:
        self.logger.removeHandler(self.handler)
        self.handler.close()
        for patch in reversed(self._patches):
            try:
                patch.__exit__(None, None, None)
            except Exception:
                pass
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def _write(self, exc: BaseException | None) -> Bundle:
        import torch

        file, line = self.where or ("", None)
        bundle = Bundle(target={"spec": f"record at {Path(file).name}:{line}" if file else "record",
                                "kind": "record", "origin": "record", "file": file, "line": line, "name": ""})
        device = "cuda" if torch.cuda.is_available() and torch.cuda.is_initialized() else "cpu"
        bundle.options = {"device": device}
        bundle.environment = {"python": sys.version.split()[0], "torch": torch.__version__, "device": device,
                              "source": "kernelscope.record"}
        triton = sys.modules.get("triton")
        if triton is not None:
            bundle.environment["triton"] = getattr(triton, "__version__", None)
        bundle.timings = {"record": round(time.time() - self.t0, 3)}
        staging = make_staging_dir(self.out)
        try:
            write_bundle_from_work(self.work, staging, bundle, user_file=file)
            if exc is not None:
                bundle.status, bundle.error_kind = "failed", "user"
                bundle.error = f"the block raised {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
            elif not bundle.graphs:
                bundle.status, bundle.error_kind = "failed", "no_graph"
                bundle.error = ("no graph compiled inside the record block (a function compiled before the block "
                                "is not compiled again: call torch._dynamo.reset() first, or record its first call)")
            bundle.notes.append("recorded in the caller's process (kernelscope.record): the block's prints are not "
                                "in logs/")
            save_manifest(bundle, staging)
            commit_staging_dir(staging, self.out, replace=self.replace)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        bundle.root = str(self.out)
        provenance.remember(bundle)  # this machine wrote its code: a bench of it needs no --run-bundle-code
        return bundle


def interned_strings() -> dict[int, str]:
    """The file names torch's structured trace has interned so far ({index: name}): a record made
    mid-process writes them first, since later stack frames name files by index only
    (``torch._logging.structured.INTERN_TABLE``; empty where that table is gone)."""
    try:
        from torch._logging import structured

        table = getattr(structured, "INTERN_TABLE", {})
        return {int(i): str(s) for s, i in table.items()}
    except Exception:
        return {}


def fresh_compile_patches() -> list:
    """Config patches (context managers) under which every graph is generated and compiled anew:
    Inductor's FX graph cache and AOTAutograd's cache off (``torch._inductor.config.fx_graph_cache``,
    ``torch._functorch.config.enable_autograd_cache``), and provenance tracking on (what
    INDUCTOR_PROVENANCE=1 sets: ``trace.provenance_tracking_level``); a setting a torch lacks is skipped."""
    patches = []
    try:
        import torch._inductor.config as inductor_config

        patches.append(inductor_config.patch(fx_graph_cache=False))
        if not getattr(inductor_config.trace, "provenance_tracking_level", 1):  # kernel -> FX nodes -> lines
            patches.append(inductor_config.patch({"trace.provenance_tracking_level": 1}))
    except Exception:
        pass
    try:
        import torch._functorch.config as functorch_config

        if hasattr(functorch_config, "enable_autograd_cache"):
            patches.append(functorch_config.patch(enable_autograd_cache=False))
    except Exception:
        pass
    return patches


__all__ = ["BundleError", "Recording", "TraceFileHandler"]
