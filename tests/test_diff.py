"""`kernelscope diff` and the DiffView widget: kernels matched across captures, changes a reviewer notices."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from kernelscope.bundle.io import read_bundle
from kernelscope.cli import main
from kernelscope.report.diff import ADDED, CHANGED, REMOVED, REPLACED, SAME, diff_bundles, diffs_for, name_stem
from kernelscope.report.normalise import normalise_text
from tests.conftest import GPU_FIXTURES, REF_CASES, REPO, kernelscope_cmd

AUTOTUNE_PAIRS = [("ref", "linear_relu", "linear_relu_autotune")]
if (GPU_FIXTURES / "linear_relu" / "bundle.json").is_file() and \
        (GPU_FIXTURES / "linear_relu_autotune" / "bundle.json").is_file():
    AUTOTUNE_PAIRS.append(("gpu", "linear_relu", "linear_relu_autotune"))


def _pair(ref_bundles, source: str, a: str, b: str) -> tuple[Path, Path]:
    if source == "ref":
        return ref_bundles[a], ref_bundles[b]
    return GPU_FIXTURES / a, GPU_FIXTURES / b


@pytest.mark.parametrize("source,a,b", AUTOTUNE_PAIRS)
def test_default_vs_max_autotune_shows_the_template_that_replaced_the_extern_mm(ref_bundles, source, a, b):
    pa, pb = _pair(ref_bundles, source, a, b)
    d = diff_bundles(read_bundle(pa), read_bundle(pb))
    replaced = d.of(REPLACED)
    assert len(replaced) == 1, [e.title() for e in d.entries]
    e = replaced[0]
    assert any(k.name == "extern_kernels.mm" for k in e.a)
    [tem] = e.b
    assert tem.kind == "template" and tem.name.startswith("triton_tem_fused_addmm_relu")
    assert f"{tem.name} (template) replaces extern_kernels.mm (extern)" in e.changes[0]
    assert "launches per call 2 -> 1" in e.changes
    assert not d.of(ADDED, REMOVED)


def test_diff_cli_text_as_printed(ref_bundles, capsys):
    assert main(["diff", str(ref_bundles["linear_relu"]), str(ref_bundles["linear_relu_autotune"])]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert any(line.split() == ["kernels", "2", "1", "*"] for line in lines)
    assert any(line.split() == ["extern", "calls", "1", "0", "*"] for line in lines)
    assert "kernels: 1 replaced, 0 changed, 0 added, 0 removed, 0 same" in out
    assert "REPLACED extern_kernels.mm + triton_poi_fused_addmm_relu_threshold_backward_0 -> " \
           "triton_tem_fused_addmm_relu_t_threshold_backward_0" in out
    assert "  + triton_tem_fused_addmm_relu_t_threshold_backward_0 (template; fused permute, mm_default" in out
    # The unified diff of the sources: the pointwise kernel became a matmul template with the relu epilogue.
    assert "    +++ B/triton_tem_fused_addmm_relu_t_threshold_backward_0.source" in out
    assert "    +        acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)" in out


def test_diff_markdown_parses_and_json_for_scripts(ref_bundles, capsys):
    a, b = str(ref_bundles["linear_relu"]), str(ref_bundles["linear_relu_autotune"])
    assert main(["diff", a, b, "--format", "md"]) == 0
    md = capsys.readouterr().out
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    assert any(t.type == "table_open" for t in tokens)
    inline = " ".join(t.content for t in tokens if t.type == "inline")
    assert "triton_tem_fused_addmm_relu_t_threshold_backward_0" in inline and "extern_kernels.mm" in inline
    assert any(t.type == "fence" and t.info == "diff" for t in tokens)
    assert main(["diff", a, b, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["counts"]["replaced"] == 1
    [entry] = data["kernels"]
    assert entry["a_names"] == ["extern_kernels.mm", "triton_poi_fused_addmm_relu_threshold_backward_0"]
    assert entry["diffs"][0]["label"] == "source" and entry["diffs"][0]["added"] > 50


@pytest.mark.parametrize("case", REF_CASES)
def test_a_capture_compared_with_itself_is_all_same(ref_bundles, case):
    b = read_bundle(ref_bundles[case])
    d = diff_bundles(b, read_bundle(ref_bundles[case]))
    assert [e.status for e in d.entries] == [SAME] * len(b.kernels)


def test_two_runs_of_the_same_kernel_compare_equal_despite_temp_paths_and_hashes(ref_bundles, tmp_path):
    """Another run writes other temp folders and cache hashes into sources and stages: still 'same'."""
    copy = tmp_path / "rerun"
    shutil.copytree(ref_bundles["add_relu"], copy)
    for path in copy.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".ttir", ".ttgir", ".llir", ".ptx", ".source"):
            text = path.read_text()
            text = text.replace("/tmp/cap/add_relu/", "/tmp/torchinductor_alice/")
            text = re.sub(r"'backend_hash': '[0-9A-F]+'", "'backend_hash': '" + "AB" * 32 + "'", text)
            path.write_text(text)
    d = diff_bundles(read_bundle(ref_bundles["add_relu"]), read_bundle(copy))
    assert [e.status for e in d.entries] == [SAME]


def test_a_preview_keeping_every_autotune_candidate_compares_same_up_to_the_choice(tmp_path):
    """A preview keeps every candidate config, none chosen (here the num_warps=4 one first); the real
    run chose num_warps=8. The preview's matching candidate is compared, so the kernel is 'same'."""
    copy = tmp_path / "preview"
    shutil.copytree(GPU_FIXTURES / "add_relu", copy)
    manifest = json.loads((copy / "bundle.json").read_text())
    variants = manifest["kernels"][0]["triton"]
    assert [v["chosen"] for v in variants] == [True, False]
    for v in variants:
        v["chosen"] = False
    variants.reverse()
    manifest["environment"]["preview"] = {"arch": "sm_90", "device_name": "NVIDIA H100 80GB HBM3", "checked": True}
    (copy / "bundle.json").write_text(json.dumps(manifest))
    # The real run also kept its autotune result (best_config) beside the chosen variant; a preview has none.
    real = tmp_path / "real"
    shutil.copytree(GPU_FIXTURES / "add_relu", real)
    manifest = json.loads((real / "bundle.json").read_text())
    chosen = manifest["kernels"][0]["triton"][0]
    (real / "chosen.best_config").write_text('{"XBLOCK": 512, "num_warps": 8, "num_stages": 1}')
    chosen["files"]["best_config"] = "chosen.best_config"
    (real / "bundle.json").write_text(json.dumps(manifest))
    preview = read_bundle(copy)
    assert preview.preview and "best_config" in read_bundle(real).kernels[0].triton[0].files
    d = diff_bundles(preview, read_bundle(real))
    assert [(e.status, e.changes) for e in d.entries] == [(SAME, [])]


