"""The names of torch internals the capture child listens to, in one place. Imports no torch.

Checked against torch 2.11 / 2.13, triton 3.6 / 3.9.
A new torch: run tests/test_quarantine.py (CPU), then a capture (tests/test_capture.py -m slow)
and tests/gpu on a GPU box; what breaks is named here, nowhere else. (The preview's patches are
capture/preview_patches.py; bench's are bench/torch_private.py.)

Private names used: the loggers Inductor logs output code to (``torch._logging`` artifact loggers
named ``<module>.__output_code``), the structured trace logger ``torch.__trace`` (TORCH_TRACE), the
logger ``torch._inductor.cudagraph_trees`` (its INFO lines say whether a CUDA graph was recorded),
and the modules and class names of Dynamo's and Inductor's exceptions.
"""

from __future__ import annotations

# Inductor logs each graph's output code ("Output code: ...") to these loggers (TORCH_LOGS=output_code).
OUTPUT_CODE_LOGGERS = ("torch._inductor.graph.__output_code", "torch._inductor.codecache.__output_code")
OUTPUT_CODE_PREFIX = "Output code: "
TRACE_LOGGER = "torch.__trace"  # TORCH_TRACE's handler hangs here; flushed before the trace is read
OUTPUT_CODE_RECORD = "inductor_output_code"  # the trace record (metadata key) that carries a graph's output code
AOTI_CODE_RECORD = "inductor_aot_wrapper_code"  # the graph_dump that carries an AOTInductor graph's C++ model
CUDAGRAPH_TREES_LOGGER = "torch._inductor.cudagraph_trees"
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")  # torch.compile modes that use CUDA graph trees

# Where an exception comes from, by its class's module and name.
INDUCTOR_MODULE = "torch._inductor"
DYNAMO_MODULE = "torch._dynamo"
INDUCTOR_ERRORS = ("InductorError", "BackendCompilerFailed", "LoweringException")
DYNAMO_ERRORS = ("Unsupported", "TorchRuntimeError")
GRAPH_BREAK_ERRORS = ("Unsupported", "UserError")  # what fullgraph=True raises at a graph break


def torch_logs(mode: str) -> str:
    """TORCH_LOGS for a capture: output code, graph breaks, recompiles, the scheduler's fusion decisions
    (the artifact logger "fusion": why two kernels stayed apart); with CUDA graphs, whether each
    graph's was recorded or skipped (Inductor's cudagraphs and perf_hints logs, cudagraph_trees' INFO)."""
    logs = "output_code,graph_breaks,recompiles,fusion"
    if mode in CUDAGRAPH_MODES:
        logs += f",cudagraphs,perf_hints,{CUDAGRAPH_TREES_LOGGER}"
    return logs


def from_inductor(exc: BaseException) -> bool:
    return exc.__class__.__name__ in INDUCTOR_ERRORS or exc.__class__.__module__.startswith(INDUCTOR_MODULE)


def from_dynamo(exc: BaseException) -> bool:
    return exc.__class__.__module__.startswith(DYNAMO_MODULE) or exc.__class__.__name__ in DYNAMO_ERRORS


def is_graph_break(exc: BaseException) -> bool:
    return exc.__class__.__name__ in GRAPH_BREAK_ERRORS
