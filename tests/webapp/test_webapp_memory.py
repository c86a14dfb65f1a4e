"""The web app's views of an agent's mind: core memory edited in place
(refused over its limit, or when the block changed meanwhile, keeping the
user's text) with its history as diffs; archival search by words, tags and
dates, with superseded passages marked; the context window's bar; and the
page itself: small, and whole at laptop and phone widths."""

from __future__ import annotations

from playwright.sync_api import Page, expect
from support.webapp import LAPTOP, PHONE, Recorded, Served, make_agent, open_agent

MAX_FIRST_LOAD_BYTES = 300_000


def block_value(served: Served, agent: str, label: str) -> str:
    return served.api.get(f"/api/agents/{agent}/blocks/{label}").json()["value"]


def save(page: Page, block) -> None:
    """Click the block's Save and wait for the server's answer to it (the
    page's alerts change at the click, before the answer)."""
    with page.expect_response(lambda r: r.request.method == "PUT" and "/blocks/" in r.url):
        block.get_by_role("button", name="Save").click()


def test_a_block_is_edited_in_place_and_read_back_over_the_api(
    page: Page, served: Served, recorded: Recorded
) -> None:
    recorded.refusals = 2  # the two saves the server refuses, which the browser logs
    blocks = [{"label": "human", "value": "Name: Ann", "limit": 40}]
    make_agent(served, "editor", blocks=blocks)
    open_agent(page, served, "editor")
    editor = page.get_by_label("human", exact=True)
    expect(editor).to_have_value("Name: Ann")
    block = page.locator(".block", has=editor)
    expect(block.locator(".size")).to_have_text("9 / 40")
    editor.fill("Name: Ann\nLikes: tea")
    save(page, block)
    expect(block.locator(".size")).to_have_text("20 / 40")
    expect(block.get_by_role("alert")).to_have_count(0)
    assert block_value(served, "editor", "human") == "Name: Ann\nLikes: tea"

    too_long = "x" * 41
    editor.fill(too_long)
    expect(block.locator(".size")).to_have_text("41 / 40")
    block.get_by_role("button", name="Save").click()
    expect(block.get_by_role("alert")).to_contain_text("over its limit of 40")
    expect(editor).to_have_value(too_long)  # the user's text is kept
    assert block_value(served, "editor", "human") == "Name: Ann\nLikes: tea"

    # The agent (here: another client) changes the block while it is edited.
    changed = served.api.put("/api/agents/editor/blocks/human", json={"value": "Name: Ann B."})
    assert changed.status_code == 200, changed.text
    editor.fill("Name: Ann\nLikes: coffee")
    block.get_by_role("button", name="Save").click()
    expect(block.get_by_role("alert")).to_contain_text("changed by someone else")
    expect(editor).to_have_value("Name: Ann\nLikes: coffee")
    assert block_value(served, "editor", "human") == "Name: Ann B."
    expect(block.get_by_role("alert")).to_contain_text("Save again to replace it")

    block.get_by_text("History", exact=True).click()
    versions = block.locator(".versions > li")
    expect(versions).to_have_count(3)  # created, saved here, changed elsewhere
    expect(versions.nth(1)).to_contain_text("Version 1")
    expect(versions.nth(1)).to_contain_text("by user:local")
    expect(versions.nth(1).locator("ins")).to_have_text("+Likes: tea\n")
    expect(versions.nth(0).locator("del")).to_have_text(["-Name: Ann\n", "-Likes: tea\n"])
    expect(versions.nth(0).locator("ins")).to_have_text("+Name: Ann B.\n")
    block.get_by_role("button", name="Revert").click()  # take the block's new text
    expect(editor).to_have_value("Name: Ann B.")
    editor.fill("Name: Ann B.\nLikes: coffee")
    save(page, block)
    expect(block.get_by_role("alert")).to_have_count(0)
    assert block_value(served, "editor", "human") == "Name: Ann B.\nLikes: coffee"
    expect(versions).to_have_count(4)  # the open history shows the save


