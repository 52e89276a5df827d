"""One way to write a time on every page, in the reader's own zone and named: "2 Dec 2026 03:36
(GMT+8)", in Chinese the table's DATE_FORMAT (year, month, day), seconds only when they are not 0. No order of
day and month to guess, whatever the browser's locale. pages.js writes the same text from the
<time datetime> the server sends, and keeps the reader's zone in a cookie (READER_ZONE_COOKIE) so
the server's own text is already right on the next page. Forms read the same text back
(`parse_local`), or ISO 8601."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from judge.messages import translate

READER_ZONE_COOKIE = "kvp_tz"
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# An IANA name as a cookie or a form may carry it: bounded, and only the characters names use.
_ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+){0,2}")
# A time's words, per language (judge/messages): `month` is the month's English short name in
# English and its number in Chinese; the order is the language's own.
DATE_FORMAT = "{day} {month} {year} {clock}"
_FIELDS = {"day": r"(?P<day>\d{1,2})",
           "year": r"(?P<year>\d{4})",
           "clock": r"(?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2}))?"}


def _pattern(lang: str) -> re.Pattern:
    """DATE_FORMAT in `lang` as a pattern that reads its text back (spaces optional)."""
    # a month's name in English, its number in Chinese: never day and month both numbers
    month = r"(?P<month>\d{1,2})" if lang == "zh" else r"(?P<month>[A-Za-z]{3})"
    fields = {**_FIELDS, "month": month}
    out = ""
    for literal, name in re.findall(r"([^{]*)(?:\{(\w+)\})?", translate(DATE_FORMAT, lang)):
        out += re.escape(literal.strip()) + r"\s*" if literal.strip() else r"\s*"
        out += fields.get(name, "")
    return re.compile(out)


def zone(name: str | None) -> ZoneInfo | None:
    """The zone a cookie or form names, or None for a name that is no zone."""
    if not name or len(name) > 64 or not _ZONE_NAME.fullmatch(name):
        return None
    try:
        return ZoneInfo(name)
    except (ValueError, OSError, KeyError):  # unknown names, and names that are paths
        return None


def offset_name(delta: timedelta | None) -> str:
    """"GMT+8", "GMT-3:30", "UTC" (what browsers call a zone's offset, short)."""
    minutes = int((delta or timedelta()).total_seconds() // 60)
    if minutes == 0:
        return "UTC"
    sign, minutes = ("+" if minutes > 0 else "-"), abs(minutes)
    return f"GMT{sign}{minutes // 60}" + (f":{minutes % 60:02d}" if minutes % 60 else "")


def _utc(value) -> datetime | None:
    """A naive-UTC datetime (the database's), an aware one, or ISO text, as aware UTC."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value


def local_text(value, lang: str = "en", tz: ZoneInfo | None = None) -> str:
    """The time without its zone's name, as a form's field holds it."""
    d = _utc(value)
    if d is None:
        return ""
    d = d.astimezone(tz or timezone.utc)
    clock = f"{d.hour:02d}:{d.minute:02d}" + (f":{d.second:02d}" if d.second else "")
    month = str(d.month) if lang == "zh" else MONTHS[d.month - 1]
    return translate(DATE_FORMAT, lang, day=d.day, month=month, year=d.year, clock=clock)


def when(value, lang: str = "en", tz: ZoneInfo | None = None) -> str:
    """The page's text for a time: local_text and the zone's offset, "2 Dec 2026 03:36 (GMT+8)"."""
    d = _utc(value)
    if d is None:
        return ""
    return f"{local_text(d, lang, tz)} ({offset_name(d.astimezone(tz or timezone.utc).utcoffset())})"


def parse_local(text: str, tz: ZoneInfo | timezone) -> datetime | None:
    """A form's time (the page's form, or ISO 8601) in `tz` unless it names its own offset, as
    naive UTC; None for text that is no time (the caller says how to write one)."""
    text = " ".join((text or "").split())[:40]
    m = _pattern("en").fullmatch(text) or _pattern("zh").fullmatch(text)
    if m is not None:
        month = m["month"].title()
        month_no = MONTHS.index(month) + 1 if month in MONTHS else int(month) if \
            month.isdigit() else 0
        parts = (int(m["year"]), month_no, int(m["day"]))
    else:
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        dt = dt if dt.tzinfo else dt.replace(tzinfo=tz)
        return dt.astimezone(timezone.utc).replace(tzinfo=None)
    try:
        dt = datetime(*parts, int(m["hour"]), int(m["minute"]), int(m["second"] or 0), tzinfo=tz)
    except ValueError:  # 31 Feb, 25:00, month 0
        return None
    return dt.astimezone(timezone.utc).replace(tzinfo=None)


def zone_label(tz: ZoneInfo | None, at: datetime | None = None) -> str:
    """How a form names the zone its times are typed in: "Asia/Shanghai, GMT+8", or "UTC"."""
    if tz is None:
        return "UTC"
    now = (at or datetime.now(timezone.utc)).astimezone(tz)
    return f"{tz.key}, {offset_name(now.utcoffset())}"
