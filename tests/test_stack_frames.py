"""Which frames of a stack are your code, a library's, or torch's machinery."""

from kernelscope.ingest.fx import frame_kind, innermost, stack_frames

GPT2 = ('  File "/home/me/proj/run.py", line 9, in forward\n    return self.m(ids).logits\n'
        '  File "/venv/lib/python3.12/site-packages/transformers/models/gpt2/modeling_gpt2.py", line 321, in forward\n'
        '    hidden_states = self.ln_1(hidden_states)\n'
        '  File "/venv/lib/python3.12/site-packages/torch/nn/modules/normalization.py", line 229, in forward\n'
        '    return F.layer_norm(\n')


def test_frames_are_yours_a_librarys_or_torchs():
    assert frame_kind("/home/me/proj/blocks.py") == "user"
    assert frame_kind("/venv/lib/python3.12/site-packages/timm/layers/mlp.py") == "library"
    assert frame_kind("/venv/lib/python3.12/site-packages/torch/nn/functional.py") == "skip"
    assert frame_kind("/usr/lib/python3.12/contextlib.py") == "skip"
    assert frame_kind("<eval_with_key>.3") == "skip"


def test_a_library_stack_keeps_your_line_and_the_library_line():
    frames = stack_frames(GPT2)
    assert [(f.file.rsplit("/", 1)[-1], f.line, f.library) for f in frames] == [
        ("run.py", 9, False), ("modeling_gpt2.py", 321, True)]
    user, lib = innermost(frames)
    assert (user.line, lib.line) == (9, 321)


def test_a_frame_printed_without_its_source_line_takes_no_other_line_as_its_code():
    failure = ('Traceback (most recent call last):\n  File "/home/u/proj/train.py", line 40, in main\n'
               '    loss = step(x)\n  File "/home/u/proj/model.py", line 6, in broken_backend\nRuntimeError: boom\n')
    assert [(f.line, f.code) for f in stack_frames(failure)] == [(40, "loss = step(x)"), (6, "")]
    two = '  File "/home/u/a.py", line 1, in f\n  File "/home/u/b.py", line 2, in g\n    y = x + 1\n'
    assert [(f.file, f.code) for f in stack_frames(two)] == [("/home/u/a.py", ""), ("/home/u/b.py", "y = x + 1")]


def test_a_shape_that_only_looks_numeric_stays_text():
    from kernelscope.ingest.dtypes import split_dims

    assert split_dims("4, s0, 8L, -3") == [4, "s0", 8, -3]
    assert split_dims("--64, ², 1") == ["--64", "²", 1]  # int() refuses both: kept as symbols, no crash
