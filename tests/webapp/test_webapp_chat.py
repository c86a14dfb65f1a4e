"""Chatting in the web app against the fake model: a reply streams in, in
parts; thoughts and tool calls show and expand; a waiting call is approved
or denied with a reason; an unanswered message is retried or dropped; the
message box works from the keyboard alone; older messages are shown a
page at a time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect
from support.webapp import Served, make_agent, open_agent

from memgpt_lite.models import Message
from memgpt_lite.storage.open import open_storage
from memgpt_lite.testing import FakeOpenAIServer, call, error, reply, say

# Records every text the newest reply showed, as the page changed it.
WATCH_REPLIES = """() => {
  window.replyTexts = [];
  new MutationObserver(() => {
    const replies = document.querySelectorAll("#log .msg.reply .text");
    if (replies.length) window.replyTexts.push(replies[replies.length - 1].textContent);
  }).observe(document.getElementById("log"), {childList: true, subtree: true, characterData: true});
}"""


@pytest.fixture
def slow_stream(model: FakeOpenAIServer) -> Iterator[None]:
    """The model's streamed text in pieces a little apart, so a reply
    arrives in parts however fast the machine is."""
    model.stream_piece_seconds = 0.02
    yield
    model.stream_piece_seconds = 0.0


def test_a_reply_streams_in_with_its_thought_and_tool_call(
    page: Page, served: Served, model: FakeOpenAIServer, slow_stream: None
) -> None:
    make_agent(served, "streamer")
    final = "Tea it is: I will remember that you like it."
    model.enqueue(
        reply(
            content="The user likes tea; noting it.",
            tool_calls=[
                call(
                    "core_memory_append",
                    label="human",
                    content="Likes tea.",
                    request_heartbeat=True,
                )
            ],
        ),
        reply(tool_calls=[call("send_message", message=final)]),
    )
    open_agent(page, served, "streamer")
    page.evaluate(WATCH_REPLIES)
    page.get_by_label("Message").fill("I like tea")
    page.get_by_role("button", name="Send").click()
    log = page.locator("#log")
    expect(log.locator(".msg.reply").last).to_have_text(f"Agent{final}")
    texts = page.evaluate("window.replyTexts")
    partial = [t for t in texts if t and t != final]
    assert partial and all(final.startswith(t) for t in partial), texts
    expect(log.locator(".msg.thought")).to_have_text("ThoughtThe user likes tea; noting it.")
    tool_call = log.locator(".msg.call")
    tool_call.get_by_text("Tool call").click()
    expect(tool_call.locator(".arguments")).to_contain_text('"content": "Likes tea."')
    expect(tool_call.locator(".result")).not_to_have_text("(not run yet)")
    block = served.api.get("/api/agents/streamer/blocks/human").json()
    assert "Likes tea." in block["value"]


def test_a_waiting_call_is_approved_then_another_denied_with_a_reason(
    page: Page, served: Served, model: FakeOpenAIServer
) -> None:
    rule = {"type": "requires_approval", "tool_name": "archival_memory_insert"}
    make_agent(served, "careful", settings={"tool_rules": [rule]})
    model.enqueue(
        reply(
            tool_calls=[
                call("archival_memory_insert", content="Bea keeps bees.", request_heartbeat=True)
            ]
        ),
        say("Saved it."),
    )
    open_agent(page, served, "careful")
    page.get_by_label("Message").fill("Remember that Bea keeps bees")
    page.get_by_role("button", name="Send").click()
    waiting = page.locator(".msg.approval")
    expect(waiting).to_contain_text("archival_memory_insert")
    waiting.get_by_label("Reason").fill("fine by me")
    waiting.get_by_role("button", name="Approve").click()
    expect(page.locator(".msg.reply").last).to_have_text("AgentSaved it.")
    expect(waiting).to_have_count(0)
    stored = served.api.get("/api/agents/careful/passages").json()["passages"]
    assert [p["text"] for p in stored] == ["Bea keeps bees."]
    page.get_by_role("tab", name="Archival").click()  # shown after the step, unasked
    expect(page.locator(".passages > li")).to_contain_text(["Bea keeps bees."])

    model.enqueue(
        reply(
            tool_calls=[
                call("archival_memory_insert", content="Bea is 30.", request_heartbeat=True)
            ]
        ),
        say("I will not save it."),
    )
    page.get_by_label("Message").fill("Remember that Bea is 30")
    page.get_by_role("button", name="Send").click()
    expect(waiting).to_contain_text("Bea is 30")
    page.reload()  # a waiting call is shown after a reload too
    expect(waiting).to_contain_text("Bea is 30")
    waiting.get_by_label("Reason").fill("her age is private")
    waiting.get_by_role("button", name="Deny").click()
    expect(page.locator(".msg.reply").last).to_have_text("AgentI will not save it.")
    assert served.api.get("/api/agents/careful/passages").json()["total"] == 1
    told = [m for m in model.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert "her age is private" in told[-1]["content"]
    assert served.api.get("/api/agents/careful/approvals").json() == []
    calls = page.locator(".msg.call")
    expect(calls).to_have_count(2)  # each call once: waiting, then run or refused
    expect(calls.last.locator(".result")).to_contain_text("her age is private")


def test_each_of_several_waiting_calls_is_answered_on_its_own(
    page: Page, served: Served, model: FakeOpenAIServer
) -> None:
    rule = {"type": "requires_approval", "tool_name": "archival_memory_insert"}
    make_agent(served, "picky", settings={"tool_rules": [rule]})
    insert = "archival_memory_insert"
    model.enqueue(
        reply(
            tool_calls=[call(insert, content="Bea keeps bees."), call(insert, content="Bea is 30.")]
        ),
        say("Saved the first."),
    )
    open_agent(page, served, "picky")
    page.get_by_label("Message").fill("Remember both")
    page.get_by_role("button", name="Send").click()
    waiting = page.locator(".msg.approval")
    expect(waiting).to_contain_text("Waiting for your approval (2 calls)")
    waiting.get_by_label("Reason").fill("her age is private")
    waiting.get_by_role("button", name=f"Deny call 2 ({insert})").click()
    expect(waiting).to_have_count(1)  # one call is still unanswered
    waiting.get_by_role("button", name=f"Approve call 1 ({insert})").click()
    expect(page.locator(".msg.reply").last).to_have_text("AgentSaved the first.")
    stored = served.api.get("/api/agents/picky/passages").json()["passages"]
    assert [p["text"] for p in stored] == ["Bea keeps bees."]
    told = [m["content"] for m in model.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert "her age is private" in told[-1] and "her age is private" not in told[-2]


def test_an_unanswered_message_is_retried_or_popped(
    page: Page, served: Served, model: FakeOpenAIServer
) -> None:
    make_agent(served, "flaky")
    model.enqueue(error(400, "the model is down"))
    open_agent(page, served, "flaky")
    page.get_by_label("Message").fill("are you there?")
    page.get_by_role("button", name="Send").click()
    unanswered = page.locator(".msg.user.unanswered")
    expect(unanswered).to_contain_text("Not answered.")
    expect(page.locator(".msg.error").first).to_contain_text("the model is down")
    model.enqueue(say("Yes, here."))
    unanswered.get_by_role("button", name="Retry").click()
    expect(page.locator(".msg.reply").last).to_have_text("AgentYes, here.")
    expect(unanswered).to_have_count(0)
    users = [m for m in messages(served, "flaky") if m["role"] == "user"]
    assert [m["content"] for m in users] == ["are you there?"]

    model.enqueue(error(400, "the model is down again"))
    page.get_by_label("Message").fill("and now?")
    page.get_by_role("button", name="Send").click()
    unanswered.get_by_role("button", name="Pop").click()
    expect(unanswered).to_have_count(0)
    expect(page.locator(".msg.user")).to_have_count(1)
    users = [m for m in messages(served, "flaky") if m["role"] == "user"]
    assert [m["content"] for m in users] == ["are you there?"]


def test_a_message_is_sent_from_the_keyboard_alone(
    page: Page, served: Served, model: FakeOpenAIServer
) -> None:
    make_agent(served, "keys-only")
    model.enqueue(say("Got it."))
    open_agent(page, served, "keys-only")
    page.keyboard.press("Tab")  # the first stop: the link to the message box
    expect(page.get_by_role("link", name="Skip to the message box")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_label("Message")).to_be_focused()
    page.keyboard.type("typed, not clicked")
    page.keyboard.press("Enter")
    expect(page.locator(".msg.reply").last).to_have_text("AgentGot it.")
    assert model.chat_requests[-1]["messages"][-1]["content"] == "typed, not clicked"


def messages(served: Served, agent: str) -> list[dict]:
    return served.api.get(f"/api/agents/{agent}/messages").json()["messages"]


def test_older_messages_are_shown_a_page_at_a_time(
    page: Page, served: Served, model: FakeOpenAIServer
) -> None:
    agent = make_agent(served, "chatty")
    with open_storage(str(served.db)) as store:  # 130 turns, stored as earlier sessions left them
        store.add_messages(
            [
                Message(agent_id=agent["id"], role=role, content=f"{role} turn {n}")
                for n in range(65)
                for role in ("user", "assistant")
            ]
        )
    open_agent(page, served, "chatty")
    users = page.locator(".msg.user")
    expect(users).to_have_count(50)  # the newest 100 messages
    expect(users.first).to_have_text("Youuser turn 15")
    model.enqueue(say("Noted."))  # a step since the load: the older ones are still found
    page.get_by_label("Message").fill("One more")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".msg.reply").last).to_have_text("AgentNoted.")
    page.get_by_role("button", name="Show older messages").click()
    expect(users).to_have_count(66)
    expect(users.first).to_have_text("Youuser turn 0")
    expect(page.get_by_role("button", name="Show older messages")).to_have_count(0)
