"""The classroom: graded assignments cut from the reference tier, and their autograder.

``python -m glasstorch.classroom build|grade|check|sync`` (``make assignments``
builds every assignment); see ``docs/guide/classroom-teachers.md`` and
``docs/guide/classroom-students.md``.

Modules:

* :mod:`.markers`: the solution markers, parsing and stripping;
* :mod:`.course`: the course file (assignments, tasks, graded tests);
* :mod:`.leaks`: the token-level check for solution text in a release;
* :mod:`.release`: ``build``, the student releases and the autograders;
* :mod:`.grading`: running tests on a submission, in isolated processes;
* :mod:`.sandbox`: the unprivileged user, limits and clean-up of a graded test;
* :mod:`.forkserver`: one interpreter that imports pytest once and forks each graded test;
* :mod:`.grade`: ``grade`` and Gradescope's ``results.json``;
* :mod:`.check`: ``check`` and ``sync``, for students.
"""

from .course import Course, CourseError, load_course
from .markers import MarkerError, find_regions, strip_regions

__all__ = ["Course", "CourseError", "MarkerError", "find_regions", "load_course", "strip_regions"]
