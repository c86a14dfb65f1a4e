"""Letta's routes driven by letta-client 0.1.x (0.1.324), run in a subprocess
with that client on its path (support/old_letta.py), against a real server:
the basic flows, then what 1.x's tests cover of modify, reset, the context
and core memory views (which only 0.1.x calls), blocks by id, include and
create_async."""

from __future__ import annotations

from support.old_letta import RunScript, old_letta  # noqa: F401 - the session fixture
from support.serving import new_key

from memgpt_lite.testing.script import call, reply, say
from memgpt_lite.testing.server import FakeOpenAIServer

BASIC = """
from letta_client import CreateBlock, MessageCreate
from letta_client.core.api_error import ApiError
agent = client.agents.create(
    name="sam",
    model="openai/gpt-4o-mini",
    memory_blocks=[CreateBlock(label="human", value="Alice keeps bees.", limit=100)],
)
results["created"] = [agent.name, agent.llm_config.model, agent.embedding_config.embedding_model]
results["listed"] = [a.id for a in client.agents.list()] == [agent.id]
results["retrieved"] = client.agents.retrieve(agent.id).name
sent = client.agents.messages.create(
    agent.id, messages=[MessageCreate(role="user", content="hello")]
)
results["sent"] = [m.message_type for m in sent.messages]
results["said"] = [m.content for m in sent.messages if m.message_type == "assistant_message"]
results["history"] = [m.message_type for m in client.agents.messages.list(agent.id)]
block = client.agents.blocks.modify(agent.id, "human", value="Alice keeps wasps.")
results["block"] = client.agents.blocks.retrieve(agent.id, "human").value
client.agents.passages.create(agent.id, text="Alice likes honey.")
results["passages"] = [p.text for p in client.agents.passages.list(agent.id)]
renamed = client.agents.modify(agent.id, name="bee-keeper")
results["renamed"] = renamed.name
try:
    client.agents.retrieve("agent-00000000-0000-4000-8000-000000000000")
except ApiError as exc:
    results["missing"] = exc.status_code

# a round-robin group (1.x has no groups resource)
from letta_client import RoundRobinManager
ann = client.agents.create(name="ann", model="openai/gpt-4o-mini")
group = client.groups.create(
    agent_ids=[agent.id, ann.id], description="pals", manager_config=RoundRobinManager()
)
talk = client.groups.messages.create(group.id, messages=[MessageCreate(role="user", content="hi")])
results["group"] = [group.manager_type, talk.usage.step_count]
replies = [m for m in talk.messages if m.message_type == "assistant_message"]
results["talk"] = [[m.name, m.content] for m in replies]
results["group_messages"] = len(client.groups.messages.list(group.id, limit=50))
client.groups.messages.reset(group.id)
results["group_reset"] = len(client.groups.messages.list(group.id))
"""