def test_archival_search_with_tags_and_dates_marks_superseded_passages(
    page: Page, served: Served
) -> None:
    make_agent(served, "archivist")
    passages = "/api/agents/archivist/passages"

    def insert(text: str, tags: list[str], day: str, replaces: list[str] = ()) -> str:
        body = {"text": text, "tags": tags, "created_at": f"{day}T12:00:00Z"}
        made = served.api.post(passages, json={**body, "replaces": list(replaces)})
        assert made.status_code == 201, made.text
        return made.json()["passages"][0]["id"]

    leeds = insert("Ann lives in Leeds.", ["home"], "2024-03-01")
    insert("Ann moved to York.", ["home"], "2024-06-01", replaces=[leeds])
    insert("Ann's garden in York has bees.", ["garden"], "2024-06-02")
    insert("Ann visited Leeds for work.", ["work"], "2023-01-10")
    open_agent(page, served, "archivist", "archival")
    panel = page.get_by_role("tabpanel", name="Archival")
    panel.get_by_label("Search for").fill("Ann Leeds York")
    panel.get_by_label("Tags", exact=True).fill("home")
    panel.get_by_role("button", name="Search").click()
    found = panel.locator(".passages > li")
    expect(found).to_have_count(2)
    expect(found.nth(0)).to_contain_text("Ann moved to York.")
    expect(found.nth(1)).to_have_class("passage superseded")
    expect(found.nth(1).locator(".replaced")).to_contain_text("Ann moved to York.")

    panel.get_by_label("Tags", exact=True).fill("")
    panel.get_by_label("From").fill("2024-01-01")
    panel.get_by_label("To").fill("2024-12-31")
    panel.get_by_label("Search for").fill("Leeds")
    panel.get_by_role("button", name="Search").click()
    expect(found).to_have_count(1)  # the 2023 visit is left out by its date
    expect(found.first).to_contain_text("Ann lives in Leeds.")

    panel.get_by_label("Passage").fill("Ann's cat is called Tom.")
    panel.get_by_label("Its tags").fill("pets")
    panel.get_by_role("button", name="Insert").click()
    panel.get_by_label("Search for").fill("")
    panel.get_by_label("From").fill("")
    panel.get_by_label("To").fill("")
    panel.get_by_label("Tags", exact=True).fill("pets")
    panel.get_by_role("button", name="Search").click()
    expect(found).to_have_count(1)
    found.first.get_by_role("button", name="Delete").click()  # confirmed by the fixture
    expect(found).to_have_count(0)
    listed = served.api.get(passages, params={"limit": 50}).json()
    assert listed["total"] == 4
    assert "Ann's cat is called Tom." not in [p["text"] for p in listed["passages"]]


def test_the_first_load_is_small_and_the_context_bar_adds_up(page: Page, served: Served) -> None:
    make_agent(served, "measured")
    sizes: list[int] = []
    page.on("requestfinished", lambda request: sizes.append(len(request.response().body())))
    open_agent(page, served, "measured")
    expect(page.locator("#context-legend .total")).to_contain_text("tokens (fake-model)")
    assert 0 < sum(sizes) < MAX_FIRST_LOAD_BYTES, sizes
    overview = served.api.get("/api/agents/measured/context").json()
    used = sum(overview["sections"].values())
    expect(page.locator("#context-legend .total")).to_have_text(
        f"{used} / {overview['context_window']} tokens (fake-model)"
    )
    blocks = sum(n for name, n in overview["sections"].items() if name.startswith("block:"))
    expect(page.locator("#context-legend li", has_text="Blocks")).to_have_text(f"Blocks {blocks}")


def no_horizontal_overflow(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_the_layout_holds_at_laptop_and_phone_widths(page: Page, served: Served) -> None:
    make_agent(served, "a-rather-long-agent-name-that-must-wrap-somewhere-on-a-phone")
    name = "a-rather-long-agent-name-that-must-wrap-somewhere-on-a-phone"
    for size in (LAPTOP, PHONE):
        page.set_viewport_size(size)
        open_agent(page, served, name)
        for tab in ("Memory", "Archival", "Conversation", "Tools", "Settings"):
            page.get_by_role("tab", name=tab).click()
            expect(page.get_by_role("tabpanel", name=tab)).to_be_visible()
            assert no_horizontal_overflow(page), (size, tab)
        expect(page.get_by_label("Message")).to_be_visible()
        expect(page.get_by_role("button", name="Send")).to_be_visible()
