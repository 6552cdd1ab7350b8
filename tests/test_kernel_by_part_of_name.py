"""``show --kernel`` (and ``bench --kernel``) take a kernel as ``/`` does: its id, its name, or a part of its
name that only it has; several matches are one line naming some of them, none is one line naming the
closest names, never every kernel of a job. No compile: committed fixtures and bundles built in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.bundle.model import Bundle, Kernel, NotInBundle
from kernelscope.cli import main
from tests.conftest import GPU_FIXTURES

CPU_FIXTURES = Path(__file__).parent / "fixtures" / "cpu"


def _show(capsys, bundle: Path, key: str) -> tuple[int, str, str]:
    rc = main(["show", str(bundle), "--kernel", key])
    out, err = capsys.readouterr()
    return rc, out, err


def _bundle(*names: str, graph: str = "0-0-inference") -> Bundle:
    kernels = [Kernel(id=f"{graph}/{n}", graph=graph, name=n, kind="pointwise", lang="triton", launch_index=i)
               for i, n in enumerate(names)]
    return Bundle(kernels=kernels)


def test_a_part_of_a_name_that_only_one_kernel_has_shows_that_kernel(capsys):
    rc, out, err = _show(capsys, GPU_FIXTURES / "tiny_gpt", "addmm_gelu")
    assert rc == 0, err
    assert "triton_poi_fused_addmm_gelu_view_2" in out
    assert "triton_per_fused_add_arange_embedding_native_layer_norm_0" not in out  # that one kernel only


def test_a_part_several_kernels_have_is_one_line_naming_them(capsys):
    rc, out, err = _show(capsys, GPU_FIXTURES / "tiny_gpt", "native_layer_norm_view")
    assert rc == 2 and out == ""
    assert err.strip() == (
        "kernelscope: 4 kernels match 'native_layer_norm_view': "
        "triton_per_fused_add_addmm_arange_embedding_native_layer_norm_view_1, "
        "triton_per_fused_add_addmm_native_layer_norm_view_3, triton_per_fused_add_addmm_native_layer_norm_view_4, "
        "triton_per_fused_add_addmm_native_layer_norm_view_5; give more of the name, or the id")


def test_many_matches_name_eight_and_count_the_rest(capsys):
    rc, _, err = _show(capsys, GPU_FIXTURES / "tiny_gpt", "extern_kernels.mm")
    assert rc == 2 and len(err.strip().splitlines()) == 1
    line = err.strip()
    assert line.startswith("kernelscope: 13 kernels match 'extern_kernels.mm': extern_kernels.mm@3, ")
    assert line.count("extern_kernels.mm@") == 8 and " and 5 more; give more of the name, or the id" in line
    # what the line offers names the kernel again
    rc, out, err = _show(capsys, GPU_FIXTURES / "tiny_gpt", "extern_kernels.mm@3")
    assert rc == 0, err
    assert "extern_kernels.mm" in out


def test_no_match_suggests_the_closest_names_not_every_kernel(capsys):
    rc, _, err = _show(capsys, GPU_FIXTURES / "tiny_gpt", "layer_norm_vew_5")
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert err.strip().startswith("kernelscope: no kernel 'layer_norm_vew_5' in this capture; the closest: "
                                  "triton_per_fused_add_addmm_native_layer_norm_view_5")
    assert "extern_kernels" not in err  # not the whole list of 27


def test_a_job_of_15000_kernels_answers_a_miss_in_one_short_line():
    b = _bundle(*(f"triton_poi_fused_add_mul_{i}" for i in range(15_000)))
    with pytest.raises(NotInBundle) as miss:
        b.kernel("softmax")
    assert str(miss.value) == ("no kernel 'softmax' in this capture of 15,000 kernels, and no name close to it; "
                               "`kernelscope show BUNDLE --all` lists them")
    with pytest.raises(NotInBundle) as several:
        b.kernel("add_mul")
    assert str(several.value).startswith("15000 kernels match 'add_mul': triton_poi_fused_add_mul_0, ")
    assert str(several.value).endswith(" and 14992 more; give more of the name, or the id")


def test_exact_id_then_exact_name_then_whole_words_win():
    b = _bundle("triton_poi_fused_add_1", "triton_poi_fused_add_10", "triton_poi_fused_add_relu_2")
    assert b.kernel("0-0-inference/triton_poi_fused_add_10").name == "triton_poi_fused_add_10"
    assert b.kernel("triton_poi_fused_add_1").name == "triton_poi_fused_add_1"  # a part of _add_10 too
    assert b.kernel("add_1").name == "triton_poi_fused_add_1"  # whole words: not _add_10
    assert b.kernel("relu").name == "triton_poi_fused_add_relu_2"
    with pytest.raises(NotInBundle, match="2 kernels match 'add_1'"):
        _bundle("triton_poi_fused_add_1", "cpp_fused_add_1").kernel("add_1")


def test_a_name_in_two_graphs_is_told_apart_by_its_id(capsys):
    rc, _, err = _show(capsys, CPU_FIXTURES / "add_relu_two_calls", "cpp_fused_add_relu_0")
    assert rc == 2
    assert err.strip() == ("kernelscope: 2 kernels match 'cpp_fused_add_relu_0': 0-0-inference/cpp_fused_add_relu_0, "
                           "0-1-inference/cpp_fused_add_relu_0; give more of the name, or the id")
    rc, out, err = _show(capsys, CPU_FIXTURES / "add_relu_two_calls", "0-1-inference/cpp_fused_add_relu_0")
    assert rc == 0 and "cpp_fused_add_relu_0" in out, err


def test_an_artifact_without_kernel_names_a_few_kernels_not_all(capsys):
    rc = main(["show", str(GPU_FIXTURES / "tiny_gpt"), "--artifact", "source"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "needs --kernel NAME (a part of a name will do)" in err and err.strip().endswith(" and 19 more")
