"""The classroom tools (glasstorch.classroom): markers, releases, the leak check, the grader.

The grader is exercised on a tiny synthetic course (two assignments, three
short kernels, a handful of tests) so that a build takes seconds; the real
course is built by ``make assignments``, never by the suite. Hostile
submissions (an early ``exit(0)``, a patched pytest, a forged results file, an
endless loop, ``os.abort()``, a test that prints a hidden test's source) must
earn nothing they did not earn.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
import zipfile

import pytest

pytestmark = [
    pytest.mark.classroom,
    pytest.mark.cpu_only("the course tools (regions, releases, autograder) handle source text"),
]

if sys.version_info < (3, 11):  # the course file is TOML (tomllib)
    pytest.skip("the classroom tools need Python 3.11", allow_module_level=True)

from glasstorch.classroom import release  # noqa: E402
from glasstorch.classroom import sandbox as sandbox_module  # noqa: E402
from glasstorch.classroom.__main__ import main  # noqa: E402
from glasstorch.classroom.check import check, sync  # noqa: E402
from glasstorch.classroom.course import CourseError, load_course, parse_course  # noqa: E402
from glasstorch.classroom.grade import grade  # noqa: E402
from glasstorch.classroom.leaks import find_leaks  # noqa: E402
from glasstorch.classroom.markers import (  # noqa: E402
    SPEED_TRICK,
    MarkerError,
    find_regions,
    find_speed_tricks,
    strip_regions,
)
from glasstorch.classroom.release import (  # noqa: E402
    BuildError,
    build,
    is_region_file,
    repository_files,
    scan_regions,
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Written with a join so that this file itself holds no marker line.
BEGIN, END = "# -- " + "solution:", "# -- " + "end solution"
TRICK, TRICK_END = "# -- " + "speed trick:", "# -- " + "end speed trick"


def _function(tag: str, body: str = "return a + b", name: str = "f") -> str:
    return f"def {name}(a, b):\n    '''Add.'''\n    {BEGIN} {tag}\n    {body}\n    {END}\n"


# ------------------------------------------------------------------ markers
def test_regions_are_found_with_their_tags_and_lines():
    source = _function("basics/add") + "\n\n" + _function("basics/scale", name="g")
    regions = find_regions(source, "k.py", {"basics/add", "basics/scale"})
    assert [(r.tag, r.begin, r.end, r.indent) for r in regions] == [
        ("basics/add", 3, 5, "    "),
        ("basics/scale", 10, 12, "    "),
    ]
    assert regions[0].assignment == "basics" and regions[0].task == "add"


@pytest.mark.parametrize(
    "source, words",
    [
        (f"def f():\n    {BEGIN} a/b\n    return 1\n", "never closed"),
        (f"def f():\n    return 1\n    {END}\n", "without an opening"),
        (f"def f():\n    {BEGIN}\n    return 1\n    {END}\n", "without a tag"),
        (f"def f():\n    {BEGIN} Not A Tag\n    return 1\n    {END}\n", "malformed tag"),
        (f"def f():\n    {BEGIN} a/zzz\n    return 1\n    {END}\n", "names no task"),
        (
            f"def f():\n    {BEGIN} a/b\n    {BEGIN} a/b\n    return 1\n    {END}\n    {END}\n",
            "inside the one opened",
        ),
        (f"{BEGIN} a/b\nx = 1\n{END}\n", "not inside one function"),
        ("def f():\n    # --solution a/b\n    return 1\n", "malformed solution marker"),
        (f"def f():\n    {BEGIN} a/b\n    {END}\n    return 1\n", "empty"),
    ],
)
def test_marker_errors_name_the_problem(source, words):
    with pytest.raises(MarkerError, match=words):
        find_regions(source, "k.py", {"a/b"})


def test_a_marker_inside_a_string_is_not_a_region():
    source = f'def f():\n    """Example:\n\n    {BEGIN} a/b\n    """\n    return 1\n'
    assert find_regions(source, "k.py", {"a/b"}) == []


def test_stripping_leaves_valid_python_whose_stub_names_the_task():
    source = _function("basics/add", "total = a + b\n    return total")
    text, removed = strip_regions(source, "k.py", {"basics/add"}, {"basics/add": "add them"})
    assert [r.tag for r in removed] == ["basics/add"]
    assert "total" not in text and BEGIN in text and END in text  # markers stay for the student
    namespace = {}
    exec(compile(text, "k.py", "exec"), namespace)
    with pytest.raises(NotImplementedError, match="basics/add: add them"):
        namespace["f"](1, 2)
    kept, nothing = strip_regions(source, "k.py", set(), {})
    assert kept == source and nothing == []


def _tricked(tag: str = "a/b", trick_tag: str | None = None) -> str:
    """A function whose region ``tag`` has a speed trick right above it."""
    return (
        f"def f(a, b):\n    'Add.'\n    {TRICK} {trick_tag or tag}\n    # Integers: one call.\n"
        "    if type(a) is int:\n        return int.__add__(a, b)\n"
        f"    {TRICK_END}\n    {BEGIN} {tag}\n    return a + b\n    {END}\n"
    )


def test_a_release_drops_the_speed_trick_and_the_solution_tree_keeps_it():
    source = _tricked("basics/add")
    (trick,) = find_speed_tricks(source, "k.py", {"basics/add"})
    assert (trick.tag, trick.begin, trick.end, trick.kind) == ("basics/add", 3, 7, SPEED_TRICK)
    assert [r.tag for r in find_regions(source, "k.py")] == ["basics/add"]  # the region alone
    text, removed = strip_regions(source, "k.py", {"basics/add"}, {"basics/add": "add them"})
    assert [r.kind for r in removed] == [SPEED_TRICK, "solution"]
    assert "speed trick" not in text and "int.__add__" not in text  # markers and code gone
    assert BEGIN in text and END in text
    namespace = {}
    exec(compile(text, "k.py", "exec"), namespace)
    with pytest.raises(NotImplementedError, match="basics/add: add them"):
        namespace["f"](1, 2)  # the student's code runs, not a fast path around it
    kept, nothing = strip_regions(source, "k.py", {"other/task"}, {})
    assert kept == source and nothing == []  # a task this release does not stub keeps its trick


@pytest.mark.parametrize(
    "source, words",
    [
        (_tricked().replace(f"    {TRICK_END}\n", ""), "k.py:7: a solution region opens inside the one opened at line 3"),
        (_tricked().replace(TRICK_END, END), "k.py:7: '# -- end solution' closes the speed trick"),
        (_tricked().replace(f"{TRICK} a/b", TRICK), "k.py:3: speed trick marker without a tag"),
        (_tricked(trick_tag="a/zzz"), "k.py:3: tag 'a/zzz' names no task"),
        (_tricked(trick_tag="A B"), "k.py:3: malformed tag"),
        (_tricked().replace(TRICK, "# -- speed-trick"), "k.py:3: malformed speed trick marker"),
        (_tricked().replace(f"{END}\n", f"{END}\n    {TRICK} a/b\n"), "k.py:11: speed trick 'a/b' is never closed"),
        (_tricked().replace(f"{TRICK_END}\n", f"{TRICK_END}\n    {TRICK_END}\n"), "k.py:8: '# -- end speed trick' without"),
        (_function("a/b") + f"\n\ndef g(a, b):\n    {TRICK} a/b\n    return a\n    {TRICK_END}\n", "k.py:9: speed trick 'a/b' serves no solution region"),
        (f"{TRICK} a/b\nx = 1\n{TRICK_END}\n" + _function("a/b"), "k.py:1: speed trick 'a/b' is not inside one function"),
        (f"def f():\n    {BEGIN} a/b\n    {TRICK} a/b\n    return 1\n    {TRICK_END}\n    {END}\n", "k.py:3: a speed trick opens inside the one opened at line 2"),
    ],
)  # fmt: skip
def test_speed_trick_marker_errors_name_the_file_and_line(source, words):
    with pytest.raises(MarkerError, match=re.escape(words)):
        find_regions(source, "k.py", {"a/b"})


def test_every_region_of_the_repository_is_valid_and_strips_to_valid_python():
    course = load_course()
    files = [f for f in repository_files(REPO) if is_region_file(f)]
    regions = scan_regions(REPO, files, course)  # raises on any marker problem
    assert {r.tag for found in regions.values() for r in found} == course.tags()
    for path in regions:
        with open(os.path.join(REPO, path), encoding="utf-8") as file:
            text, removed = strip_regions(file.read(), path, course.tags(), course.hints())
        ast.parse(text)
        assert removed
    # nn/layers holds the plain meaning; its fused Addmm path is a speed trick beside it
    path = "glasstorch/nn/functional/linear.py"
    with open(os.path.join(REPO, path), encoding="utf-8") as file:
        source = file.read()
    assert [t.tag for t in find_speed_tricks(source, path)] == ["nn/layers"]
    (layers,) = [r for r in regions[path] if r.tag == "nn/layers"]
    assert "Addmm" not in "".join(source.splitlines(True)[layers.begin : layers.end - 1])
    text, _ = strip_regions(source, path, {"nn/layers"}, course.hints())
    assert "Addmm.apply" not in text


def test_the_build_tests_with_the_simulators_runtime_but_not_the_c_tiers_sources():
    # The cuda assignment's tests compile kernels with the CUDA simulator, whose
    # runtime is C; the reference tier needs none of fast/csrc.
    assert release._in_package("fast/cuda/simulator/gt_cuda_sim_runtime.c")
    assert release._in_package("fast/cuda/simulator/simulator.py")
    assert not release._in_package("fast/csrc/conv.c")
    assert not release._in_package("docs/index.md")


def test_the_course_has_seven_assignments_in_order():
    course = load_course()
    ids = [a.id for a in course.assignments]
    assert ids == ["strides", "kernels", "autograd", "nn", "data", "conv", "cuda"]
    assert all(task.hint for a in course.assignments for task in a.tasks)


@pytest.mark.parametrize(
    "data, words",
    [
        ({}, "no assignments"),
        ({"assignment": [{"id": "a", "task": [{"id": "t"}]}]}, "no tests grade it"),
        (
            {
                "assignment": [
                    {"id": "a", "task": [{"id": "t", "tests": [{"select": "x", "pts": 1}]}]}
                ]
            },
            "unknown key",
        ),
        (
            {"assignment": [{"id": "a", "task": [{"id": "t", "tests": ["x"]}]}] * 2},
            "two assignments",
        ),
        ({"course": {"hidden_visibility": "never"}, "assignment": []}, "hidden_visibility"),
    ],
)
def test_course_errors_say_what_is_wrong(data, words):
    with pytest.raises(CourseError, match=words):
        parse_course(data)


# ------------------------------------------------------------------ leak check
SOLUTION = "total = 0\nfor value in values:\n    total += value * value * weight\nreturn total\n"


def _release(tmp_path, name: str, text: str) -> str:
    root = tmp_path / "release"
    root.mkdir(exist_ok=True)
    (root / name).write_text(text)
    return str(root)


@pytest.mark.parametrize(
    "name, text",
    [
        ("copy.py", "def g(values, weight):\n" + textwrap.indent(SOLUTION, "    ")),
        ("doc.py", f'"""Hint:\n{SOLUTION}"""\n'),
        ("comment.py", "".join(f"# {line}\n" for line in SOLUTION.splitlines())),
        ("guide.md", f"Look:\n\n```python\n{SOLUTION}```\n"),
        (
            "reflowed.py",
            "def g(values, weight):\n    total = 0\n    for value in values: total += (value * value * weight)\n    return total\n",
        ),
    ],
)
def test_leak_check_finds_solution_text_however_it_is_laid_out(tmp_path, name, text):
    if name == "reflowed.py":  # extra parentheses change the tokens: not the same text
        assert find_leaks(_release(tmp_path, name, text), [("a/t", SOLUTION)]) == []
        return
    leaks = find_leaks(_release(tmp_path, name, text), [("a/t", SOLUTION)])
    assert [(leak.tag, leak.path) for leak in leaks] == [("a/t", name)]


def test_leak_check_ignores_code_the_library_shares_outside_regions(tmp_path):
    root = _release(
        tmp_path, "other.py", "def h(values, weight):\n" + textwrap.indent(SOLUTION, "    ")
    )
    assert find_leaks(root, [("a/t", SOLUTION)], background=[SOLUTION]) == []
    assert find_leaks(_release(tmp_path, "x.py", "x = 1\n"), [("a/t", "return 1")]) == []


# ------------------------------------------------------------------ a tiny course
KERNELS = f'''"""Tiny kernels."""

FAST_CALLS = []


def add(a, b):
    """a + b."""
    {TRICK} basics/add
    # Two integers: one call of int's own addition.
    if type(a) is int and type(b) is int:
        FAST_CALLS.append((a, b))
        return int.__add__(a, b)
    {TRICK_END}
    {BEGIN} basics/add
    total = a + b
    return total
    {END}


def scale(values, factor):
    """Every value times factor."""
    {BEGIN} basics/scale
    return [value * factor for value in values]
    {END}


def double(values):
    """Every value twice."""
    {BEGIN} more/double
    return [value + value for value in values]
    {END}
'''

TESTS = """import pytest
from glasstorch.reference import FAST_CALLS, add, double, scale

