"""Bench of a training step's run bundle (tests/fixtures/scripts/mlp_train_step.py: forward, backward and
a compiled SGD step of an fp32 MLP): correct code is not called a MISMATCH (its backward reuses the saved
activations' buffers in place, its optimizer step writes its inputs), a copy with one constant changed
is; and the verdict's wording: what was compared, the reference's dtype, allclose named as the rule
that decided."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, kernelscope_cmd

SCRIPT = REPO / "tests" / "fixtures" / "scripts" / "mlp_train_step.py"
QUICK = ("--reps", "5", "--budget", "0", "--warmup", "2", "--profile-calls", "3", "--no-save")


def _env(root: Path) -> dict:
    return {"KERNELSCOPE_CACHE_DIR": str(root / "cache"), "KERNELSCOPE_CACHE": str(root / "cache")}


@pytest.fixture(scope="session")
def training_bundle(tmp_path_factory) -> Path:
    """`kernelscope run` of the whole training step: 4 graphs (forward, backward, two optimizer steps)."""
    root = tmp_path_factory.mktemp("train-step")
    out = root / "step"
    proc = kernelscope_cmd("run", "--no-ui", "-o", str(out), "--", sys.executable, str(SCRIPT), "--steps", "2",
                           cwd=str(root), env=_env(root))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


def _bench(bundle: Path, cache_root: Path) -> list[str]:
    proc = kernelscope_cmd("bench", str(bundle), "--run-bundle-code", *QUICK, env=_env(cache_root))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.splitlines()


@pytest.mark.slow
def test_training_step_bundle_is_benched_without_a_false_alarm(training_bundle):
    backward = (training_bundle / "graphs" / "0-0-backward" / "output_code.py").read_text()
    # the case this pins: the compiled backward writes into a saved activation its forward returned
    assert "= relu; del relu  # reuse" in backward
    lines = _bench(training_bundle, training_bundle.parent)
    verdict = next(x for x in lines if x.startswith("correctness "))
    assert verdict.startswith("correctness OK: "), "\n".join(lines)
    compared = lines[lines.index(verdict) + 1]
    assert "0-0-forward: 8 outputs as it returned them (saved activations too, before the backward reuses" in compared
    assert "0-0-backward: 8 gradients (from its own side's forward)" in compared
    assert "2-1-inference: 16 inputs as it wrote them in place" in compared


@pytest.mark.slow
def test_a_copy_with_one_constant_changed_is_caught(training_bundle, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(training_bundle, broken)
    code = broken / "graphs" / "0-0-forward" / "output_code.py"
    text = code.read_text()
    first = text.index("beta=1, out=buf2)")  # the second layer's bias, added once: now twice
    code.write_text(text[:first] + "beta=2, out=buf2)" + text[first + len("beta=1, out=buf2)"):])
    # the bundle's own cache: its C++ kernels, unchanged in the copy, are loaded, not compiled again
    lines = _bench(broken, training_bundle.parent)
    verdict = next(x for x in lines if x.startswith("correctness "))
    assert verdict.startswith("correctness MISMATCH: vs a float64 run ("), "\n".join(lines)
    problems = "\n".join(lines[lines.index(verdict) + 2:])
    assert "0-0-forward output 0 (squeeze): compiled's rmse vs float64" in problems
    assert "0-0-backward output" in problems  # its own forward's wrong activations reach the gradients


def test_the_reference_reads_the_graphs_float_dtypes_as_its_own():
    torch = pytest.importorskip("torch")
    from kernelscope.bench.from_bundle import fx_torch

    as64 = fx_torch(torch.float64)
    assert as64.bfloat16 is torch.float64 and as64.float32 is torch.float64 and as64.half is torch.float64
    assert as64.int64 is torch.int64 and fx_torch().bfloat16 is torch.bfloat16


def test_a_half_precision_tensor_is_judged_against_a_float32_reference():
    torch = pytest.importorskip("torch")
    from kernelscope.bench.correctness import compare
    from kernelscope.bench.wording import verdict_line

    torch.manual_seed(0)
    ref = torch.randn(4096)
    eager, good = ref.bfloat16(), (ref + 1e-3 * torch.randn(4096)).bfloat16()
    ok = compare([eager], [good], ["out"], reference=[ref], reference_dtype="float32")
    assert ok["ok"] and ok["reference"] == "float32"
    assert verdict_line(ok).startswith("correctness OK: vs a float32 run (out): compiled rmse ")
    wrong = compare([eager], [(ref * 1.1).bfloat16()], ["out"], reference=[ref], reference_dtype="float32")
    assert not wrong["ok"] and wrong["problems"][0].startswith("out: compiled's rmse vs float32 ")


def test_when_allclose_decided_the_sentence_says_so_and_what_was_compared():
    torch = pytest.importorskip("torch")
    from kernelscope.bench.correctness import compare
    from kernelscope.bench.wording import correctness_lines

    torch.manual_seed(0)
    ref = torch.randn(3, 1000, dtype=torch.float64)
    eager = [r.float() for r in ref]
    verdict = compare(eager, [e.clone() for e in eager], ["a", "b", "c"], reference=list(ref))
    verdict.update(compared="3 outputs", seed=1)
    head, compared = correctness_lines({"correctness": verdict})[1:3]
    assert head.startswith("correctness OK: compiled matches eager within 0.0001 (allclose) in all 3 tensors "
                           "compared; against a float64 run the furthest (")
    assert "no float64 comparison is needed" not in head and "rule:" not in head
    assert compared.startswith("  compared 3 outputs (seed 1)")


def test_output_code_that_writes_an_input_its_graph_only_reads_is_caught(tmp_path):
    pytest.importorskip("torch")
    from kernelscope.bench.bundle_correctness import correctness

    fx = tmp_path / "fx.txt"
    fx.write_text("y = torch.ops.aten.mul.Tensor(x, 2)\n")  # no in-place op: eager only reads x

    class Graph:
        id = "0-0-inference"
        inputs = [{"kind": "tensor", "name": "x", "shape": [64], "stride": [1], "dtype": "float32"}]
        plan = {"outputs": ["y"], "kind": "inference", "eager_fx": str(fx), "random_ops": []}
        rng_state_outputs: set = set()  # what bench/from_bundle.GraphRun reads off the FX text once
        writes_in_place = False

        def eager(self, args):
            return (args[0] * 2,)

        def eager_as(self, dtype):
            return lambda x: (x * 2,)

        def compiled(self, args):
            return (args[0].mul_(2).clone(),)  # the right output, and the input overwritten

    verdict = correctness([Graph()], "cpu")
    assert not verdict["ok"]
    assert verdict["problems"][0].startswith("0-0-inference input x as written in place: ")
    assert verdict["compared"] == "0-0-inference: 1 output, 1 input as it wrote them in place; synthetic random inputs"
