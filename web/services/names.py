"""Names people choose, and printing what others wrote on a terminal.

A display name is shown on pages, in the instructor's gradebook and exports, and printed by
`judge regrade` on the instructor's terminal, where an ESC starts a control sequence (a screen
clear, a forged line, a retitled window). So a name is 1-40 printable characters, whichever form
sets it, and the terminal is sent only escaped text.
"""

from __future__ import annotations

from web.services import Refused

MAX_DISPLAY_NAME = 40


def display_name(raw: str) -> str:
    """The name as stored: runs of whitespace made one space; refused unless 1-40 printable
    characters (no control, format or bidirectional-override characters)."""
    name = " ".join(raw.split())
    if not name or len(name) > MAX_DISPLAY_NAME or not name.isprintable():
        raise Refused(422, "bad_display_name", "a display name is 1-40 printable characters")
    return name


def terminal_safe(text: object) -> str:
    """`text` with every character that is not printable written as a Python escape (ESC ->
    \\x1b), so what another person wrote cannot drive the terminal it is printed on."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in s)
