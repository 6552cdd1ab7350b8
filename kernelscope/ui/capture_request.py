"""What a live capture needs (target, inputs, options) as the UI's forms edit it. No torch.

``CaptureRequest.check()`` validates the target and the args spec in this process, so a typo
is a one-line error in milliseconds, before any child process starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kernelscope.target import Target, TargetError, parse_args_spec, resolve_target

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@dataclass
class CaptureRequest:
    target: str  # a sample name or file.py::function
    args_text: str = ""  # "" means: the target's own inputs factory
    mode: str = "default"
    dynamic: bool | None = None
    fullgraph: bool = False
    backward: bool = False
    device: str | None = None  # None: cuda when there is one
    preview: str | None = None  # "sm_90": what Inductor emits for that GPU, generated without it
    passes: bool = False
    no_grad: bool = False
    inference_mode: bool = False
    eval: bool = False
    timeout: float | None = None
    out: str | None = None  # None: a fresh folder in the cache
    origin_file: str | None = None  # the user's own file, when ``target`` is a scratch copy of it
    extra: dict[str, Any] = field(default_factory=dict)

    def with_options(self, **changes: Any) -> CaptureRequest:
        return replace(self, **changes)

    @property
    def label(self) -> str:
        flags = [f"mode={self.mode}", f"preview {self.preview}" if self.preview else f"device={self.device or 'auto'}"]
        if self.dynamic is not None:
            flags.append(f"dynamic={self.dynamic}")
        flags += [k for k in ("fullgraph", "backward", "no_grad", "inference_mode", "eval") if getattr(self, k)]
        return f"{self.target}  ({', '.join(flags)})"

    def check(self) -> tuple[Target, list | None]:
        """The resolved target and parsed inputs; raises TargetError with one line."""
        if self.preview and self.mode.startswith("max-autotune"):
            raise TargetError(f"mode {self.mode} cannot be previewed: it picks kernels by timing them on the GPU; "
                              "choose mode default or reduce-overhead")
        target = resolve_target(self.target)
        specs = parse_args_spec(self.args_text) if self.args_text.strip() else None
        if specs is None and not target.has_inputs_factory:
            raise TargetError(f"{target.spec}: no inputs; give an args spec like \"f32[1024], f32[1024]\" "
                              f"or define {target.name}_inputs(device) next to it")
        return target, specs

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