def _ptx_with_debug_strings(*strings: str) -> str:
    """A PTX tail in the form LLVM writes: .debug_info spells each string as `.b8` lines (the first
    with a comment), ends it with `.b8 0`, after a length that follows the strings' sizes."""
    body = [f".b32 {sum(len(x) + 1 for x in strings) + 11}                                // Length of Unit"]
    for text in strings:
        body += [f".b8 {ord(text[0])}                                 // DW_AT_name"]
        body += [f".b8 {ord(c)}" for c in text[1:]] + [".b8 0"]
    return "\t.section\t.debug_info\n\t{\n" + "\n".join(body) + "\n\t}\n\t.section\t.debug_macinfo\t{\t}\n"


def test_ptx_debug_info_compiled_in_another_folder_compares_equal():
    """PTX spells the folder it was compiled in as bytes in .debug_info (a preview's folder is not the
    GPU box's): normalised, so only a real change (the kernel's name) makes two texts differ."""
    here = _ptx_with_debug_strings("triton", "/tmp/torchinductor_alice/ab", "triton_poi_fused_add_relu_0")
    there = _ptx_with_debug_strings("triton", "/tmp/torchinductor_bob/xyz1", "triton_poi_fused_add_relu_0")
    renamed = _ptx_with_debug_strings("triton", "/tmp/torchinductor_bob/xyz1", "triton_poi_fused_add_relu_9")
    assert here != there and normalise_text(here) == normalise_text(there)
    assert normalise_text(renamed) != normalise_text(there)
    real = normalise_text(next((GPU_FIXTURES / "add_relu").rglob("*.ptx")).read_text())
    assert "// debug_info string: triton_poi_fused_add_relu_0" in real.splitlines()


