"""Agent names: the identifier every agent has (`name`, unique within its
owner, used by the command line and in URLs) and the free-text display name
an agent may have besides (Letta's names, "My Helper Bot"), which several
of one owner's agents may share.

An identifier is 1-64 letters, digits, '_', '.' or '-'. One shaped like an
agent id ("agent-" and 32 hex digits, or a UUID as Letta's ids are) is
refused: lookups try ids first, and a name that looks like an id would only
confuse them. A display name that is not an identifier keeps its text as
the display name, and the agent's identifier is derived from it
(`identifier_base`): "My Helper Bot" is `my-helper-bot`, made unique within
the owner by a number (`my-helper-bot-2`) by whoever stores it.
"""

from __future__ import annotations

import re
import unicodedata

AGENT_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# Our ids (models.new_id: "agent-" and 32 hex digits) and Letta's ("agent-"
# and a UUID with its dashes).
_ID_SHAPED = re.compile(
    r"^agent-[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.IGNORECASE
)
MAX_DISPLAY_NAME = 200
# Room left in an identifier for the number that makes it unique ("-999").
_BASE_LENGTH = 56
# The identifier of a display name with no letter or digit we can keep.
_FALLBACK = "agent"

NAME_RULE = (
    "an agent name is 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
)


def is_id_shaped(name: str) -> bool:
    """Whether `name` looks like an agent id (ours or Letta's)."""
    return bool(_ID_SHAPED.match(name))


def check_identifier(name: str) -> str:
    """`name` if it may be an agent's identifier; else a ValueError saying why."""
    if not AGENT_NAME_PATTERN.match(name):
        raise ValueError(NAME_RULE)
    if is_id_shaped(name):
        raise ValueError(
            f"{name!r} looks like an agent id; an agent name may not (ids are looked up first)"
        )
    return name


def check_display_name(text: str) -> str:
    """A display name: stripped, 1-200 characters, on one line."""
    text = text.strip()
    if not text or len(text) > MAX_DISPLAY_NAME:
        raise ValueError(f"a display name is 1-{MAX_DISPLAY_NAME} characters, not blank")
    if any(unicodedata.category(c) == "Cc" for c in text):
        raise ValueError("a display name is one line, without control characters")
    return text


def is_identifier(name: str) -> bool:
    """Whether `name` may be an identifier as it is (then it needs no display name)."""
    return bool(AGENT_NAME_PATTERN.match(name)) and not is_id_shaped(name)


def identifier_base(display_name: str) -> str:
    """The identifier a display name gives, before it is made unique:
    accents dropped, lower case, each run of other characters one '-'
    ("Café Bot!" is `cafe-bot`); `agent` when nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", display_name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9_.]+", "-", ascii_text.lower()).strip("-_.")
    slug = slug[:_BASE_LENGTH].rstrip("-_.") or _FALLBACK
    if is_id_shaped(slug):
        slug = f"named-{slug}"[:_BASE_LENGTH]
    return slug


def numbered(base: str, taken: set[str]) -> str:
    """`base`, or `base-2`, `base-3`, ...: the first not in `taken`."""
    if base not in taken:
        return base
    number = 2
    while f"{base}-{number}" in taken:
        number += 1
    return f"{base}-{number}"
