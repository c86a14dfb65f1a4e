"""Tool rules: which tools the model may call when, within one step.

The rules themselves are data, in models.py (an agent's settings hold them);
here are the functions that make them and `RuleBook`, which applies them. The
kinds Letta users rely on, with Letta's names and fields:

- `TerminalToolRule` (`exit_loop`): the tool ends the step once it ran;
- `InitToolRule` (`run_first`): a step's first tool call must be one of these;
- `ChildToolRule` (`constrain_child_tools`): after the tool, only its
  `children` may be called;
- `MaxCountPerStepToolRule` (`max_count_per_step`): the tool runs at most
  `max_count_limit` times in a step;
- `ContinueToolRule` (`continue_loop`): the step goes on after the tool, as if
  it had asked for a heartbeat;
- `RequiresApprovalToolRule` (`requires_approval`): a call of the tool waits
  for the user's approval before it runs (loop/approvals.py).

`RuleBook` applies them during a step: which tools each request offers, and
why a call made against them is not run. A call counts once it ran without
error: a failed call may be made again, and does not move the step on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from memgpt_lite.tool_rules import (
    ChildToolRule,
    ContinueToolRule,
    InitToolRule,
    MaxCountPerStepToolRule,
    RequiresApprovalToolRule,
    TerminalToolRule,
    ToolRule,
)

_RULE_LIST: TypeAdapter[list[ToolRule]] = TypeAdapter(list[ToolRule])


def ends_step(tool_name: str) -> TerminalToolRule:
    """The step ends once `tool_name` ran (Letta's `exit_loop`)."""
    return TerminalToolRule(tool_name=tool_name)


def runs_first(tool_name: str) -> InitToolRule:
    """A step starts with a call of `tool_name` (Letta's `run_first`)."""
    return InitToolRule(tool_name=tool_name)


def followed_by(tool_name: str, *children: str) -> ChildToolRule:
    """After `tool_name`, only `children` (Letta's `constrain_child_tools`)."""
    return ChildToolRule(tool_name=tool_name, children=list(children))


def at_most(tool_name: str, count: int) -> MaxCountPerStepToolRule:
    """`tool_name` runs at most `count` times a step (Letta's `max_count_per_step`)."""
    return MaxCountPerStepToolRule(tool_name=tool_name, max_count_limit=count)


def continues(tool_name: str) -> ContinueToolRule:
    """The step goes on after `tool_name` (Letta's `continue_loop`)."""
    return ContinueToolRule(tool_name=tool_name)


def needs_approval(tool_name: str) -> RequiresApprovalToolRule:
    """A call of `tool_name` waits for the user's approval (Letta's `requires_approval`)."""
    return RequiresApprovalToolRule(tool_name=tool_name)


def describe(rule: ToolRule) -> str:
    """A rule in a few words, as `memgpt-lite show` lists it."""
    if isinstance(rule, TerminalToolRule):
        return f"{rule.tool_name} ends the step"
    if isinstance(rule, InitToolRule):
        return f"{rule.tool_name} runs first"
    if isinstance(rule, ChildToolRule):
        return f"after {rule.tool_name} only {', '.join(rule.children) or 'nothing'}"
    if isinstance(rule, MaxCountPerStepToolRule):
        return f"{rule.tool_name} at most {rule.max_count_limit} per step"
    if isinstance(rule, RequiresApprovalToolRule):
        return f"{rule.tool_name} asks for approval"
    return f"{rule.tool_name} continues the step"


class RuleBook:
    """The rules of one step, and the calls it made so far that count."""

    def __init__(self, rules: Sequence[ToolRule] = ()) -> None:
        self.rules = list(rules)
        self.ran: list[str] = []
        self._counts: Counter[str] = Counter()

    def copy(self) -> RuleBook:
        """A book of the same rules and calls, to try calls on."""
        book = RuleBook(self.rules)
        book.ran, book._counts = list(self.ran), self._counts.copy()
        return book

    def record(self, tool_name: str) -> None:
        """A call of `tool_name` ran without error."""
        self.ran.append(tool_name)
        self._counts[tool_name] += 1

    def allowed(self, tool_names: Iterable[str]) -> list[str]:
        """Which of `tool_names` (the agent's tools, in order) the next call may be."""
        names = list(tool_names)
        if not self.rules:
            return names
        return [name for name in names if self._problem(name, names) is None]

    def violation(self, tool_name: str, tool_names: Iterable[str]) -> str | None:
        """The error the model sees for calling `tool_name` now, or None when
        the rules allow it. `tool_names` are the agent's tools."""
        names = list(tool_names)
        problem = self._problem(tool_name, names)
        if problem is None:
            return None
        allowed = self.allowed(names)
        instead = (
            f"You may call: {', '.join(allowed)}."
            if allowed
            else "No tool may be called now; the step ends."
        )
        return f"Error: {tool_name} was not run: {problem}. {instead}"

    def _problem(self, name: str, names: list[str]) -> str | None:
        if not self.ran:
            first = [r.tool_name for r in self.rules if isinstance(r, InitToolRule)]
            first = [n for n in first if n in names]  # one the agent lacks is no rule
            if first and name not in first:
                return f"a step's first tool call must be {_either(first)}"
        else:
            last = self.ran[-1]
            parents = [r for r in self.rules if isinstance(r, ChildToolRule)]
            parents = [r for r in parents if r.tool_name == last]
            children = [child for rule in parents for child in rule.children]
            if parents and name not in children:
                return f"after {last} the next tool call must be {_either(children)}"
        for rule in self.rules:
            if (
                isinstance(rule, MaxCountPerStepToolRule)
                and rule.tool_name == name
                and self._counts[name] >= rule.max_count_limit
            ):
                return (
                    f"{name} already ran {self._counts[name]} times in this step, its most per step"
                )
        return None

    def ends_step(self, ran: Iterable[str]) -> bool:
        """Whether one of the tools that just ran (`ran`) ends the step."""
        terminal = {r.tool_name for r in self.rules if isinstance(r, TerminalToolRule)}
        return any(name in terminal for name in ran)

    def continues(self, tool_name: str) -> bool:
        """Whether the step goes on after `tool_name` ran."""
        return any(isinstance(r, ContinueToolRule) and r.tool_name == tool_name for r in self.rules)

    def asks_approval(self, tool_name: str) -> bool:
        """Whether a call of `tool_name` waits for the user's approval."""
        return any(
            isinstance(r, RequiresApprovalToolRule) and r.tool_name == tool_name for r in self.rules
        )

    def offered(self, schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tool schemas of a request that the rules allow next."""
        if not self.rules:
            return schemas
        allowed = set(self.allowed(s["function"]["name"] for s in schemas))
        return [s for s in schemas if s["function"]["name"] in allowed]


def _either(names: Sequence[str]) -> str:
    if not names:
        return "none (no tool may follow)"
    if len(names) == 1:
        return names[0]
    return "one of " + ", ".join(names)


# Letta's rule kinds we keep, and the fields of each we use.
_LETTA_FIELDS = {
    "exit_loop": ("tool_name",),
    "run_first": ("tool_name",),
    "constrain_child_tools": ("tool_name", "children"),
    "max_count_per_step": ("tool_name", "max_count_limit"),
    "continue_loop": ("tool_name",),
    "requires_approval": ("tool_name",),
}
LETTA_RULE_KINDS = frozenset(_LETTA_FIELDS)


def rules_from_letta(raw_rules: list[dict[str, Any]]) -> tuple[list[ToolRule], list[str]]:
    """The rules of a Letta agent (its `tool_rules`) that we apply, and a
    note for each one we cannot (another kind, or not valid), in words."""
    rules: list[ToolRule] = []
    notes: list[str] = []
    for index, raw in enumerate(raw_rules):
        if not isinstance(raw, dict):
            notes.append(f"tool rule {index} is not an object; left out")
            continue
        kind, name = raw.get("type"), raw.get("tool_name")
        fields = _LETTA_FIELDS.get(kind) if isinstance(kind, str) else None
        if fields is None:
            notes.append(f"tool rule {kind!r} on {name!r} is not supported; left out")
            continue
        if kind == "run_first" and raw.get("args"):
            notes.append(f"the prefilled args of run_first on {name!r} are not supported; ignored")
        try:
            rules += _RULE_LIST.validate_python([{"type": kind, **_pick(raw, fields)}])
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in problem["loc"][2:]) or "rule"
            notes.append(f"tool rule {kind!r} on {name!r}: {where}: {problem['msg']}; left out")
    return rules, notes


def _pick(raw: dict[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    return {key: raw[key] for key in fields if key in raw}