def test_a_changed_kernel_shows_its_stage_diffs(ref_bundles, tmp_path, capsys):
    copy = tmp_path / "changed"
    shutil.copytree(ref_bundles["add_relu"], copy)
    b = read_bundle(copy)
    k = b.kernels[0]
    v = next(x for x in k.triton if x.chosen) if any(x.chosen for x in k.triton) else k.triton[0]
    ptx = copy / v.files["ptx"]
    old = re.search(r"\.reqntid (\d+)", ptx.read_text())
    new = f".reqntid {int(old.group(1)) * 2}"  # as if launched with twice the threads
    ptx.write_text(ptx.read_text().replace(old.group(0), new, 1))
    d = diff_bundles(read_bundle(ref_bundles["add_relu"]), read_bundle(copy))
    [e] = d.entries
    assert e.status == CHANGED
    assert "ptx: +1 -1 lines" in e.changes[-1] and "source" not in e.changes[-1]
    assert main(["diff", str(ref_bundles["add_relu"]), str(copy)]) == 0
    out = capsys.readouterr().out
    assert "(stage diffs summarised; --stages prints them)" in out and f"+{new}" not in out
    assert main(["diff", str(ref_bundles["add_relu"]), str(copy), "--stages"]) == 0
    out = capsys.readouterr().out
    assert f"    -{old.group(0)}" in out and f"    +{new}" in out


def test_unrelated_captures_list_added_and_removed_kernels(ref_bundles):
    d = diff_bundles(read_bundle(ref_bundles["add_relu"]), read_bundle(ref_bundles["softmax"]))
    assert [e.status for e in d.entries] == [ADDED, REMOVED] or [e.status for e in d.entries] == [REMOVED, ADDED]
    assert {e.title() for e in d.entries} == {"triton_poi_fused_add_relu_0",
                                              "triton_per_fused__softmax_exp_prepare_softmax_online_sub_0"}


def test_cpu_and_gpu_captures_of_one_function_match_their_kernels(ref_bundles, cpu_add_relu):
    d = diff_bundles(read_bundle(cpu_add_relu), read_bundle(ref_bundles["add_relu"]))
    [e] = d.entries
    assert e.status == CHANGED
    assert [k.name for k in e.a] == ["cpp_fused_add_relu_0"]
    assert [k.name for k in e.b] == ["triton_poi_fused_add_relu_0"]
    assert "kind cpp -> pointwise" in e.changes
    assert name_stem("cpp_fused_add_relu_0") == name_stem("triton_poi_fused_add_relu_0") == "fused_add_relu"


def test_bench_deltas_when_both_captures_were_benchmarked(ref_bundles, tmp_path, capsys):
    from tests.test_report import _with_probe_bench

    a = _with_probe_bench(ref_bundles["linear_relu"], tmp_path / "a", "linear_relu")
    b = _with_probe_bench(ref_bundles["add_relu"], tmp_path / "b", "add_relu")
    d = diff_bundles(read_bundle(a), read_bundle(b))
    assert any(e.time_a_ms is not None for e in d.entries) and any(e.time_b_ms is not None for e in d.entries)
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "compiled time per call" in out and "eager time per call" in out
    assert main(["diff", str(a), str(ref_bundles["add_relu"])]) == 0
    assert "bench results only in A; no time deltas" in capsys.readouterr().out


def test_normalise_replaces_paths_and_hashes():
    text = ('loc("/tmp/torchinductor_bob/ab/cabcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnop.py":12:3) '
            "'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336' "
            "JB5PY5U6POIUYB2WPX3PI3U56742U5KLVHERKSDQ7ANDXTNUIDZQ")
    assert normalise_text(text) == 'loc("<inductor>/<hash>.py":12:3) \'backend_hash\': \'<hash>\' <hash>'


def test_diff_errors_are_one_line(ref_bundles, tmp_path):
    proc = kernelscope_cmd("diff", str(ref_bundles["add_relu"]), str(tmp_path / "missing"))
    assert proc.returncode == 2 and "no such bundle folder" in proc.stderr and "Traceback" not in proc.stderr


def test_changed_entry_texts_are_cached(ref_bundles):
    d = diff_bundles(read_bundle(ref_bundles["linear_relu"]), read_bundle(ref_bundles["linear_relu_autotune"]))
    e = d.of(REPLACED)[0]
    assert diffs_for(d, e) is diffs_for(d, e)


