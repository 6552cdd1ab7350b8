"""The MLIR and SASS Pygments lexers give the token types a highlighter needs."""

from __future__ import annotations

from pygments.lexers import LlvmLexer, PtxLexer, PythonLexer
from pygments.token import Comment, Keyword, Name, Number

from kernelscope.ui.lexers import MlirLexer, SassLexer, lexer_for_stage


def tokens(lexer, text):
    return [(t, v) for t, v in lexer.get_tokens(text) if v.strip()]


def test_mlir_op_line():
    line = "    %tmp0_4 = tt.load %tmp0_3 : tensor<1024x!tt.ptr<f32>, #blocked> loc(#loc26)\n"
    toks = tokens(MlirLexer(), line)
    assert (Name.Variable, "%tmp0_4") in toks
    assert (Keyword, "tt.load") in toks
    assert (Keyword.Type, "tensor") in toks and (Keyword.Type, "!tt.ptr") in toks and (Keyword.Type, "f32") in toks
    assert (Name.Attribute, "#blocked") in toks
    assert (Number, "1024") in toks
    # the location is dimmed as a comment, all of it
    loc = toks[toks.index((Comment.Special, "loc(")) :]
    assert all(t in Comment for t, _ in loc)


def test_mlir_arith_func_and_comments():
    text = 'tt.func public @k(%a: i32) {\n  %0 = arith.addf %x, %y : f32\n  // note\n}\n#loc3 = loc("a.py":1:2)\n'
    toks = tokens(MlirLexer(), text)
    assert (Name.Function, "@k") in toks and (Keyword, "arith.addf") in toks
    assert (Comment.Single, "// note") in toks
    assert toks[-1][0] in Comment and all(t in Comment for t, v in toks if v.startswith(("#loc3", '"a.py"')))


def test_sass_instruction_line():
    line = "        /*00c0*/              @P0   LDG.E.128 R4, desc[UR4][R2.64+0x800] ;\n"
    toks = tokens(SassLexer(), line)
    assert (Number.Hex, "00c0") in toks
    assert (Name.Builtin.Pseudo, "@P0") in toks
    assert (Keyword, "LDG.E.128") in toks
    assert (Name.Variable, "R4") in toks and (Name.Variable, "R2.64") in toks
    assert (Name.Constant, "desc[UR4]") in toks and (Number, "0x800") in toks


def test_sass_constants_predicates_and_line_info():
    text = '\t//## File "k.py", line 24\n        /*0110*/    FSETP.GEU.AND P6, PT, R4, -R8, c[0x0][0x160] ;\n'
    toks = tokens(SassLexer(), text)
    assert toks[0] == (Comment.Preproc, '//## File "k.py", line 24')
    assert (Keyword, "FSETP.GEU.AND") in toks
    assert (Name.Builtin.Pseudo, "P6") in toks and (Name.Builtin.Pseudo, "PT") in toks
    assert (Name.Constant, "c[0x0][0x160]") in toks
    assert (Name.Variable, "-R8") in toks


def test_lexer_for_stage():
    assert isinstance(lexer_for_stage("source"), PythonLexer)
    assert isinstance(lexer_for_stage("ttir"), MlirLexer) and isinstance(lexer_for_stage("ttgir"), MlirLexer)
    assert isinstance(lexer_for_stage("llir"), LlvmLexer)
    assert isinstance(lexer_for_stage("ptx"), PtxLexer)
    assert isinstance(lexer_for_stage("sass"), SassLexer)
    assert lexer_for_stage("cpp").name == "C++"
    assert lexer_for_stage("ttir") is not lexer_for_stage("ttir")  # fresh instances, nothing global
