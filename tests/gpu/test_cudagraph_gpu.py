"""CUDA graphs on a real GPU under reduce-overhead: a graph Inductor skips shows its reason in the
capture (show) and in the bench, and the bench's correctness check copes with a function that writes
its input in place."""

from __future__ import annotations

import json

import pytest

from kernelscope.bundle.io import read_bundle

from ..conftest import kernelscope_cmd

SKIPS = "benchmarks/models/cudagraph_skip.py"


@pytest.fixture(scope="module")
def skipped(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("cudagraph-skips")
    out = {}
    for name in ("mutate_input", "branch"):
        out[name] = root / name
        proc = kernelscope_cmd("capture", f"{SKIPS}::{name}", "--mode", "reduce-overhead", "-o", str(out[name]), "-q")
        assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.parametrize("name, reason", [("mutate_input", "mutated inputs"), ("branch", "torch.cond")])
def test_a_skipped_cuda_graph_shows_inductors_reason(skipped, name, reason):
    (graph,) = read_bundle(skipped[name]).graphs
    assert graph.cudagraphs["status"] == "skipped" and reason in graph.cudagraphs["reason"]
    shown = kernelscope_cmd("show", str(skipped[name])).stdout
    assert f"cuda graphs: {graph.id} skipped (" in shown and reason in shown


def test_bench_names_the_skip_and_checks_the_in_place_write(skipped):
    proc = kernelscope_cmd("bench", str(skipped["mutate_input"]), "--no-save", "--budget", "0.3", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)["run"]
    assert any("mutated inputs" in s for s in run["cudagraphs"]["skips"])
    assert run["correctness"]["ok"], run["correctness"]
    assert "1 input written in place" in run["correctness"]["compared"]
