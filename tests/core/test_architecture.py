"""The architecture holds: import-linter's contracts (pyproject.toml: the layers of the
package and of kineto/, and the headless core that never imports textual or tracetui.ui),
no import cycle, no module over 600 lines, and each Kineto arg name spelled once."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_import_contract_holds():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    proc = subprocess.run([exe, str(REPO / "pyproject.toml")], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    contracts = (REPO / "pyproject.toml").read_text(encoding="utf-8").count("[[tool.importlinter.contracts]]")
    assert f"Contracts: {contracts} kept, 0 broken." in proc.stdout, proc.stdout


def test_ruff_is_clean():
    """The lint rules of pyproject.toml ([tool.ruff]) hold for the package, tests, bench and scripts."""
    exe = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    proc = subprocess.run([exe, "check", "--no-cache", "tracetui", "tests", "bench", "scripts"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_tests_are_split_into_core_and_ui():
    """Every test module sits in tests/core (no Textual) or tests/ui (drives the app)."""
    import ast

    assert not list((REPO / "tests").glob("test_*.py")), "put test modules in tests/core or tests/ui"
    leaks = []
    for path in sorted((REPO / "tests" / "core").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            leaks += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "textual" or n.startswith("tracetui.ui")]
    assert not leaks, "UI tests belong in tests/ui:\n" + "\n".join(leaks)


def test_core_import_does_not_load_textual():
    code = ("import sys, tracetui, tracetui.session, tracetui.api, tracetui.export.tree_text, "
            "tracetui.cli.tree_text; "
            "assert not any(m == 'textual' or m.startswith('textual.') for m in sys.modules), 'textual loaded'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, timeout=60)


# ---------------------------------------------------------------- one definition per fact
PACKAGE = REPO / "tracetui"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(REPO).with_suffix("")
        name = ".".join(rel.parts)
        out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def _string_constants(tree) -> list[tuple[str, int]]:
    """String constants of a module that are not docstrings."""
    import ast

    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [(n.value, n.lineno) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def test_each_kineto_arg_name_is_spelled_in_one_module():
    import ast

    from tracetui.kineto.schema import DISTINCTIVE_ARG_NAMES

    found = []
    for name, path in _modules().items():
        if name == "tracetui.kineto.schema":
            continue
        for value, line in _string_constants(ast.parse(path.read_text())):
            if value in DISTINCTIVE_ARG_NAMES:
                found.append(f"{path.relative_to(REPO)}:{line} {value!r}")
    assert not found, "use tracetui.kineto.schema instead:\n" + "\n".join(found)


def _import_graph() -> dict[str, set[str]]:
    """tracetui module -> tracetui modules it imports, anywhere in the file (lazy imports
    inside functions and TYPE_CHECKING blocks included)."""
    import ast

    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = ".".join(parts[: len(parts) - (node.level - 1)])
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            for target in targets:
                while target and target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != mod and target.startswith("tracetui"):
                    graph[mod].add(target)
    # a package imported for one of its submodules is not an edge to the package's own code
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        comp.append(member)
                        if member == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_cycle_among_tracetui_modules_lazy_imports_included():
    graph = _import_graph()
    # a package's __init__ re-exporting its modules is not a cycle of code: ignore edges
    # from a module to the package that contains it
    for mod in graph:
        graph[mod] = {t for t in graph[mod] if not mod.startswith(t + ".")}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_over_600_lines():
    long = {str(p.relative_to(REPO)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 600}
    assert not long, long


# ---------------------------------------------------------------- the UI by feature
UI_FEATURES = ("browser", "diff", "tree", "detail", "timeline", "summaries", "job", "memory", "critical", "findings",
               "query", "follow", "plot", "stacks")


def _classes(path: Path) -> list[str]:
    import ast

    return [n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef)]


def _snake(name: str) -> str:
    import re

    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def test_the_ui_is_laid_out_by_feature():
    """ui/ holds the app, the feature folders, the Textual-free view/ and a few Textual
    helpers; no folder of mixed kinds (the old ui/widgets, ui/screens) comes back."""
    ui = PACKAGE / "ui"
    folders = {p.name for p in ui.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == {*UI_FEATURES, "view"}, folders


def test_a_widget_or_screen_file_is_named_after_its_class():
    """In the feature folders every module is named after a class it holds (``main_screen.py``
    holds ``MainScreen``): a newcomer finds a class by its name."""
    wrong = []
    for feature in UI_FEATURES:
        for path in sorted((PACKAGE / "ui" / feature).glob("*.py")):
            if path.name == "__init__.py":
                continue
            if path.stem not in {_snake(c) for c in _classes(path)}:
                wrong.append(f"{path.relative_to(REPO)}: {_classes(path)}")
    assert not wrong, "\n".join(wrong)


def test_no_two_classes_share_a_name():
    seen: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in _classes(path):
            seen.setdefault(name, []).append(str(path.relative_to(REPO)))
    twice = {name: where for name, where in seen.items() if len(where) > 1 and not name.startswith("_")}
    assert not twice, twice


def test_no_export_file_lies_at_the_repo_root():
    """A walk that presses ``e`` writes its export into the current folder; twice such a file
    was committed at the root.  The root holds only these files (folders are not checked)."""
    allowed = {"README.md", "CONTRIBUTING.md", "pyproject.toml", ".gitignore"}
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if tracked.returncode != 0:  # not a git checkout: nothing committed to check
        return
    at_root = {p for p in tracked.stdout.splitlines() if "/" not in p}
    assert at_root <= allowed, sorted(at_root - allowed)


def test_every_import_inside_the_package_names_what_exists():
    """Each ``from .x import y`` of the package, lazy ones inside functions too, names a module or
    a name that exists: a name moved to another module (``io.files`` -> ``io.limits``) fails here,
    not in the one command that imports it lazily.  Optional SDKs (``mcp``) are skipped when absent."""
    import ast
    import importlib

    missing = []
    for path in sorted((REPO / "tracetui").rglob("*.py")):
        pkg = list(path.relative_to(REPO).with_suffix("").parts[:-1])
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = pkg[:len(pkg) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
            try:
                mod = importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if exc.name and not exc.name.startswith("tracetui"):
                    continue  # an optional dependency (the mcp SDK, torch) that is not installed
                missing.append(f"{path.relative_to(REPO)}: {module} ({exc})")
                continue
            except ImportError as exc:
                missing.append(f"{path.relative_to(REPO)}: {module} ({exc})")
                continue
            for alias in node.names:
                if alias.name != "*" and not hasattr(mod, alias.name):
                    try:
                        importlib.import_module(f"{module}.{alias.name}")
                    except ImportError:
                        missing.append(f"{path.relative_to(REPO)}: {alias.name} from {module}")
    assert not missing, missing
