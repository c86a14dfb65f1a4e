"""Names per owner, display names and tags, through letta-client 1.x and
httpx against a real server, with two users (two keys): a name is unique
within its owner only (a display name may repeat even there, its derived
name numbered), another user's names are never revealed, an
id-shaped name is refused, ids are looked up first and names only among the
caller's own agents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from letta_client import APIStatusError, Letta, NotFoundError, UnprocessableEntityError
from support.serving import live_server, new_key

from memgpt_lite.agent.agent import Agent
from memgpt_lite.testing.server import FakeOpenAIServer

MODEL = "openai/gpt-4o-mini"


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "owners.db")


@pytest.fixture
def server(db: str, fake_llm: FakeOpenAIServer) -> Iterator[str]:
    with live_server(db) as url:
        yield url


@pytest.fixture
def keys(db: str) -> dict[str, str]:
    return {"alice": new_key(db, "alice"), "bob": new_key(db, "bob")}


def letta(server: str, key: str) -> Letta:
    return Letta(base_url=server, api_key=key, max_retries=0)


def ours(server: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=server, headers={"Authorization": f"Bearer {key}"})


def test_two_users_may_have_agents_of_one_name(server: str, keys: dict[str, str]) -> None:
    alice, bob = letta(server, keys["alice"]), letta(server, keys["bob"])
    alices = alice.agents.create(name="sam", model=MODEL)
    bobs = bob.agents.create(name="sam", model=MODEL)  # not a 409: alice's name is hers
    assert alices.id != bobs.id and alices.name == bobs.name == "sam"
    with pytest.raises(APIStatusError) as taken:
        alice.agents.create(name="sam", model=MODEL)
    assert taken.value.status_code == 409
    assert taken.value.body["detail"] == "an agent named 'sam' already exists"
    assert [a.id for a in alice.agents.list(name="sam")] == [alices.id]
    assert [a.id for a in bob.agents.list()] == [bobs.id]

    other = alice.agents.create(name="ada", model=MODEL)
    with pytest.raises(APIStatusError) as renamed:
        alice.agents.update(other.id, name="sam")
    assert renamed.value.status_code == 409
    bob.agents.update(bobs.id, name="ada")  # alice has an 'ada': free for bob

    with ours(server, keys["alice"]) as http:  # our API: names within the caller's agents
        assert http.get("/api/agents/sam").json()["id"] == alices.id
        assert http.get("/api/agents/ada").json()["id"] == other.id
        refused = http.post("/api/agents", json={"name": "ada", "model": "m"})
        assert refused.status_code == 409
    with ours(server, keys["bob"]) as http:
        assert http.get("/api/agents/ada").json()["id"] == bobs.id
        assert http.get("/api/agents/sam").status_code == 404
        assert http.post("/api/agents", json={"name": "sam", "model": "m"}).status_code == 201


def test_an_id_shaped_name_is_refused_and_ids_come_first(server: str, keys: dict[str, str]) -> None:
    alice, bob = letta(server, keys["alice"]), letta(server, keys["bob"])
    bobs = bob.agents.create(name="helper", model=MODEL)
    with pytest.raises(UnprocessableEntityError, match="looks like an agent id"):
        alice.agents.create(name=bobs.id, model=MODEL)
    letta_shaped = "agent-" + "0123abcd-0123-4567-89ab-0123456789ab"
    with pytest.raises(UnprocessableEntityError, match="looks like an agent id"):
        alice.agents.create(name=letta_shaped, model=MODEL)
    mine = alice.agents.create(name="mine", model=MODEL)
    with pytest.raises(UnprocessableEntityError, match="looks like an agent id"):
        alice.agents.update(mine.id, name=bobs.id)
    with ours(server, keys["alice"]) as http:
        made = http.post("/api/agents", json={"name": bobs.id, "model": "m"})
        assert made.status_code == 422 and "looks like an agent id" in made.json()["detail"]
        renamed = http.patch(f"/api/agents/{mine.id}", json={"name": bobs.id})
        assert renamed.status_code == 422
        # bob's agent, by its id, is not alice's: not found, as any unknown agent
        assert http.get(f"/api/agents/{bobs.id}").status_code == 404
    with pytest.raises(NotFoundError):
        alice.agents.retrieve(bobs.id)
    assert bob.agents.retrieve(bobs.id).name == "helper"  # nothing hides it from bob
    assert [a.name for a in alice.agents.list()] == ["mine"]


def test_display_names_with_spaces(server: str, keys: dict[str, str], db: str) -> None:
    alice, bob = letta(server, keys["alice"]), letta(server, keys["bob"])
    bot = alice.agents.create(name="My Helper Bot", model=MODEL)
    assert bot.name == "My Helper Bot"
    assert alice.agents.retrieve(bot.id).name == "My Helper Bot"
    lower = alice.agents.create(name="my helper bot", model=MODEL)  # another display name
    assert bob.agents.create(name="My Helper Bot", model=MODEL).name == "My Helper Bot"
    assert [a.id for a in alice.agents.list(name="My Helper Bot")] == [bot.id]
    assert {a.id for a in alice.agents.list(query_text="helper")} == {bot.id, lower.id}

    with ours(server, keys["alice"]) as http:  # the identifier, derived and unique
        view = http.get(f"/api/agents/{bot.id}").json()
        assert (view["name"], view["display_name"]) == ("my-helper-bot", "My Helper Bot")
        assert http.get(f"/api/agents/{lower.id}").json()["name"] == "my-helper-bot-2"
        assert http.get("/api/agents/my-helper-bot").json()["id"] == bot.id
    assert Agent.load("my-helper-bot-2", db=db).state.id == lower.id  # the CLI's name
    again = alice.agents.create(name="My Helper Bot", model=MODEL)  # display names may repeat
    assert again.id not in (bot.id, lower.id) and again.name == "My Helper Bot"
    assert {a.id for a in alice.agents.list(name="My Helper Bot")} == {bot.id, again.id}
    with ours(server, keys["alice"]) as http:  # the identifier does not
        assert http.get(f"/api/agents/{again.id}").json()["name"] == "my-helper-bot-3"
        assert http.get("/api/agents/my-helper-bot").json()["id"] == bot.id

    renamed = alice.agents.update(bot.id, name="Bee Keeper Bot")
    assert renamed.name == "Bee Keeper Bot"
    with ours(server, keys["alice"]) as http:
        view = http.get(f"/api/agents/{bot.id}").json()
        assert (view["name"], view["display_name"]) == ("bee-keeper-bot", "Bee Keeper Bot")
    alice.agents.update(lower.id, name="My helper bot")  # "my-helper-bot" is free now,
    with ours(server, keys["alice"]) as http:  # but its name already fits: it keeps it
        assert http.get(f"/api/agents/{lower.id}").json()["name"] == "my-helper-bot-2"
    shared = alice.agents.update(lower.id, name="Bee Keeper Bot")  # bot's: may repeat too
    assert shared.name == "Bee Keeper Bot"
    with ours(server, keys["alice"]) as http:
        assert http.get(f"/api/agents/{lower.id}").json()["name"] == "bee-keeper-bot-2"
        assert http.get("/api/agents/bee-keeper-bot").json()["id"] == bot.id
    plain = alice.agents.update(bot.id, name="plain")
    assert plain.name == "plain"
    with ours(server, keys["alice"]) as http:
        assert http.get(f"/api/agents/{bot.id}").json()["display_name"] is None
    with pytest.raises(UnprocessableEntityError, match="display name"):
        alice.agents.create(name="two\nlines", model=MODEL)


def test_our_api_takes_a_display_name(server: str, keys: dict[str, str]) -> None:
    with ours(server, keys["alice"]) as http:
        made = http.post("/api/agents", json={"display_name": "Café Bot!", "model": "m"})
        assert made.status_code == 201
        assert (made.json()["name"], made.json()["display_name"]) == ("cafe-bot", "Café Bot!")
        both = http.post(
            "/api/agents", json={"name": "cb", "display_name": "Another Bot", "model": "m"}
        ).json()
        assert (both["name"], both["display_name"]) == ("cb", "Another Bot")
        again = http.post("/api/agents", json={"display_name": "Café Bot!", "model": "m"})
        assert again.status_code == 201  # display names may repeat; names may not:
        assert (again.json()["name"], again.json()["display_name"]) == ("cafe-bot-2", "Café Bot!")
        assert again.json()["id"] != made.json()["id"]
        taken = http.post(
            "/api/agents", json={"name": "cb", "display_name": "Café Bot!", "model": "m"}
        )
        assert taken.status_code == 409
        assert taken.json()["detail"] == "an agent named 'cb' already exists"
        assert http.patch("/api/agents/cafe-bot-2", json={"name": "cb"}).status_code == 409
        neither = http.post("/api/agents", json={"model": "m"})
        assert neither.status_code == 422 and "display_name" in neither.json()["detail"]
        changed = http.patch("/api/agents/cb", json={"display_name": "Renamed Bot"}).json()
        assert (changed["name"], changed["display_name"]) == ("cb", "Renamed Bot")
        cleared = http.patch("/api/agents/cb", json={"display_name": ""}).json()
        assert cleared["display_name"] is None
        kept = http.patch("/api/agents/cafe-bot", json={"name": "cafe"}).json()
        assert (kept["name"], kept["display_name"]) == ("cafe", "Café Bot!")
    assert letta(server, keys["alice"]).agents.retrieve(both["id"]).name == "cb"


def test_tags_are_kept_filtered_and_never_cross_users(server: str, keys: dict[str, str]) -> None:
    alice, bob = letta(server, keys["alice"]), letta(server, keys["bob"])
    one = alice.agents.create(name="one", model=MODEL, tags=["user:1", "team"])
    two = alice.agents.create(name="two", model=MODEL, tags=["user:2", "team"])
    alice.agents.create(name="none", model=MODEL)
    bob.agents.create(name="bobs", model=MODEL, tags=["user:1", "team"])
    assert alice.agents.retrieve(one.id).tags == ["user:1", "team"]

    def found(**query: object) -> set[str]:
        return {a.id for a in alice.agents.list(**query)}

    assert found(tags=["user:1"]) == {one.id}
    assert found(tags=["user:1", "user:2"]) == {one.id, two.id}  # any of them
    assert found(tags=["user:1", "user:2"], match_all_tags=True) == set()
    assert found(tags=["user:1", "team"], match_all_tags=True) == {one.id}
    assert found(tags=["team"], match_all_tags=False) == {one.id, two.id}

    updated = alice.agents.update(two.id, tags=["user:3"])
    assert updated.tags == ["user:3"]
    assert found(tags=["team"]) == {one.id}
    with ours(server, keys["alice"]) as http:
        assert http.get(f"/api/agents/{two.id}").json()["settings"]["tags"] == ["user:3"]
        raw = http.get(
            "/v1/agents", params=[("tags", "user:1"), ("tags", "team"), ("match_all_tags", "true")]
        )
        assert [a["id"] for a in raw.json()] == [one.id]


def test_the_chatbot_example_s_multi_user_mode(server: str, keys: dict[str, str]) -> None:
    """As Letta's chatbot example keeps one agent per end user: found by a tag
    naming the user, created with it when there is none."""

    def agent_for(client: Letta, end_user: str) -> str:
        tag = f"user:{end_user}"
        existing = list(client.agents.list(tags=[tag], match_all_tags=True))
        if existing:
            return existing[0].id
        return client.agents.create(
            name=f"Chat with {end_user}", model=MODEL, tags=[tag, "chatbot"]
        ).id

    alice, bob = letta(server, keys["alice"]), letta(server, keys["bob"])
    first = agent_for(alice, "jo")
    assert agent_for(alice, "jo") == first  # found again by its tag
    assert agent_for(alice, "kim") != first
    bobs = agent_for(bob, "jo")  # bob's app has its own "jo", with the same display name
    assert bobs != first
    assert bob.agents.retrieve(bobs).name == alice.agents.retrieve(first).name == "Chat with jo"
    assert len(list(alice.agents.list(tags=["chatbot"]))) == 2
