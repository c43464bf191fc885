"""The API coverage table (glasstorch/coverage, docs/api/coverage.md): built without PyTorch.

The page is written on every docs build from PyTorch's snapshot and glasstorch
as imported; these tests check that it needs no PyTorch, that its counts add up,
and that names and arguments land in the right status.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from glasstorch.coverage import namespaces
from glasstorch.coverage.compare import STATUSES, compare, compare_namespace, flagged, tally
from glasstorch.coverage.page import load_usage, render
from glasstorch.coverage.snapshot import load_snapshot
from glasstorch.coverage.usage import count_usage, names_used, programs_in, split_name

pytestmark = [
    pytest.mark.coverage,
    pytest.mark.cpu_only("reads names and signatures; computes nothing on a device"),
]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def snapshot() -> dict:
    return load_snapshot()


@pytest.fixture(scope="module")
def usage() -> dict:
    return load_usage()


@pytest.fixture(scope="module")
def table(snapshot, usage) -> dict:
    return compare(snapshot, usage["counts"])


def test_page_is_written_with_pytorch_unimportable(tmp_path):
    # A student's docs build: no PyTorch. Importing it must not even be tried.
    page = tmp_path / "coverage.md"
    script = (
        "import sys; sys.modules['torch'] = None\n"
        "from pathlib import Path\n"
        "from glasstorch.coverage.page import write_page\n"
        f"write_page(Path({str(page)!r}))\n"
    )
    env_path = {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, **env_path},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    assert text.startswith("# API coverage")
    for namespace in namespaces.NAMESPACES:
        assert f"## `{namespace}`" in text


def test_snapshot_covers_every_namespace(snapshot):
    assert set(snapshot["namespaces"]) == set(namespaces.NAMESPACES)
    assert snapshot["torch_version"].count(".") == 2
    for entries in snapshot["namespaces"].values():
        for entry in entries.values():
            assert entry["kind"] in ("module", "class", "function", "attribute")
            assert (entry["params"] is None) == (entry["params_from"] is None)


def test_counts_add_up(snapshot, table, usage):
    for namespace, rows in table.items():
        counts = tally(rows)
        assert sum(counts.values()) == len(rows) == len(snapshot["namespaces"][namespace])
        assert [r.name for r in rows] == list(snapshot["namespaces"][namespace])
    programs = len(usage["programs"])
    assert programs == len({p["name"] for p in usage["programs"]})
    assert all(1 <= n <= programs for n in usage["counts"].values())
    # each row's use is the corpus count of its full name
    for namespace, rows in table.items():
        for row in rows:
            assert row.uses == usage["counts"].get(f"{namespace}.{row.name}", 0)


def test_summary_row_of_the_page_matches_the_table(snapshot, usage, table):
    text = render(snapshot, usage)
    for namespace, rows in table.items():
        counts = tally(rows)
        cells = " | ".join(str(counts[s]) for s in STATUSES)
        assert f"| `{namespace}` | {cells} | {len(rows)} |" in text


def test_known_names_get_their_status(snapshot, table):
    rows = {(r.namespace, r.name): r for rs in table.values() for r in rs}
    assert rows["torch", "add"].status == "supported"
    assert rows["torch.nn", "Linear"].status == "supported"
    assert rows["torch", "jit"].status == "out of scope"
    assert "JIT" in rows["torch", "jit"].note
    # a name PyTorch has and glasstorch does not: made up, so it stays missing
    entries = copy.deepcopy(snapshot["namespaces"]["torch"])
    entries["not_a_glasstorch_name"] = {
        "kind": "function",
        "params": "input",
        "params_from": "signature",
    }
    invented = compare_namespace("torch", entries, {"torch.not_a_glasstorch_name": 3})
    row = next(r for r in invented if r.name == "not_a_glasstorch_name")
    assert (row.status, row.uses) == ("missing", 3)


def test_an_argument_glasstorch_lacks_makes_a_name_partial(snapshot):
    entry = dict(snapshot["namespaces"]["torch.nn"]["Linear"])
    entry["params"] += ", *, an_argument_nobody_has"
    (row,) = compare_namespace("torch.nn", {"Linear": entry}, {})
    assert row.status == "partial"
    assert row.missing_arguments == ["an_argument_nobody_has"]


def test_flagged_names_are_missing_and_used_twice(table):
    for row in flagged(table):
        assert row.status == "missing" and row.uses > 1


def test_docstring_signatures_merge_every_form():
    # torch.max's docstring, shortened: two forms, an example and its printed result
    doc = (
        "max(input, *, out=None) -> Tensor\n\n    >>> torch.max(a)\n"
        ".. function:: max(input, dim, keepdim=False, *, out=None) -> (Tensor, LongTensor)\n"
        "    torch.return_types.max(values=tensor([1.]), indices=tensor([0]))\n"
    )
    params = namespaces._docstring_parameters(doc, "max")
    line = namespaces.format_parameters(params)
    assert line == "input, dim, keepdim, *, out"
    assert sorted(namespaces.parse(line)) == sorted(params)


def test_wrapped_functions_keep_what_the_wrapper_adds():
    import glasstorch
    from glasstorch.coverage.compare import our_parameters

    # glasstorch.add takes out= through a functools.wraps wrapper (glasstorch/ops/out.py)
    out = glasstorch.zeros(2)
    glasstorch.add(glasstorch.ones(2), glasstorch.ones(2), out=out)
    assert "out" in {name for name, _ in namespaces.parse(our_parameters(glasstorch.add, "add"))}


def test_usage_follows_imports(tmp_path):
    source = (
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
        "from torch.utils.data import DataLoader\n"
        "x = torch.randn(3)\ny = F.relu(x).view(-1)\nm = nn.Linear(2, 2)\nprint(len([]).real)\n"
    )
    used = names_used(source, {"view", "real"})
    assert {
        "torch.randn",
        "torch.nn.functional.relu",
        "torch.nn.Linear",
        "torch.utils.data.DataLoader",
        "torch.Tensor.view",
    } <= used
    assert split_name("torch.nn.functional.relu") == ("torch.nn.functional", "relu")
    assert split_name("numpy.zeros") is None
    # one program counts once, however often it uses a name
    (tmp_path / "a.py").write_text(source + "torch.randn(2)\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "main.py").write_text("import torch\ntorch.randn(1)\n")
    counts = count_usage(programs_in(tmp_path), set())
    assert counts["torch.randn"] == 2 and counts["torch.nn.Linear"] == 1


def test_usage_data_lists_sources_not_code(usage):
    text = json.dumps(usage)
    assert "def " not in text and "import " not in text
    for program in usage["programs"]:
        for source in program["files"]:
            assert set(source) == {"repo", "path", "commit"}
            assert len(source["commit"]) == 40
