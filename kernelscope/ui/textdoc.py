"""A text held as lines, highlighted lazily: only lines someone asks for are lexed, then cached.

Pure (Pygments, no Textual). Small texts are lexed in one pass so multi-line strings colour right;
large ones (PTX, SASS, big output code) are lexed one line at a time, as toolong does for logs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from pygments.token import Token, _TokenType

from kernelscope.bundle.io import MAX_LINE_CHARS

if TYPE_CHECKING:  # pygments.lexer pulls in its plugin machinery: import it only to lex
    from pygments.lexer import Lexer

# A token type of None marks a line not lexed yet (lexers deferred): views draw it in their own colour.
Tokens = list[tuple[_TokenType | None, str]]

# Above this many lines a text is highlighted line by line, on demand.
WHOLE_TEXT_LEX_LIMIT = 4000

# Building a Pygments lexer compiles its regexes once per class (about 80 ms for Python): while
# this is set, texts render plain, so the first frame is not held back; the app clears it after.
_defer_lexers = False


def defer_lexers(flag: bool) -> None:
    global _defer_lexers
    _defer_lexers = flag


# While the selection moves from graph to graph (a key held down over a job's graph rows), a text longer
# than this is drawn plain instead of lexed whole at its first line (a 1,700-line output code takes
# Pygments ~100 ms, several keys' worth); the explorer lexes what it drew plain once the user pauses.
HOLD_LINES = 200
_hold_until = 0.0


def hold_lexing(seconds: float) -> None:
    """For ``seconds`` from now, long texts not lexed yet are drawn plain (``TextDoc.drawn_plain`` set)."""
    global _hold_until
    _hold_until = time.monotonic() + seconds


def split_lines(text: str) -> list[str]:
    """Lines without their newlines; tabs expanded so columns are cells. A final newline adds no line."""
    return split_and_measure(text)[0]


def split_and_measure(text: str) -> tuple[list[str], int]:
    """``split_lines(text)`` and the width of its widest line, in one pass over the lines (a 100k-line
    output code is split as a fresh `kernelscope BUNDLE` draws its first frame)."""
    if "\t" in text:
        text = text.expandtabs(4)
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    if "\r" in text:  # only then walk every line again (100k-line texts are common)
        lines = [line.rstrip("\r") for line in lines]
    width = max(map(len, lines), default=0)
    if width > MAX_LINE_CHARS:
        # A megabyte-long line would be measured, lexed and scrolled across: show its start, and how much was cut.
        lines = [line if len(line) <= MAX_LINE_CHARS else f"{line[:MAX_LINE_CHARS]}… ({len(line) - MAX_LINE_CHARS} chars cut)"
                 for line in lines]
        width = max(map(len, lines), default=0)
    return lines, width


class TextDoc:
    """Lines of one text, their width, lazy tokens and plain-text search."""

    def __init__(self, text: str, lexer_factory: Callable[[], Lexer] | None = None):
        self.lines, self.width = split_and_measure(text)
        self._lexer_factory = lexer_factory
        self._lexer: Lexer | None = None
        self._tokens: dict[int, Tokens] = {}
        self._whole_lexed = False
        self._lower: list[str] | None = None
        self.drawn_plain = False  # drawn plain while lexing was held (hold_lexing): to be lexed and redrawn

    @classmethod
    def joined(cls, head: str, tail: TextDoc) -> TextDoc:
        """``head`` then ``tail``'s text, without splitting and measuring ``tail`` again (the Info pane: a
        kernel's few lines above the capture's thousand, the same for every kernel). Plain text only."""
        doc = cls("")
        doc.lines = (split_lines(head) if head else []) + tail.lines
        doc.width = max(max(map(len, doc.lines[:len(doc.lines) - len(tail.lines)]), default=0), tail.width)
        return doc

    def __len__(self) -> int:
        return len(self.lines)

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + ("\n" if self.lines else "")

    def _get_lexer(self) -> Lexer | None:
        if self._lexer is None and self._lexer_factory is not None:
            lexer = self._lexer_factory()
            lexer.stripnl = False  # keep line numbers aligned with the text
            lexer.ensurenl = False
            self._lexer = lexer
        return self._lexer

    def tokens(self, index: int) -> Tokens:
        """The (token type, text) pairs of one line; plain text when there is no lexer, type None until lexed."""
        cached = self._tokens.get(index)
        if cached is not None:
            return cached
        line = self.lines[index]
        if _defer_lexers and self._lexer is None:
            return [(None, line)]  # not cached: highlighted once lexers are allowed
        lexer = self._get_lexer()
        if lexer is None or not line:
            toks: Tokens = [(Token.Text, line)]
        elif len(self.lines) <= WHOLE_TEXT_LEX_LIMIT and not self._whole_lexed:
            if len(self.lines) > HOLD_LINES and time.monotonic() < _hold_until:
                self.drawn_plain = True
                return [(None, line)]  # not cached: highlighted when the explorer lexes it
            self._lex_whole(lexer)
            return self._tokens[index]
        else:
            toks = [(tt, v) for tt, v in lexer.get_tokens(line) if v and v != "\n"]
        self._tokens[index] = toks
        return toks

    @property
    def lexed(self) -> bool:
        """Whether drawing any line needs no more lexing (a text lexed whole, or nothing to lex)."""
        return self._whole_lexed or self._lexer_factory is None or len(self.lines) > WHOLE_TEXT_LEX_LIMIT

    def lex(self) -> None:
        """Lex a small text whole now (what drawing its first line would do); a large one lexes per line."""
        if not self.lexed and not _defer_lexers and (lexer := self._get_lexer()) is not None:
            self._lex_whole(lexer)

    def _lex_whole(self, lexer: Lexer) -> None:
        self._whole_lexed = True
        per_line: list[Tokens] = [[]]
        for ttype, value in lexer.get_tokens("\n".join(self.lines)):
            parts = value.split("\n")
            for i, part in enumerate(parts):
                if i:
                    per_line.append([])
                if part:
                    per_line[-1].append((ttype, part))
        for i in range(len(self.lines)):
            toks = per_line[i] if i < len(per_line) else []
            # Guard against a lexer that altered the text: fall back to the plain line.
            self._tokens[i] = toks if "".join(v for _, v in toks) == self.lines[i] else [(Token.Text, self.lines[i])]

    def find(self, query: str, start: int, forward: bool = True) -> int | None:
        """The next line (wrapping) at or after ``start`` (before, when backwards) holding ``query``.

        Case-insensitive unless the query has a capital letter (as in less and vim's smartcase).
        """
        if not query or not self.lines:
            return None
        lines = self.lines
        if query == query.lower():
            if self._lower is None:
                self._lower = [line.lower() for line in self.lines]
            lines = self._lower
        n = len(lines)
        order = (list(range(start, n)) + list(range(0, start))) if forward else \
            (list(range(start, -1, -1)) + list(range(n - 1, start, -1)))
        for i in order:
            if query in lines[i]:
                return i
        return None

    def match_spans(self, index: int, query: str) -> list[tuple[int, int]]:
        """Column spans of ``query`` in one line (same case rule as ``find``)."""
        if not query:
            return []
        line = self.lines[index]
        hay = line.lower() if query == query.lower() else line
        spans, pos = [], hay.find(query)
        while pos >= 0:
            spans.append((pos, pos + len(query)))
            pos = hay.find(query, pos + len(query))
        return spans

    def count(self, query: str) -> int:
        if not query:
            return 0
        if query == query.lower():
            if self._lower is None:
                self._lower = [line.lower() for line in self.lines]
            return sum(1 for line in self._lower if query in line)
        return sum(1 for line in self.lines if query in line)
