"""The picture of the code: which top-level folder imports which, read from the
source (every import, at module level or inside a function; those only for type
checkers aside). The apps import only apps upstream of them in the flow
author -> submit -> grade -> review -> export; the grading library stays beneath
the apps and the sandbox beneath it; and no module import loop exists but the
one an app has by design, a service enqueuing its job lazily and the job calling
the service."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIPPED = {".venv", "node_modules", "tests", "bench", "migrations", "reference_solutions"}
# Upstream first: an app may import the apps before it, never those after it.
FLOW = ["accounts", "rubrics", "tasks", "submissions", "reviews", "webhooks", "exports", "frontend"]
LIBRARIES = {"graders": {"sandboxes"}, "sandboxes": set()}
# The project package: shared helpers (roles, state, templating, celery) that import
# no app, and the composition root that wires the apps' URLs together.
COMPOSITION_ROOT = {"benchwright.api_urls", "benchwright.urls", "benchwright.settings"}


def modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT)
        if SKIPPED & set(relative.parts) or relative.parts[0].startswith("."):
            continue
        name = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
        found[name] = path
    return found


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, leaving out ``if TYPE_CHECKING:`` blocks."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for branch in node.orelse:
                visit(branch)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                named = [f"{base}.{alias.name}" for alias in node.names]
                # ``from . import x`` of a submodule x imports x, not the package's names.
                targets = [t for t in named if t in known] or [base]
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges


def folder_arrows(edges: dict[str, set[str]]) -> set[tuple[str, str, str]]:
    """(from folder, to folder, an importing module) of every arrow between folders."""
    arrows = set()
    for source, targets in edges.items():
        for target in targets:
            a, b = source.split(".")[0], target.split(".")[0]
            if a != b:
                arrows.add((a, b, source))
    return arrows


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in list(edges):
        if v not in index:
            strong(v)
    return found


def test_apps_import_only_what_is_upstream_of_them():
    against = sorted(
        f"{module} imports {b}"
        for a, b, module in folder_arrows(import_graph())
        if a in FLOW and b in FLOW and FLOW.index(b) > FLOW.index(a)
    )
    assert against == []


def test_the_grading_library_and_the_sandbox_import_no_app():
    arrows = folder_arrows(import_graph())
    wrong = sorted(
        f"{module} imports {b}"
        for a, b, module in arrows
        if a in LIBRARIES and b not in LIBRARIES[a]
    )
    assert wrong == []
    # Only the grading library drives sandboxes; the apps go through it.
    assert {a for a, b, _ in arrows if b == "sandboxes"} == {"graders"}


def test_the_project_package_imports_apps_only_where_it_wires_them():
    wiring = {
        module
        for a, b, module in folder_arrows(import_graph())
        if a == "benchwright" and (b in FLOW or b in LIBRARIES)
    }
    assert wiring <= COMPOSITION_ROOT


def test_no_import_loop_but_a_service_and_its_job():
    loops = cycles(import_graph())
    by_design = [
        group
        for group in loops
        if len(group) == 2
        and len({m.split(".")[0] for m in group}) == 1
        and any(m.endswith(".jobs") for m in group)
    ]
    assert [group for group in loops if group not in by_design] == []
    assert len(by_design) <= len(FLOW)  # at most one per app


def test_the_review_status_submissions_name_is_the_reviews_apps():
    from reviews.models import OutcomeStatus
    from submissions.selectors import FINAL_OUTCOME

    assert FINAL_OUTCOME == OutcomeStatus.FINAL
