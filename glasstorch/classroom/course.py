"""The course configuration: assignments, their tasks, the tests that grade them.

One TOML file (``glasstorch/classroom/course.toml``) lists the assignments in
teaching order. The schema, with the defaults::

    [course]
    title = "..."
    tier = "reference"            # graded tests run with GLASSTORCH_TIER=<tier>
    time_limit = 60               # seconds per graded test (an assignment or a test may override)
    hidden_visibility = "after_published"   # or "hidden"

    [[assignment]]                # one per assignment, in order
    id = "strides"                # folder name in dist/classroom/, tag prefix in markers
    title = "Strides and views"
    scope = ["shared_tests/test_tensor_views.py"]   # tests that must keep passing
    time_limit = 60

    [[assignment.task]]           # one per task, in order
    id = "position"               # markers say "# -- solution: strides/position"
    title = "From an index to a buffer position"
    hint = "add index * stride per dimension to the offset"
    tests = [                     # what grades the task
        { select = "shared_tests/test_tensor_views.py::test_stride", points = 2 },
        { select = "shared_tests/test_x.py", markers = ["views"], hidden = true },
    ]
    speed_trick_tests = []        # node-id prefixes of tests that check the task's speed trick

A test entry selects the collected tests whose node id starts with ``select``
(a file, ``file::test_function`` or one parametrised case), optionally only
those carrying one of ``markers`` (the conformance suite's topic markers) and
minus those starting with an ``exclude`` entry. Every selected *test function*
is one graded test worth ``points``, with all its parametrised cases: it
passes when all of them pass.

With ``only_failing = true`` the build keeps, of the selected tests, those
that the task's stubs make fail (their first failure is the task's
``NotImplementedError``); the others stay ungraded and must keep passing. The
manifest then lists exactly the tests kept, so grading is as fixed as with
explicit node ids.

A release that stubs a task leaves its speed tricks out (see
:mod:`.markers`), so a test that checks the trick itself (that ``linear``
records one ``AddmmBackward0`` node) cannot pass on a student's plain
solution. ``speed_trick_tests`` names such tests: the build never grades them
and does not require them on that release; they must still pass on the
reference solution like the rest of the scope.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

#: Where the course of this repository is configured.
DEFAULT_COURSE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "course.toml")
VISIBILITIES = ("after_published", "hidden", "after_due_date")


class CourseError(ValueError):
    """The course configuration is inconsistent; the message says where."""


@dataclass(frozen=True)
class Selection:
    """One ``tests`` entry of a task."""

    select: str
    markers: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    points: float = 1.0
    hidden: bool = False
    time_limit: float | None = None
    only_failing: bool = False

    def matches(self, nodeid: str, item_markers: set[str]) -> bool:
        """Whether the collected item ``nodeid`` (with its markers) is selected."""
        if not node_starts(nodeid, self.select):
            return False
        if self.markers and not item_markers.intersection(self.markers):
            return False
        return not any(node_starts(nodeid, prefix) for prefix in self.exclude)

    @property
    def file(self) -> str:
        return self.select.split("::", 1)[0]


def node_starts(nodeid: str, prefix: str) -> bool:
    """Node-id prefix match on whole parts (``a.py::t`` selects ``a.py::t[1]``, not ``a.py::t2``)."""
    if nodeid == prefix:
        return True
    return nodeid.startswith(prefix) and nodeid[len(prefix)] in ":["


@dataclass(frozen=True)
class Task:
    id: str
    title: str
    hint: str
    tests: tuple[Selection, ...]
    assignment: str = ""
    speed_trick_tests: tuple[str, ...] = ()

    def checks_speed_trick(self, nodeid: str) -> bool:
        """Whether the test ``nodeid`` checks this task's speed trick (``speed_trick_tests``)."""
        return any(node_starts(nodeid, prefix) for prefix in self.speed_trick_tests)

    @property
    def tag(self) -> str:
        return f"{self.assignment}/{self.id}"


@dataclass(frozen=True)
class Assignment:
    id: str
    title: str
    tasks: tuple[Task, ...]
    scope: tuple[str, ...]
    time_limit: float
    summary: str = ""
    teacher_notes: str = ""

    def files(self) -> list[str]:
        """Every test file the assignment needs (scope and graded tests)."""
        names = list(self.scope)
        for task in self.tasks:
            for selection in task.tests:
                if selection.file not in names:
                    names.append(selection.file)
        return names


