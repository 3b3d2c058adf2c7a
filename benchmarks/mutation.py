"""Mutation testing of rocketspec with cosmic-ray: how many deliberately broken copies the test suite catches.

Run by hand (the optional ``mutation`` dependencies: ``pip install -e '.[test,mutation]'``), never in CI::

    python benchmarks/mutation.py --area refimpl --sample 300 --seed 1
    python benchmarks/mutation.py --area checkers --sample 150 --seed 1

What it does:

1. **Copies** the committed tree (``git archive HEAD``) once per worker under ``--work`` (default
   ``.mutation/``), laid out so that ``import rocketspec`` there loads that copy and not the checkout.
2. **Maps** the README's test suite (``pytest -n 2``, slow tests skipped) under coverage with one context per test:
   which tests run each line, and how long each test takes. The map is kept per commit and reused.
3. **Enumerates** every mutant of the area's modules with cosmic-ray's operators (``cosmic_ray.commands.init``)
   and draws a seeded random sample (``--sample``; 0 runs them all). A sample of n gives the score within about
   ``1/sqrt(n)`` (95 %), which is why the report states n.
4. **Runs** each sampled mutant in a worker copy: the mutation is applied to the file on disk (cosmic-ray's
   ``mutate_code``), the tests that cover the mutated line run fastest first, up to 30 s of their normal time, and
   stop at the first failure (``pytest -x``), and the file is restored. A line run only at import (a constant, a
   class body) counts as covered by every test of its module; mutants inside postponed type annotations are left
   out (nothing evaluates them). Test ids the map names but the copy no longer has (renamed since the map was
   made) are dropped. The Spark checker's module, which only slow tests reach, runs the Spark agreement
   tests instead (``FIXED_TESTS``). Outcomes: ``killed`` (a test failed), ``timeout`` (the tests took
   more than three times their normal time plus 60 s: counted killed, the usual infinite loop), ``survived``,
   ``no_tests`` (no test runs that line: counted survived), ``incompetent`` (the mutant does not compile: not
   counted).
5. **Reports** ``.mutation/<area>-<seed>.json`` and a Markdown summary: the score with equivalent mutants excluded
   (``benchmarks/mutation_equivalents.json``: path, operator, the line before and after, the reason), per module
   counts, and every surviving mutant's diff to kill or to record as equivalent.

Areas: ``refimpl`` (the reference implementation), ``checkers`` (the trace invariants' rule code of both checkers:
``traces/pycheck.py``, ``traces/sparkcheck/``), or a list of paths.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

# coverage is a test dependency too: the suite weighs modules by their statements (excluded_share).
from coverage.numbits import numbits_to_nums
from coverage.parser import PythonParser

try:  # the optional `mutation` dependencies: main() says how to install them
    from cosmic_ray.commands.init import _all_work_items
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator
except ImportError as missing:
    _MISSING: ImportError | None = missing
else:
    _MISSING = None

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"rocketspec": "rocketspec", "spec": "spec", "refimpl": "refimpl", "conformance": "conformance",
            "traces": "traces"}
AREAS = {
    "refimpl": ["refimpl"],
    "checkers": ["traces/pycheck.py", "traces/sparkcheck"],
}
EQUIVALENTS = ROOT / "benchmarks" / "mutation_equivalents.json"
#: Operators left out: they rewrite things no behaviour depends on (decorators are attrs/typing machinery here,
#: and inserting a variable name only renames).
SKIPPED_OPERATORS = ("core/RemoveDecorator", "core/VariableInserter", "core/VariableReplacer")
#: The most seconds of covering tests (by their normal time) a mutant runs; the fastest go first.
TEST_BUDGET_S = 30.0
#: Modules (or folders, ending in "/") only slow tests exercise (the map is of the README's suite, slow tests
#: skipped): their mutants run these tests instead (with --slow), in this order, one JVM per mutant.
FIXED_TESTS: dict[str, tuple[str, ...]] = {
    "traces/sparkcheck/": (
        "tests/test_traces_sparkcheck.py",  # every invariant, the counts, and the reader's one-line errors
        "tests/test_traces_invariants.py::test_engines_agree",
        "tests/test_traces_invariants.py::test_engines_agree_on_generated_traces",
        "tests/test_traces_mutations.py::test_spark_gives_the_python_verdict_on_the_mutants",
    ),
    # The client cases judge a real client: the Java 4.9.8 driver passes them all, each broken driver fails its case.
    "conformance/client/": (
        "tests/test_conformance_client.py::test_the_java_driver_passes_every_client_case",
        "tests/test_conformance_client.py::test_a_broken_java_driver_is_caught",
    ),
    "conformance/drivers/cpp_driver.py": ("tests/test_conformance_client_cpp.py",),
}
FIXED_TIMEOUT_S = 900.0
#: The marker of the lockstep machines' runs: ``--machines`` runs only those tests.
MACHINE_MARKER = "machine"
#: Modules of refimpl that no spec area models, left out of a ``--machines`` sample, each with its reason. Together
#: they must hold under 15 % of refimpl's statements (``excluded_share`` checks it before a run).
MACHINES_EXCLUDED: dict[str, str] = {
    "refimpl/acl.py": "plain ACL (aclEnable): no spec area models authentication or permissions of accounts",
    "refimpl/acl_config.py": "plain ACL: parsing plain_acl.yml",
    "refimpl/acl_address.py": "plain ACL: address patterns of accounts",
    "refimpl/acl_signature.py": "plain ACL: the HMAC signature of a request",
    "refimpl/broker/config_file.py": "serve --broker-config: reading a broker.conf at start-up, before any request "
                                     "(tests/test_serve_config.py)",
    "refimpl/namesrv_config.py": "serve --namesrv-config: reading a name server file at start-up",
}
MAX_EXCLUDED_SHARE = 0.15
TIMING_PLUGIN = '''
import json, os
def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        with open(os.environ["MUTATION_TIMES"], "a") as out:
            out.write(json.dumps([report.nodeid, report.duration]) + "\\n")
'''


class MutationError(RuntimeError):
    """The run cannot go on (no git, no cosmic-ray, the map's test run failed)."""


def git_commit(rev: str = "HEAD") -> str:
    return subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()


def make_copy(dest: Path, commit: str) -> None:
    """The tree of ``commit`` at ``dest``, laid out so that ``import rocketspec`` there loads it."""
    dest = dest.resolve()  # the links below must not be relative to where they sit
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    # `python -m pytest` puts the working directory first on sys.path, so the copy's own rocketspec/ is the package
    # there: the subpackages the install maps from the top-level folders are linked into it.
    for name in ("spec", "refimpl", "conformance", "traces"):
        (dest / "rocketspec" / name).symlink_to(dest / name)
    (dest / "_import").mkdir()
    (dest / "_import" / "mutation_timing.py").write_text(TIMING_PLUGIN)
    where = subprocess.run([sys.executable, "-c", "import rocketspec.refimpl, rocketspec.traces; "
                            "print(rocketspec.refimpl.__file__); print(rocketspec.traces.__file__)"],
                           cwd=dest, env=copy_env(dest), capture_output=True, text=True).stdout.split()
    if len(where) != 2 or not all(Path(w).resolve().is_relative_to(dest) for w in where):
        raise MutationError(f"the copy at {dest} does not import itself (got {where}): mutants would not be run")


#: The real RocketMQ the checkout's tests find beside it (tests/realcluster.py): a copy elsewhere must be told.
REAL_HOME = ROOT.parent / "shared" / "rocketmq-4.9.8"


def copy_env(copy: Path) -> dict[str, str]:
    env = dict(os.environ)
    if REAL_HOME.is_dir():
        env.setdefault("ROCKETSPEC_ROCKETMQ_HOME", str(REAL_HOME))
    env["PYTHONPATH"] = f"{copy}{os.pathsep}{copy / '_import'}"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["HYPOTHESIS_PROFILE"] = "ci"
    env["PYTHONHASHSEED"] = "0"  # the ci profile's programs, and the implementation's set orders, the same each run
    return env


# ---------------------------------------------------------------------------------------------------- the test map


def build_map(copy: Path, out: Path, commit: str, marker: str | None = None) -> dict[str, Any]:
    """Run the suite (only the tests marked ``marker``, when given) under coverage with per-test contexts;
    ``{"lines": {path: {line: [test]}}, "times": ...}``."""
    times = copy / "times.jsonl"
    times.unlink(missing_ok=True)
    env = copy_env(copy) | {"MUTATION_TIMES": str(times)}
    rc_file = copy / ".coveragerc-mutation"
    # Coverage names files by their real path: the top-level folders, not their links inside rocketspec/.
    sources = "".join(f"\n    {copy / name}" for name in ("refimpl", "traces", "spec", "conformance"))
    rc_file.write_text(f"[run]\nsource ={sources}\n")
    cmd = [sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "mutation_timing", "--cov",
           f"--cov-config={rc_file}", "--cov-context=test", "--cov-report=", "-W", "ignore",
           *(("-m", marker) if marker else ())]
    print(f"mapping the suite under coverage in {copy} ...", file=sys.stderr)
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1) or not (copy / ".coverage").exists():
        raise MutationError(f"the map's test run failed (exit {done.returncode}): "
                            f"{(done.stdout + done.stderr)[-2000:]}")
    print(f"mapped in {time.monotonic() - started:.0f} s", file=sys.stderr)
    lines: dict[str, dict[str, set[str]]] = {}
    db = sqlite3.connect(copy / ".coverage")
    contexts = dict(db.execute("select id, context from context"))
    files = dict(db.execute("select id, path from file"))
    imported: dict[str, set[int]] = {}
    for file_id, context_id, numbits in db.execute("select file_id, context_id, numbits from line_bits"):
        rel = _relative(files[file_id], copy)
        if rel is None:
            continue
        test = contexts[context_id].rsplit("|", 1)[0]
        if not test:
            # Run outside any test: at import, while pytest collects (module-level code, class bodies, defaults).
            imported.setdefault(rel, set()).update(numbits_to_nums(numbits))
            continue
        per_line = lines.setdefault(rel, {})
        for line in numbits_to_nums(numbits):
            per_line.setdefault(str(line), set()).add(test)
    durations: dict[str, float] = {}
    for raw in times.read_text().splitlines() if times.exists() else ():
        nodeid, seconds = json.loads(raw)
        durations[nodeid] = durations.get(nodeid, 0.0) + seconds
    result = {"commit": commit, "lines": {p: {n: sorted(t) for n, t in ls.items()} for p, ls in lines.items()},
              "imported": {p: sorted(ls) for p, ls in imported.items()}, "times": durations}
    out.write_text(json.dumps(result))
    return result


