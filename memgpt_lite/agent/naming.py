"""The names a client gives an agent, as stored: its identifier (`name`,
unique within its owner) and its display name (see memgpt_lite/names.py).

Letta's clients give one free-text name (`names_from_letta`): an identifier
as it is, anything else ("My Helper Bot") a display name with an identifier
derived from it. Our API takes both fields (`chosen_names`). Display names
may repeat, even among one owner's agents (as in Letta, where each
`letta --new-agent` makes an agent named "Letta Code"): a derived identifier
is numbered to stay unique (`letta-code`, `letta-code-2`, ...). A name one of
the owner's agents has is an AlreadyExistsError (409) where the store writes
it; another user's names are never looked at. Call these inside the write
that stores the names, so that no other write of the store takes the
derived identifier in between.
"""

from __future__ import annotations

from memgpt_lite.errors import ConfigError
from memgpt_lite.names import (
    check_display_name,
    check_identifier,
    identifier_base,
    is_id_shaped,
    is_identifier,
    numbered,
)
from memgpt_lite.storage.protocol import Storage


def names_from_letta(
    store: Storage, owner: str, given: str, agent_id: str | None = None
) -> tuple[str, str | None]:
    """The identifier and display name (None: none) for Letta's `name`
    `given`, for a new agent of `owner`, or for agent `agent_id` renamed."""
    given = given.strip()
    if is_id_shaped(given):
        raise ConfigError(f"name: {_why_not(given)}")
    if is_identifier(given):
        return given, None
    return chosen_names(store, owner, None, given, agent_id)


def chosen_names(
    store: Storage,
    owner: str,
    name: str | None,
    display_name: str,
    agent_id: str | None = None,
) -> tuple[str, str]:
    """The identifier (`name`, or one derived from the display name, unique
    among `owner`'s other agents) and the checked display name, which
    `owner`'s other agents may have too, for a new agent or for agent
    `agent_id`."""
    try:
        display = check_display_name(display_name)
    except ValueError as exc:
        raise ConfigError(f"display_name: {exc}") from None
    states = [state for state, _ in store.list_agents(owner=owner)]
    others = [state for state in states if state.id != agent_id]
    unchanged = [state.name for state in states if state.id == agent_id]
    if name is None and unchanged and identifier_base(display) == _base(unchanged[0]):
        name = unchanged[0]  # renamed to what gives its name already: it keeps it
    if name is None:
        name = numbered(identifier_base(display), {state.name for state in others})
    return name, display


def _base(name: str) -> str:
    """`name` without the number `numbered` may have added."""
    stem, dash, number = name.rpartition("-")
    return stem if dash and number.isdigit() and int(number) >= 2 else name


def _why_not(name: str) -> str:
    try:
        check_identifier(name)
    except ValueError as exc:
        return str(exc)
    return "it cannot name an agent"