@dataclass
class Course:
    title: str
    tier: str
    time_limit: float
    hidden_visibility: str
    assignments: list[Assignment] = field(default_factory=list)
    path: str = ""

    def tags(self) -> set[str]:
        """Every ``assignment/task`` tag a marker may name."""
        return {task.tag for a in self.assignments for task in a.tasks}

    def assignment(self, name: str) -> Assignment:
        for candidate in self.assignments:
            if candidate.id == name:
                return candidate
        known = ", ".join(a.id for a in self.assignments)
        raise CourseError(f"no assignment {name!r} in the course; assignments: {known}")

    def index(self, name: str) -> int:
        return [a.id for a in self.assignments].index(self.assignment(name).id)

    def hints(self) -> dict[str, str]:
        return {task.tag: task.hint for a in self.assignments for task in a.tasks}

    def tags_from(self, name: str) -> set[str]:
        """Tags of assignment ``name`` and every later one (what its release removes)."""
        start = self.index(name)
        return {t.tag for a in self.assignments[start:] for t in a.tasks}

    def checks_speed_trick(self, nodeid: str, tags: set[str]) -> bool:
        """Whether ``nodeid`` checks the speed trick of a task tagged in ``tags``."""
        return any(
            task.checks_speed_trick(nodeid)
            for a in self.assignments
            for task in a.tasks
            if task.tag in tags
        )


def load_course(path: str = DEFAULT_COURSE) -> Course:
    """Read and check a course file.

    Raises:
        CourseError: for a missing field, a duplicate id, an unknown visibility,
            a task without tests.
    """
    if tomllib is None:
        raise CourseError("the classroom tools need Python 3.11 or newer (tomllib)")
    with open(path, "rb") as file:
        data = tomllib.load(file)
    return parse_course(data, path)


def parse_course(data: dict, path: str = "<course>") -> Course:
    """Build a :class:`Course` from the parsed TOML (see the module docstring)."""
    head = data.get("course", {})
    course = Course(
        title=str(head.get("title", "glasstorch")),
        tier=str(head.get("tier", "reference")),
        time_limit=float(head.get("time_limit", 60)),
        hidden_visibility=str(head.get("hidden_visibility", "after_published")),
        path=path,
    )
    if course.hidden_visibility not in VISIBILITIES:
        raise CourseError(
            f"{path}: hidden_visibility must be one of {', '.join(VISIBILITIES)}, "
            f"not {course.hidden_visibility!r}"
        )
    seen: set[str] = set()
    for number, entry in enumerate(data.get("assignment", []), start=1):
        name = _required(entry, "id", f"{path}: assignment {number}")
        if name in seen:
            raise CourseError(f"{path}: two assignments are called {name!r}")
        seen.add(name)
        where = f"{path}: assignment {name!r}"
        time_limit = float(entry.get("time_limit", course.time_limit))
        tasks = []
        task_ids: set[str] = set()
        for task_entry in entry.get("task", []):
            task_id = _required(task_entry, "id", where + ", a task")
            if task_id in task_ids:
                raise CourseError(f"{where}: two tasks are called {task_id!r}")
            task_ids.add(task_id)
            selections = tuple(
                _selection(item, f"{where}, task {task_id!r}")
                for item in task_entry.get("tests", [])
            )
            if not selections:
                raise CourseError(
                    f"{where}, task {task_id!r}: no tests grade it; add 'tests = [...]'"
                )
            tricks = task_entry.get("speed_trick_tests", [])
            if not isinstance(tricks, list) or not all(isinstance(t, str) for t in tricks):
                raise CourseError(
                    f"{where}, task {task_id!r}: speed_trick_tests must be a list of test node ids"
                )
            tasks.append(
                Task(
                    id=task_id,
                    title=str(task_entry.get("title", task_id)),
                    hint=str(task_entry.get("hint", "")),
                    tests=selections,
                    assignment=name,
                    speed_trick_tests=tuple(tricks),
                )
            )
        if not tasks:
            raise CourseError(f"{where}: no tasks; add [[assignment.task]] tables")
        course.assignments.append(
            Assignment(
                id=name,
                title=str(entry.get("title", name)),
                tasks=tuple(tasks),
                scope=tuple(entry.get("scope", ())),
                time_limit=time_limit,
                summary=str(entry.get("summary", "")),
                teacher_notes=str(entry.get("teacher_notes", "")),
            )
        )
    if not course.assignments:
        raise CourseError(f"{path}: no assignments; add [[assignment]] tables")
    return course


def _required(entry: dict, key: str, where: str) -> str:
    if key not in entry:
        raise CourseError(f"{where} has no {key!r}")
    return str(entry[key])


def _selection(item, where: str) -> Selection:
    if isinstance(item, str):
        item = {"select": item}
    select = _required(item, "select", where + ", a tests entry")
    known = {"select", "markers", "exclude", "points", "hidden", "time_limit", "only_failing"}
    unknown = set(item) - known
    if unknown:
        raise CourseError(f"{where}: unknown key(s) {sorted(unknown)} in a tests entry")
    return Selection(
        select=select,
        markers=tuple(item.get("markers", ())),
        exclude=tuple(item.get("exclude", ())),
        points=float(item.get("points", 1)),
        hidden=bool(item.get("hidden", False)),
        time_limit=float(item["time_limit"]) if "time_limit" in item else None,
        only_failing=bool(item.get("only_failing", False)),
    )
