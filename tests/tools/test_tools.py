"""Tool schemas generated from Python functions."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import Field

from memgpt_lite import ConfigError, ToolContext, tool
from memgpt_lite.tools.builtin import BUILTIN_TOOLS
from memgpt_lite.tools.schema import parse_docstring


def test_schema_from_signature_hints_and_docstring():
    @tool
    def find_flights(
        ctx: ToolContext,
        origin: str,
        destination: Annotated[str, Field(description="IATA code of the arrival airport")],
        cabin: Literal["economy", "business"] = "economy",
        max_stops: int = 1,
    ) -> str:
        """Find flights between two airports.

        Args:
            origin: IATA code of the departure
                airport, such as LHR.
            destination: ignored, the Field wins.
            max_stops (int): At most this many stops.

        Returns:
            A list of flights.
        """
        return ""

    function = find_flights.schema()["function"]
    assert function["name"] == "find_flights"
    assert function["description"] == "Find flights between two airports."
    params = function["parameters"]
    assert "ctx" not in params["properties"]
    assert params["properties"]["origin"] == {
        "type": "string",
        "description": "IATA code of the departure airport, such as LHR.",
    }
    assert params["properties"]["destination"]["description"] == "IATA code of the arrival airport"
    assert params["properties"]["cabin"]["enum"] == ["economy", "business"]
    assert params["properties"]["max_stops"]["description"] == "At most this many stops."
    assert params["required"] == ["origin", "destination", "request_heartbeat"]
    assert params["properties"]["request_heartbeat"]["type"] == "boolean"
    assert params["additionalProperties"] is False
    assert "title" not in params and "title" not in params["properties"]["origin"]
    assert find_flights.context_param == "ctx"


def test_builtin_tools_have_memgpt_names_and_parameters():
    def params(name):
        return set(BUILTIN_TOOLS[name].schema()["function"]["parameters"]["properties"])

    assert params("send_message") == {"message"}
    assert params("core_memory_append") == {"label", "content", "request_heartbeat"}
    assert params("core_memory_replace") == {
        "label",
        "old_content",
        "new_content",
        "request_heartbeat",
    }
    assert params("conversation_search") == {"query", "page", "request_heartbeat"}
    assert params("conversation_search_date") == {
        "start_date",
        "end_date",
        "page",
        "request_heartbeat",
    }
    assert params("archival_memory_insert") == {"content", "tags", "replaces", "request_heartbeat"}
    assert params("archival_memory_search") == {
        "query",
        "page",
        "tags",
        "start_date",
        "end_date",
        "request_heartbeat",
    }
    for built_in in BUILTIN_TOOLS.values():
        assert built_in.description, built_in.name


def test_tool_name_and_options():
    @tool(name="lookup-v2", heartbeat=False, description="Look it up.")
    def lookup(term: str) -> str:
        return term

    schema = lookup.schema()["function"]
    assert schema["name"] == "lookup-v2" and schema["description"] == "Look it up."
    assert "request_heartbeat" not in schema["parameters"]["properties"]
    assert lookup("x") == "x"  # still callable as a function


@pytest.mark.parametrize("bad_name", ["has space", "dot.ted", "", "x" * 65])
def test_bad_tool_names_are_refused(bad_name):
    with pytest.raises(ConfigError, match="tool name"):
        tool(name=bad_name)(lambda: None)


def test_varargs_are_refused():
    def spread(*items: str) -> str:
        return ""

    with pytest.raises(ConfigError, match=r"\*args"):
        tool(spread)


def test_parse_docstring_sections():
    summary, args = parse_docstring(
        "Do a thing.\n\nMore words.\n\nArgs:\n    a: first\n    b (int): second\n\n"
        "Raises:\n    ValueError: never"
    )
    assert summary == "Do a thing.\n\nMore words."
    assert args == {"a": "first", "b": "second"}
