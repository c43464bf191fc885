"""The leak check: no solution text may appear anywhere in a student release.

The comparison is on tokens, not on text or markers: Python files are split
with :mod:`tokenize` (so layout, indentation and line breaks do not matter), and
the text inside strings and comments is split further into words and symbols,
so a solution pasted into a docstring or a comment is found too. Other text
files (Markdown, notebooks, reStructuredText) are split into the same words
and symbols.

A region *leaks* when a run of :data:`NGRAM` consecutive tokens of its solution
(or the whole solution, if it is shorter but at least :data:`MIN_TOKENS` tokens)
appears in some file of the release. Runs that the library's own code holds
outside every region (the *background*: a loop header every kernel shares,
``store = converter(out.buffer.dtype)``) say nothing about the solution and
are not looked for; the same runs in a test, a guide or a tutorial are.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

#: Length of the token runs compared.
NGRAM = 16
#: Solutions shorter than this many tokens are not checked (``return a + b``
#: appears everywhere and gives nothing away).
MIN_TOKENS = 8

_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d[\w.]*|\S")
_SKIP = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
_TEXT_SUFFIXES = {
    ".py",
    ".md",
    ".rst",
    ".txt",
    ".ipynb",
    ".toml",
    ".cfg",
    ".json",
    ".yml",
    ".c",
    ".h",
}


def python_tokens(source: str) -> list[str]:
    """The tokens of Python ``source``; strings and comments split into words and symbols.

    Falls back to :func:`text_tokens` for text that does not tokenize
    (a fragment cut out of a block, a file with a syntax error).
    """
    tokens: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in _SKIP:
                continue
            if token.type in (tokenize.STRING, tokenize.COMMENT):
                tokens.extend(_WORDS.findall(token.string))
            else:
                tokens.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text_tokens(source)
    return tokens


def text_tokens(text: str) -> list[str]:
    """Words and single symbols of any text (``#`` left out: a comment is its words)."""
    return [token for token in _WORDS.findall(text) if token != "#"]


def _normalise(tokens: list[str]) -> list[str]:
    # Multi-character operators (**, //, ->) become single symbols, as in text_tokens,
    # so that Python files and prose compare alike.
    out: list[str] = []
    for token in tokens:
        out.extend(_WORDS.findall(token) if not token[:1].isalnum() else [token])
    return [token for token in out if token != "#"]


def tokens_of(path: str, text: str) -> list[str]:
    """The normalised tokens of a file, by its kind."""
    if path.endswith(".py"):
        return _normalise(python_tokens(text))
    return text_tokens(text)


def fingerprints(solution: str, length: int = NGRAM) -> set[tuple[str, ...]]:
    """The runs of ``length`` tokens of one solution region that must not appear in a release."""
    tokens = _normalise(python_tokens(_dedent(solution)))
    if len(tokens) < MIN_TOKENS:
        return set()
    if len(tokens) <= length:
        return {tuple(tokens)}
    return {tuple(tokens[i : i + length]) for i in range(len(tokens) - length + 1)}


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text)


@dataclass(frozen=True)
class Leak:
    """Solution text of ``tag`` found in ``path`` at token ``position``."""

    tag: str
    path: str
    snippet: str

    def __str__(self) -> str:
        return f"{self.path}: solution text of {self.tag} appears: {self.snippet!r}"


def runs_of(tokens: list[str], length: int) -> set[tuple[str, ...]]:
    """Every run of ``length`` consecutive tokens."""
    return {tuple(tokens[i : i + length]) for i in range(len(tokens) - length + 1)}


def find_leaks(
    root: str,
    solutions: Iterable[tuple[str, str]],
    background: Iterable[str] = (),
) -> list[Leak]:
    """Every place under ``root`` where a token run of a removed solution appears.

    Args:
        root: a student release.
        solutions: ``(tag, solution text)`` for each region removed from it.
        background: Python sources whose runs are not solution text (the
            library's code outside the regions).
    """
    by_length: dict[int, dict[tuple[str, ...], str]] = {}
    for tag, text in solutions:
        for run in fingerprints(text):
            by_length.setdefault(len(run), {})[run] = tag
    common: dict[int, set] = {length: set() for length in by_length}
    for text in background:
        tokens = _normalise(python_tokens(text))
        for length in by_length:
            common[length] |= runs_of(tokens, length)
    for length, runs in by_length.items():
        for run in common[length]:
            runs.pop(run, None)
    if not by_length:
        return []
    leaks: list[Leak] = []
    for path in _text_files(root):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as file:
            tokens = tokens_of(path, file.read())
        for length, runs in by_length.items():
            for i in range(len(tokens) - length + 1):
                run = tuple(tokens[i : i + length])
                if run in runs:
                    leaks.append(Leak(runs[run], path, " ".join(run)))
                    break
    return leaks


def _text_files(root: str) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in {".git", "__pycache__", ".venv"})
        for name in sorted(files):
            if os.path.splitext(name)[1] in _TEXT_SUFFIXES:
                found.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
    return found