def _relative(path: str, copy: Path) -> str | None:
    """A measured file's path relative to the tree (``refimpl/tcp.py``), through the shim's symlinks."""
    real = Path(os.path.realpath(path))
    try:
        return str(real.relative_to(copy))
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------- coverage per area

#: The protocol areas of the reference implementation: their modules (or folders), and the stateful machines that
#: drive them (tests/test_stateful_<machine>.py, "+"-joined; the system machine drives every area). Every module of
#: refimpl belongs to one area, or is left out of a --machines run (MACHINES_EXCLUDED) or is the test double's
#: infrastructure every machine runs (``INFRASTRUCTURE``); tests/test_lockstep_dimensions.py checks that.
COVERAGE_AREAS: dict[str, tuple[tuple[str, ...], str]] = {
    "send retry, latency": (("refimpl/client/producer.py", "refimpl/client/sending.py", "refimpl/client/latency.py",
                             "refimpl/client/validators.py", "refimpl/client/config.py"), "send_retry"),
    "rebalance, allocation, locks": (("refimpl/client/rebalance.py", "refimpl/client/allocate.py",
                                      "refimpl/client/instance.py", "refimpl/broker/locks.py",
                                      "refimpl/broker/clients.py"), "rebalance"),
    "offset commit": (("refimpl/client/offset_store.py", "refimpl/client/process_queue.py",
                       "refimpl/broker/offsets.py", "refimpl/broker/admin_consumers.py"), "offset_commit"),
    "pull, pull correction": (("refimpl/broker/pull.py", "refimpl/client/pull_api.py",
                               "refimpl/client/push_consumer.py", "refimpl/client/lite_pull_consumer.py",
                               "refimpl/store"), "pull_correction"),
    "consume retry, DLQ, delay": (("refimpl/broker/sendback.py", "refimpl/broker/schedule.py",
                                   "refimpl/client/consume_service.py"), "consume_retry+orderly"),
    "transactions": (("refimpl/broker/transaction.py", "refimpl/broker/transaction_check.py",
                      "refimpl/client/transaction.py"), "transaction_check"),
    "message filter": (("refimpl/broker/filter.py", "refimpl/broker/sql92.py", "refimpl/broker/sql92_values.py",
                        "refimpl/client/consumer_config.py"), "message_filter"),
    "name server, routes": (("refimpl/namesrv.py", "refimpl/namesrv_admin.py", "refimpl/route.py",
                             "refimpl/properties.py"), "name_server"),
    "broker requests, admin": (("refimpl/broker/broker.py", "refimpl/broker/send.py", "refimpl/broker/topics.py",
                                "refimpl/broker/groups.py",
                                "refimpl/broker/config.py", "refimpl/broker/config_settings.py",
                                "refimpl/broker/admin_topics.py",
                                "refimpl/broker/admin_runtime.py", "refimpl/broker/admin_maintenance.py",
                                "refimpl/broker/stats.py", "refimpl/broker/query.py", "refimpl/broker/reply.py",
                                "refimpl/broker/services.py", "refimpl/index.py"), "broker_requests"),
    "wire codec, in-process network": (("refimpl/frame.py", "refimpl/remoting.py", "refimpl/message.py",
                                        "refimpl/faults.py"), "remoting"),
    "socket server (serve)": (("refimpl/tcp.py", "refimpl/wireloop.py", "refimpl/served.py", "refimpl/connections.py",
                               "refimpl/workqueue.py", "refimpl/limits.py"), "tcp"),
}
#: The test double's own machinery, which every machine runs: counted in no area.
INFRASTRUCTURE = ("refimpl/cluster.py", "refimpl/runtime.py", "refimpl/events.py", "refimpl/disk.py",
                  "refimpl/client/errors.py")