pytestmark = pytest.mark.math


@pytest.mark.parametrize("a", [1, 2])
def test_add(a):
    assert add(a, 1) == a + 1


def test_scale():
    assert scale([1, 2], 3) == [3, 6]


def test_scale_hidden():
    secret_expected_value = [2.0]
    assert scale([4], 0.5) == secret_expected_value


def test_double():
    assert double([1, 5]) == [2, 10]


def test_untouched():
    assert add.__doc__ == "a + b."


def test_add_takes_the_fast_path():
    add(2, 3)
    assert FAST_CALLS[-1] == (2, 3)


def test_needs_torch():
    torch = pytest.importorskip("torch")  # hidden by the grader, installed or not
    assert torch.tensor(add(1, 2)).item() == 3
"""

COURSE = """
[course]
title = "Tiny"
time_limit = 30

[[assignment]]
id = "basics"
title = "Basics"
scope = ["shared_tests/test_tiny.py"]

[[assignment.task]]
id = "add"
title = "Adding"
hint = "add them"
tests = [{ select = "shared_tests/test_tiny.py::test_add", points = 2 }]
speed_trick_tests = ["shared_tests/test_tiny.py::test_add_takes_the_fast_path"]

[[assignment.task]]
id = "scale"
title = "Scaling"
hint = "multiply each"
tests = [
  { select = "shared_tests/test_tiny.py::test_scale" },
  { select = "shared_tests/test_tiny.py::test_scale_hidden", hidden = true },
]

