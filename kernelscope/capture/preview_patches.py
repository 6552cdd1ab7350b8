"""Preview: what Inductor would emit for a CUDA GPU, on a machine without one.

QUARANTINE: every private torch/triton spot kernelscope touches for ``--preview`` is in this file,
and nowhere else. Checked against torch 2.13 / triton 3.9 (CPU build) and torch 2.11 / triton 3.6 (a
CUDA build with the GPU hidden, CUDA_VISIBLE_DEVICES=, on the H200 box: the same kernel names, fused
nodes and sources as a real capture for 7 of the 9 samples). Any other version is tried, and the result must pass
``check_preview`` or the capture fails with one line naming the torch version.

How: the user's inputs are FakeTensors (``torch._subclasses.FakeTensorMode``) on ``cuda``; the
function goes through Dynamo into Inductor's own ``compile_fx`` (with the mode's config patches, as
``torch.compile`` does), which writes the output code and compiles every Triton kernel for the
faked target (Triton's ``ptxas`` makes the cubin, so every stage lands in TRITON_CACHE_DIR). The
compiled code is kept, never run: Dynamo gets the FX graph back and runs it on the FakeTensors, so
no kernel is launched and no autotune benchmark happens (all candidate configs stay, none chosen).

The module is split by concern, each file naming what it was checked against: this one (the faked
device), capture/preview_sdpa.py (SDPA's backend choice), capture/preview_modules.py (building the
user's nn.Module), capture/preview_guard.py (a no-op CUDA device guard for CPU-only builds).

Faked, and only inside ``preview_device()``:
  torch.cuda: is_available, device_count, get_device_properties, get_device_capability,
    get_device_name, current_device, set_device, _exchange_device, _maybe_exchange_device,
    get_rng_state, set_rng_state (Dynamo saves CUDA's RNG state around a trace);
  torch._dynamo.device_interface.CudaInterface: the same calls, which it bound at import;
  torch._C._cuda_getCurrentRawStream (the output code imports it; Triton's driver asks for it);
  triton.runtime.driver.active: a CudaDriver whose target is GPUTarget("cuda", ARCH, 32), whose
    load_binary loads nothing and whose launcher refuses to launch;
  torch._inductor.fx_passes.joint_graph.lazy_init: its pattern tracing builds example tensors
    with torch.tensor(..., device="cuda"), which a CPU build cannot place even under FakeTensorMode;
    the patterns are traced on the CPU instead (the aten patterns are the same).
  torch._inductor.fx_passes.joint_graph.UniformValueConstantFolder.run: the joint-graph pass that
    folds constants (e.g. the causal mask of scaled_dot_product_attention(is_causal=True):
    full -> tril) evaluates them for real, with fake modes off, on the graph's device; it keeps only
    each result's single value (``.item()``) and rebuilds the constant on the node's own device, so
    the values are computed on the CPU instead (a cuda ``device`` argument becomes cpu).
  aten::scaled_dot_product_attention (its CompositeImplicitAutograd kernel) and aten::_fused_sdp_choice
    (its Meta kernel, which FakeTensors run; capture/preview_sdpa.py): SDPA picks its CUDA backend in C++ from the device's
    properties (a CPU build has no CUDA chooser and falls back to the math decomposition; a CUDA build
    asks the absent GPU and fails). The preview chooses as torch's CUDA chooser does
    (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, select_sdp_backend, dense inputs) for the
    previewed arch (``sdp_choice``), then calls the chosen op as attention.cpp's composite does
    (``sdpa_composite``): the graph holds the same cuDNN / flash / efficient attention call as on the GPU.
  torch._subclasses.fake_tensor.FakeTensorMode.avoid_device_init: True, as on a machine without CUDA
    (it reads torch.cuda.is_available(), faked True): torch.tensor(...) lifted on the CPU, no constant
    propagation onto the device; and torch._C._ensureCUDADeviceGuardSet() (a no-op CUDA device guard
    where the build has a CUDA backend but no GPU: a CPU-only build has none, so Python indexing and
    autograd of tensors on the faked device fail there: capture/preview_guard.py registers one).
  torch.fx.experimental.proxy_tensor.CONSTANT_NUMEL_LIMIT: -1, so make_fx tracks no tensor as a
    constant (it would compute a small constant's copy to the device for real).
  torch._inductor.fx_passes.pad_mm.get_cached_should_pad: whether to pad a compute-bound matmul is
    decided by benchmarking it on the GPU; the preview cannot, answers "no pad" (what a GPU decides
    when padding is not faster) and counts the decisions (``UNBENCHMARKED``) for the bundle's notes.
Inductor config (public flags): compile_threads=1 (workers would not see the fake), no static CUDA
launcher, no FX graph / AOT autograd caches, backward lowered at compile time. The autotune cache
stays as torch.compile sets it: its flags are written into each kernel's inductor_meta, and it
lives in the capture's private cache folder anyway (nothing is benchmarked, so nothing is stored).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import warnings
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any
from unittest import mock

import torch

from kernelscope.capture.preview_sdpa import sdp_choice, sdpa_composite

CHECKED_TORCH = ("2.11", "2.13")  # torch major.minor this module was checked against
PREVIEW_ARCHES = ("sm_80", "sm_89", "sm_90", "sm_100", "sm_120")


@dataclass(frozen=True)
class GpuSpec:
    name: str
    major: int
    minor: int
    sms: int
    memory_gb: int
    smem_optin: int  # shared memory per block, opt-in (bytes)
    max_threads_per_sm: int
    l2_mb: int


# Published figures of one common part per arch.
GPUS = {
    "sm_80": GpuSpec("NVIDIA A100-SXM4-80GB", 8, 0, 108, 80, 166912, 2048, 40),
    "sm_89": GpuSpec("NVIDIA L40S", 8, 9, 142, 48, 101376, 1536, 96),
    "sm_90": GpuSpec("NVIDIA H100 80GB HBM3", 9, 0, 132, 80, 232448, 2048, 50),
    "sm_100": GpuSpec("NVIDIA B200", 10, 0, 148, 180, 232448, 2048, 126),
    "sm_120": GpuSpec("NVIDIA GeForce RTX 5090", 12, 0, 170, 32, 101376, 1536, 96),
}


class PreviewError(Exception):
    """A preview that cannot be made or came out wrong; one line for the user."""


def torch_checked() -> bool:
    return ".".join(torch.__version__.split(".")[:2]) in CHECKED_TORCH


def version_line() -> str:
    try:
        import triton

        tv = triton.__version__
    except Exception:
        tv = "none"
    checked = ", ".join(CHECKED_TORCH)
    return f"torch {torch.__version__} / triton {tv} (preview checked against torch {checked})"


def spec_for(arch: str) -> GpuSpec:
    if arch not in GPUS:
        raise PreviewError(f"unknown preview arch {arch!r}; use one of {', '.join(PREVIEW_ARCHES)}")
    return GPUS[arch]


def device_properties(spec: GpuSpec) -> SimpleNamespace:
    return SimpleNamespace(
        name=spec.name, major=spec.major, minor=spec.minor, multi_processor_count=spec.sms,
        total_memory=spec.memory_gb * 2**30, warp_size=32, shared_memory_per_block=49152,
        shared_memory_per_block_optin=spec.smem_optin, shared_memory_per_multiprocessor=spec.smem_optin + 1024,
        regs_per_multiprocessor=65536, max_threads_per_multi_processor=spec.max_threads_per_sm,
        max_threads_per_block=1024, L2_cache_size=spec.l2_mb * 2**20, is_integrated=0, is_multi_gpu_board=0,
        gcnArchName="", uuid="preview", pci_bus_id=0, pci_device_id=0, pci_domain_id=0,
    )


def _make_driver(spec: GpuSpec):
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import GPUDriver
    from triton.backends.nvidia.driver import CudaDriver

    arch = spec.major * 10 + spec.minor

    class PreviewLauncher:
        def __init__(self, src, metadata):
            self.name = getattr(src, "name", "kernel")

        def __call__(self, *args, **kwargs):
            raise PreviewError(f"preview: {self.name} was generated for sm_{arch}, never run")

    class PreviewUtils:
        def get_device_properties(self, device):
            return {"max_shared_mem": spec.smem_optin, "max_num_regs": 65536, "multiprocessor_count": spec.sms,
                    "warpSize": 32, "sm_clock_rate": 0, "mem_clock_rate": 0, "mem_bus_width": 0}

        def load_binary(self, name, kernel, shared, device):
            # (module, function, n_regs, n_spills, max threads): nothing is loaded; n_regs unknown
            # (so Inductor's occupancy-driven RBLOCK halving adds no candidates), 1024 threads.
            return 1, 1, None, None, 1024

        def unload_module(self, module):
            return None

    class PreviewDriver(CudaDriver):
        def __init__(self):
            GPUDriver.__init__(self)  # torch.cuda's (faked) device calls; no libcuda
            self.utils = PreviewUtils()
            self.launcher_cls = PreviewLauncher

        def get_current_target(self):
            return GPUTarget("cuda", arch, 32)

        @staticmethod
        def is_active():
            return True

    return PreviewDriver()


@contextlib.contextmanager
def preview_device(arch: str):
    """Inside: torch and triton see one CUDA GPU of ``arch`` (see the module docstring)."""
    spec = spec_for(arch)
    props = device_properties(spec)
    import torch._dynamo.device_interface as di
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    import torch._inductor.fx_passes.joint_graph as joint_graph
    import torch._subclasses.fake_tensor as fake_tensor
    import torch.fx.experimental.proxy_tensor as proxy_tensor
    from torch._inductor.fx_passes import pad_mm
    from triton.runtime import driver as triton_driver

    def get_props(device=None):
        return props

    def capability(device=None):
        return (spec.major, spec.minor)

    # Two functions, not one: Dynamo registers a handler per function object.
    def exchange(device):
        return 0 if device is None or _index(device) >= 0 else -1

    def maybe_exchange(device):
        return 0 if device is None or _index(device) >= 0 else -1

    def rng_state(device="cuda"):
        return torch.zeros(16, dtype=torch.uint8)

    cuda_calls = {
        "is_available": lambda: True, "device_count": lambda: 1, "get_device_properties": get_props,
        "get_device_capability": capability, "get_device_name": lambda device=None: spec.name,
        "current_device": lambda: 0, "set_device": lambda device: None, "_exchange_device": exchange,
        "_maybe_exchange_device": maybe_exchange, "get_rng_state": rng_state, "set_rng_state": lambda s, device="cuda": None,
        # A CUDA build with no GPU visible (CUDA_VISIBLE_DEVICES=): a factory call on "cuda" first runs
        # torch.cuda._lazy_init (looked up by name from C++), which raises "No CUDA GPUs are available".
        "_lazy_init": lambda: None,
    }
    original_lazy_init = joint_graph.lazy_init
    original_fold = joint_graph.UniformValueConstantFolder.run

    def fold_on_cpu(self, *args, **kwargs):
        # torch.tensor(..., device=cuda) in the graph builds its data below the dispatch modes unless
        # "only lift CPU tensors" is on; then it builds on the CPU and copies (_to_copy, seen below).
        lift = torch._C._only_lift_cpu_tensors()
        torch._C._set_only_lift_cpu_tensors(True)
        try:
            with _ConstantsOnCpu():
                return original_fold(self, *args, **kwargs)
        finally:
            torch._C._set_only_lift_cpu_tensors(lift)

    def lazy_init_on_cpu(input_device=None):
        return original_lazy_init(torch.device("cpu"))

    with contextlib.ExitStack() as stack:
        sdp_lib = torch.library.Library("aten", "IMPL")  # noqa: TOR901 (an override, undone on exit)
        stack.callback(sdp_lib._destroy)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Overriding a previously registered kernel"
            sdp_lib.impl("_fused_sdp_choice", functools.partial(sdp_choice, spec), "Meta")
            sdp_lib.impl("scaled_dot_product_attention", functools.partial(sdpa_composite, spec),
                         "CompositeImplicitAutograd")
        for name, fn in cuda_calls.items():
            stack.enter_context(mock.patch.object(torch.cuda, name, fn))
        iface = di.CudaInterface
        for name in ("get_device_properties", "current_device", "set_device", "device_count",
                     "exchange_device", "maybe_exchange_device"):
            source = {"exchange_device": "_exchange_device", "maybe_exchange_device": "_maybe_exchange_device"}.get(name, name)
            stack.enter_context(mock.patch.object(iface, name, staticmethod(cuda_calls[source])))
        stack.enter_context(mock.patch.object(iface.Worker, "get_device_properties", staticmethod(get_props)))
        stack.enter_context(mock.patch.object(iface.Worker, "current_device", staticmethod(lambda: 0)))
        stack.enter_context(mock.patch.object(torch._C, "_cuda_getCurrentRawStream", lambda device=0: 0, create=True))
        stack.enter_context(mock.patch.object(joint_graph, "lazy_init", lazy_init_on_cpu))
        stack.enter_context(mock.patch.object(joint_graph.UniformValueConstantFolder, "run", fold_on_cpu))
        # torch 2.11 makes a real CUDA tensor when the first fake one is made, if torch.cuda.is_available()
        # (faked True here): a CUDA build with the GPU hidden raises "No CUDA GPUs are available".
        stack.enter_context(mock.patch.object(fake_tensor, "init_gpu_context", lambda device: None))
        # FakeTensorMode decides from torch.cuda.is_available() (faked True here) whether to "avoid device
        # init": on a machine with no usable CUDA it must, as it does by itself without the fake: it never
        # constant-propagates a copy to the device, lifts torch.tensor(...) on the CPU, and installs a no-op
        # CUDA device guard (so .to("cuda") and autograd over fake CUDA tensors work on a CPU build).
        stack.enter_context(_avoiding_device_init(fake_tensor.FakeTensorMode))
        # make_fx (AOT autograd's tracer) computes small constants (torch.tensor([...]) in the graph) for real
        # as it traces, a copy to the device included; without a device that copy cannot run, so no tensor
        # is tracked as a constant (Dynamo has already folded what Python code needed of their values).
        stack.enter_context(mock.patch.object(proxy_tensor, "CONSTANT_NUMEL_LIMIT", -1))
        if hasattr(pad_mm, "get_cached_should_pad"):
            stack.enter_context(mock.patch.object(pad_mm, "get_cached_should_pad", _no_pad))
        if hasattr(torch._C, "_ensureCUDADeviceGuardSet"):
            torch._C._ensureCUDADeviceGuardSet()  # what such a mode's __enter__ does; Dynamo's may not be entered
        _install_cuda_guard()
        # Dynamo's stream tracking asks torch.accelerator for the current stream, which a CUDA build with
        # the GPU hidden cannot give (a CPU build reports no accelerator and skips it): skip it the same way.
        stack.enter_context(mock.patch.object(torch.accelerator, "is_available", lambda: False))
        stack.enter_context(mock.patch.object(torch.accelerator, "current_device_index", lambda: 0))
        stack.enter_context(mock.patch.object(torch.accelerator, "current_stream",
                                              lambda device=None: SimpleNamespace(device=torch.device("cuda", 0),
                                                                                  stream_id=0, device_index=0,
                                                                                  device_type=1)))
        stack.enter_context(inductor_config.patch({
            "compile_threads": 1, "use_static_cuda_launcher": False, "fx_graph_cache": False,
            "fx_graph_remote_cache": False,
        }))
        stack.enter_context(functorch_config.patch({"force_non_lazy_backward_lowering": True,
                                                    "enable_autograd_cache": False}))
        stack.enter_context(mock.patch.dict(di.caching_worker_device_properties, {"cuda": [props]}))
        previous = triton_driver._active
        triton_driver.set_active(_make_driver(spec))
        stack.callback(setattr, triton_driver, "_active", previous)
        yield spec


def _on_cpu(value: Any) -> Any:
    is_cuda = (isinstance(value, torch.device) and value.type == "cuda") or (
        isinstance(value, str) and value.split(":")[0] == "cuda")
    return torch.device("cpu") if is_cuda else value


class _ConstantsOnCpu(torch.utils._python_dispatch.TorchDispatchMode):
    """Every op run inside makes its tensors on the CPU where it was asked for cuda (the constant
    folder's real evaluation; see ``preview_device``)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = {k: _on_cpu(v) for k, v in (kwargs or {}).items()}
        if func is torch.ops.prims.device_put.default:
            args = (args[0], _on_cpu(args[1]), *args[2:])
        return func(*args, **kwargs)


UNBENCHMARKED: list[str] = []  # pad_mm decisions the preview answered without benchmarking
GUARD_UNAVAILABLE: list[str] = []  # why a CPU-only build has no CUDA device guard for this preview


def _install_cuda_guard() -> None:
    """A CPU-only build gets a no-op CUDA device guard (capture/preview_guard.py); where it cannot be
    built, functions that never index a tensor on the faked device still preview, and the others fail
    with the reason kept here."""
    from kernelscope.capture.preview_guard import GuardUnavailable, install_noop_cuda_guard

    try:
        install_noop_cuda_guard()
    except GuardUnavailable as exc:
        GUARD_UNAVAILABLE.append(str(exc))


def _no_pad(key: str) -> bool:
    UNBENCHMARKED.append(key)
    return False


def _avoiding_device_init(mode_cls):
    """FakeTensorMode.avoid_device_init forced True (a property in torch 2.13, an attribute set in
    __init__ in older releases)."""
    if isinstance(inspect.getattr_static(mode_cls, "avoid_device_init", None), property):
        return mock.patch.object(mode_cls, "avoid_device_init", property(lambda self: True))
    original_init = mode_cls.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.avoid_device_init = True

    return mock.patch.object(mode_cls, "__init__", init)


def _index(device: Any) -> int:
    if isinstance(device, torch.device):
        return device.index if device.index is not None else 0
    if isinstance(device, int):
        return device
    return 0


def fake_mode():
    """The FakeTensorMode the user's inputs (and modules) are made under."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


def preview_backend(mode: str, dynamic: bool | None):
    """A Dynamo backend: Inductor compiles the graph (output code logged, kernels compiled for the
    faked target) and Dynamo gets the FX graph back to run on the FakeTensors."""
    from torch._inductor import list_mode_options
    from torch._inductor.compile_fx import compile_fx
    from torch._subclasses.fake_tensor import FakeTensor

    patches = {} if mode in (None, "default") else list_mode_options(mode, dynamic)

    def backend(gm, example_inputs):
        compile_fx(gm, example_inputs, config_patches=patches)

        def run_on_fakes(*args):
            # The graph may build tensors of its own (a causal mask): under the inputs' fake mode, so
            # that nothing is made on the (absent) device.
            mode = next((a.fake_mode for a in args if isinstance(a, FakeTensor)), None)
            with mode if mode is not None else contextlib.nullcontext():
                return gm.forward(*args)

        return run_on_fakes

    return backend


_TRITON_CALL = re.compile(r"^(\w+) = async_compile\.triton\('(\w+)'", re.M)


def check_preview(output_codes: list[str], failure: str | None) -> None:
    """The preview's own sanity checks; PreviewError (one line, naming the versions) if it fails."""
    if failure is not None:
        where = "" if torch_checked() else ", a version it was not checked against"
        raise PreviewError(f"preview failed on {version_line()}{where}: {failure}")
    if not output_codes:
        raise PreviewError(f"preview produced no output code on {version_line()}")
    for code in output_codes:
        if "async_compile.cpp" in code or "cpp_fused_" in code:
            raise PreviewError(f"preview produced C++ kernels, not Triton, on {version_line()}")
