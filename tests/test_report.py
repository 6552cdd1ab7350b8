"""`kernelscope report`: Markdown that parses with its kernel table, linked HTML, JSON for scripts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from kernelscope.bundle.io import read_bundle
from kernelscope.cli import main
from kernelscope.report.data import report_data
from kernelscope.report.html import anchor, render_html
from kernelscope.report.markdown import render_markdown
from tests.conftest import GPU_FIXTURES, REFERENCE, kernelscope_cmd

GPU_CASES = sorted(p.name for p in GPU_FIXTURES.glob("*") if (p / "bundle.json").is_file()) \
    if GPU_FIXTURES.is_dir() else []


def table_cells(markdown: str) -> list[str]:
    """The text of every cell of every table, as a Markdown parser (GFM tables) reads them."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    cells, depth = [], 0
    for tok in tokens:
        if tok.type == "table_open":
            depth += 1
        elif tok.type == "table_close":
            depth -= 1
        elif depth and tok.type == "inline":
            cells.append("".join(c.content for c in tok.children or []))
    return cells


def assert_kernel_table(markdown: str, bundle_path: Path) -> None:
    b = read_bundle(bundle_path)
    assert b.kernels, bundle_path
    cells = table_cells(markdown)
    assert cells, "no table in the report"
    for k in b.kernels:
        # A kernel launched several times reads "name x2".
        assert any(c == k.name or c.startswith(k.name + " x") for c in cells), f"{k.name} not a table cell"
        for node in k.fx_nodes[:8]:
            assert node in cells or any(node in c for c in cells)


@pytest.mark.parametrize("case", ["add_relu", "mul_add_sigmoid", "linear_relu", "linear_relu_autotune",
                                  "linear_relu_bf16_autotune", "softmax", "layernorm", "sin_cos", "with_break",
                                  "mlp_train"])
def test_markdown_report_of_each_reference_sample_parses_with_its_kernel_table(ref_bundles, case, capsys):
    assert main(["report", str(ref_bundles[case]), "--format", "md"]) == 0
    assert_kernel_table(capsys.readouterr().out, ref_bundles[case])


@pytest.mark.parametrize("case", GPU_CASES or [pytest.param("none", marks=pytest.mark.skip("no GPU fixtures yet"))])
def test_markdown_report_of_each_gpu_fixture(case, capsys):
    assert main(["report", str(GPU_FIXTURES / case)]) == 0
    assert_kernel_table(capsys.readouterr().out, GPU_FIXTURES / case)


def test_markdown_report_of_a_cpu_capture_shows_target_options_and_environment(cpu_add_relu, capsys):
    assert main(["report", str(cpu_add_relu)]) == 0
    md = capsys.readouterr().out
    assert_kernel_table(md, cpu_add_relu)
    assert "**Target:** `add_relu` at `add_relu.py:6`, inputs `f32[65536]`, `f32[65536]`" in md
    assert "`mode=default, device=cpu`" in md
    assert "torch 2." in md
    assert "1 graph, 1 kernel (1 cpp), 1 launch per call" in md
    assert "`add_relu.py:7`: `return (a + b).relu()`" in md


def test_report_lists_graph_breaks_and_both_graphs(ref_bundles, capsys):
    assert main(["report", str(ref_bundles["with_break"])]) == 0
    md = capsys.readouterr().out
    assert "### Graph breaks (1)" in md
    assert "`cases.py:22`" in md and "print" in md
    cells = table_cells(md)
    assert "graph" in cells  # a graph column appears once there are several graphs


def test_autotune_table_in_report(ref_bundles, capsys):
    assert main(["report", str(ref_bundles["linear_relu_autotune"])]) == 0
    md = capsys.readouterr().out
    assert "### Autotune `mm(32x512, 512x512)`" in md
    assert "triton_mm_4" in table_cells(md)


def _with_probe_bench(src: Path, dst: Path, case: str) -> Path:
    """A copy of a bundle carrying the real H200 profiler probe of the same case as bench results."""
    shutil.copytree(src, dst)
    probe = json.loads((REFERENCE / "profiler_probe.json").read_text())
    manifest = dst / "bundle.json"
    data = json.loads(manifest.read_text())
    data["extra"]["bench"] = {"device": probe["device"], "method": "torch.profiler, do_bench", **probe[case]}
    manifest.write_text(json.dumps(data))
    return dst


