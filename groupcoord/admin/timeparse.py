"""Parsing the times ``reset-offsets`` accepts: ISO-8601 instants and ISO-8601 durations (``PnDTnHnMnS``)."""

from __future__ import annotations

import datetime as dt
import re

_DURATION = re.compile(
    r"^(?P<sign>-)?P(?:(?P<days>\d+)D)?(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)


class TimeFormatError(ValueError):
    """A date or duration the user typed is malformed; the message names the expected format."""


def parse_instant(text: str) -> dt.datetime:
    """An ISO-8601 date-time (``2024-05-01T10:00:00``, ``...Z``, ``...+02:00``) as tz-aware UTC; no zone means UTC."""
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise TimeFormatError(
            f"malformed date-time {text!r}: expected ISO-8601 such as 2024-05-01T10:00:00 or 2024-05-01T10:00:00Z"
        ) from None
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)


def parse_duration(text: str) -> dt.timedelta:
    """An ISO-8601 duration ``PnDTnHnMnS`` (each part optional, at least one given; a leading ``-`` negates)."""
    match = _DURATION.match(text.strip().upper())
    parts = match.groupdict() if match else {}
    if not match or not any(parts[k] for k in ("days", "hours", "minutes", "seconds")) or text.strip().endswith("T"):
        raise TimeFormatError(f"malformed duration {text!r}: expected ISO-8601 PnDTnHnMnS such as P1DT2H or PT30M")
    duration = dt.timedelta(days=int(parts["days"] or 0), hours=int(parts["hours"] or 0),
                            minutes=int(parts["minutes"] or 0), seconds=float(parts["seconds"] or 0))
    return -duration if parts["sign"] else duration
