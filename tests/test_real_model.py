"""A real multi-file model with repeated layers, recorded on the H200: transformers' GPT-2 (12 layers,
`kernelscope capture benchmarks/models/hf_gpt2.py::GPT2 --no-grad --eval`), read on the CPU."""

from pathlib import Path

from kernelscope.bundle.io import read_bundle, read_text

from .conftest import REPO, kernelscope_cmd

GPT2 = Path(REPO) / "tests" / "fixtures" / "gpu" / "gpt2"


def test_every_generated_kernel_names_a_line_in_the_models_own_files():
    b = read_bundle(GPT2)
    assert b.options.get("grad_mode") == "no_grad" and b.options.get("train") == "eval"
    generated = [k for k in b.kernels if k.lang == "triton"]
    assert len(generated) == 9 and sum(k.launches for k in b.kernels) == 134
    for k in generated:
        files = {u.file for u in k.library_lines}
        assert any("transformers/" in f for f in files), k.name
    assert not any("backward" in k.name for k in b.kernels)  # an inference graph


def test_the_library_files_travel_with_the_bundle():
    b = read_bundle(GPT2)
    libs = [e for e in b.source.get("files", []) if e["library"]]
    assert any(e["name"] == "transformers/models/gpt2/modeling_gpt2.py" for e in libs)
    text = read_text(b, next(e["path"] for e in libs if e["name"].endswith("modeling_gpt2.py")))
    assert "class GPT2Attention" in text


def test_a_kernel_repeated_per_layer_keeps_each_launchs_nodes():
    b = read_bundle(GPT2)
    mlp = next(k for k in b.kernels if k.name.startswith("triton_poi_fused_add_addmm_mul_pow_tanh"))
    assert mlp.launches == 12 and len(mlp.launch_info) == 12
    nodes = [tuple(li.fx_nodes) for li in mlp.launch_info]
    assert len(set(nodes)) == 12, "each layer's launch has its own FX nodes"


def test_the_embedding_gather_reads_rows_not_the_whole_table():
    b = read_bundle(GPT2)
    emb = b.kernels[0]
    assert "embedding" in emb.name
    table = max(emb.buffers, key=lambda u: u.bytes or 0)  # wte: 50257 x 768 fp32 = 154 MB
    assert table.bytes == 50257 * 768 * 4
    assert table.read_bound and table.read_bytes == 4 * 512 * 768 * 4  # <= the rows of 4 x 512 token ids


def test_show_prints_the_library_lines_and_the_bound():
    proc = kernelscope_cmd("show", str(GPT2))
    assert proc.returncode == 0, proc.stderr
    assert "library transformers/models/gpt2/modeling_gpt2.py:" in proc.stdout
    assert "read <= " in proc.stdout
    assert "no_grad · eval" in proc.stdout