def test_report_shows_eager_vs_compiled_and_kernel_times_when_benchmarked(ref_bundles, tmp_path, capsys):
    bundle = _with_probe_bench(ref_bundles["add_relu"], tmp_path / "add_relu", "add_relu")
    assert main(["report", str(bundle)]) == 0
    md = capsys.readouterr().out
    assert "### Eager vs compiled on NVIDIA H200" in md
    cells = table_cells(md)
    row = cells.index("kernel launches per call")
    assert cells[row + 1: row + 3] == ["2", "1"]
    assert "time" in cells
    assert "2.7 µs" in cells  # triton_poi_fused_add_relu_0's device time in the probe
    data = report_data(read_bundle(bundle))
    assert data["bench"]["eager"]["launches"] == 2 and data["bench"]["compiled"]["launches"] == 1
    assert data["kernels"][0]["time_ms"] == pytest.approx(0.0027)


def test_report_without_bench_has_no_time_column(ref_bundles, capsys):
    assert main(["report", str(ref_bundles["add_relu"])]) == 0
    md = capsys.readouterr().out
    assert "Eager vs compiled" not in md and "time" not in table_cells(md)


def test_html_report_links_kernels_graphs_and_escapes(ref_bundles, tmp_path):
    out = tmp_path / "r.html"
    assert main(["report", str(ref_bundles["with_break"]), "-o", str(out)]) == 0  # format from the suffix
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    b = read_bundle(ref_bundles["with_break"])
    for k in b.kernels:
        assert f'href="#{anchor("k", k.id)}"' in html and f'id="{anchor("k", k.id)}"' in html
    for g in b.graphs:
        assert f'href="#{anchor("g", g.id)}"' in html and f'id="{anchor("g", g.id)}"' in html
    assert 'href="#graph-breaks"' in html and 'id="graph-breaks"' in html
    assert "<details><summary>source</summary>" in html  # highlighted kernel source
    # The graph break's code, print("shape", x.shape), is escaped.
    assert "print(&quot;shape&quot;, x.shape)" in html
    assert 'print("shape"' not in html


def test_html_escapes_hostile_text(ref_bundles):
    b = read_bundle(ref_bundles["add_relu"])
    b.target["spec"] = "<script>alert(1)</script>"
    b.notes.append("a <b>note</b> & more")
    html = render_html(report_data(b), b)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "a &lt;b&gt;note&lt;/b&gt; &amp; more" in html


def test_markdown_cells_survive_pipes_and_backticks(ref_bundles):
    b = read_bundle(ref_bundles["add_relu"])
    b.kernels[0].fx_nodes = ["a|b", "x`y"]
    md = render_markdown(report_data(b))
    cells = table_cells(md)
    row = cells.index(b.kernels[0].name)
    assert cells[row + 2] == "a|b, x`y"  # one cell: the pipe did not split the row


def test_json_report_for_scripts(ref_bundles, capsys):
    assert main(["report", str(ref_bundles["mlp_train"]), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    b = read_bundle(ref_bundles["mlp_train"])
    assert [k["name"] for k in data["kernels"]] == [k.name for k in b.kernels]
    assert {g["kind"] for g in data["graphs"]} == {"forward", "backward"}
    assert data["summary"]["kernels"] == len(b.kernels)
    assert data["bench"] is None


def test_report_errors_are_one_line(tmp_path):
    proc = kernelscope_cmd("report", str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no such bundle folder" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_report_refuses_a_folder_as_output(ref_bundles, tmp_path, capsys):
    from kernelscope.bundle.io import BundleError
    from kernelscope.commands import report as cli

    args = type("A", (), {"bundle": str(ref_bundles["add_relu"]), "format": "md", "out": str(tmp_path),
                          "no_sources": False})()
    with pytest.raises(BundleError, match="is a folder"):
        cli.run(args)


def test_report_and_diff_import_neither_torch_nor_textual():
    import subprocess
    import sys

    code = ("import sys, kernelscope.commands.report, kernelscope.commands.diff, kernelscope.commands.open, "
            "kernelscope.report.render, kernelscope.report.opener, "
            "kernelscope.report.html, kernelscope.report.diff_render\n"
            "bad = [m for m in ('torch', 'triton', 'textual') if m in sys.modules]\n"
            "assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
