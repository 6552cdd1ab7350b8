"""What users read everywhere: sizes in decimal SI, plurals, long names shortened in the middle,
autotune and Triton variant labels that say what differs, and a bad --arch as one line."""

from __future__ import annotations

from pathlib import Path

from kernelscope.bundle.io import read_bundle
from kernelscope.show import compact_configs, summary_text, variant_labels
from kernelscope.ui.summary import title_line
from kernelscope.units import fit_kernel_title, fmt_bytes, plural, short_bytes, shorten_kernel_name, shorten_middle
from tests.conftest import kernelscope_cmd

GPU = Path(__file__).parent / "fixtures" / "gpu"


def test_bytes_are_decimal_si_everywhere():
    assert fmt_bytes(1_000_000) == "1.0 MB" and fmt_bytes(1 << 20) == "1.0 MB"  # 1.048576e6, not "1.0 MiB"
    assert fmt_bytes(2_500_000_000) == "2.5 GB" and fmt_bytes(1500) == "1.5 KB" and fmt_bytes(999) == "999 B"
    assert fmt_bytes(None) == "?" and short_bytes(33_554_432) == "33.6MB"
    # the bench tables and the summary share the one function: a 16 MiB buffer reads 16.8 MB in both
    from kernelscope.bench import tables
    from kernelscope.report import markdown
    assert tables.fmt_bytes is fmt_bytes and markdown.fmt_bytes is fmt_bytes
    assert "read 16.8 MB, write 16.8 MB" in summary_text(read_bundle(GPU / "softmax"))


def test_plural():
    assert [plural(n, "kernel") for n in (0, 1, 2)] == ["0 kernels", "1 kernel", "2 kernels"]
    assert plural(1, "launch", "launches") == "1 launch" and plural(3, "launch", "launches") == "3 launches"
    title = title_line(read_bundle(GPU / "softmax"))
    assert "1 graph · 1 kernel (1 Triton) · 0 breaks" in title and "1 kernels" not in title


def test_long_names_shorten_in_the_middle_on_word_boundaries():
    name = "triton_per_fused__softmax_exp_prepare_softmax_online_sub_0"
    for width in (14, 20, 30, 43):
        short = shorten_middle(name, width)
        assert len(short) <= width and "…" in short
        assert short.startswith("triton_") and short.endswith("_0")  # the kind and the index stay
    assert shorten_middle(name, 30) == "triton_per_…_online_sub_0"
    assert shorten_middle("add_relu", 30) == "add_relu" and shorten_middle("abc", 1) == "…"


def test_kernel_names_drop_their_decoration_then_their_middle_and_keep_the_tail_and_index():
    name = "triton_red_fused_add_arange_embedding_native_layer_norm_unsqueeze_0"
    assert shorten_kernel_name(name, 80) == name  # what fits is left alone
    assert shorten_kernel_name(name, 60) == "add_arange_embedding_native_layer_norm_unsqueeze_0"
    assert shorten_kernel_name(name, 30) == "add_…_layer_norm_unsqueeze_0"
    assert shorten_kernel_name(name, 21) == "add_…_unsqueeze_0"
    assert shorten_kernel_name(name, 13) == "…unsqueeze_0"
    for width in range(2, 70):
        short = shorten_kernel_name(name, width)
        assert len(short) <= width and short.endswith("_0" if width > 2 else "0"), (width, short)
    assert shorten_kernel_name("triton_per_fused_native_layer_norm_0", 17) == "…layer_norm_0"
    assert shorten_kernel_name("aten._scaled_dot_product_efficient_attention", 21) == "…efficient_attention"
    assert shorten_kernel_name("cpp_fused_add_relu_0", 12) == "add_relu_0"
    assert fit_kernel_title("fused kernel · " + name, name, 28, optional_lead=True) == "add_…_layer_norm_unsqueeze_0"
    assert fit_kernel_title("TTIR · " + name, name, 28) == "TTIR · add_…_unsqueeze_0"