def excluded_share(modules: Iterable[Path]) -> float:
    """The share of ``modules``' statements in the modules ``--machines`` leaves out."""
    total = left = 0
    for path in modules:
        n = len(statements(ROOT / path))
        total += n
        left += n if str(path) in MACHINES_EXCLUDED else 0
    return left / total if total else 0.0


def statements(path: Path) -> set[int]:
    parser = PythonParser(filename=str(path))
    parser.parse_source()
    return set(parser.statements)


def coverage_by_area(test_map: dict[str, Any], machine_ids: frozenset[str] = frozenset()) -> str:
    """A Markdown table: per area, the statements run by the whole suite, by the area's stateful machine, and by the
    system machine (from the map's per-test contexts; lines run only at import count for the suite). With
    ``machine_ids`` (the tests marked ``machine``) a machine's column counts only its machine runs, not the other
    tests of its module (the variants, the scripted programs)."""
    out = ["| area | statements | whole suite | its machine | system machine |", "|---|---|---|---|---|"]

    def share(n: int, total: int) -> str:
        return f"{n / total:.0%}" if total else "-"

    for area, (paths, machine) in COVERAGE_AREAS.items():
        total = suite = own = system = 0
        own_prefix = tuple(f"tests/test_stateful_{m}.py::" for m in machine.split("+"))
        system_prefix = "tests/test_stateful_system.py::"
        for path in (str(m) for m in modules_of(paths)):
            lines = statements(ROOT / path)
            per_line = test_map["lines"].get(path, {})
            imported = set(test_map.get("imported", {}).get(path, ()))
            total += len(lines)
            runs_of = {line: [t for t in per_line.get(str(line), ()) if not machine_ids or t in machine_ids]
                       for line in lines}
            # A line run at import (a def, a class body, a constant) is run for every machine: each one's test
            # imports the reference implementation, and coverage counts those lines for a machine run alone.
            own_uses = system_uses = bool(imported)
            for line in lines:
                tests, runs = per_line.get(str(line), ()), runs_of[line]
                suite += bool(tests) or line in imported
                own += any(t.startswith(own_prefix) for t in runs) or (own_uses and line in imported)
                system += any(t.startswith(system_prefix) for t in runs) or (system_uses and line in imported)
        out.append(f"| {area} | {total} | {share(suite, total)} | {machine}: {share(own, total)} | "
                   f"{share(system, total)} |")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------------------ mutants


