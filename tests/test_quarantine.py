"""The torch and triton internals kernelscope names (capture/torch_hooks.py, pipeline/triton_private.py,
bench/torch_private.py)
still exist in the installed versions. A new torch or triton that moves one fails here, by name."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kernelscope.capture import torch_hooks


def _in_child(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_torch_names_the_capture_listens_to_still_exist():
    out = _in_child(
        "import logging, torch, torch._inductor.graph, torch._inductor.codecache, torch._inductor.exc, "
        "torch._dynamo.exc, torch._logging._internal as li\n"
        "import torch._inductor.cudagraph_trees as ct\n"
        "print(torch._inductor.graph.output_code_log.name)\n"
        "print(torch._inductor.codecache.output_code_log.name)\n"
        "print(li.trace_log.name)\n"
        "print(ct.__name__)  # TORCH_LOGS takes a module name\n"
        "for e in (torch._inductor.exc.InductorError, torch._dynamo.exc.BackendCompilerFailed, "
        "torch._dynamo.exc.Unsupported, torch._dynamo.exc.UserError, torch._dynamo.exc.TorchRuntimeError):\n"
        "    print(e.__module__, e.__name__)\n")
    lines = out.split("\n")
    assert set(lines[:2]) <= set(torch_hooks.OUTPUT_CODE_LOGGERS)  # 2.13 logs both from codecache's logger
    assert lines[2] == torch_hooks.TRACE_LOGGER
    assert lines[3] == torch_hooks.CUDAGRAPH_TREES_LOGGER
    for line in lines[4:9]:
        module, name = line.split()
        assert module.startswith((torch_hooks.INDUCTOR_MODULE, torch_hooks.DYNAMO_MODULE)), line
        assert name in (*torch_hooks.INDUCTOR_ERRORS, *torch_hooks.DYNAMO_ERRORS, *torch_hooks.GRAPH_BREAK_ERRORS)


def test_exceptions_are_told_apart_by_where_they_come_from():
    class Unsupported(Exception):
        pass

    Unsupported.__module__ = "torch._dynamo.exc"
    assert torch_hooks.from_dynamo(Unsupported()) and torch_hooks.is_graph_break(Unsupported())
    assert not torch_hooks.from_inductor(Unsupported()) and not torch_hooks.from_dynamo(ValueError())
    assert "cudagraph_trees" in torch_hooks.torch_logs("reduce-overhead")
    assert "cudagraph" not in torch_hooks.torch_logs("default")


def test_triton_backend_for_an_arch_has_every_stage():
    pytest.importorskip("triton")
    out = _in_child("from kernelscope.pipeline.triton_private import Compiler\n"
                    "c = Compiler(90)\n"
                    "print(c.target.arch, ' '.join(c.stages(c.options({'num_warps': 8, 'arch': 'sm_80'}))))\n"
                    "print(c.options({'num_warps': 8}).num_warps)\n")
    first, second = out.strip().split("\n")
    arch, *stages = first.split()
    assert arch == "90" and stages[:5] == ["ttir", "ttgir", "llir", "ptx", "cubin"]
    assert second == "8"


@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_torch_names_the_bench_uses_still_exist():
    out = _in_child(
        "import importlib, logging, torch\n"
        "from kernelscope.bench import torch_private as tp\n"
        "t = torch.ones(3)\n"
        "print(tp.is_marked_static(t))\n"
        "tp.mark_static_address(t)\n"
        "print(tp.is_marked_static(t))\n"
        "print(isinstance(tp.cudagraph_skips(), int))\n"
        "from torch._inductor.codecache import PyCodeCache\n"
        "print(isinstance(PyCodeCache.modules, list) and tp.output_code_modules() == PyCodeCache.modules)\n"
        "tp.reset_dynamo()\n"
        "cls = getattr(importlib.import_module(tp.CACHING_AUTOTUNER[0]), tp.CACHING_AUTOTUNER[1])\n"
        "print(callable(cls.run), 'configs' in cls.__init__.__code__.co_names, "
        "'launchers' in cls.__init__.__code__.co_names)\n"
        "import triton\n"
        "cfg = triton.Config({'XBLOCK': 64}, num_warps=4, num_stages=2)\n"
        "print(tp.config_dict(cfg))\n"
        "print(logging.getLogger(tp.INDUCTOR_LOGGER).name)\n")
    lines = out.strip().split("\n")
    assert lines[:4] == ["False", "True", "True", "True"]
    assert lines[4] == "True True True", "CachingAutotuner lost run/configs/launchers"
    assert lines[5] == "{'kwargs': {'XBLOCK': 64}, 'num_warps': 4, 'num_stages': 2}"
    assert lines[6] == "torch._inductor"