def test_header_keeps_the_break_count_when_narrow():
    b = read_bundle(GPU / "mlp_train")
    wide = title_line(b, width=200)
    assert "compiled in" in wide and "(5 Triton, 5 extern)" in wide
    narrow = title_line(b, width=78)
    assert len(narrow) <= 78 and "0 breaks" in narrow and "10 kernels" in narrow


def test_autotune_rows_show_block_sizes_warps_stages_and_say_top_n():
    b = read_bundle(GPU / "linear_relu_autotune")
    text = summary_text(b)
    assert "10 choices, the fastest 5" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("triton_mm_3 "))
    assert row.rstrip().endswith("BLOCK_K=32 BLOCK_M=32 BLOCK_N=32 warps=4 stages=5")
    assert "ACC_TYPE" not in text  # the same in every choice: dropped
    assert compact_configs(["A=1, num_warps=4", "A=2, num_warps=4"]) == ["warps=4 A=1", "warps=4 A=2"]


def test_variant_labels_say_what_differs():
    k = read_bundle(GPU / "linear_relu").kernel("triton_poi_fused_addmm_relu_0")
    labels = variant_labels(k.triton)
    assert len(set(labels)) == len(labels) == 2
    assert labels[0] == "XBLOCK=256 warps=4 stages=1" and labels[1] == "XBLOCK=? warps=4 stages=1"
    line = next(x for x in summary_text(read_bundle(GPU / "linear_relu")).splitlines() if "triton:" in x)
    assert "XBLOCK=256 warps=4 stages=1 (chosen), XBLOCK=? warps=4 stages=1" in line


def test_unknown_arch_is_one_line_before_any_compile():
    proc = kernelscope_cmd("show", str(GPU / "add_relu"), "--kernel", "triton_poi_fused_add_relu_0",
                           "--artifact", "ptx", "--arch", "sm_99")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("kernelscope: no NVIDIA GPU arch sm_99; use one of sm_70,")
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_info_pane_breaks_a_long_kernel_name_and_launch_where_they_fit():
    from kernelscope.ui.summary import wrapped_fact

    name = "triton_per_fused_add_addmm_arange_embedding_native_layer_norm_unsqueeze_view_4"
    lines = wrapped_fact("kernel", name, "  ×12 launches")
    assert all(len(line) <= 46 for line in lines)
    assert lines == ["kernel      triton_per_fused_add_addmm_arange_",
                     "            embedding_native_layer_norm_",
                     "            unsqueeze_view_4  ×12 launches"]
    assert wrapped_fact("kernel", "cpp_fused_relu_0", "  ×2 launches") == ["kernel      cpp_fused_relu_0  ×2 launches"]
    assert wrapped_fact("kernel", "cpp_fused_relu_0") == ["kernel      cpp_fused_relu_0"]
    launch = wrapped_fact("launch", "triton_poi_fused_0.run(buf0, primals_1, primals_2, buf1, 4194304, stream=stream0)")
    assert "".join(x[12:] for x in launch).replace(" ", "") == \
        "triton_poi_fused_0.run(buf0,primals_1,primals_2,buf1,4194304,stream=stream0)"


def test_wrap_names_breaks_a_long_kernel_name_after_an_underscore_never_inside_an_op():
    from kernelscope.units import wrap_names

    name = ("triton_poi_fused__scaled_dot_product_efficient_attention_add_arange_cat_expand_le_scalar_tensor_split_"
            "transpose_unsqueeze_view_where_1")
    text = f"     why: the matmul (extern_kernels.addmm) is a library call: its result goes to memory before {name} reads it"
    lines = wrap_names(text, 100, "          ")
    assert all(len(line) <= 100 for line in lines)
    assert lines[0].startswith("     why: ") and all(line.startswith("          ") for line in lines[1:])
    assert "".join(line.strip() + ("" if line.rstrip().endswith("_") else " ") for line in lines).split() == \
        text.split()  # nothing lost or cut: the name rejoins whole
    assert any(line.rstrip().endswith("scalar_") for line in lines)  # the break fell after an op's "_"
