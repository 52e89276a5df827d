"""docs/ARCHITECTURE.md is the map of the house, and it stays true: every room of judge/ and web/
is drawn in it, and every module of a room is named in that room's entry. A module added
without a word on the map fails here, with its path."""

from __future__ import annotations

import re

from paths import REPO

MAP = REPO / "docs" / "ARCHITECTURE.md"
# Alembic's migrations are named by their revision, and the map names their folder.
UNNAMED = ("web/store/alembic/versions/",)
# A room's entry in the map's drawing: its name and a slash, first on its line.
HEADER = re.compile(r"^( +)([a-z_]+)/(?= |$)")


def _entries() -> dict[str, str]:
    """Each room's entry in the drawings: its header line and the lines under it, up to the
    next room's header or a line no deeper than the header."""
    entries: dict[str, list[str]] = {}
    lines = MAP.read_text(encoding="utf-8").splitlines()
    inside, room, depth = False, None, 0
    for line in lines:
        if line.startswith("```"):
            inside, room = not inside, None
            continue
        if not inside:
            continue
        m = HEADER.match(line)
        if m:
            room, depth = m.group(2), len(m.group(1))
            assert room not in entries, f"the map draws {room}/ twice"
            entries[room] = [line]
        elif room is not None and line.strip() and len(line) - len(line.lstrip()) > depth:
            entries[room].append(line)
        elif line.strip():
            room = None
    return {room: "\n".join(text) for room, text in entries.items()}


def _packages():
    for root in ("judge", "web"):
        for init in sorted((REPO / root).rglob("__init__.py")):
            folder = init.parent
            if "node_modules" not in folder.parts and folder != REPO / root:
                yield folder


def test_every_room_and_module_of_judge_and_web_is_on_the_map():
    entries, missing = _entries(), []
    for folder in _packages():
        rel = folder.relative_to(REPO).as_posix() + "/"
        if rel.startswith(UNNAMED):
            continue
        entry = entries.get(folder.name)
        if entry is None:
            missing.append(f"{rel} (no entry)")
            continue
        names = [p.stem for p in folder.glob("*.py") if p.name != "__init__.py"]
        names += [d.name + "/" for d in folder.iterdir() if (d / "__init__.py").exists()]
        for name in sorted(names):
            if not re.search(rf"(?<![\w/.]){re.escape(name)}(?![\w])", entry):
                missing.append(rel + name)
    assert not missing, missing


def test_every_top_level_module_is_on_the_map():
    text = MAP.read_text(encoding="utf-8")
    missing = [f"{root}/{p.name}" for root in ("judge", "web")
               for p in sorted((REPO / root).glob("*.py"))
               if p.name != "__init__.py" and p.name not in text]
    assert not missing, missing
