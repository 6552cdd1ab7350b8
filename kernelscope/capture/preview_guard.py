"""Preview on a CPU-only torch build: a no-op CUDA device guard, so tensors on the faked device can
be indexed, sliced and moved while Dynamo traces.

Part of the preview's quarantine (see capture/preview_patches.py). Checked against torch 2.13 (CPU
build, g++ 12, ninja) and torch 2.11 (CUDA build: not needed there, torch._C._ensureCUDADeviceGuardSet
installs one when no GPU is visible).

Why: ops such as ``tensor[..., None]`` or ``.to(device=...)`` enter a C++ DeviceGuard for the
tensor's device even when the tensor is a FakeTensor; a CPU-only build has no guard registered for
CUDA and fails with "PyTorch is not linked with support for cuda devices" (every transformers model
does this with its position ids). c10 ships ``NoOpDeviceGuardImpl<DeviceType>`` in its headers; a
C++ file of a few lines registers it for CUDA when no guard is there. It is built with the C++
compiler Inductor's CPU backend needs anyway, by torch.utils.cpp_extension.load_inline (cached in
torch's extensions folder, keyed by the source, so built once per torch version), and loaded as a
plain shared library (its static initializer registers the guard): no pybind11, no torch/extension.h.
"""

from __future__ import annotations

import shutil

import torch

_SOURCE = r"""
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace {
// Registered at load (a static initializer), only where the build has no CUDA guard of its own.
struct RegisterNoOpCudaGuard {
  RegisterNoOpCudaGuard() {
    if (!c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA)) {
      static c10::impl::NoOpDeviceGuardImpl<c10::DeviceType::CUDA> guard;
      c10::impl::registerDeviceGuard(c10::DeviceType::CUDA, &guard);
    }
  }
};
RegisterNoOpCudaGuard register_no_op_cuda_guard;
}  // namespace
"""

EXTENSION_NAME = "kernelscope_noop_cuda_guard"


class GuardUnavailable(Exception):
    """The guard cannot be built here; one line saying why and what to do."""


def cuda_guard_missing() -> bool:
    """True on a build of torch without CUDA (a CPU-only wheel, every Mac's)."""
    return not torch.backends.cuda.is_built()


def install_noop_cuda_guard() -> None:
    """Registers the no-op CUDA device guard in this process (building it the first time)."""
    if not cuda_guard_missing():
        return
    missing = [tool for tool in ("c++", "ninja") if shutil.which(tool) is None]
    if missing:
        raise GuardUnavailable(
            f"the no-op CUDA device guard a preview needs could not be built ({' and '.join(missing)} not found on "
            "PATH; install them: a C++ compiler, which Inductor needs for the CPU anyway, and `pip install ninja`)")
    from torch.utils.cpp_extension import load_inline

    try:
        load_inline(EXTENSION_NAME, cpp_sources=[_SOURCE], is_python_module=False, no_implicit_headers=True,
                    verbose=False)
    except Exception as exc:  # a compiler error, a read-only cache folder
        line = str(exc).strip().splitlines()[-1] if str(exc).strip() else exc.__class__.__name__
        raise GuardUnavailable(f"building the no-op CUDA device guard a preview needs failed ({line})") from exc
