"""Letta's tool routes (tools.create, upsert, retrieve, list, modify,
delete; agents.tools.list, attach, detach; tools and tool_ids at
agents.create), driven by letta-client against a real server, with the fake
OpenAI server as the model. Tools from source run as they do everywhere: in
a process of their own."""

from __future__ import annotations

import inspect
from typing import Any

import httpx
import pytest
from letta_client import (
    BadRequestError,
    ConflictError,
    Letta,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
)
from support.serving import new_key

from memgpt_lite.testing.script import call, reply
from memgpt_lite.testing.server import FakeOpenAIServer

ASK = "send_message_to_agent_and_wait_for_reply"


def secret_message():
    """Return a secret message."""
    return "Hello world!"


# Letta's own example tool (examples/docs/example.py): no hints, no arguments.
SECRET = inspect.getsource(secret_message)
FORECAST = '''
def forecast(city: str, days: int = 1) -> str:
    """The weather to come.

    Args:
        city: Where.
        days: How many days ahead.
    """
    return f"{city}: sun for {days} days"
'''
# What a Letta client sends with it: its own descriptions, and MemGPT's heartbeat.
FORECAST_SCHEMA = {
    "name": "forecast",
    "description": "Letta's words",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "the city"},
            "days": {"type": "integer"},
            "request_heartbeat": {"type": "boolean"},
        },
        "required": ["city", "request_heartbeat"],
    },
}


def client_of(db: str, server: str, user: str = "alice", *, admin: bool = False) -> Letta:
    return Letta(base_url=server, api_key=new_key(db, user, admin=admin), max_retries=0)


@pytest.fixture
def admin(db: str, server: str) -> Letta:
    """A client with an admin key: it may create tools from source."""
    return client_of(db, server, admin=True)


def send(client: Letta, agent_id: str, text: str) -> Any:
    return client.agents.messages.create(agent_id, messages=[{"role": "user", "content": text}])


