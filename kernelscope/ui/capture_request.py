"""What a live capture needs (target, inputs, options) as the UI's forms edit it. No torch.

The options are the contract's own ``CaptureOptions`` (capture/spec.py); a request adds the text
the forms hold. ``CaptureRequest.check()`` turns it into a ``CaptureSpec`` in this process, so a
typo is a one-line error in milliseconds, before any child process starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from kernelscope.capture.spec import MODES, CaptureOptions, CaptureSpec
from kernelscope.target import Target, resolve_target

__all__ = ["MODES", "CaptureRequest", "grad_options"]


@dataclass(kw_only=True)
class CaptureRequest(CaptureOptions):
    target: str  # a sample name or file.py::function
    args_text: str = ""  # "" means: the target's own inputs factory
    out: str | None = None  # None: a fresh folder in the cache
    origin_file: str | None = None  # the user's own file, when ``target`` is a scratch copy of it
    extra: dict[str, Any] = field(default_factory=dict)

    def with_options(self, **changes: Any) -> CaptureRequest:
        return replace(self, **changes)

    @property
    def options(self) -> CaptureOptions:
        return CaptureOptions(**{f.name: getattr(self, f.name) for f in fields(CaptureOptions)})

    @property
    def label(self) -> str:
        flags = [f"mode={self.mode}", f"preview {self.preview}" if self.preview else f"device={self.device or 'auto'}"]
        if self.dynamic is not None:
            flags.append(f"dynamic={self.dynamic}")
        flags += [k for k in ("fullgraph", "backward", "no_grad", "inference_mode", "eval") if getattr(self, k)]
        return f"{self.target}  ({', '.join(flags)})"

    def check(self) -> CaptureSpec:
        """The capture this request asks for; raises TargetError (a SpecError) with one line."""
        options = self.options.check()
        target = resolve_target(self.target)
        return CaptureSpec.build(target, self.args_text if self.args_text.strip() else None, options,
                                 inputs_hint='give an args spec like "f32[1024], f32[1024]"')

    @classmethod
    def for_target(cls, target: Target) -> CaptureRequest:
        """A capture of ``target`` with its own default options (a sample's OPTIONS)."""
        opts = target.sample_options
        return cls(target=target.spec, mode=opts.get("mode", "default"), dynamic=opts.get("dynamic"),
                   fullgraph=bool(opts.get("fullgraph")), backward=bool(opts.get("backward")),
                   args_text=str(opts.get("args") or ""), **grad_options(opts))

    @classmethod
    def from_bundle_target(cls, target: dict[str, Any], options: dict[str, Any]) -> CaptureRequest | None:
        """The request that would capture a bundle's target again (None for TORCH_TRACE bundles)."""
        spec = target.get("spec") or ""
        if not target.get("is_sample"):
            file, name = target.get("file"), target.get("name")
            if not file or not name or not Path(file).is_file():
                return None
            spec = f"{file}::{name}"
        if not spec:
            return None
        return cls(
            target=spec, args_text=target.get("args") or "",
            mode=options.get("mode") or "default", dynamic=options.get("dynamic"),
            fullgraph=bool(options.get("fullgraph")), backward=bool(options.get("backward")),
            device=None if options.get("preview") else options.get("device"), preview=options.get("preview"),
            **grad_options(options),
        )


def grad_options(options: dict[str, Any]) -> dict[str, bool]:
    """no_grad / inference_mode / eval from a target's OPTIONS or a bundle's options."""
    return {k: bool(options.get(k)) for k in ("no_grad", "inference_mode", "eval")}
