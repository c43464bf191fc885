"""Solution regions: the two comment lines that mark them, and how they are cut out.

A solution region is a block of lines inside a function, between two comment
lines a reader barely notices::

    def norm(values):
        \"\"\"The Euclidean norm of ``values``.\"\"\"
        # -- solution: basics/norm
        total = 0.0
        for value in values:
            total += value * value
        return math.sqrt(total)
        # -- end solution

The tag names an assignment and one of its tasks (``<assignment>/<task>``). The
student release replaces the lines between the markers by one line at the
indentation of the opening marker::

        # -- solution: basics/norm
        raise NotImplementedError("basics/norm: <the task's hint>")
        # -- end solution

so the docstring above the region (the specification) stays, and the markers
show the student where to write (and let ``sync`` find their code later).
Only real comment lines count as markers (found with :mod:`tokenize`), so a
docstring that shows one, like this one, is not a region. Errors in the
markers are :class:`MarkerError`, which names the file and line.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

#: The opening marker: ``# -- solution: <assignment>/<task>``.
BEGIN = re.compile(r"^(?P<indent>[ \t]*)# -- solution:[ \t]*(?P<tag>.*?)[ \t]*$")
#: The closing marker: ``# -- end solution``.
END = re.compile(r"^[ \t]*# -- end solution[ \t]*$")
#: Anything that looks like a marker, to catch misspelt ones.
ANY = re.compile(r"^[ \t]*#[ \t]*--[ \t]*(end[ \t]+)?solution\b")
#: What a tag must look like.
TAG = re.compile(r"^[a-z0-9_-]+/[a-z0-9_-]+$")


class MarkerError(ValueError):
    """A solution marker is unbalanced, untagged, misplaced or names an unknown task."""


@dataclass(frozen=True)
class Region:
    """One solution region of one file.

    Attributes:
        path: the file, relative to the repository root (``/`` separators).
        tag: ``"<assignment>/<task>"``.
        begin: line number (1-based) of the opening marker.
        end: line number of the closing marker.
        indent: the opening marker's indentation (the stub's indentation).
    """

    path: str
    tag: str
    begin: int
    end: int
    indent: str

    @property
    def assignment(self) -> str:
        return self.tag.split("/", 1)[0]

    @property
    def task(self) -> str:
        return self.tag.split("/", 1)[1]


def find_regions(source: str, path: str, known_tags: set[str] | None = None) -> list[Region]:
    """Every solution region of ``source``, checked.

    Args:
        source: the text of a Python file.
        path: its name, for the regions and the messages.
        known_tags: the ``assignment/task`` tags the course defines; ``None``
            skips that check.

    Raises:
        MarkerError: for an opening marker without a tag, a malformed or unknown
            tag, a region opened inside another, a closing marker without an
            opening one, a region left open, an empty region, or a region that
            is not inside one function body.
    """
    regions: list[Region] = []
    open_at: tuple[int, str, str] | None = None
    comments = _comment_lines(source, path)
    for number, line in enumerate(source.splitlines(), start=1):
        if number not in comments:
            continue
        begin, end = BEGIN.match(line), END.match(line)
        where = f"{path}:{number}"
        if begin:
            tag = begin["tag"]
            if open_at is not None:
                raise MarkerError(
                    f"{where}: a solution region opens inside the one opened at line "
                    f"{open_at[0]}; close that one first with '# -- end solution'"
                )
            if not tag:
                raise MarkerError(
                    f"{where}: solution marker without a tag; write "
                    "'# -- solution: <assignment>/<task>'"
                )
            if not TAG.match(tag):
                raise MarkerError(
                    f"{where}: malformed tag {tag!r}; a tag is '<assignment>/<task>' in "
                    "lower case letters, digits, '-' and '_'"
                )
            if known_tags is not None and tag not in known_tags:
                raise MarkerError(
                    f"{where}: tag {tag!r} names no task of the course; known tags: "
                    + ", ".join(sorted(known_tags))
                )
            open_at = (number, tag, begin["indent"])
        elif end:
            if open_at is None:
                raise MarkerError(f"{where}: '# -- end solution' without an opening marker")
            if number == open_at[0] + 1:
                raise MarkerError(
                    f"{where}: the solution region opened at line {number - 1} is empty"
                )
            regions.append(Region(path, open_at[1], open_at[0], number, open_at[2]))
            open_at = None
        elif ANY.match(line):
            raise MarkerError(
                f"{where}: malformed solution marker {line.strip()!r}; write "
                "'# -- solution: <assignment>/<task>' or '# -- end solution'"
            )
    if open_at is not None:
        raise MarkerError(
            f"{path}:{open_at[0]}: solution region {open_at[1]!r} is never closed; "
            "add '# -- end solution'"
        )
    if regions:
        _check_inside_functions(source, path, regions)
    return regions


def _comment_lines(source: str, path: str) -> set[int]:
    """Numbers of the lines that hold nothing but a comment."""
    lines = set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError) as error:
        raise MarkerError(f"{path}: not valid Python: {error}") from None
    for token in tokens:
        if token.type == tokenize.COMMENT and not token.line[: token.start[1]].strip():
            lines.add(token.start[0])
    return lines


def _check_inside_functions(source: str, path: str, regions: list[Region]) -> None:
    """Each region must lie inside the body of one function (so the stub raises when called)."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as error:
        raise MarkerError(f"{path}:{error.lineno}: not valid Python: {error.msg}") from None
    bodies = [
        (node.body[0].lineno, node.end_lineno)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    lines = source.splitlines()
    for region in regions:
        code = [
            number
            for number in range(region.begin + 1, region.end)
            if lines[number - 1].strip() and not lines[number - 1].lstrip().startswith("#")
        ]
        if not code:
            raise MarkerError(
                f"{path}:{region.begin}: solution region {region.tag!r} holds no code"
            )
        if not any(first <= code[0] and code[-1] <= last for first, last in bodies):
            raise MarkerError(
                f"{path}:{region.begin}: solution region {region.tag!r} is not inside one "
                "function body; a region must be a block of statements in a function"
            )


def stub_line(region: Region, hint: str) -> str:
    """The line that replaces ``region`` in a student release."""
    message = f"{region.tag}: {hint}" if hint else region.tag
    return f"{region.indent}raise NotImplementedError({message!r})"


def strip_regions(
    source: str, path: str, remove: set[str], hints: dict[str, str], known_tags=None
) -> tuple[str, list[Region]]:
    """``source`` with every region whose tag is in ``remove`` replaced by its stub.

    Every marker stays: around a stub it shows the student where to write,
    around a solution that stays (an earlier assignment's) it lets ``sync``
    put the student's own code there. Returns the new text and the regions
    removed.

    Raises:
        MarkerError: as :func:`find_regions`, and when the result is not valid
            Python.
    """
    regions = find_regions(source, path, known_tags)
    lines = source.splitlines(keepends=True)
    removed = []
    for region in reversed(regions):
        if region.tag in remove:
            newline = "\n"
            lines[region.begin : region.end - 1] = [
                stub_line(region, hints.get(region.tag, "")) + newline
            ]
            removed.append(region)
    text = "".join(lines)
    try:
        ast.parse(text, filename=path)
    except SyntaxError as error:
        raise MarkerError(
            f"{path}:{error.lineno}: removing the solution regions leaves invalid Python "
            f"({error.msg}); make each region a whole block of statements"
        ) from None
    return text, list(reversed(removed))


def region_text(source: str, region: Region) -> str:
    """The text of ``region`` (the lines between its markers)."""
    lines = source.splitlines(keepends=True)
    return "".join(lines[region.begin : region.end - 1])


def replace_regions(source: str, path: str, texts: dict[tuple[str, int], str]) -> str:
    """``source`` with the body of some regions replaced.

    Args:
        texts: ``(tag, k) -> new body`` for the k-th region (0-based) with that
            tag in the file; the markers stay.
    """
    regions = find_regions(source, path)
    lines = source.splitlines(keepends=True)
    ordinal: dict[str, int] = {}
    numbered = []
    for region in regions:
        numbered.append((region, ordinal.get(region.tag, 0)))
        ordinal[region.tag] = ordinal.get(region.tag, 0) + 1
    for region, k in reversed(numbered):
        body = texts.get((region.tag, k))
        if body is not None:
            if body and not body.endswith("\n"):
                body += "\n"
            lines[region.begin : region.end - 1] = [body]
    return "".join(lines)


def body_digest(body: str) -> str:
    """A fingerprint of a region's body that ignores line endings and trailing spaces."""
    import hashlib

    lines = [line.rstrip() for line in body.replace("\r\n", "\n").split("\n")]
    return hashlib.sha256("\n".join(lines).strip("\n").encode("utf-8")).hexdigest()[:20]


def is_stub(body: str) -> bool:
    """Whether a region's body is nothing but a release's ``raise NotImplementedError(...)``."""
    code = [line.strip() for line in body.splitlines() if line.strip()]
    return len(code) == 1 and code[0].startswith("raise NotImplementedError(")


def region_bodies(source: str, path: str) -> dict[tuple[str, int], str]:
    """``(tag, k) -> body`` for every region of ``source`` (see :func:`replace_regions`)."""
    bodies: dict[tuple[str, int], str] = {}
    ordinal: dict[str, int] = {}
    for region in find_regions(source, path):
        k = ordinal.get(region.tag, 0)
        ordinal[region.tag] = k + 1
        bodies[(region.tag, k)] = region_text(source, region)
    return bodies
