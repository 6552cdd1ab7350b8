"""Pure pieces of the explorer: lazy highlighting, search, compact FX, and the bundle cross-references."""

from __future__ import annotations

from pygments.lexers import PythonLexer

from kernelscope.bundle.io import read_bundle
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.xref import BundleIndex, compact_fx


def test_large_text_is_highlighted_only_where_asked():
    text = "\n".join(f"x_{i} = foo({i})  # line {i}" for i in range(100_000)) + "\n"
    doc = TextDoc(text, PythonLexer)
    assert len(doc) == 100_000
    toks = doc.tokens(99_999)
    assert "".join(v for _, v in toks) == doc.lines[99_999]
    assert len(doc._tokens) == 1  # nothing else was lexed


def test_small_text_is_lexed_whole_so_multiline_strings_colour_right():
    doc = TextDoc('s = """\nnot code\n"""\nx = 1\n', PythonLexer)
    kinds = {str(t) for t, _ in doc.tokens(1)}
    assert any("String" in k for k in kinds)


def test_search_is_smart_case_and_wraps():
    doc = TextDoc("alpha\nBeta\nbeta\ngamma\n")
    assert doc.find("beta", 0) == 1  # lower-case query: case-insensitive
    assert doc.find("Beta", 2) == 1  # capital: exact case, wrapping past the end
    assert doc.find("beta", 3, forward=False) == 2
    assert doc.count("BETA") == 0
    assert doc.match_spans(3, "a") == [(1, 2), (4, 5)]


def test_compact_fx_keeps_line_numbers():
    text = ('    mm: "f32[256, 1024][1024, 1]cuda:0" = torch.ops.aten.mm.default(a, b);  b = None\n'
            "    # File: x.py:3\n")
    out = compact_fx(text)
    assert out.split("\n")[0] == "    mm = aten.mm.default(a, b)"
    assert out.count("\n") == text.count("\n")


def test_cross_references_both_ways(ref_bundles):
    b = read_bundle(ref_bundles["mlp_train"])
    idx = BundleIndex(b)
    gelu = b.kernel("triton_poi_fused_gelu_0")
    fwd = b.graph(gelu.graph)
    lines = idx.fx_lines_for_kernel(gelu, fwd, "fx-post-grad")
    names = [n.name for n in idx.fx_nodes(fwd, "fx-post-grad") if n.line in lines]
    assert names == ["mul", "mul_1", "erf", "add", "mul_2"]
    # FX node -> kernel
    assert [k.name for k in idx.kernels_for_fx_line(fwd, "fx-post-grad", lines[2])] == ["triton_poi_fused_gelu_0"]
    # user line 29 fed the first mm, the gelu kernel and kernels of the backward graph
    row = idx.source_row("/home/user/ref/cases.py", 29)
    fed = [k.name for k in idx.kernels_for_source_row(row)]
    assert fed[:2] == ["extern_kernels.mm", "triton_poi_fused_gelu_0"]
    assert "triton_poi_fused_gelu_gelu_backward_1" in fed
    # output code launch line -> kernel, and back
    assert idx.kernel_for_output_line(fwd, gelu.call_line) is gelu
    assert gelu.call_line in idx.output_lines_for_kernel(gelu)
    assert idx.source().copied is False  # reference bundles hold no copy of cases.py


def test_a_doc_joined_to_a_shared_tail_reads_as_the_whole_text():
    # The Info pane joins a kernel's lines to the capture's (split once, shared by every kernel).
    tail = TextDoc("── capture ──\ntarget\tgpt2.py\n" + "x" * 90 + "\n")
    for head in ("", "── selected kernel ──\nkernel      mm\n"):
        joined, whole = TextDoc.joined(head, tail), TextDoc(head + tail.text)
        assert (joined.lines, joined.width, joined.text) == (whole.lines, whole.width, whole.text)
    assert TextDoc.joined("a\n", tail).lines[:2] == ["a", "── capture ──"]


def test_an_app_ended_before_its_first_frame_leaves_lexing_on():
    """The app defers lexers until its first frame: one that ends before it (a test timing the first
    frame, a start that fails) left every later TextDoc of the process unhighlighted."""
    import asyncio

    from kernelscope.ui import textdoc
    from kernelscope.ui.app import make_app

    async def run():
        app = make_app()
        async with app.run_test(size=(80, 24)):
            assert textdoc._defer_lexers or app.first_frame_ms is not None
            app.exit()

    asyncio.run(run())
    doc = TextDoc('s = """\nnot code\n"""\nx = 1\n', PythonLexer)
    assert any("String" in str(t) for t, _ in doc.tokens(1))