def test_device_assert_strings_in_ptx_and_llir_ignore_the_folder():
    """A device assert (an embedding's index bound) puts the Inductor file's path into the PTX as a byte
    array and into the LLVM IR as a string whose length follows the path: normalised on both."""
    def ptx(path):
        data = ", ".join(str(ord(c)) for c in path) + ", 0"
        return f".global .align 1 .b8 assertFile_0[{len(path) + 1}] = {{{data}}};\n"

    def llir(path):
        return f'@assertFile_0 = internal constant [{len(path) + 1} x i8] c"{path}\\00"\n'

    a = "/tmp/kernelscope-work-p1578-_hkdcw0q/inductor/4q/c4q5" + "a" * 47 + ".py"
    b = "/tmp/kernelscope-work-p27-86pf9_6n/inductor/4q/c4q5" + "b" * 47 + ".py"
    assert normalise_text(ptx(a)) == normalise_text(ptx(b)) and normalise_text(llir(a)) == normalise_text(llir(b))
    message = ".global .align 1 .b8 assertMessage_0[7] = {105, 110, 100, 101, 120, 33, 0};"
    assert normalise_text(message) == '.global .align 1 .b8 assertMessage_0[<n>] = "index!";'


def _linear_relu_pair(tmp_path: Path) -> tuple[Path, Path]:
    """linear_relu captured twice, B for 4x the rows under no_grad and eval: its extern mm moves more bytes
    (the same call), its Triton kernel is the same; both benchmarked, the kernel timed in µs."""
    out = []
    for name, rows, options, ms in (("a", 32, {"no_grad": False, "eval": False, "grad_mode": "grad"}, 0.0027),
                                    ("b", 128, {"no_grad": True, "eval": True, "grad_mode": "no_grad",
                                                "train": "eval"}, 0.0054)):
        dst = tmp_path / name
        shutil.copytree(GPU_FIXTURES / "linear_relu", dst)
        m = json.loads((dst / "bundle.json").read_text())
        m["target"]["inputs"] = [f"f32[{rows}, 512]", "f32[512, 512]", "f32[512]"]
        m["options"].update(options)
        mm, relu = m["kernels"]
        for buf in mm["buffers"]:
            if buf["name"] in ("arg0_1", "buf0"):
                buf["bytes"] = rows * 512 * 4
        m["extra"]["bench"] = {"kernels": {relu["id"]: {"time_ms": ms}}}
        (dst / "bundle.json").write_text(json.dumps(m))
        out.append(dst)
    return out[0], out[1]


def test_diff_says_first_that_the_inputs_and_the_grad_mode_differ(tmp_path, capsys):
    a, b = _linear_relu_pair(tmp_path)
    assert main(["diff", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("the captures differ, A -> B:")
    assert lines[at + 1:at + 3] == ["  inputs f32[32, 512], f32[512, 512], f32[512] -> f32[128, 512], f32[512, 512], "
                                    "f32[512]", "  ran under grad -> no_grad · eval"]
    assert at < next(i for i, line in enumerate(lines) if line.split()[:1] == ["graphs"])  # before the counts
    assert main(["diff", str(a), str(b), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["differs"][1] == "ran under grad -> no_grad · eval"
    assert main(["diff", str(a), str(a)]) == 0
    assert "the captures differ" not in capsys.readouterr().out


def test_an_extern_call_on_both_sides_is_not_shown_as_removed_and_added(tmp_path, capsys):
    a, b = _linear_relu_pair(tmp_path)
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    entry = out[out.index("CHANGED  extern_kernels.mm"):].split("\n\n")[0].splitlines()
    assert entry == ["CHANGED  extern_kernels.mm",
                     "  = extern_kernels.mm (extern; fused mm_default)",
                     "    bytes read 1.1 MB -> 1.3 MB",
                     "    bytes written 65.5 KB -> 262.1 KB"]


def test_diff_times_say_microseconds_as_everything_else_does(tmp_path, capsys):
    a, b = _linear_relu_pair(tmp_path)
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "SAME     triton_poi_fused_addmm_relu_0   [2.7 µs -> 5.4 µs (+100%)]" in out
    assert " us" not in out


def test_diff_of_an_opened_trace_says_no_difference_it_cannot_know(tmp_path):
    """An opened trace records neither inputs nor device: its diff with a capture lists no 'inputs ? -> ...'
    or 'device None -> cuda', only what both sides know."""
    from kernelscope.ingest.open_trace import bundle_from_trace

    opened = tmp_path / "opened"
    bundle_from_trace(REPO / "tests" / "fixtures" / "traces" / "aoti_cpu", opened)
    proc = kernelscope_cmd("diff", str(opened), str(REPO / "tests" / "fixtures" / "gpu" / "add_relu"))
    assert proc.returncode == 0, proc.stderr
    assert "device None" not in proc.stdout and "inputs ?" not in proc.stdout and "the captures differ" not in proc.stdout
