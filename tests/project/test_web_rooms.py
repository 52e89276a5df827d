"""web/ is grouped in rooms by layer, and imports go one way: a room imports only the rooms
below it in ROOMS (the map in docs/ARCHITECTURE.md, section 6). So there is no circle between
rooms and no arrow up: the database never asks for a page, a rule never for a request. A new
import that breaks the order fails here, with the file and the line."""

from __future__ import annotations

import ast
from pathlib import Path

from judge.judging import python_ast

WEB = Path(__file__).resolve().parents[2] / "web"

# Bottom to top. A room is a folder of web/ or one of its top-level modules.
ROOMS = [
    "settings", "dates", "client", "token_store", "submit_client",  # leaves: no web import
    "store",      # the database: tables, migrations, leases, news, gradebooks
    "jobs",       # grading work: queue, workers, regrades, checks
    "courses",    # courses and where a student stands (no HTTP)
    "accounts",   # sign-up rules, sessions, personal tokens (no HTTP)
    "services",   # what a request asks for, without HTTP: admission, events, practice, limits
    "http",       # what every request passes through: edge, identity, throttle, errors, ...
    "api",        # the JSON routers
    "pages",      # the HTML routers and `render` (the instructor page shows the API's overview)
    "lti",        # LTI 1.3: launch and deep linking (signs in as the pages do), scores sent back
    "app",        # the ASGI app: the rooms above put together
    "ops_cli", "cli", "__main__",  # the `judge` console script
]


def _room(path: Path) -> str:
    first = path.relative_to(WEB).parts[0]
    return first.removesuffix(".py")


def _target(module: str) -> str | None:
    """The room a `web.*` module name is in (None: not web's)."""
    parts = module.split(".")
    if parts[0] != "web" or len(parts) == 1:
        return None
    return parts[1]


def _imports(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "web":  # `from web import dates`
                for alias in node.names:
                    yield node.lineno, f"web.{alias.name}"
            else:
                yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def _sources():
    for path in sorted(WEB.rglob("*.py")):
        if "node_modules" not in path.parts:  # the front end's npm packages (KaTeX ships .py)
            yield path


def test_every_import_inside_web_goes_down():
    order = {room: i for i, room in enumerate(ROOMS)}
    wrong = []
    for path in _sources():
        room = _room(path)
        if room == "__init__":
            continue
        for line, module in _imports(python_ast.parse(path.read_text(encoding="utf-8"))):
            target = _target(module)
            if target is None or target == room:
                continue
            if target not in order or order[target] >= order[room]:
                wrong.append(f"{path.relative_to(WEB)}:{line} ({room} -> {target})")
    assert not wrong, wrong


def test_every_room_of_web_is_placed_and_says_what_lives_there():
    found = {p.name.removesuffix(".py") for p in WEB.iterdir()
             if (p.suffix == ".py" and p.name != "__init__.py")
             or (p.is_dir() and (p / "__init__.py").exists())}
    assert found == set(ROOMS), (found - set(ROOMS), set(ROOMS) - found)
    assert not (WEB / "__init__.py").read_text(encoding="utf-8").strip()  # no names of its own
    for room in sorted(WEB.iterdir()):
        if room.is_dir() and (room / "__init__.py").exists():
            doc = ast.get_docstring(python_ast.parse((room / "__init__.py").read_text(encoding="utf-8")))
            assert doc and len(doc) > 80, f"{room.name}/__init__.py says what lives there"


def _module_name(path: Path) -> str:
    rel = path.relative_to(WEB.parent).with_suffix("")
    return ".".join(rel.parts).removesuffix(".__init__")


def test_no_module_of_web_imports_itself_back():
    """Inside a room too: no circle of imports, not even through an import inside a function
    (a circle put off until a call is still a circle for the reader)."""
    modules = {_module_name(p): p for p in _sources()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps = set()
        for _, module in _imports(python_ast.parse(path.read_text(encoding="utf-8"))):
            while module and module not in modules:
                module = module.rpartition(".")[0]
            if module and module != name:
                deps.add(module)
        graph[name] = deps
    seen: dict[str, int] = {}  # 1: on the path, 2: done

    def circle_from(node: str, path: list[str]) -> list[str] | None:
        seen[node] = 1
        for dep in sorted(graph[node]):
            if seen.get(dep) == 1:
                return path[path.index(dep):] + [dep] if dep in path else [node, dep]
            if dep not in seen:
                found = circle_from(dep, path + [dep])
                if found:
                    return found
        seen[node] = 2
        return None

    for name in sorted(graph):
        if name not in seen:
            circle = circle_from(name, [name])
            assert circle is None, " -> ".join(circle)