[[assignment]]
id = "more"
title = "More"
scope = ["shared_tests/test_tiny.py"]

[[assignment.task]]
id = "double"
title = "Doubling"
hint = "add each to itself"
tests = [{ select = "shared_tests/test_tiny.py", only_failing = true }]
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny repository, its course and its build."""
    root = tmp_path_factory.mktemp("tiny")
    repo = root / "repo"
    for folder in ("glasstorch", "reference", "shared_tests"):
        (repo / folder).mkdir(parents=True)
    (repo / "glasstorch" / "__init__.py").write_text(
        '"""Stand-in."""\nfrom glasstorch import _tier, reference\n'
    )
    (repo / "glasstorch" / "_tier.py").write_text(
        'import os\n\ntier = os.environ.get("GLASSTORCH_TIER", "fast")\n'
    )
    (repo / "reference" / "__init__.py").write_text(KERNELS)
    # the grader itself ships in the release (check) and in the autograder (grade)
    shutil.copytree(
        os.path.join(REPO, "glasstorch", "classroom"),
        repo / "glasstorch" / "classroom",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (repo / "shared_tests" / "conftest.py").write_text(
        'def pytest_configure(config):\n    config.addinivalue_line("markers", "math: topic")\n'
    )
    (repo / "shared_tests" / "test_tiny.py").write_text(TESTS)
    (repo / "course.toml").write_text(COURSE)
    course = load_course(str(repo / "course.toml"))
    dist = root / "dist"
    reports = build(course, str(repo), str(dist), log=lambda *a: None)
    return {"repo": repo, "dist": dist, "reports": reports, "root": root}


def _grade(tiny, submission, name, only=None, assignment="basics", time_limit=None):
    out = tiny["root"] / f"{name}.json"
    source = tiny["dist"] / assignment / "autograder"
    results = grade(
        str(source),
        str(submission),
        str(out),
        log=lambda *a: None,
        only=only,
        time_limit=time_limit,
    )
    assert json.loads(out.read_text()) == results
    return results


def _submission(tiny, name, add_body):
    """The student release of 'basics', solved, with ``add_body`` as the add region."""
    target = tiny["root"] / name
    shutil.copytree(tiny["dist"] / "basics" / "student", target)
    path = target / "reference" / "__init__.py"
    text = path.read_text()
    text = text.replace("raise NotImplementedError('basics/add: add them')", add_body)
    text = text.replace(
        "raise NotImplementedError('basics/scale: multiply each')",
        "return [value * factor for value in values]",
    )
    path.write_text(text)
    return target


def test_build_writes_releases_and_autograders(tiny):
    by_id = {r.id: r for r in tiny["reports"]}
    assert (by_id["basics"].tasks, by_id["basics"].graded, by_id["basics"].hidden) == (2, 3, 1)
    assert by_id["more"].graded == 1 and by_id["basics"].excluded == 1  # test_double needs 'more'
    # test_needs_torch skips (PyTorch is hidden from every test, installed or not): in
    # the scope, never graded, never a failure
    assert by_id["basics"].skipped == by_id["more"].skipped == 1
    student = tiny["dist"] / "basics" / "student"
    kernels = (student / "reference" / "__init__.py").read_text()
    assert "total = a + b" not in kernels and "value + value" not in kernels  # later ones too
    # the speed trick of a stubbed task is gone (else it would pass test_add for the student),
    # and its test is neither graded nor required there
    assert "speed trick" not in kernels and "int.__add__" not in kernels
    assert by_id["basics"].speed_trick_tests == 1 and by_id["more"].speed_trick_tests == 0
    assert "secret_expected_value" not in (student / "shared_tests" / "test_tiny.py").read_text()
    assert (student / ".github" / "workflows" / "classroom.yml").read_text().count(
        "python -m glasstorch.classroom check"
    ) == 1
    manifest = json.loads((student / "classroom.json").read_text())
    assert [t["name"].split("::")[1] for t in manifest["tests"]] == ["test_add", "test_scale"]
    later = (tiny["dist"] / "more" / "student" / "reference" / "__init__.py").read_text()
    assert "total = a + b" in later and "value + value" not in later
    assert later.count(TRICK) == 1 and "int.__add__" in later  # a solved task keeps its trick
    run = (tiny["dist"] / "basics" / "autograder" / "run_autograder").read_text()
    assert "-m glasstorch.classroom grade" in run and "--assignment basics" in run
    assert (tiny["dist"] / "basics" / "autograder.zip").stat().st_size > 0


def test_build_refuses_a_release_that_leaves_a_graded_test_passing(tiny, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(tiny["repo"], repo)
    course = (
        (repo / "course.toml")
        .read_text()
        .replace('test_tiny.py::test_scale" }', 'test_tiny.py::test_untouched" }')
    )
    (repo / "course.toml").write_text(course)
    with pytest.raises(Exception, match="passes on the student release"):
        build(
            load_course(str(repo / "course.toml")),
            str(repo),
            str(tmp_path / "d"),
            only=["basics"],
            log=lambda *a: None,
        )


def test_reference_solution_gets_full_marks(tiny):
    results = _grade(tiny, tiny["repo"], "solution")
    assert results["score"] == results["max_score"] == 4
    assert [t["status"] for t in results["tests"]] == ["passed"] * 3
    hidden = [t for t in results["tests"] if t["visibility"] != "visible"]
    assert [t["visibility"] for t in hidden] == ["after_published"]


def test_student_release_gets_zero_with_the_stub_message(tiny):
    results = _grade(tiny, tiny["dist"] / "basics" / "student", "stub")
    assert results["score"] == 0 and results["max_score"] == 4
    add = results["tests"][0]
    assert (
        add["status"] == "failed" and "NotImplementedError: basics/add: add them" in add["output"]
    )
    assert "reference/__init__.py" in add["output"] and "pkg" not in add["output"]
    text = json.dumps(results)
    assert "secret_expected_value" not in text


@pytest.mark.parametrize(
    "name, body, words",
    [
        ("early-exit", "import os; os._exit(0)", "ended before the tests finished"),
        (
            "patched-pytest",
            "import _pytest.python; _pytest.python.Function.runtest = lambda self: None; "
            "raise AssertionError('patched')",
            "pytest) was modified",
        ),
        ("endless-loop", "while True: pass", "timed out"),
        ("abort", "import os; os.abort()", "SIGABRT"),
        ("skip", "import pytest; pytest.skip('not today')", "Skipped: not today"),
    ],
)
def test_hostile_submissions_earn_nothing(tiny, name, body, words):
    submission = _submission(tiny, name, body)
    limit = 3 if name == "endless-loop" else None  # the others finish on their own
    results = _grade(
        tiny, submission, name, only=["shared_tests/test_tiny.py::test_add"], time_limit=limit
    )
    (add,) = results["tests"]
    assert add["score"] == 0 and add["status"] == "failed"
    assert words in add["output"]


def test_a_forged_results_file_is_replaced(tiny):
    out = tiny["root"] / "forged.json"
    forged = json.dumps({"score": 100, "tests": []})
    body = f"open({str(out)!r}, 'w').write({forged!r}); import os; os._exit(0)"
    submission = _submission(tiny, "forged", body)
    results = _grade(tiny, submission, "forged", only=["shared_tests/test_tiny.py::test_add"])
    assert results["score"] == 0 and json.loads(out.read_text())["score"] == 0


def test_hidden_test_source_never_reaches_the_output(tiny):
    submission = _submission(tiny, "snoop", "return a + b")
    path = submission / "reference" / "__init__.py"
    hidden_file = tiny["dist"] / "basics" / "autograder" / ".classroom" / "tests" / "test_tiny.py"
    path.write_text(
        path.read_text().replace(
            "return [value * factor for value in values]",
            f"raise AssertionError(open({str(hidden_file)!r}).read())",
        )
    )
    results = _grade(tiny, submission, "snoop")
    assert results["score"] == 2  # add only
    assert "secret_expected_value" not in json.dumps(results)
    if os.geteuid() == 0:  # the test process runs as a user who cannot read the file
        assert "Permission denied" in results["tests"][1]["output"]
    else:  # the grader's own rights: it read it, and the output is withheld
        assert "withheld" in results["tests"][1]["output"]


def test_check_reports_tasks_and_sync_carries_regions_forward(tiny, tmp_path):
    lines = []
    student = tmp_path / "basics"
    shutil.copytree(tiny["dist"] / "basics" / "student", student)
    assert check(str(student), progress=False, log=lines.append) == 2
    assert any("basics/add" in line and "not started" in line for line in lines)
    solved = _submission(tiny, "solved-for-check", "return a + b + 0")
    lines.clear()
    assert check(str(solved), progress=False, log=lines.append) == 0
    assert any("hidden test" in line for line in lines)
    nxt = tmp_path / "more"
    shutil.copytree(tiny["dist"] / "more" / "student", nxt)
    result = sync(str(solved), str(nxt), log=lambda *a: None)
    # add is the student's own; scale is the reference solution the next release has too
    assert result.copied == ["reference/__init__.py: basics/add"] and not result.conflicts
    assert "return a + b + 0" in (nxt / "reference" / "__init__.py").read_text()


def test_every_assignment_has_a_page_naming_its_tasks():
    for assignment in load_course().assignments:
        with open(os.path.join(REPO, "docs", "classroom", f"{assignment.id}.md")) as file:
            page = file.read()
        for task in assignment.tasks:
            assert f"`{task.tag}`" in page, (assignment.id, task.tag)


# ------------------------------------------------------------------ Gradescope's layout
def _gradescope(tiny, tmp_path, submission) -> tuple[dict, str]:
    """Lay out Gradescope's tree under ``tmp_path`` and run ``run_autograder`` as it does.

    The zip is extracted into ``<root>/source`` (modes kept, as unzip does),
    ``run_autograder`` copied to ``<root>/run_autograder``, the submission put in
    ``<root>/submission``; ``<root>/venv/bin/python`` stands for the interpreter
    ``setup.sh`` installs. ``GLASSTORCH_AUTOGRADER_ROOT`` moves ``/autograder``.
    Called again with the same ``tmp_path``, it grades another submission with
    the same install (as one autograder image grades every submission).
    """
    root = tmp_path / "autograder"
    source = root / "source"
    if not source.exists():
        with zipfile.ZipFile(tiny["dist"] / "basics" / "autograder.zip") as archive:
            for info in archive.infolist():
                archive.extract(info, source)
                mode = info.external_attr >> 16
                if mode:
                    os.chmod(source / info.filename, mode)
        assert (source / "setup.sh").is_file()
        assert (source / ".classroom" / "manifest.json").is_file()
        shutil.copy2(source / "run_autograder", root / "run_autograder")
        (root / "venv" / "bin").mkdir(parents=True)
        python = root / "venv" / "bin" / "python"
        python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        python.chmod(python.stat().st_mode | stat.S_IXUSR)
    shutil.rmtree(root / "submission", ignore_errors=True)
    shutil.copytree(submission, root / "submission")
    env = dict(os.environ, GLASSTORCH_AUTOGRADER_ROOT=str(root))
    run = subprocess.run(
        [str(root / "run_autograder")], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    results = root / "results" / "results.json"
    assert results.is_file(), run.stdout + run.stderr
    return json.loads(results.read_text()), run.stdout


@pytest.mark.parametrize("who, score", [("solution", 4), ("stub", 0)])
def test_the_zip_grades_in_gradescopes_layout(tiny, tmp_path, who, score):
    submission = tiny["repo"] if who == "solution" else tiny["dist"] / "basics" / "student"
    results, stdout = _gradescope(tiny, tmp_path, submission)
    assert results["score"] == score and results["max_score"] == 4
    assert [t["max_score"] for t in results["tests"]] == [2, 1, 1]
    assert all(t["visibility"] in ("visible", "after_published") for t in results["tests"])
    assert f"score {score}" in stdout


def test_the_zip_pins_every_package_and_needs_no_torch(tiny):
    with zipfile.ZipFile(tiny["dist"] / "basics" / "autograder.zip") as archive:
        names = set(archive.namelist())
        setup = archive.read("setup.sh").decode()
        requirements = archive.read("requirements.txt").decode().split()
    assert {"setup.sh", "run_autograder", "requirements.txt", "glasstorch/__init__.py"} <= names
    assert not any(name.startswith("source/") for name in names)
    assert "glasstorch/classroom/grade.py" in names and ".classroom/tests/test_tiny.py" in names
    pinned = dict(line.split("==") for line in requirements)
    assert {"numpy", "pytest", "hypothesis", "pluggy"} <= set(pinned) and all(pinned.values())
    assert "torch" not in pinned and not re.search(r"\btorch", setup)
    assert "--no-deps" in setup and "-r requirements.txt" in setup
    student = tiny["dist"] / "basics" / "student"
    workflow = (student / ".github" / "workflows" / "classroom.yml").read_text()
    assert not re.search(r"\btorch", workflow) and "-r classroom-requirements.txt" in workflow
    lines = (student / "classroom-requirements.txt").read_text().split()
    assert [line for line in lines if "==" in line] == requirements


# ------------------------------------------------------------------ without PyTorch
def test_a_graded_test_that_would_skip_is_refused(tiny, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(tiny["repo"], repo)
    course = (repo / "course.toml").read_text()
    course = course.replace(
        'test_tiny.py::test_add", points = 2', 'test_tiny.py::test_needs_torch"'
    )
    (repo / "course.toml").write_text(course)
    with pytest.raises(BuildError, match="test_needs_torch skips on the reference solution"):
        build(
            load_course(str(repo / "course.toml")),
            str(repo),
            str(tmp_path / "d"),
            only=["basics"],
            log=lambda *a: None,
        )


#: Runs the classroom's command line with ``import torch`` failing (as without PyTorch).
NO_TORCH = """
import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torch":
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
sys.meta_path.insert(0, NoTorch())
from glasstorch.classroom.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def test_build_and_grading_give_the_same_verdicts_without_torch(tiny, tmp_path):
    def classroom(*args):
        return subprocess.run(
            [sys.executable, "-c", NO_TORCH, *args], capture_output=True, text=True, cwd=tmp_path
        )

    built = classroom(
        "build", "--course", str(tiny["repo"] / "course.toml"), "--root", str(tiny["repo"]),
        "--out", str(tmp_path / "dist"),
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    for who, submission in (
        ("solution", tiny["repo"]),
        ("stub", tmp_path / "dist" / "basics" / "student"),
    ):
        out = tmp_path / f"{who}.json"
        graded = classroom(
            "grade", "--assignment", "basics", "--submission", str(submission), "--out", str(out),
            "--autograder", str(tmp_path / "dist" / "basics" / "autograder"),
        )  # fmt: skip
        assert graded.returncode == 0, graded.stderr
        without = json.loads(out.read_text())
        with_torch = _grade(tiny, submission, f"{who}-with-torch")
        assert [t["status"] for t in without["tests"]] == [t["status"] for t in with_torch["tests"]]
        assert without["score"] == with_torch["score"] == (4 if who == "solution" else 0)


# ------------------------------------------------------------------ sync
def _solve(repo, old: str, new: str) -> None:
    path = repo / "reference" / "__init__.py"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_sync_copies_only_the_students_own_work(tiny, tmp_path):
    first, second = tmp_path / "basics", tmp_path / "more"
    shutil.copytree(tiny["dist"] / "basics" / "student", first)
    shutil.copytree(tiny["dist"] / "more" / "student", second)
    # partial work: add solved, scale left as the stub
    _solve(first, "raise NotImplementedError('basics/add: add them')", "return b + a")
    lines = []
    result = sync(str(first), str(second), log=lines.append)
    text = (second / "reference" / "__init__.py").read_text()
    assert result.copied == ["reference/__init__.py: basics/add"] and not result.conflicts
    assert "return b + a" in text
    assert "return [value * factor for value in values]" in text  # the stub never came over
    assert text.count(TRICK) == text.count(TRICK_END) == 1  # the solved task's trick, once
    assert "basics/scale" in result.unchanged[0]
    # a second sync changes nothing
    again = sync(str(first), str(second), log=lambda *a: None)
    assert again.copied == [] and again.conflicts == []
    # the student edits add in both: a conflict, reported, nothing overwritten
    _solve(second, "return b + a", "return a + b  # mine, here")
    _solve(first, "return b + a", "return (a + b)")
    lines.clear()
    result = sync(str(first), str(second), log=lines.append)
    assert result.conflicts == ["reference/__init__.py: basics/add"] and result.copied == []
    assert any(line.startswith("CONFLICT") and "--force" in line for line in lines)
    assert "# mine, here" in (second / "reference" / "__init__.py").read_text()
    assert main(["sync", "--from", str(first), "--to", str(second)]) == 1
    # --force takes the earlier repository's
    result = sync(str(first), str(second), force=True, log=lambda *a: None)
    assert result.copied == ["reference/__init__.py: basics/add"]
    text = (second / "reference" / "__init__.py").read_text()
    assert "return (a + b)" in text and text.count("int.__add__") == 1


# ------------------------------------------------------------------ the command line
def test_check_refuses_a_task_that_does_not_exist(tiny, capsys):
    student = tiny["dist"] / "basics" / "student"
    assert main(["check", "--repo", str(student), "--task", "nosuch", "--no-progress"]) == 2
    error = capsys.readouterr().err
    assert "no task 'nosuch'" in error and "add, scale" in error


def test_help_is_plain_text(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "build" in text and "sync" in text and "``" not in text and ":mod:" not in text


def test_a_build_without_pytest_says_so(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(release, "RUNNER_NEEDS", ("pytest", "no_such_test_runner"))
    course = load_course(str(tiny["repo"] / "course.toml"))
    with pytest.raises(BuildError, match="no_such_test_runner is not installed.*make install"):
        build(course, str(tiny["repo"]), str(tmp_path / "d"), log=lambda *a: None)


def test_the_commands_run_from_a_checkout_that_is_not_installed():
    # -S: no site-packages processing, so no editable install; NumPy still on the path
    import numpy

    site = os.path.dirname(os.path.dirname(numpy.__file__))
    env = dict(os.environ, PYTHONPATH=site, GLASSTORCH_TIER="reference")
    run = subprocess.run(
        [sys.executable, "-S", "-m", "glasstorch.classroom", "check", "--help"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "--task" in run.stdout


# ------------------------------------------------------------------ hostile submissions
# Each attack below once won points (see docs/guide/classroom-teachers.md, "What the
# grader defends against"). The region bodies are the attacks, as a student would
# write them; they run inside the tiny course's test processes.

#: The grader switches the test process to an unprivileged user only when it runs as
#: root (Gradescope, CI); as any other user the submission has the grader's rights.
needs_root = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="the sandbox user exists only when the grader runs as root (Gradescope and CI do)",
)


def _attack(tiny, name: str, add_body: str, scale_solved: bool = True):
    """The basics release with ``add_body`` (several lines) as the add region."""
    target = _submission(tiny, name, textwrap.indent(textwrap.dedent(add_body), "    ").strip())
    if not scale_solved:
        path = target / "reference" / "__init__.py"
        path.write_text(
            path.read_text().replace(
                "return [value * factor for value in values]",
                "raise NotImplementedError('basics/scale: multiply each')",
            )
        )
    return target


def _tree_digest(root) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def _sandbox_processes() -> list[str]:
    """Processes of any sandbox user (the grader's uids) alive now."""
    from glasstorch.classroom.sandbox import FIRST_UID, SLOTS

    found = []
    for name in os.listdir("/proc"):
        try:
            status = open(f"/proc/{name}/status").read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        uid = int(fields.get("Uid", "-1").split()[0])
        if FIRST_UID <= uid < FIRST_UID + SLOTS and not fields["State"].strip().startswith("Z"):
            found.append(f"{name}: {fields.get('Name', '').strip()}")
    return found


TAMPER = """
import os, sys
# Everything the test process can find: the working folders of every process
# (/proc/<pid>/cwd: the grader's is the autograder), its own import path (the
# tests, the package), the grader's own folder.
roots = set()
for pid in os.listdir("/proc"):
    try:
        roots.add(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        pass
roots.update(p for p in sys.path[:2] if os.path.isdir(p))
runner = sys.modules.get("_glasstorch_runner") or sys.modules.get("__main__")
roots.add(os.path.dirname(os.path.dirname(os.path.dirname(runner.__file__))))
for root in sorted(roots):
    if root in ("/", os.sep) or root.startswith(("/proc", "/usr", "/sys")):
        continue
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("venv", "site-packages")]
        for name in names:
            if name.endswith((".py", ".json")) and not folder.endswith("submission"):
                path = os.path.join(folder, name)
                try:  # a test that passes, a grader that gives full marks
                    with open(path, "a") as file:
                        file.write("\\n# tampered\\n")
                except OSError:
                    pass
return a + b
"""


@needs_root
def test_tampering_with_the_tests_and_the_grader_earns_nothing(tiny, tmp_path):
    # Rewrite every test file and every grader file reachable through
    # /proc/<pid>/cwd, sys.path and the runner's own path (_runner.py, grade.py,
    # forkserver.py, the hidden tests, manifest.json), then grade an honest stub
    # with the same install.
    submission = _attack(tiny, "tamper", TAMPER, scale_solved=False)
    results, _ = _gradescope(tiny, tmp_path, tiny["dist"] / "basics" / "student")
    assert results["score"] == 0
    source = tmp_path / "autograder" / "source"
    before = _tree_digest(source)
    results, _ = _gradescope(tiny, tmp_path, submission)
    assert results["score"] == 2  # add, honestly solved; scale left as the stub
    assert _tree_digest(source) == before  # not one file of the autograder changed
    results, _ = _gradescope(tiny, tmp_path, tiny["dist"] / "basics" / "student")
    assert results["score"] == 0  # the next honest stub graded by this install


PROBE = """
import os, sys
seen = []
try:
    os.listdir(f"/proc/{{os.getppid()}}/cwd")
    seen.append("parent's cwd")
except OSError:
    pass
for path in ({classroom!r}, os.path.join(sys.path[1], "..", "pkg")):
    if os.access(path, os.W_OK):
        seen.append("writable " + path)
if os.access({classroom!r}, os.R_OK):
    seen.append("hidden tests readable")
assert os.getuid() != 0 and os.geteuid() != 0, "root"
assert os.getcwd() == os.environ["HOME"] and os.listdir(".") == [], os.getcwd()
assert not seen, seen
return a + b
"""


@needs_root
def test_the_test_process_runs_as_an_unprivileged_user_in_a_private_home(tiny, tmp_path):
    classroom = str(tmp_path / "autograder" / "source" / ".classroom")
    results, _ = _gradescope(
        tiny, tmp_path, _attack(tiny, "probe", PROBE.format(classroom=classroom))
    )
    assert results["score"] == 4, results["tests"][0]["output"]


SPAWN = """
import subprocess, sys
started = subprocess.run([sys.executable, "-c", "print(2 + 2)"], capture_output=True, text=True)
assert started.stdout.strip() == "4", (sys.executable, started.stderr)
return a + b
"""


def _closed_folders_above(path: str) -> dict[str, tuple[int, bytes | None]]:
    """The folders above ``path`` that other users may not enter, with mode and access list."""
    found = {}
    path = os.path.realpath(path)
    while os.path.dirname(path) != path:
        path = os.path.dirname(path)
        if not os.stat(path).st_mode & stat.S_IXOTH:
            found[path] = (os.stat(path).st_mode, sandbox_module._read_acl(path))
    return found


@needs_root
def test_a_test_may_start_a_new_python_and_the_way_there_closes_again(tiny, tmp_path):
    # The grading Python may sit below a folder closed to other users (here
    # /root/.pyenv): the sandbox user is let through for the grading only.
    before = _closed_folders_above(sys.executable)
    for folder in before:
        try:
            sandbox_module._read_acl(folder)
        except OSError as error:  # EOPNOTSUPP: the grader's log warns of this case
            pytest.skip(f"{folder}'s file system keeps no POSIX access lists ({error})")
    results = _grade(tiny, _attack(tiny, "spawn", SPAWN), "spawn")
    assert results["score"] == 4, results["tests"][0]["output"]
    assert _closed_folders_above(sys.executable) == before


def test_letting_a_user_through_adds_a_search_right_and_a_mask():
    closed = sandbox_module._acl_entries(None, stat.S_IFDIR | 0o750)
    entries = sandbox_module._with_user(closed, 61_000)
    user, mask = sandbox_module._USER, sandbox_module._MASK
    assert (user, 0o1, 61_000) in entries  # search, neither list nor write
    assert (mask, 0o5, sandbox_module._NO_ID) in entries  # the group's r-x, and the search
    assert sandbox_module._named(entries) == sorted([*closed, (user, 0o1, 61_000)])


DAEMON = """
import os, time
if os.fork() == 0:  # a daemon: its own session, outliving the test and the grader
    os.setsid()
    if os.fork() == 0:
        deadline = time.time() + 20
        while time.time() < deadline:
            for path, text in (({results!r}, '{{"score": 100, "tests": []}}'), ({marker!r}, "x")):
                try:
                    with open(path, "w") as file:
                        file.write(text)
                except OSError:
                    pass
            time.sleep(0.02)
    os._exit(0)
return a + b
"""


@needs_root
def test_a_daemon_does_not_outlive_its_test(tiny, tmp_path):
    results_path = tmp_path / "autograder" / "results" / "results.json"
    marker = f"/tmp/glasstorch-daemon-{os.getpid()}-{id(tmp_path)}"
    attack = _attack(tiny, "daemon", DAEMON.format(results=str(results_path), marker=marker))
    try:
        results, _ = _gradescope(tiny, tmp_path, attack)
        assert results["score"] == 4  # the honest work, nothing more
        assert _sandbox_processes() == []  # no process of a sandbox user is left
        written = os.path.getmtime(marker) if os.path.exists(marker) else None
        subprocess.run(["sleep", "0.5"], check=True)  # time for a survivor to write again
        assert (os.path.getmtime(marker) if os.path.exists(marker) else None) == written
        assert json.loads(results_path.read_text())["score"] == 4
    finally:
        if os.path.exists(marker):
            os.remove(marker)


FORGE = """
import json, os, sys
nonce = None
try:  # 1. the runner's variables, through the frames of the stack
    frame = sys._getframe()
    while frame is not None and nonce is None:
        nonce = frame.f_locals.get("nonce")
        frame = frame.f_back
except RuntimeError:
    pass
passed = {{"kind": "phase", "outcome": "passed", "crash": "", "text": "", "reason": "",
          "duration": 0.0}}
lines = [dict(passed, nodeid=f"test_tiny.py::test_add[{{a}}]", when=when)
         for a in (1, 2) for when in ("call", "teardown")]
lines.append({{"kind": "done", "exit_code": 0, "intact": True, "changed": [], "refused": [],
              "tier": os.environ["GLASSTORCH_TIER"],
              "imported": {{"glasstorch": sys.modules["glasstorch"].__file__,
                           "glasstorch.reference": sys.modules["glasstorch.reference"].__file__}}}})
for finder in sys.meta_path:  # 2. the recorder itself, through pytest's import hook
    config = getattr(finder, "config", None)
    for plugin in config.pluginmanager.get_plugins() if config else ():
        if hasattr(plugin, "_send"):
            for line in lines:
                try:
                    plugin._send(dict(line))
                except Exception:
                    pass
for line in lines:  # 3. the pipe itself (descriptor {fd}), with whatever nonce was found
    os.write({fd}, (json.dumps(dict(line, nonce=nonce or "0" * 32)) + "\\n").encode())
os._exit(0)
"""


def test_forged_result_lines_earn_nothing(tiny):
    from glasstorch.classroom.forkserver import CHANNEL_FD

    attack = _attack(tiny, "forge", FORGE.format(fd=CHANNEL_FD))
    results = _grade(tiny, attack, "forge")
    add, scale, hidden = results["tests"]
    assert (add["score"], scale["score"], hidden["score"]) == (0, 1, 1)
    assert add["status"] == "failed"


SMUGGLE = """
import os, sys
source = open(sys.modules["test_tiny"].__file__).read()  # the running test's file
secret = source.split("def test_scale_hidden")[-1].swapcase()
name = "".join(c for c in secret if c.isalnum() or c == "_")[:200]
raise {error}(secret)
"""


@pytest.mark.parametrize(
    "error",
    ["AssertionError", "NotImplementedError", "type(name, (Exception,), {})"],
)
def test_hidden_source_does_not_leave_case_swapped(tiny, error):
    # the scale region reads the test file while the hidden test runs (it is there then)
    attack = _submission(tiny, f"smuggle-{len(error)}", "return a + b")
    path = attack / "reference" / "__init__.py"
    body = textwrap.indent(textwrap.dedent(SMUGGLE.format(error=error)), "    ").strip()
    path.write_text(path.read_text().replace("return [value * factor for value in values]", body))
    results = _grade(tiny, attack, f"smuggle-{len(error)}")
    text = json.dumps(results).casefold()
    assert "secret_expected_value" not in text and "secret_expected_value".swapcase() not in text
    hidden = results["tests"][2]
    assert hidden["status"] == "failed" and hidden["output"].startswith("Failed with ")


def test_an_honest_failure_quoting_shared_lines_is_not_withheld(tmp_path):
    from glasstorch.classroom.grade import _hidden_fingerprints, _redact

    shared = "assert_close(scale(values, factor), expected, atol=0, rtol=0)"
    visible = f"def test_visible():\n    values, factor, expected = [1], 2, [2]\n    {shared}\n"
    hidden = (
        "def test_hidden():\n    values, factor = [4], 0.5\n    secret_expected_value = [2.0]\n"
        f"    expected = secret_expected_value\n    {shared}\n"
    )
    (tmp_path / "test_x.py").write_text(visible + "\n\n" + hidden)
    runs = _hidden_fingerprints(
        str(tmp_path), [{"file": "test_x.py", "name": "test_x.py::test_hidden"}], [visible]
    )
    honest = f"test_x.py:3: in test_visible\n    {shared}\nE   AssertionError: 4 != 2"
    assert _redact(honest, runs) == honest  # the student's own test's line
    quoted = "values, factor = [4], 0.5\nsecret_expected_value = [2.0]"
    assert "withheld" in _redact(quoted, runs)
    assert "withheld" in _redact(quoted.swapcase(), runs)


def test_a_grading_has_a_time_budget(tiny):
    # every region sleeps: the first test runs to its limit, the next to what is
    # left of the budget, and the hidden one never starts
    attack = _attack(tiny, "sleeper", "import time\ntime.sleep(600)\nreturn a + b")
    path = attack / "reference" / "__init__.py"
    path.write_text(
        path.read_text().replace(
            "return [value * factor for value in values]", "import time; time.sleep(600)"
        )
    )
    results = grade(
        str(tiny["dist"] / "basics" / "autograder"),
        str(attack),
        str(tiny["root"] / "sleeper.json"),
        log=lambda *a: None,
        time_limit=3,
        budget=6,
    )
    add, scale, hidden = results["tests"]
    assert "timed out" in add["output"]
    assert results["score"] == 0 and "budget" in hidden["output"]  # never started


def test_a_test_process_has_a_memory_limit(tiny):
    attack = _attack(tiny, "hog", "hog = bytearray(64 << 30)\nreturn a + b")
    results = _grade(tiny, attack, "hog", only=["shared_tests/test_tiny.py::test_add"])
    (add,) = results["tests"]
    assert add["score"] == 0 and "MemoryError" in add["output"]


PATCH_AND_HIDE = """
import sys, _pytest.python
try:  # the runner's record of pytest, through a traceback's frames
    raise RuntimeError
except RuntimeError as error:
    frame = error.__traceback__.tb_frame
while frame is not None and "before" not in frame.f_locals:
    frame = frame.f_back
_pytest.python.Function.runtest = lambda self: None
if frame is not None:
    frame.f_locals["before"] = ()
    getattr(frame.f_locals["before"], "clear", lambda: None)()
raise AssertionError("patched")
"""

WRAP_REPORTS = """
import sys, pytest
class Passing:  # a hook wrapper that turns every report into a pass
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        outcome.get_result().outcome = "passed"
for finder in sys.meta_path:  # pytest's config, through its import hook
    config = getattr(finder, "config", None)
    if config is not None:
        config.pluginmanager.register(Passing())
        break
raise AssertionError("wrapped")
"""


@pytest.mark.parametrize("name, body", [("patch-and-hide", PATCH_AND_HIDE), ("wrap", WRAP_REPORTS)])
def test_patching_pytest_is_seen_whatever_the_runner_holds(tiny, name, body):
    results = _grade(
        tiny, _attack(tiny, name, body), name, only=["shared_tests/test_tiny.py::test_add"]
    )
    (add,) = results["tests"]
    assert add["score"] == 0 and "pytest) was modified" in add["output"]
