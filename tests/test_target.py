"""Targets and --args specs: what a user types, and the one-line errors for what they get wrong."""

import pytest

from kernelscope.target import ScalarSpec, TargetError, TensorSpec, list_samples, parse_args_spec, resolve_target

from .conftest import REPO


def test_fx_style_specs_parse():
    specs = parse_args_spec("f32[4096, 1024], bf16[1024], i64[8][1], bool[3, 3], f16[2, 2] grad, 3, 0.5, True")
    assert specs[0] == TensorSpec("float32", [4096, 1024])
    assert specs[1] == TensorSpec("bfloat16", [1024])
    assert specs[2] == TensorSpec("int64", [8])  # an FX stride is accepted and ignored
    assert specs[3] == TensorSpec("bool", [3, 3])
    assert specs[4] == TensorSpec("float16", [2, 2], requires_grad=True)
    assert specs[5:] == [ScalarSpec(3), ScalarSpec(0.5), ScalarSpec(True)]


def test_scalar_tensor_and_fx_device_suffix():
    assert parse_args_spec("f32[]") == [TensorSpec("float32", [])]
    assert parse_args_spec('f32[16][1]cuda:0') == [TensorSpec("float32", [16])]


@pytest.mark.parametrize(
    "spec, words",
    [
        ("q32[4]", "unknown dtype 'q32'"),
        ("f32[4, x]", "size 'x' is not a non-negative integer"),
        ("f32[4],, f32[4]", "item 2 is empty"),
        ("tensor", "is not a tensor spec"),
        ("i32[4] grad", "only floating-point tensors can require grad"),
        ("", "empty --args"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec, words):
    with pytest.raises(TargetError) as err:
        parse_args_spec(spec)
    assert words in str(err.value)
    assert "\n" not in str(err.value)


def test_samples_resolve_with_their_line_ranges():
    t = resolve_target("add_relu")
    assert t.is_sample and t.name == "add_relu" and t.has_inputs_factory
    lines = (REPO / "samples" / "add_relu.py").read_text().split("\n")
    assert lines[t.first_line - 1].startswith("def add_relu(")
    assert "relu()" in lines[t.last_line - 1]
    assert resolve_target("mlp_train").sample_options == {"backward": True}


def test_every_sample_is_listed_with_a_description():
    names = {t.name: t.description for t in list_samples()}
    for name in ("add_relu", "mul_add_sigmoid", "linear_relu", "softmax", "layer_norm", "sin_cos", "graph_break",
                 "mlp_train", "attention"):
        assert names.get(name), f"sample {name} missing or undocumented"


def test_file_targets_functions_and_classes(tmp_path):
    f = REPO / "tests" / "fixtures" / "targets" / "errors.py"
    assert resolve_target(f"{f}::raises").name == "raises"
    cls = resolve_target(f"{f}::Small")
    assert cls.is_class and cls.has_inputs_factory


@pytest.mark.parametrize(
    "spec, words",
    [
        ("nosuch_sample", "no sample named 'nosuch_sample'"),
        ("/no/such/file.py::f", "no such file"),
        ("samples/add_relu.py::missing", "no function or class named 'missing'; found: add_relu"),
        ("samples/add_relu.py", "name the function too"),
        ("/no/such/folder", "/no/such/folder: no such file or folder"),
        ("tests/fixtures", "tests/fixtures is a folder, not a target"),
        ("samples/add_relu.py::", "nothing after '::'"),
    ],
)
def test_bad_targets(spec, words, monkeypatch):
    monkeypatch.chdir(REPO)
    with pytest.raises(TargetError) as err:
        resolve_target(spec)
    assert words in str(err.value)


def test_syntax_error_names_the_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(x):\n    return x +\n")
    with pytest.raises(TargetError, match=r"bad.py:2: syntax error"):
        resolve_target(f"{bad}::f")


def test_calls_are_separated_by_semicolons():
    from kernelscope.target import parse_calls

    assert parse_calls("f32[8]; f32[16]") == [[TensorSpec("float32", [8])], [TensorSpec("float32", [16])]]
    with pytest.raises(TargetError, match="empty call"):
        parse_calls("f32[8];")


def test_integer_specs_take_a_range_and_default_to_non_negative():
    from kernelscope.target import spec_dicts

    ids, mask, x = parse_args_spec("i64[4, 512] 0..50257, u8[4], f32[4] grad")
    assert (ids.low, ids.high) == (0, 50257)
    assert str(ids) == "i64[4, 512] 0..50257"
    sent = spec_dicts([ids, mask, x])
    assert sent[0]["low"] == 0 and sent[0]["high"] == 50257
    assert sent[1]["low"] >= 0 and sent[1]["high"] > sent[1]["low"]  # no range: non-negative values
    assert "low" not in sent[2]
    (neg,) = parse_args_spec("i8[2] -5..5")
    assert (neg.low, neg.high) == (-5, 5)


@pytest.mark.parametrize("spec, words", [
    ("i64[4] 5..5", "empty range 5..5"),
    ("i64[4] 9..2", "HIGH must be greater than LOW"),
    ("i64[4] 0..x", "is not LOW..HIGH"),
    ("f32[4] 0..3", "for integer tensors"),
    ("i8[2] 0..300", "does not fit int8"),
])
def test_bad_ranges_are_one_line_errors(spec, words):
    with pytest.raises(TargetError) as err:
        parse_args_spec(spec)
    assert words in str(err.value) and "\n" not in str(err.value)
