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
