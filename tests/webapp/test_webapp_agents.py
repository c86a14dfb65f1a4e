"""The agents in the web app: made in the New agent dialog (blocks, model,
tool set), exported, deleted and imported back; their tools and settings;
and conversation search."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect
from support.webapp import Served, make_agent, open_agent

from memgpt_lite.testing import FakeOpenAIServer, say


def test_an_agent_is_made_with_its_blocks_model_and_tool_set(page: Page, served: Served) -> None:
    make_agent(served, "first")
    open_agent(page, served, "first")
    page.get_by_role("button", name="New agent").click()
    dialog = page.get_by_role("dialog", name="New agent")
    dialog.get_by_label("Name", exact=True).fill("maker")
    expect(dialog.get_by_label("Model")).to_have_value("fake-model")  # offered by the server
    dialog.get_by_label("Tool set").select_option("letta-v1")
    dialog.get_by_role("button", name="Add block").click()
    dialog.get_by_label("Label").last.fill("project")
    dialog.get_by_label("Text").last.fill("A web app.")
    dialog.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="maker")).to_be_visible()
    expect(page.get_by_label("project", exact=True)).to_have_value("A web app.")
    made = served.api.get("/api/agents/maker").json()
    assert made["settings"]["tool_set"] == "letta-v1"
    assert [b["label"] for b in made["blocks"]] == ["persona", "human", "project"]


def test_an_agent_is_exported_deleted_and_imported_back(
    page: Page, served: Served, tmp_path: Path
) -> None:
    make_agent(served, "traveller", blocks=[{"label": "human", "value": "Likes trains."}])
    open_agent(page, served, "traveller")
    with page.expect_download() as downloading:
        page.get_by_role("button", name="Export").click()
    file = tmp_path / "traveller.af"
    downloading.value.save_as(file)
    page.get_by_role("button", name="Delete").click()  # confirmed by the fixture
    expect(page.get_by_role("link", name="traveller")).to_have_count(0)
    assert served.api.get("/api/agents/traveller").status_code == 404
    page.locator("#import-file").set_input_files(file)
    expect(page.get_by_role("heading", name="traveller")).to_be_visible()
    expect(page.get_by_label("human", exact=True)).to_have_value("Likes trains.")
    assert served.api.get("/api/agents/traveller").status_code == 200


def test_tools_settings_and_conversation_search(
    page: Page, served: Served, model: FakeOpenAIServer
) -> None:
    make_agent(served, "tinkerer")
    for text in ("We talked about bees.", "We talked about trains."):
        model.enqueue(say(f"Yes: {text}"))
        sent = served.api.post("/api/agents/tinkerer/messages", json={"message": text})
        assert sent.status_code == 200, sent.text
    open_agent(page, served, "tinkerer", "tools")
    tools = page.get_by_role("tabpanel", name="Tools")
    expect(tools.get_by_text("archival_memory_search", exact=True)).to_be_visible()
    tools.get_by_text("send_message", exact=True).click()  # expands to its parameters
    expect(tools.locator("details[open] pre")).to_contain_text('"message"')

    page.get_by_role("tab", name="Settings").click()
    settings = page.get_by_role("tabpanel", name="Settings")
    settings.get_by_label("Working window").fill("6000")
    settings.get_by_role("button", name="Save settings").click()
    expect(settings.get_by_text("Saved.")).to_be_visible()
    assert served.api.get("/api/agents/tinkerer").json()["settings"]["working_window"] == 6000

    page.get_by_role("tab", name="Conversation").click()
    search = page.get_by_role("tabpanel", name="Conversation")
    search.get_by_label("Search the conversation for").fill("bees")
    search.get_by_role("button", name="Search").click()
    found = search.locator(".found > li")
    expect(found.first).to_contain_text("bees")
    expect(search.get_by_text("trains")).to_have_count(0)
