"""Reading AOTInductor's generated C++ (``aoti_compile_and_package``), without torch.

AOTInductor logs its code as two ``graph_dump`` records: ``inductor_aot_wrapper_code`` (the C++ model:
``AOTInductorModel::run_impl`` allocates buffers and launches every kernel in order) and
``inductor_aot_kernel_code`` (the C++ kernels of a CPU model; a GPU model keeps its Triton kernels in the
wrapper, each inside a ``/* async_compile.triton(...) */`` comment of its ``call_triton_*`` launcher). The
bundle keeps them as one text, wrapper then kernels, as Inductor's own debug ``output_code.cpp`` does, and
this module reads it into the same ``OutputCode`` (kernels, launches in order, buffers) that
``ingest/output_code.py`` reads from a JIT compile's Python output code, so the kernel list, fused nodes,
lines (through the ``[Provenance debug handles]`` comments) and bytes come from the same code.

Checked against torch 2.13 (CPU) and 2.11 (CUDA) AOTInductor output.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

from kernelscope.bundle.model import BufferUse
from kernelscope.ingest.dtypes import annotated_tensors, split_dims
from kernelscope.ingest.output_code import (
    KernelDef,
    Launch,
    OutputCode,
    _honest_reads,
    _parse_comment_block,
    _role,
    _triton_signature,
    _use,
)

WRAPPER_RECORD = "inductor_aot_wrapper_code"  # graph_dump names AOTInductor logs its code under
KERNEL_RECORD = "inductor_aot_kernel_code"
_RUN_IMPL = re.compile(r"^void AOTInductorModel::run_impl\(", re.M)
_CPP_DEF = re.compile(r'^extern "C"\s+void\s+(\w+)\(([^)]*)\)\s*\{', re.M)
_TRITON_DEF = re.compile(r"async_compile\.triton\('(\w+)',\s*'''\n(.*?)'''", re.S)
_INT_ARRAY = re.compile(r"static constexpr int64_t (\w+)\[\] = \{([^}]*)\};")
_EMPTY = re.compile(r"aoti_torch_empty_strided\(\d+, (\w+), (\w+), cached_torch_dtype_(\w+), [^&]*&(\w+)_handle\)")
_MOVE = re.compile(r"^auto (\w+) = std::move\((\w+)\);")
_CALL = re.compile(r"^(\w+)\((.*)\)$")
_CHECKED = "AOTI_TORCH_ERROR_CODE_CHECK("
_DATA_PTR = re.compile(r"^\([\w:<> ]+\*\)\((\w+)\.data_ptr\(\)\)$")
_VIEW = re.compile(r"^(?:wrap_with_raii_handle_if_needed\()?reinterpret_tensor_wrapper\((\w+), \d+, (\w+), (\w+), [^)]*\)\)?$")
# Calls of run_impl that are not a kernel: allocation, views, handles, checks.
_NOT_LAUNCHES = re.compile(r"^aoti_torch_(empty_strided|delete|new_tensor|get_|as_strided|_reinterpret|assign|"
                           r"item|copy_|clone|check|grad_mode|cpu_(?:view|reshape)|cuda_(?:view|reshape))|"
                           r"^(assert_size_stride|__check_inputs_outputs|AOTI_RUNTIME_CHECK|check_)")
_LAUNCH_EXTRA = {"this->device_idx_", "stream", "kernels", "this->cubin_dir_", "proxy_executor"}


def is_aoti_code(text: str) -> bool:
    """Whether a graph's code is AOTInductor's C++ model (not a JIT compile's Python output code)."""
    return bool(_RUN_IMPL.search(text))


def join_code(wrapper: str, kernels: str) -> str:
    """The wrapper and the kernels as one text (Inductor's debug ``output_code.cpp``: wrapper, then kernels)."""
    return wrapper if not kernels else wrapper.rstrip("\n") + "\n\n" + kernels


def parse_aoti_code(text: str, post_grad: str = "") -> OutputCode:
    """Kernels, launches (in ``run_impl`` order) and buffers of AOTInductor's C++; ``post_grad``, the graph
    Inductor compiled, sizes the model's inputs and constants."""
    code = OutputCode(text=text)
    lines = text.split("\n")
    _kernel_defs(text, code)
    code.buffers.update(annotated_tensors(post_grad))
    m = _RUN_IMPL.search(text)
    if m is None:
        return code
    start = text.count("\n", 0, m.start())
    arrays: dict[str, list[Any]] = {}
    for i in range(start, len(lines)):
        stripped = lines[i].strip()
        if stripped.startswith("} // AOTInductorModel::run_impl"):
            break
        _statement(stripped, i + 1, lines, code, arrays)
    return code


def _kernel_defs(text: str, code: OutputCode) -> None:
    for m in _CPP_DEF.finditer(text):
        name = m.group(1)
        line = text.count("\n", 0, m.start()) + 1
        end = text.find('\nextern "C"', m.end())
        prefix = text.rfind("#include", 0, m.start())
        begin = prefix if prefix != -1 and text.count("\n", prefix, m.start()) <= 1 else m.start()
        source = text[begin:end if end != -1 else len(text)].rstrip()
        if source.endswith("#include <torch/csrc/inductor/cpp_prefix.h>"):
            source = source[: -len("#include <torch/csrc/inductor/cpp_prefix.h>")].rstrip()
        code.defs[name] = KernelDef(name=name, lang="cpp", source=source + "\n", def_line=line,
                                    signature=_cpp_params(m.group(2)))
    for m in _TRITON_DEF.finditer(text):
        name, body = m.group(1), textwrap.dedent(m.group(2))
        code.defs[name] = KernelDef(name=name, lang="triton", source=body, def_line=text.count("\n", 0, m.start()) + 1,
                                    signature=_triton_signature(body))


def _cpp_params(params: str) -> list[tuple[str, str]]:
    """(name, type) of each parameter of a C++ kernel: ``const float* in_ptr0`` -> ("in_ptr0", "const float*")."""
    out = []
    for part in params.split(","):
        part = " ".join(part.split())
        if not part:
            continue
        m = re.match(r"(.*?[\s*&])(\w+)$", part)
        if m:
            out.append((m.group(2), m.group(1).replace(" *", "*").strip()))
    return out


def _statement(stmt: str, lineno: int, lines: list[str], code: OutputCode, arrays: dict[str, list[Any]]) -> None:
    m = _INT_ARRAY.match(stmt)
    if m:
        arrays[m.group(1)] = split_dims(m.group(2))
        return
    m = _EMPTY.search(stmt)
    if m:
        code.buffers[m.group(4)] = (arrays.get(m.group(1), []), arrays.get(m.group(2), []), m.group(3))
        return
    m = _MOVE.match(stmt)
    if m:
        if m.group(2) in code.buffers:  # auto buf1 = std::move(buf0);  // reuse
            code.buffers[m.group(1)] = code.buffers[m.group(2)]
        return
    call = stmt.split("  //")[0].strip().removesuffix(";")
    if call.startswith(_CHECKED) and call.endswith(")"):
        call = call[len(_CHECKED):-1]
    m = _CALL.match(call)
    if not m or _NOT_LAUNCHES.match(m.group(1)):
        return
    func, args = m.group(1), _split_args(m.group(2))
    name = func[len("call_"):] if func.startswith("call_") and func[len("call_"):] in code.defs else func
    if name in code.defs:
        lang = code.defs[name].lang
    elif func.startswith("aoti_torch_") or func.startswith("aoti_"):
        lang = "extern"
    else:
        return
    nodes, aten, handle, _ = _parse_comment_block(_comments_above(lines, lineno))
    launch = Launch(name=name, lang=lang, line=lineno, text=stmt, handle=handle, comment_nodes=nodes,
                    comment_aten=aten, args=[_arg_desc(a, arrays) for a in args if a not in _LAUNCH_EXTRA])
    if lang == "extern" and launch.args and launch.args[0][0] == "buf" and func.endswith("_out"):
        launch.out.append(launch.args.pop(0)[1])  # aoti_torch_cpu_addmm_out(out, self, mat1, mat2, ...)
    launch.buffers = _launch_buffers(launch, code)
    code.launches.append(launch)


def _split_args(text: str) -> list[str]:
    out, depth, current = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if "".join(current).strip():
        out.append("".join(current).strip())
    return out


def _arg_desc(arg: str, arrays: dict[str, list[Any]]) -> tuple:
    m = _DATA_PTR.match(arg)
    if m:
        return ("buf", m.group(1), None)
    m = _VIEW.match(arg)
    if m:
        return ("buf", m.group(1), (arrays.get(m.group(2), []), arrays.get(m.group(3), [])))
    if re.fullmatch(r"-?\d+L?", arg):
        return ("lit", int(arg.rstrip("L")))
    if re.fullmatch(r"\w+", arg):
        return ("buf", arg, None)
    return ("lit", arg)


def _comments_above(lines: list[str], lineno: int) -> list[str]:
    """The ``//`` comments above a launch (its int_array set-up lines skipped), as ``#`` comments."""
    out = []
    i = lineno - 2
    while i >= 0:
        stripped = lines[i].strip()
        if stripped.startswith("static constexpr int64_t"):
            i -= 1
            continue
        if not stripped.startswith("//"):
            break
        out.append("#" + stripped[2:])
        i -= 1
    return list(reversed(out))


def _launch_buffers(launch: Launch, code: OutputCode) -> list[BufferUse]:
    known = [d for d in launch.args if d[0] == "buf" and d[1] in code.buffers]
    if launch.lang == "extern":
        return [_use(d[1], "read", d[2], code) for d in known] + [
            _use(n, "write", None, code) if n in code.buffers else BufferUse(name=n, role="write") for n in launch.out]
    kdef = code.defs[launch.name]
    if kdef.lang == "triton":
        params = [n for n, t in kdef.signature if t != "constexpr"]
    else:
        params = [n for n, _ in kdef.signature]
    by_name = dict(zip(params, launch.args))
    types = dict(kdef.signature)
    uses, by_ptr = [], {}
    for arg_name, desc in by_name.items():
        arg_type = types.get(arg_name, "")
        if desc[0] == "buf" and desc[1] in code.buffers and ("*" in arg_type):
            use = _use(desc[1], _role(arg_name, arg_type, kdef.lang), desc[2], code)
            uses.append(use)
            by_ptr[arg_name] = use
    _honest_reads(kdef, by_name, by_ptr)
    return uses