def modules_of(paths: Iterable[str]) -> list[Path]:
    found: list[Path] = []
    for p in paths:
        path = ROOT / p
        found.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return [m.relative_to(ROOT) for m in found if m.name != "__init__.py"]


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The (start, end) positions of the type annotations of a module that postpones them (``from __future__ import
    annotations``): a mutant inside one changes a string nothing evaluates at run time."""
    tree = ast.parse(source)
    postponed = any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                    and any(a.name == "annotations" for a in node.names) for node in tree.body)
    if not postponed:
        return []
    spans = []
    for node in ast.walk(tree):
        found: list[ast.expr | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(node.returns)
        elif isinstance(node, ast.arg):
            found.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        for a in found:
            if a is not None and a.end_lineno is not None and a.end_col_offset is not None:
                spans.append(((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset)))
    return spans


def in_annotation(mutant: dict[str, Any], spans: list[tuple[tuple[int, int], tuple[int, int]]]) -> bool:
    start = (mutant["line"], mutant["col"])
    return any(lo <= start < hi for lo, hi in spans)


def enumerate_mutants(modules: Sequence[Path]) -> list[dict[str, Any]]:
    """Every mutant cosmic-ray's operators make of ``modules`` (path, operator, occurrence, line), less those inside
    postponed type annotations (equivalent by construction: counted, not run)."""
    mutants = []
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for item in _all_work_items(modules, {}):
            for m in item.mutations:
                if m.operator_name.startswith(SKIPPED_OPERATORS):
                    continue
                mutants.append({"path": str(m.module_path), "operator": m.operator_name,
                                "occurrence": m.occurrence, "line": m.start_pos[0], "col": m.start_pos[1],
                                "end_line": m.end_pos[0]})
    finally:
        os.chdir(cwd)
    spans = {str(path): annotation_spans((ROOT / path).read_text()) for path in modules}
    return [m for m in mutants if not in_annotation(m, spans[m["path"]])]


def mutated_source(path: Path, operator: str, occurrence: int) -> str | None:
    return mutate_code(path.read_text(), get_operator(operator)(), occurrence)


def line_change(before: str, after: str) -> tuple[str, str]:
    """The first differing line before and after (stripped): what a person reads and an equivalence names."""
    a, b = before.splitlines(), after.splitlines()
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else ""
        y = b[i] if i < len(b) else ""
        if x != y:
            return x.strip(), y.strip()
    return "", ""


def equivalents() -> list[dict[str, str]]:
    return json.loads(EQUIVALENTS.read_text()) if EQUIVALENTS.exists() else []


def is_equivalent(result: dict[str, Any], known: list[dict[str, str]]) -> str | None:
    for e in known:
        if (e["path"], e["operator"], e["before"], e["after"]) == (
                result["path"], result["operator"], result["before"], result["after"]):
            return e["reason"]
    return None


_COLLECTED: dict[tuple[Path, str], frozenset[str]] = {}
_COLLECT_LOCK = threading.Lock()


def collected_ids(copy: Path, marker: str = "") -> frozenset[str]:
    """The test ids the copy's suite has (slow ones included; with ``marker``, only those it marks), collected once
    per copy: a map made at an older commit may name tests renamed since (a parametrized case's id), which pytest
    would refuse as a whole."""
    with _COLLECT_LOCK:
        if (copy, marker) not in _COLLECTED:
            select = ["-m", marker] if marker else []
            out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "--slow", "-p",
                                  "no:cacheprovider", "-p", "no:randomly", "-o", "addopts=", *select, "tests"],
                                 cwd=copy, env=copy_env(copy), capture_output=True, text=True).stdout
            _COLLECTED[copy, marker] = frozenset(line.strip() for line in out.splitlines() if "::" in line)
        return _COLLECTED[copy, marker]


def run_mutant(copy: Path, mutant: dict[str, Any], test_map: dict[str, Any]) -> dict[str, Any]:
    path = copy / mutant["path"]
    original = path.read_text()
    result = dict(mutant)
    mutated = mutated_source(path, mutant["operator"], mutant["occurrence"])
    if mutated is None:
        return result | {"outcome": "incompetent", "before": "", "after": "", "tests": 0}
    result["before"], result["after"] = line_change(original, mutated)
    try:
        compile(mutated, str(path), "exec")
    except SyntaxError:
        return result | {"outcome": "incompetent", "tests": 0}
    covering: set[str] = set()
    per_line = test_map["lines"].get(mutant["path"], {})
    span = range(mutant["line"], mutant["end_line"] + 1)
    for line in span:
        covering.update(per_line.get(str(line), ()))
    if not covering and set(span) & set(test_map["imported"].get(mutant["path"], ())):
        # A line run at import (a constant, a class body, a default): every test of the module depends on it.
        covering = {t for tests in per_line.values() for t in tests}
    known = collected_ids(copy)
    if known:
        result["stale"] = len(covering - known)
        covering &= known
    if test_map.get("machines"):
        # The stateful machines alone: the tests marked `machine` (tests/lockstep.py's machine_test), nothing else.
        covering &= collected_ids(copy, MACHINE_MARKER)
    times = test_map["times"]
    ordered = sorted(covering, key=lambda t: (times.get(t, 1.0), t))
    chosen, budget = [], 0.0
    for test in ordered:
        if budget > TEST_BUDGET_S:
            break
        chosen.append(test)
        budget += times.get(test, 1.0)
    fixed = next((tests for where, tests in FIXED_TESTS.items()
                  if mutant["path"] == where or (where.endswith("/") and mutant["path"].startswith(where))), None)
    if fixed is not None and not test_map.get("machines"):
        chosen, budget = ["--slow", *fixed], FIXED_TIMEOUT_S / 3 - 20
    if test_map.get("also"):
        chosen, budget = [*chosen, *test_map["also"]], budget + 30
    result["tests"] = len(chosen)
    if not chosen:
        return result | {"outcome": "no_tests"}
    result.pop("seconds", None)
    started = time.monotonic()
    path.write_text(mutated)
    try:
        outcome = _run_tests(copy, chosen, timeout=3 * budget + 60)
    finally:
        path.write_text(original)
    return result | {"outcome": outcome, "seconds": round(time.monotonic() - started, 1)}


def _run_tests(copy: Path, tests: list[str], timeout: float) -> str:
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-o",
           "addopts=", "--no-header", "-W", "ignore", "-p", "no:randomly", *tests]
    proc = subprocess.Popen(cmd, cwd=copy, env=copy_env(copy), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return "timeout"
    # 1: a test failed; 2: collection failed (the mutant breaks an import): killed. 5: no test collected, 3 and 4:
    # pytest's own error or a test id it does not know: the mutant was not judged ("error", left out of the score).
    return {0: "survived", 1: "killed", 2: "killed", 5: "no_tests"}.get(rc, "error")


# ------------------------------------------------------------------------------------------------------- report


KILLED = ("killed", "timeout")
COUNTED_SURVIVED = ("survived", "no_tests")


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    known = equivalents()
    for r in results:
        if r["outcome"] in COUNTED_SURVIVED:
            reason = is_equivalent(r, known)
            if reason:
                r["outcome"], r["reason"] = "equivalent", reason
    counts = Counter(r["outcome"] for r in results)
    judged = sum(counts[o] for o in (*KILLED, *COUNTED_SURVIVED))
    killed = sum(counts[o] for o in KILLED)
    return {"counts": dict(counts), "judged": judged, "killed": killed,
            "score": killed / judged if judged else None}


def markdown(summary: dict[str, Any], results: list[dict[str, Any]], title: str) -> str:
    out = [f"### {title}", "", "| outcome | mutants |", "|---|---|"]
    for outcome, n in sorted(summary["counts"].items()):
        out.append(f"| {outcome} | {n} |")
    score = summary["score"]
    out += ["", f"Score: **{summary['killed']} of {summary['judged']}"
                f" = {score:.1%}**" if score is not None else "Score: nothing judged", ""]
    per_module: dict[str, Counter[str]] = {}
    for r in results:
        per_module.setdefault(r["path"], Counter())[r["outcome"]] += 1
    out += ["| module | killed | survived | no tests | equivalent |", "|---|---|---|---|---|"]
    for path, c in sorted(per_module.items()):
        out.append(f"| {path} | {c['killed'] + c['timeout']} | {c['survived']} | {c['no_tests']} | "
                   f"{c['equivalent']} |")
    survivors = [r for r in results if r["outcome"] in COUNTED_SURVIVED]
    if survivors:
        out += ["", "Surviving mutants:", ""]
        for r in sorted(survivors, key=lambda r: (r["path"], r["line"])):
            out.append(f"- `{r['path']}:{r['line']}` {r['operator']} ({r['outcome']}, {r['tests']} tests): "
                       f"`{r['before']}` → `{r['after']}`")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--area", default="refimpl", help="refimpl, checkers, or comma-separated paths")
    parser.add_argument("--sample", type=int, default=300, help="mutants to run (0: all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work", type=Path, default=ROOT / ".mutation")
    parser.add_argument("--rerun", type=Path, help="rerun the survivors of an earlier result file")
    parser.add_argument("--commit", default="HEAD", help="the commit to mutate (default HEAD; its map is reused)")
    parser.add_argument("--map", type=Path, dest="map_file",
                        help="use this map (of an earlier commit whose mutated modules are the same) instead of one of "
                             "--commit: with --rerun and --also, survivors meet new tests without a new map")
    parser.add_argument("--also", action="append", default=[], metavar="TEST",
                        help="a test (file or node id) every mutant also runs, after those the map chose")
    parser.add_argument("--machines", action="store_true",
                        help="the stateful machines alone: each mutant runs only the covering tests marked `machine` "
                             "(tests/lockstep.py); refimpl's modules that no spec area models are left out "
                             "(MACHINES_EXCLUDED, under 15%% of its statements)")
    parser.add_argument("--coverage", type=Path, metavar="MAP",
                        help="print the statement coverage per protocol area (whole suite, stateful machines) from a "
                             "map a run made (.mutation/map-<commit>.json) and stop")
    args = parser.parse_args(argv)
    if _MISSING is not None:
        raise MutationError(f"{_MISSING.name} is missing: pip install -e '.[test,mutation]'")
    paths = AREAS.get(args.area) or args.area.split(",")
    if args.coverage:
        print(coverage_by_area(json.loads(args.coverage.read_text()), collected_ids(ROOT, MACHINE_MARKER)))
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    args.work = args.work.resolve()  # the copies' PYTHONPATH must not depend on the working directory
    copies = [args.work / f"w{i}" for i in range(max(1, args.workers))]
    head = git_commit(args.commit)
    for copy in copies:
        make_copy(copy, head)
    # --machines needs the machines' lines only: their own map, made in a fraction of the whole suite's time.
    marker = MACHINE_MARKER if args.machines else None
    map_file = args.map_file or args.work / f"map-{head[:12]}{'-machines' if marker else ''}.json"
    test_map = json.loads(map_file.read_text()) if map_file.exists() else build_map(copies[0], map_file, head,
                                                                                   marker)
    test_map["also"] = list(args.also)
    test_map["machines"] = args.machines
    earlier: list[dict[str, Any]] = []
    if args.rerun:
        earlier = json.loads(args.rerun.read_text())["results"]
        again = (*COUNTED_SURVIVED, "error")  # the survivors, and the mutants a stale test id left unjudged
        sample = [{k: r[k] for k in ("path", "operator", "occurrence", "line", "col", "end_line") if k in r}
                  for r in earlier if r["outcome"] in again]
        earlier = [r for r in earlier if r["outcome"] not in again]
        print(f"rerunning the {len(sample)} survivors and unjudged mutants of {args.rerun}", file=sys.stderr)
    else:
        modules = modules_of(paths)
        if args.machines:
            share = excluded_share(modules)
            if share >= MAX_EXCLUDED_SHARE:
                raise MutationError(f"the modules left out hold {share:.1%} of the statements (at most "
                                    f"{MAX_EXCLUDED_SHARE:.0%})")
            modules = [m for m in modules if str(m) not in MACHINES_EXCLUDED]
            print(f"left out (no spec area models them): {excluded_share(modules_of(paths)):.1%} of the statements",
                  file=sys.stderr)
        mutants = enumerate_mutants(modules)
        sample = mutants if args.sample <= 0 or args.sample >= len(mutants) else \
            random.Random(args.seed).sample(mutants, args.sample)
        print(f"{len(mutants)} mutants of {args.area}; running {len(sample)}", file=sys.stderr)
    results: list[dict[str, Any]] = []
    started = time.monotonic()

    pending = iter(range(len(sample)))
    lock = threading.Lock()

    def work(index: int) -> None:
        copy = copies[index]
        while True:
            with lock:  # the next mutant to whichever worker is free: slow survivors do not leave one idle
                n = next(pending, None)
            if n is None:
                return
            r = run_mutant(copy, sample[n], test_map)
            results.append(r)
            change = f": {r.get('before', '')} -> {r.get('after', '')}" if r["outcome"] in COUNTED_SURVIVED else ""
            print(f"[{len(results)}/{len(sample)}] {r['outcome']:11} {r['path']}:{r['line']} {r['operator']}{change}",
                  file=sys.stderr, flush=True)

    try:
        with ThreadPoolExecutor(len(copies)) as pool:
            list(pool.map(work, range(len(copies))))
    except KeyboardInterrupt:
        print("interrupted: the report covers the mutants run so far", file=sys.stderr)
    # A rerun reports the whole sample: the earlier outcomes of the mutants already killed, the new ones of the rest.
    results = [*earlier, *results]
    summary = summarise(results)
    name = (f"{args.area if args.area in AREAS else 'paths'}{'-machines' if args.machines else ''}-{args.seed}"
            + ("-rerun" if args.rerun else ""))
    out = {"commit": head, "area": args.area, "paths": paths, "seed": args.seed, "machines": args.machines,
           "sample": len(results),
           "seconds": round(time.monotonic() - started), "summary": summary, "results": results}
    (args.work / f"{name}.json").write_text(json.dumps(out, indent=1))
    report = markdown(summary, results, f"{args.area} (commit {head[:9]}, seed {args.seed}, {len(results)} mutants)")
    (args.work / f"{name}.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except MutationError as exc:
        print(f"mutation: {exc}", file=sys.stderr)
        sys.exit(2)