def test_letta_s_example_a_tool_upserted_attached_and_called(
    admin: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = admin.agents.create(
        memory_blocks=[{"label": "human", "value": "Name: Caren"}], model="openai/gpt-4o-mini"
    )
    tool = admin.tools.upsert(source_code=SECRET)
    assert (tool.name, tool.tool_type, tool.source_type) == ("secret_message", "custom", "python")
    attached = admin.agents.tools.attach(tool.id, agent_id=agent.id)
    assert attached is not None and "secret_message" in [t.name for t in attached.tools]
    fake_llm.enqueue(
        reply("Run it.", tool_calls=[call("secret_message", request_heartbeat=True)]),
        reply("", tool_calls=[call("send_message", message="It says Hello world!")]),
    )
    response = admin.agents.messages.create(
        agent.id,
        messages=[{"role": "user", "content": "Run secret message tool"}],
        use_assistant_message=False,
    )
    returned = [m for m in response.messages if m.message_type == "tool_return_message"]
    assert (returned[0].tool_return, returned[0].status) == ("Hello world!", "success")
    offered = [t["function"]["name"] for t in fake_llm.chat_requests[0]["tools"]]
    assert "secret_message" in offered


def test_an_agent_that_has_stepped_gets_a_tool_attached_or_changed_after(
    admin: Letta, fake_llm: FakeOpenAIServer
) -> None:
    """The server keeps an agent's `Agent` between steps: a tool attached,
    then changed, after a step is what the next step offers and runs."""
    agent = admin.agents.create(model="openai/gpt-4o-mini")
    fake_llm.enqueue(reply("", tool_calls=[call("send_message", message="Hi.")]))
    send(admin, agent.id, "hello")
    tool = admin.tools.upsert(source_code=SECRET)
    admin.agents.tools.attach(tool.id, agent_id=agent.id)

    def secret_returned() -> str:
        fake_llm.enqueue(
            reply("", tool_calls=[call("secret_message", request_heartbeat=True)]),
            reply("", tool_calls=[call("send_message", message="Done.")]),
        )
        response = send(admin, agent.id, "run it")
        return [m for m in response.messages if m.message_type == "tool_return_message"][
            0
        ].tool_return

    assert secret_returned() == "Hello world!"
    admin.tools.update(tool.id, source_code=SECRET.replace("Hello world!", "Bye world!"))
    assert secret_returned() == "Bye world!"


def test_a_tool_in_letta_s_shape_with_its_schema_read_from_the_source(admin: Letta) -> None:
    tool = admin.tools.create(
        source_code=FORECAST,
        tags=["weather"],
        pip_requirements=[{"name": "packaging"}, {"name": "pytest", "version": ">=7"}],
    )
    assert tool.id.startswith("tool-") and tool.name == "forecast"
    assert tool.description == "The weather to come."
    assert tool.json_schema == {
        "name": "forecast",
        "description": "The weather to come.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "Where."},
                "days": {"type": "integer", "description": "How many days ahead.", "default": 1},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    }
    assert (tool.tool_type, tool.source_type, tool.source_code) == ("custom", "python", FORECAST)
    assert tool.tags == ["weather"] and tool.return_char_limit == 100_000
    assert [(r.name, r.version) for r in tool.pip_requirements or []] == [
        ("packaging", None),
        ("pytest", ">=7"),
    ]
    assert tool.metadata == {"trusted": True}
    assert admin.tools.retrieve(tool.id) == tool
    with pytest.raises(ConflictError, match="tools.upsert"):
        admin.tools.create(source_code=FORECAST)
    with pytest.raises(UnprocessableEntityError, match="not installed"):
        admin.tools.create(source_code=SECRET, pip_requirements=[{"name": "no-such-project-x"}])
    with pytest.raises(UnprocessableEntityError, match="line 1"):
        admin.tools.create(source_code="def broken(:\n")
    with pytest.raises(UnprocessableEntityError, match="Python tools only"):
        admin.tools.create(source_code=SECRET, source_type="typescript")
    with pytest.raises(UnprocessableEntityError, match="update_approval"):
        admin.tools.create(source_code=SECRET, default_requires_approval=True)
    assert [t.name for t in admin.tools.list(tool_types=["custom"])] == ["forecast"]


def test_a_json_schema_given_must_agree_with_the_source(admin: Letta) -> None:
    tool = admin.tools.create(source_code=FORECAST, json_schema=FORECAST_SCHEMA)
    assert (
        tool.json_schema is not None and tool.json_schema["description"] == "The weather to come."
    )
    properties = tool.json_schema["parameters"]["properties"]  # type: ignore[index]
    assert properties["city"]["description"] == "Where."  # the source's, not the given one's
    wrong = {**FORECAST_SCHEMA, "name": "weather", "parameters": {"properties": {"town": {}}}}
    with pytest.raises(UnprocessableEntityError) as refused:
        admin.tools.upsert(source_code=FORECAST, json_schema=wrong)
    assert refused.value.body == {
        "detail": "json_schema: its parameters (town) are not those of the function weather "
        "in the source (city, days); leave json_schema out: the schema is read from the source"
    }
    renamed = admin.tools.upsert(
        source_code=FORECAST, json_schema={**FORECAST_SCHEMA, "name": "weather"}
    )
    assert renamed.name == "weather" and renamed.id != tool.id  # the name chose the tool
    optional_city = {"parameters": {"properties": {"city": {}, "days": {}}, "required": []}}
    with pytest.raises(UnprocessableEntityError, match=r"required parameters \(none\)"):
        admin.tools.update(tool.id, json_schema=optional_city)


def test_upsert_replaces_keeping_the_id_and_modify_keeps_the_name(admin: Letta) -> None:
    tool = admin.tools.create(source_code=FORECAST, tags=["weather"])
    agent = admin.agents.create(model="gpt-4o-mini", tool_ids=[tool.id])
    newer = FORECAST.replace("days: int = 1", "days: int = 2").replace("The weather", "Weather")
    replaced = admin.tools.upsert(source_code=newer)
    assert replaced.id == tool.id and replaced.description == "Weather to come."
    assert replaced.tags == []  # an upsert is the tool anew
    changed = admin.tools.update(tool.id, description="Sun or rain.", tags=["sky"])
    assert (changed.description, changed.tags, changed.source_code) == (
        "Sun or rain.",
        ["sky"],
        newer,
    )
    assert changed.json_schema is not None and changed.json_schema["description"] == "Sun or rain."
    rewritten = admin.tools.update(tool.id, source_code=SECRET)  # one function: it keeps the name
    assert (rewritten.name, rewritten.description) == ("forecast", "Return a secret message.")
    assert rewritten.json_schema is not None
    assert rewritten.json_schema["parameters"]["properties"] == {}  # type: ignore[index]
    assert "forecast" in [t.name for t in admin.agents.tools.list(agent.id)]
    pinned = admin.tools.update(tool.id, pip_requirements=[{"name": "packaging", "version": "1"}])
    assert [(r.name, r.version) for r in pinned.pip_requirements or []] == [("packaging", "1")]
    with pytest.raises(NotFoundError, match="tool-nope"):
        admin.tools.update("tool-nope", description="x")


def test_the_built_in_tools_are_listed_and_read_only(admin: Letta) -> None:
    listed = {t.name: t for t in admin.tools.list(order="asc")}
    assert listed["send_message"].tool_type == "letta_core"
    assert listed["core_memory_append"].tool_type == "letta_memory_core"
    assert listed["memory_insert"].tool_type == "letta_memory_core"  # the letta-v1 set's
    assert listed[ASK].tool_type == "letta_multi_agent_core"
    assert admin.tools.retrieve("tool-send_message").name == "send_message"
    with pytest.raises(PermissionDeniedError) as refused:
        admin.tools.update("tool-send_message", description="mine now")
    assert refused.value.body == {
        "detail": "send_message is a built-in tool: it is read-only and cannot be modified"
    }
    with pytest.raises(PermissionDeniedError, match="cannot be deleted"):
        admin.tools.delete("tool-send_message")
    letta_only = admin.tools.list(return_only_letta_tools=True, limit=100).items
    assert len(letta_only) == len(listed)  # nothing registered yet
    assert [t.name for t in admin.tools.list(name="send_message")] == ["send_message"]


def test_list_filters_and_pages(admin: Letta, server: str, db: str) -> None:
    first = admin.tools.create(source_code=FORECAST)
    second = admin.tools.create(source_code=SECRET)
    newest = admin.tools.list(limit=2).items
    assert [t.id for t in newest] == [second.id, first.id]  # newest first
    assert [t.name for t in admin.tools.list(names=["forecast", "secret_message"])] == [
        "secret_message",
        "forecast",
    ]
    assert [t.name for t in admin.tools.list(search="CAST")] == ["forecast"]
    assert [t.name for t in admin.tools.list(tool_ids=[first.id])] == ["forecast"]
    custom = admin.tools.list(exclude_tool_types=["letta_core", "letta_memory_core"], order="asc")
    assert [t.name for t in custom][-2:] == ["forecast", "secret_message"]
    everything = list(admin.tools.list(limit=3))  # letta-client follows `after`
    assert (
        len(everything) == len({t.id for t in everything}) == len(admin.tools.list(limit=100).items)
    )
    headers = {"Authorization": f"Bearer {new_key(db, 'alice')}"}
    counted = httpx.get(
        f"{server}/v1/tools/count", params={"tool_types": "custom"}, headers=headers
    )
    assert counted.json() == 2
    for params, expected in [({"exclude_letta_tools": "true"}, 2), ({"name": "forecast"}, 1)]:
        counted = httpx.get(f"{server}/v1/tools/count", params=params, headers=headers)
        assert counted.json() == expected, params


def test_an_agent_s_tools_attach_and_detach(admin: Letta) -> None:
    tool = admin.tools.create(source_code=FORECAST)
    agent = admin.agents.create(model="gpt-4o-mini")
    names = [t.name for t in admin.agents.tools.list(agent.id, order="asc")]
    assert names[0] == "send_message" and "forecast" not in names
    admin.agents.tools.attach(tool.id, agent_id=agent.id)
    admin.agents.tools.attach(f"tool-{ASK}", agent_id=agent.id)
    admin.agents.tools.attach("tool-send_message", agent_id=agent.id)  # its set's: had already
    listed = admin.agents.tools.list(agent.id, order="asc", limit=50).items
    assert [t.name for t in listed][-2:] == [ASK, "forecast"]
    assert admin.agents.retrieve(agent.id).tools == listed
    with pytest.raises(UnprocessableEntityError, match="letta-v1 tool set; agent .* memgpt set"):
        admin.agents.tools.attach("tool-memory_insert", agent_id=agent.id)
    with pytest.raises(UnprocessableEntityError, match="cannot be detached"):
        admin.agents.tools.detach("tool-send_message", agent_id=agent.id)
    with pytest.raises(ConflictError) as in_use:
        admin.tools.delete(tool.id)
    assert f"attached to '{agent.name}'" in str(in_use.value.body)
    detached = admin.agents.tools.detach(tool.id, agent_id=agent.id)
    assert detached is not None and "forecast" not in [t.name for t in detached.tools]
    with pytest.raises(UnprocessableEntityError, match="has no tool 'forecast'"):
        admin.agents.tools.detach(tool.id, agent_id=agent.id)
    admin.tools.delete(tool.id)
    with pytest.raises(NotFoundError):
        admin.tools.retrieve(tool.id)


def test_create_takes_tools_by_name_and_id_and_refuses_unknown_ones(
    admin: Letta, fake_llm: FakeOpenAIServer
) -> None:
    forecast = admin.tools.create(source_code=FORECAST)
    secret = admin.tools.create(source_code=SECRET)
    agent = admin.agents.create(
        model="gpt-4o-mini",
        tools=["forecast", "send_message", ASK],  # send_message: its set's, had anyway
        tool_ids=[secret.id],
    )
    assert [t.name for t in agent.tools][-3:] == [ASK, "forecast", "secret_message"]
    with pytest.raises(UnprocessableEntityError) as refused:
        admin.agents.create(
            model="gpt-4o-mini", tools=["web_search", "forecast"], tool_ids=["tool-nope"]
        )
    detail = refused.value.body["detail"]  # type: ignore[index]
    assert detail.startswith("no such tool (tools: 'web_search', tool_ids: 'tool-nope'): ")
    assert [a.id for a in admin.agents.list()] == [agent.id]  # nothing was made
    fake_llm.enqueue(reply("", tool_calls=[call("send_message", message="ok")]))
    send(admin, agent.id, "hi")
    offered = {t["function"]["name"] for t in fake_llm.chat_requests[-1]["tools"]}
    assert {"forecast", "secret_message", ASK} <= offered
    assert forecast.id != secret.id


def test_create_naming_only_letta_s_own_tools_we_lack_is_letta_s_400(
    admin: Letta, fake_llm: FakeOpenAIServer
) -> None:
    """As a Letta server without its web tools answers: Letta Code, which asks
    for them, then creates the agent without them."""
    with pytest.raises(BadRequestError) as refused:
        admin.agents.create(model="gpt-4o-mini", tools=["web_search", "fetch_webpage"])
    detail = refused.value.body["detail"]  # type: ignore[index]
    assert detail.startswith("Tools not found by name: {'fetch_webpage', 'web_search'}: ")
    assert admin.agents.list().items == []  # nothing was made
    made = admin.agents.create(model="gpt-4o-mini", tools=[])
    assert [a.id for a in admin.agents.list()] == [made.id]


def test_another_user_s_tools_are_not_found(admin: Letta, db: str, server: str) -> None:
    tool = admin.tools.create(source_code=FORECAST)
    bob = client_of(db, server, "bob", admin=True)
    with pytest.raises(NotFoundError):
        bob.tools.retrieve(tool.id)
    with pytest.raises(NotFoundError):
        bob.tools.delete(tool.id)
    assert "forecast" not in [t.name for t in bob.tools.list(limit=100)]
    agent = bob.agents.create(model="gpt-4o-mini")
    with pytest.raises(NotFoundError):
        bob.agents.tools.attach(tool.id, agent_id=agent.id)
    with pytest.raises(UnprocessableEntityError, match="tool_ids: "):
        bob.agents.create(model="gpt-4o-mini", tool_ids=[tool.id])