def test_basic_flows_with_letta_client_01(
    old_letta: RunScript,  # noqa: F811 - the fixture imported above
    db: str,
    server: str,
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.enqueue(
        reply("Greet her.", tool_calls=[call("send_message", message="Hi Alice")]),
        say("Hi from Sam."),
        say("Hi from Ann."),
    )
    found = old_letta(BASIC, base_url=server, key=new_key(db, "alice"))
    assert found["created"] == ["sam", "gpt-4o-mini", "none"]
    assert found["listed"] is True and found["retrieved"] == "sam"
    assert found["sent"] == ["reasoning_message", "assistant_message", "tool_return_message"]
    assert found["said"] == ["Hi Alice"]
    assert found["history"][-1] == "user_message" and len(found["history"]) == 4
    assert found["block"] == "Alice keeps wasps."
    assert found["passages"] == ["Alice likes honey."]
    assert found["renamed"] == "bee-keeper"
    assert found["group"] == ["round_robin", 2]
    assert found["talk"] == [["bee-keeper", "Hi from Sam."], ["ann", "Hi from Ann."]]
    # The user's message once, and each agent's reply and its result.
    assert (found["group_messages"], found["group_reset"]) == (5, 0)
    assert found["missing"] == 404


ROUTES = """
import time
from letta_client import CreateBlock, EmbeddingConfig, MessageCreate
from letta_client.core.api_error import ApiError
agent = client.agents.create(
    model="openai/gpt-4o-mini",
    memory_blocks=[CreateBlock(label="human", value="Alice keeps bees.", limit=100)],
    tool_rules=[{"type": "requires_approval", "tool_name": "archival_memory_insert"}],
)
other = client.agents.create(model="openai/gpt-4o-mini")

# llm_config and embedding_config, changed through modify
config = agent.llm_config.model_copy(update={"context_window": 16000, "temperature": 0.5})
changed = client.agents.modify(agent.id, llm_config=config)
results["llm"] = [changed.llm_config.context_window, changed.llm_config.temperature]
try:
    client.agents.modify(agent.id, llm_config=config.model_copy(update={"max_tokens": 300}))
except ApiError as exc:
    results["refused"] = [exc.status_code, str(exc.body)]
local = client.agents.modify(
    other.id,
    embedding_config=EmbeddingConfig(
        embedding_endpoint_type="hugging-face",
        embedding_model="all-MiniLM-L6-v2",
        embedding_dim=384,
    ),
)
results["embedding"] = [local.embedding, local.embedding_config.embedding_dim]

# blocks by id
human = client.agents.blocks.retrieve(agent.id, "human")
shared = client.agents.blocks.attach(other.id, human.id)
results["attached"] = [b.label for b in shared.memory.blocks]
left = client.agents.blocks.detach(other.id, human.id)
results["detached"] = [b.label for b in left.memory.blocks]

# views
context = client.agents.context.retrieve(agent.id)
results["context"] = [context.num_messages, "Alice keeps bees." in context.core_memory]
memory = client.agents.core_memory.retrieve(agent.id)
results["core_memory"] = [b.value for b in memory.blocks]

# a call waiting for approval, shown with include
asked = client.agents.messages.create(agent.id, messages=[MessageCreate(role="user", content="42")])
results["asked"] = asked.stop_reason.stop_reason
include = {"additional_query_parameters": {"include": ["agent.pending_approval"]}}
waiting = client.agents.retrieve(agent.id, request_options=include)
pending = waiting.pending_approval
results["pending"] = [pending["message_type"], pending["id"] == asked.messages[-1].id]

# reset
reset = client.agents.messages.reset(agent.id)
results["reset"] = [reset.id == agent.id, len(client.agents.messages.list(agent.id))]
results["after_reset"] = client.agents.retrieve(agent.id, request_options=include).pending_approval

# create_async, polled
run = client.agents.messages.create_async(
    agent.id, messages=[MessageCreate(role="user", content="hi again")]
)
deadline = time.monotonic() + 60
while (run := client.runs.retrieve(run.id)).status in ("created", "running"):
    assert time.monotonic() < deadline, run.status
    time.sleep(0.05)
results["run"] = [run.status, run.stop_reason]
results["run_messages"] = [m.message_type for m in client.runs.messages.list(run.id)]

# the run as a job
job = client.jobs.retrieve(run.id)
results["job"] = [job.job_type, job.status, run.id in [j.id for j in client.jobs.list()]]
results["active_jobs"] = [j.id for j in client.jobs.list_active()]
results["cancelled_job"] = client.jobs.cancel_job(run.id).status
client.jobs.delete(run.id)
try:
    client.jobs.retrieve(run.id)
except ApiError as exc:
    results["deleted_job"] = exc.status_code
"""


def test_lettaroutes_with_letta_client_01(
    old_letta: RunScript,  # noqa: F811 - the fixture imported above
    db: str,
    server: str,
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.enqueue(
        reply("store it", [call("archival_memory_insert", content="42", request_heartbeat=True)]),
        say("Hello again."),
    )
    found = old_letta(ROUTES, base_url=server, key=new_key(db, "alice"))
    assert found["llm"] == [16000, 0.5]
    assert found["refused"][0] == 422 and "llm_config.max_tokens" in found["refused"][1]
    assert found["embedding"] == ["local", 384]
    assert found["attached"] == ["human"] and found["detached"] == []
    assert found["context"] == [0, True]
    assert found["core_memory"] == ["Alice keeps bees."]
    assert found["asked"] == "requires_approval"
    assert found["pending"] == ["approval_request_message", True]
    assert found["reset"] == [True, 0] and found["after_reset"] is None
    assert found["run"] == ["completed", "end_turn"]
    assert found["run_messages"] == ["user_message", "assistant_message", "tool_return_message"]
    assert found["job"] == ["run", "completed", True]
    # A run that ended is left as it was by a cancel.
    assert (found["active_jobs"], found["cancelled_job"]) == ([], "completed")
    assert found["deleted_job"] == 404


OTHER_USER = """
from letta_client.core.api_error import ApiError
codes = {}
for name, call in [
    ("retrieve", lambda: client.agents.retrieve(env["AGENT"])),
    ("context", lambda: client.agents.context.retrieve(env["AGENT"])),
    ("core_memory", lambda: client.agents.core_memory.retrieve(env["AGENT"])),
    ("reset", lambda: client.agents.messages.reset(env["AGENT"])),
]:
    try:
        call()
        codes[name] = 200
    except ApiError as exc:
        codes[name] = exc.status_code
results["codes"] = codes
results["agents"] = len(client.agents.list())
"""


def test_another_users_agent_is_not_found_with_letta_client_01(
    old_letta: RunScript,  # noqa: F811 - the fixture imported above
    db: str,
    server: str,
) -> None:
    alice = old_letta(
        'results["id"] = client.agents.create(model="gpt-4o-mini").id',
        base_url=server,
        key=new_key(db, "alice"),
    )
    found = old_letta(OTHER_USER, base_url=server, key=new_key(db, "bob"), AGENT=alice["id"])
    assert found["codes"] == {"retrieve": 404, "context": 404, "core_memory": 404, "reset": 404}
    assert found["agents"] == 0
