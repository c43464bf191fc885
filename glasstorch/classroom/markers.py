"""Solution regions and speed tricks: the comment lines that mark them, and how they are cut out.

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

A region holds the plain meaning only. A faster path for some inputs (a fused
node, a kernel called directly) is a *speed trick*: a block of its own, in the
same function, tagged with the task it serves::

    def norm(values):
        \"\"\"The Euclidean norm of ``values``.\"\"\"
        # -- speed trick: basics/norm
        # NumPy's loop in C instead of a Python loop, for an array.
        if isinstance(values, np.ndarray):
            return float(np.linalg.norm(values))
        # -- end speed trick
        # -- solution: basics/norm
        ...  # the loop above, for any sequence
        # -- end solution

A release that stubs the task removes the speed trick entirely, markers
included: it computes the task by itself, so it would let the task's tests
pass without the student's code. Where the task's region stays solved (an
earlier assignment's), its speed trick stays too.

Only real comment lines count as markers (found with :mod:`tokenize`), so a
docstring that shows one, like this one, is not a block. Errors in the
markers are :class:`MarkerError`, which names the file and line.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

#: The two kinds of marked block.
SOLUTION, SPEED_TRICK = "solution", "speed trick"
#: The opening marker: ``# -- solution: <assignment>/<task>``.
BEGIN = re.compile(r"^(?P<indent>[ \t]*)# -- solution:[ \t]*(?P<tag>.*?)[ \t]*$")
#: The closing marker: ``# -- end solution``.
END = re.compile(r"^[ \t]*# -- end solution[ \t]*$")
#: A speed trick's opening marker: ``# -- speed trick: <assignment>/<task>``.
TRICK_BEGIN = re.compile(r"^(?P<indent>[ \t]*)# -- speed trick:[ \t]*(?P<tag>.*?)[ \t]*$")
#: A speed trick's closing marker: ``# -- end speed trick``.
TRICK_END = re.compile(r"^[ \t]*# -- end speed trick[ \t]*$")
#: Anything that looks like a marker, to catch misspelt ones.
ANY = re.compile(r"^[ \t]*#[ \t]*--[ \t]*(end[ \t]+)?(solution|speed[ \t_-]*trick)\b")
#: What a tag must look like.
TAG = re.compile(r"^[a-z0-9_-]+/[a-z0-9_-]+$")
#: ``kind -> (opening marker, closing marker, what the block is called)``.
_KINDS = {
    SOLUTION: (BEGIN, END, "solution region"),
    SPEED_TRICK: (TRICK_BEGIN, TRICK_END, "speed trick"),
}


class MarkerError(ValueError):
    """A marker is unbalanced, untagged, misplaced or names an unknown task."""


@dataclass(frozen=True)
class Region:
    """One marked block of one file: a solution region, or a speed trick.

    Attributes:
        path: the file, relative to the repository root (``/`` separators).
        tag: ``"<assignment>/<task>"``.
        begin: line number (1-based) of the opening marker.
        end: line number of the closing marker.
        indent: the opening marker's indentation (the stub's indentation).
        kind: :data:`SOLUTION` or :data:`SPEED_TRICK`.
    """

    path: str
    tag: str
    begin: int
    end: int
    indent: str
    kind: str = SOLUTION

    @property
    def assignment(self) -> str:
        return self.tag.split("/", 1)[0]

    @property
    def task(self) -> str:
        return self.tag.split("/", 1)[1]


def find_regions(source: str, path: str, known_tags: set[str] | None = None) -> list[Region]:
    """Every solution region of ``source``, checked (its speed tricks are checked too).

    Args:
        source: the text of a Python file.
        path: its name, for the regions and the messages.
        known_tags: the ``assignment/task`` tags the course defines; ``None``
            skips that check.

    Raises:
        MarkerError: see :func:`find_blocks`.
    """
    return [block for block in find_blocks(source, path, known_tags) if block.kind == SOLUTION]


def find_speed_tricks(source: str, path: str, known_tags: set[str] | None = None) -> list[Region]:
    """Every speed trick of ``source``, checked (as :func:`find_regions`)."""
    return [block for block in find_blocks(source, path, known_tags) if block.kind == SPEED_TRICK]


def find_blocks(source: str, path: str, known_tags: set[str] | None = None) -> list[Region]:
    """Every solution region and speed trick of ``source``, in order, checked.

    Raises:
        MarkerError: for an opening marker without a tag, a malformed or unknown
            tag, a block opened inside another, a closing marker without an
            opening one (or of the other kind), a block left open, an empty
            block, a block that is not inside one function body, or a speed
            trick whose function has no solution region with its tag.
    """
    blocks: list[Region] = []
    open_at: tuple[int, str, str, str] | None = None  # line, tag, indent, kind
    comments = _comment_lines(source, path)
    for number, line in enumerate(source.splitlines(), start=1):
        if number not in comments:
            continue
        where = f"{path}:{number}"
        for kind, (begin_marker, end_marker, noun) in _KINDS.items():
            begin, end = begin_marker.match(line), end_marker.match(line)
            if begin:
                _check_opening(where, kind, begin["tag"], open_at, known_tags)
                open_at = (number, begin["tag"], begin["indent"], kind)
                break
            if end:
                if open_at is None:
                    raise MarkerError(f"{where}: '# -- end {kind}' without an opening marker")
                if open_at[3] != kind:
                    raise MarkerError(
                        f"{where}: '# -- end {kind}' closes the {_KINDS[open_at[3]][2]} opened "
                        f"at line {open_at[0]}; write '# -- end {open_at[3]}'"
                    )
                if number == open_at[0] + 1:
                    raise MarkerError(f"{where}: the {noun} opened at line {number - 1} is empty")
                blocks.append(Region(path, open_at[1], open_at[0], number, open_at[2], kind))
                open_at = None
                break
        else:
            if ANY.match(line):
                kind = SPEED_TRICK if "speed" in line else SOLUTION
                raise MarkerError(
                    f"{where}: malformed {kind} marker {line.strip()!r}; write "
                    f"'# -- {kind}: <assignment>/<task>' or '# -- end {kind}'"
                )
    if open_at is not None:
        raise MarkerError(
            f"{path}:{open_at[0]}: {_KINDS[open_at[3]][2]} {open_at[1]!r} is never closed; "
            f"add '# -- end {open_at[3]}'"
        )
    if blocks:
        _check_inside_functions(source, path, blocks)
    return blocks


def _check_opening(where: str, kind: str, tag: str, open_at, known_tags) -> None:
    """Raise :class:`MarkerError` if an opening marker of ``kind`` cannot open a block here."""
    if open_at is not None:
        raise MarkerError(
            f"{where}: a {_KINDS[kind][2]} opens inside the one opened at line "
            f"{open_at[0]}; close that one first with '# -- end {open_at[3]}'"
        )
    if not tag:
        raise MarkerError(
            f"{where}: {kind} marker without a tag; write '# -- {kind}: <assignment>/<task>'"
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


def _check_inside_functions(source: str, path: str, blocks: list[Region]) -> None:
    """Each block must lie inside the body of one function (so the stub raises when called),
    and each speed trick in the same function as a solution region of its task."""
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
    for block in blocks:
        noun = _KINDS[block.kind][2]
        code = [
            number
            for number in range(block.begin + 1, block.end)
            if lines[number - 1].strip() and not lines[number - 1].lstrip().startswith("#")
        ]
        if not code:
            raise MarkerError(f"{path}:{block.begin}: {noun} {block.tag!r} holds no code")
        holding = [(first, last) for first, last in bodies if first <= code[0] and code[-1] <= last]
        if not holding:
            raise MarkerError(
                f"{path}:{block.begin}: {noun} {block.tag!r} is not inside one "
                "function body; it must be a block of statements in a function"
            )
        if block.kind == SPEED_TRICK:
            first, last = max(holding)  # the innermost function around the trick
            if not any(
                other.kind == SOLUTION and other.tag == block.tag and first <= other.begin <= last
                for other in blocks
            ):
                raise MarkerError(
                    f"{path}:{block.begin}: speed trick {block.tag!r} serves no solution "
                    f"region of its function; put it in the function that holds "
                    f"'# -- solution: {block.tag}'"
                )


def stub_line(region: Region, hint: str) -> str:
    """The line that replaces ``region`` in a student release."""
    message = f"{region.tag}: {hint}" if hint else region.tag
    return f"{region.indent}raise NotImplementedError({message!r})"


def strip_regions(
    source: str, path: str, remove: set[str], hints: dict[str, str], known_tags=None
) -> tuple[str, list[Region]]:
    """``source`` with every block tagged in ``remove`` cut out.

    A solution region is replaced by its stub, and its markers stay: around a
    stub they show the student where to write. A speed trick goes entirely,
    markers included (the release runs the student's plain meaning only).
    Blocks of other tags stay as they are: around a solution that stays (an
    earlier assignment's) the markers let ``sync`` put the student's own code
    there, and its speed trick stays with it. Returns the new text and the
    blocks removed, in order.

    Raises:
        MarkerError: as :func:`find_blocks`, and when the result is not valid
            Python.
    """
    blocks = find_blocks(source, path, known_tags)
    lines = source.splitlines(keepends=True)
    removed = []
    for block in reversed(blocks):
        if block.tag not in remove:
            continue
        if block.kind == SPEED_TRICK:
            del lines[block.begin - 1 : block.end]
        else:
            lines[block.begin : block.end - 1] = [stub_line(block, hints.get(block.tag, "")) + "\n"]
        removed.append(block)
    text = "".join(lines)
    try:
        ast.parse(text, filename=path)
    except SyntaxError as error:
        raise MarkerError(
            f"{path}:{error.lineno}: removing the solution regions and speed tricks leaves "
            f"invalid Python ({error.msg}); make each block a whole block of statements"
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
