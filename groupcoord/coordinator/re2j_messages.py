"""Why a regular expression does not compile, in RE2/J's words, which Kafka's coordinator puts in its
INVALID_REGULAR_EXPRESSION message.

groupcoord compiles with RE2 itself (the C++ library): the same syntax, but other error texts (``missing )`` where RE2/J
says ``missing closing )``), and RE2/J also refuses a capture group name used twice, which RE2 accepts. Each
translation below was checked against Kafka 4.4.0's answers (``tests/coordinator/test_consumer_regex.py``).
"""

from __future__ import annotations

import re

_DESCRIPTIONS: dict[str, str] = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    # RE2/J reports an unmatched ")" as an internal error, and Kafka passes that on as it is.
    "unexpected )": "regexp/syntax: internal error",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid named capture group": "invalid named capture",
    "trailing \\": "trailing backslash at end of expression",
}
_NAMED_GROUP = re.compile(r"(?<!\\)\(\?P?<([A-Za-z0-9_]+)>")


def re2j_description(re2_error: str) -> str:
    """RE2/J's description of the error RE2 reported as ``re2_error`` (``kind: fragment``, or ``kind`` alone)."""
    kind, _, fragment = re2_error.partition(": ")
    if kind == "invalid perl operator":
        return "invalid named capture" if fragment.startswith(("(?<", "(?P<")) else "invalid or unsupported Perl syntax"
    return _DESCRIPTIONS.get(kind, kind)


def duplicate_group_name(regex: str) -> bool:
    """Whether ``regex`` names two capture groups alike (RE2/J refuses it: ``duplicate capture group name``)."""
    names = _NAMED_GROUP.findall(regex)
    return len(names) != len(set(names))


__all__ = ["duplicate_group_name", "re2j_description"]
