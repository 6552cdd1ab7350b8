"""MLIR and LLVM pass logs: parsing Triton's dumps, changed marks, diffs, compact lazy storage, recompute."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle
from kernelscope.pipeline.passes import (
    load_pass_file,
    parse_mlir_dump,
    read_pass_logs,
    recompute_passes,
    select_log,
    strip_locs,
    write_pass_logs,
)

from .conftest import REFERENCE

DUMP = REFERENCE / "add_relu_passes" / "mlir_passes.txt"


@pytest.fixture(scope="module")
def ref_logs():
    return load_pass_file(DUMP)


def test_reference_dump_has_over_100_passes_in_two_compiles(ref_logs):
    # The dump holds two autotune configs of add_relu (num_warps 4 and 8), 77 MLIR passes each.
    assert sum(len(log.passes) for log in ref_logs) == 154
    assert sorted(log.label for log in ref_logs) == ["num_warps=4", "num_warps=8"]
    log = ref_logs[0]
    assert len(log.passes) == 77
    assert log.passes[0].name == "Inliner" and log.passes[0].arg == "inline"
    assert log.passes[-1].name == "LLVMDIScope"
    names = [p.name for p in log.passes]
    assert "ConvertTritonToTritonGPU" in names and "ConvertTritonGPUToLLVM" in names
    stages = [p.stage for p in log.passes]
    assert stages[0] == "ttir" and "ttgir" in stages and stages[-1] == "llvm-mlir"


def test_changed_only_filter_shrinks_the_list(ref_logs):
    log = ref_logs[0]
    changed = log.changed_only()
    assert 5 < len(changed) < len(log.passes) / 2
    assert all(p.changed for p in changed)
    assert log.passes[-1].changed is None  # its output is LLVM IR, not dumped as MLIR
    convert = next(p for p in log.passes if p.name == "ConvertTritonToTritonGPU")
    assert convert.changed is True


def test_diff_of_a_changed_pass_shows_removed_and_added_lines(ref_logs):
    log = ref_logs[0]
    convert = next(p for p in log.passes if p.name == "ConvertTritonToTritonGPU")
    diff = log.diff(convert).splitlines()
    assert diff[0] == "--- before ConvertTritonToTritonGPU"
    assert any(ln.startswith("+") and "#blocked" in ln for ln in diff)
    assert any(ln.startswith("-") and "tt.load" in ln for ln in diff)
    assert not any("loc(" in ln for ln in diff)  # debug locations are stripped by default
    unchanged = next(p for p in log.passes if p.changed is False)
    assert log.diff(unchanged) == ""
    assert "no IR after" in log.diff(log.passes[-1])


def test_strip_locs():
    assert strip_locs('#loc3 = loc("a.py":1:2)\n  %x = tt.load %p loc(#loc3)\n') == "  %x = tt.load %p"


def test_storage_dedups_and_loads_lazily(ref_logs, tmp_path):
    index = write_pass_logs(ref_logs, tmp_path)
    texts = list((tmp_path / "texts").iterdir())
    distinct = {k for log in ref_logs for p in log.passes for k in (p.before, p.after) if k}
    assert len(texts) == len(distinct) < 154
    stored = sum(f.stat().st_size for f in texts) + index.stat().st_size
    assert stored < DUMP.stat().st_size / 3
    logs = read_pass_logs(tmp_path)
    assert logs[0].store.loaded == 0
    convert = next(p for p in logs[0].passes if p.name == "ConvertTritonToTritonGPU")
    assert logs[0].before(convert) == ref_logs[0].before(convert)
    assert logs[0].store.loaded == 1
    assert [p.changed for p in logs[0].passes] == [p.changed for p in ref_logs[0].passes]


def test_select_log_matches_the_variants_num_warps(ref_logs, ref_bundles):
    bundle = read_bundle(ref_bundles["add_relu"])
    kernel = bundle.kernel("triton_poi_fused_add_relu_0")
    for variant in kernel.triton:
        log = select_log(ref_logs, variant)
        assert log.label == f"num_warps={variant.metadata['num_warps']}"


def test_triton_39_headers_and_internal_dumps_parse():
    text = "\n".join(
        [
            "// -----// IR Dump Before InlinerPass: inline{default-pipeline=canonicalize max-iterations=4 }"
            " ('builtin.module' operation) //----- //",
            "module {",
            "  tt.func @k() {",
            "    tt.return",
            "  }",
            "}",
            "// -----// IR Dump Before CanonicalizerPass: canonicalize{max-iterations=10 region-simplify=normal}"
            " ('tt.func' operation: @k) //----- //",
            "module {",
            "  tt.func @k() {",
            "    %c = arith.constant 1 : i32",
            "    tt.return",
            "  }",
            "}",
            "// -----// SoftwarePipeliner internal IR Dump After: LowerLoops",
            "garbage that is not the module",
        ]
    )
    (log,) = parse_mlir_dump(text)
    assert [(p.name, p.arg, p.scope) for p in log.passes] == [
        ("InlinerPass", "inline", "builtin.module"),
        ("CanonicalizerPass", "canonicalize", "tt.func @k"),
    ]
    assert log.passes[0].changed is True
    assert "garbage" not in log.before(log.passes[1])


@pytest.fixture(scope="module")
def recomputed(ref_bundles, tmp_path_factory):
    bundle = read_bundle(ref_bundles["add_relu"])
    kernel = bundle.kernel("triton_poi_fused_add_relu_0")
    out = tmp_path_factory.mktemp("passes")
    return bundle, kernel, out, recompute_passes(bundle, kernel, out_dir=out)


def test_recompute_gives_mlir_and_llvm_passes(recomputed):
    _, _, out, logs = recomputed
    mlir = select_log(logs, None, "mlir")
    llvm = select_log(logs, None, "llvm")
    assert len(mlir.passes) > 60 and "sm_90" in mlir.origin
    assert mlir.changed_only() and len(mlir.changed_only()) < len(mlir.passes)
    assert any(p.name.startswith("ConvertTritonGPUToLLVM") for p in mlir.passes)
    assert len(llvm.passes) > 50
    assert any(p.kind == "mir" for p in llvm.passes)
    changed = llvm.changed_only()[0]
    assert any(ln.startswith(("+", "-")) for ln in llvm.diff(changed).splitlines()[2:])
    assert (out / "passes.json").is_file() and not (out / "compile" / "mlir_passes.txt").exists()


def test_recompute_is_read_back_not_redone(recomputed):
    bundle, kernel, out, logs = recomputed
    again = recompute_passes(bundle, kernel, out_dir=out)
    assert [len(log.passes) for log in again] == [len(log.passes) for log in logs]
    assert again[0].store.loaded == 0


FIXTURE_PASSES = Path(__file__).resolve().parent / "fixtures" / "gpu" / "add_relu_passes"


def test_passes_stored_by_a_gpu_capture_load_lazily():
    from kernelscope.pipeline.passes import stored_passes

    bundle = read_bundle(FIXTURE_PASSES)
    kernel = bundle.kernel("triton_poi_fused_add_relu_0")
    for variant in kernel.triton:
        logs = stored_passes(bundle, kernel, variant)
        mlir = select_log(logs, variant, "mlir")
        assert mlir.label == f"num_warps={variant.metadata['num_warps']}"
        assert len(mlir.passes) > 70 and "triton 3.6" in mlir.origin
        assert 0 < len(mlir.changed_only()) < len(mlir.passes)
        assert mlir.store.loaded == 0
        convert = next(p for p in mlir.passes if p.name.startswith("ConvertTritonToTritonGPU"))
        assert any(ln.startswith("+") and "#blocked" in ln for ln in mlir.diff(convert).splitlines())
        assert len(select_log(logs, variant, "llvm").passes) > 100
