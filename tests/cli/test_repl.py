"""`memgpt-lite chat`, driven as a person would drive it: in a pseudo-terminal
with pexpect (readline, spinner, Ctrl-C, Ctrl-D, the editor), and through
pipes, where no escape code may appear. The agent talks to the fake server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pexpect
import pytest
from support.chat_terminal import CSI_SEQUENCE, PROMPT, leave, spawn, stored

from memgpt_lite import Agent, AgentSettings, Block, Store
from memgpt_lite.testing import call, error, reply, say
from memgpt_lite.tools.rules import needs_approval

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX-only")

ANSI_ESCAPE = re.compile(r"\x1b[\[\]()]")


def make_agent(tmp_path: Path, human_limit: int = 5000) -> Agent:
    blocks = [
        Block(label="persona", value="I am Sam.", read_only=True),
        Block(label="human", value="", limit=human_limit),
    ]
    return Agent.create("sam", "gpt-4o-mini", blocks=blocks, db=tmp_path / "chat.db")


def command(child: pexpect.spawn, line: str) -> str:
    """Send a line, wait for the next prompt; what was printed in between,
    without colours and cursor moves."""
    child.sendline(line)
    child.expect(PROMPT)
    return CSI_SEQUENCE.sub("", child.before)


def user_messages(tmp_path: Path) -> list[str | None]:
    return [content for role, content in stored(tmp_path) if role == "user"]


def test_a_turn_and_the_memory_commands(fake_llm, chat_env, tmp_path):
    agent = make_agent(tmp_path)
    agent.archival.insert("Beth's birthday is on the third of March.", tags=["family"])
    fake_llm.enqueue(
        reply(
            "Note her name",
            [
                call(
                    "core_memory_append",
                    label="human",
                    content="Name: Alice",
                    request_heartbeat=True,
                )
            ],
        ),
        say("Hi **Alice**!", content="Greet her"),
    )
    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    turn = command(child, "hello, I am Alice")
    assert "thought: Note her name" in turn and "thought: Greet her" in turn
    assert "tool core_memory_append(" in turn and "-> Appended to block 'human'" in turn
    assert "Hi Alice!" in turn and "**" not in turn and "send_message" not in turn  # markdown
    assert re.search(r"[\d,]+/32,000 tokens in context", turn)

    helped = command(child, "/help")
    for name in ("help", "memory", "edit", "block", "archival", "search", "context", "summarize"):
        assert f"/{name}" in helped
    for name in ("retry", "pop", "rethink", "rewrite", "dump", "tools", "model", "exit"):
        assert f"/{name}" in helped
    assert '"""' in helped and "Ctrl-C" in helped

    memory = command(child, "/mem\t")  # Tab completes command names
    assert "[persona] 9/5000 chars, read-only" in memory and "[human] 11/5000 chars" in memory
    assert "Saved block 'human' (9/5000 chars)" in command(child, "/block human Name: Bob")
    assert Agent.load("sam", db=tmp_path / "chat.db").block("human").value == "Name: Bob"
    assert "Error: block 'persona' is read-only" in command(child, "/block persona I am Max.")
    assert "Usage: /block LABEL TEXT" in command(child, "/block human")

    listed = command(child, "/archival")
    assert "third of March" in listed and "[family]" in listed and "(1 shown of 1)" in listed
    assert "(1 shown of 1)" in command(child, "/archival birthday beth")
    assert "(0 shown of 0)" in command(child, "/archival zebras")
    found = command(child, "/search alice")
    assert "user: hello, I am Alice" in found and "(2 shown of 2)" in found
    assert "Usage: /search QUERY" in command(child, "/search")

    context = command(child, "/context")
    assert "total (exact request)" in context and "block:human" in context
    tools = command(child, "/tools")
    assert "send_message: Send a message to the user." in tools
    assert "archival_memory_search:" in tools

    dumped = command(child, "/dump 2")
    assert "assistant" in dumped and '"name": "send_message"' in dumped
    assert "tool name=send_message tool_call_id=" in dumped
    assert "Usage: /dump [N]" in command(child, "/dump -3")

    assert "Model: gpt-4o-mini (working window 32,000 tokens of its 128,000-token" in command(
        child, "/model"
    )
    assert "Model set to gpt-4.1 (working window 32,000 tokens of its 1,047,576-token" in command(
        child, "/model gpt-4.1"
    )
    assert Store(tmp_path / "chat.db").get_agent("sam").llm.model == "gpt-4.1"
    assert "Unknown command /fly. Type /help" in command(child, "/fly away")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert fake_llm.rejections == []


def test_history_commands(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    fake_llm.enqueue(
        say("Apples are red.", content="fruit"),
        say("Pears are green.", content="more fruit"),
    )
    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    command(child, "tell me about apples")
    command(child, "and pears?")

    assert "Replaced the last inner thought." in command(child, "/rethink pears, carefully")
    assert "Replaced the last reply." in command(child, "/rewrite Pears are yellow.")
    assert "Usage: /rewrite TEXT" in command(child, "/rewrite")
    fake_llm.enqueue(say("Pears are yellow or green."))
    retried = command(child, "/retry")
    assert "Sending again: and pears?" in retried and "Pears are yellow or green." in retried
    assert user_messages(tmp_path) == ["tell me about apples", "and pears?"]
    assert fake_llm.chat_requests[-1]["messages"][-1] == {"role": "user", "content": "and pears?"}

    assert "Removed 1 exchange(s): 3 messages." in command(child, "/pop")
    assert user_messages(tmp_path) == ["tell me about apples"]
    assert "Usage: /pop [N]" in command(child, "/pop zero")
    assert "only 1 exchange(s) are in the context window" in command(child, "/pop 2")

    fake_llm.enqueue(say("Plums are purple."), reply("They talked about apples."))
    command(child, "plums?")
    summarized = command(child, "/summarize")
    assert "messages left the window, summarized" in summarized
    assert Store(tmp_path / "chat.db").get_agent("sam").summary == "They talked about apples."
    dumped = command(child, "/dump 10")
    assert "tell me about apples" in dumped and "(folded into the summary)" in dumped
    leave(child)
    assert fake_llm.rejections == []


class SlowModel:
    """A responder that answers only when released, and says when it was called."""

    def __init__(self) -> None:
        self.called = threading.Event()
        self.release = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Any:
        self.called.set()
        self.release.wait(30)
        return say("too late")


def test_ctrl_c_cancels_a_model_call_and_the_next_call_is_valid(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    slow = SlowModel()
    fake_llm.responder = slow
    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    try:
        child.sendline("a slow question")
        assert slow.called.wait(20)
        child.expect_exact("sam is thinking…")  # the spinner, with the seconds elapsed
        child.sendintr()
        child.expect_exact("(cancelled)")
        child.expect_exact('Your message "a slow question" was not answered: /retry sends')
        child.expect(PROMPT)
    finally:
        slow.release.set()
    fake_llm.responder = None
    assert stored(tmp_path) == [("user", "a slow question")]

    child.send("half typed")  # Ctrl-C at the prompt drops the line
    # Once echoed, readline waits for keys again. (While it handles a key it
    # blocks SIGINT, and the kernel may then hand the signal to another thread,
    # which does not wake the one blocked at the prompt.)
    child.expect_exact("half typed")
    child.sendintr()
    fake_llm.enqueue(say("Back again."))
    child.sendline("are you there?")
    child.expect_exact("Back again.")
    child.expect(PROMPT)
    leave(child)

    assert user_messages(tmp_path) == ["a slow question", "are you there?"]
    last = next(
        r["messages"]
        for r in fake_llm.chat_requests
        if r["messages"][-1]["content"] == "are you there?"
    )
    # The cancelled message stays stored, unanswered, and out of the next request.
    assert [m["content"] for m in last if m["role"] == "user"] == ["are you there?"]
    assert fake_llm.rejections == []
    history = (tmp_path / "memgpt_home" / "chat_history").read_text()
    assert "a slow question" in history and "are you there?" in history
    assert "half typed" not in history


def test_a_new_session_finds_everything_as_it_was(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    fake_llm.enqueue(
        reply(
            "Remember her",
            [call("core_memory_append", label="human", content="Alice", request_heartbeat=True)],
        ),
        say("Hello Alice!"),
    )
    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    command(child, "I am Alice")
    command(child, "/block human Name: Alice; likes tea")
    command(child, "/memory")
    leave(child)

    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    child.send("\x10")  # Ctrl-P: the last entry typed, in the previous session
    child.expect_exact("/memory")
    assert "[human] 22/5000 chars\r\nName: Alice; likes tea" in command(child, "")
    assert "user\r\nI am Alice" in command(child, "/dump 10")
    fake_llm.enqueue(say("You like tea."))
    assert "You like tea." in command(child, "what do I like?")
    leave(child)
    request = fake_llm.chat_requests[-1]["messages"]
    assert "Name: Alice; likes tea" in request[0]["content"]
    assert {"role": "user", "content": "I am Alice"} in request
    assert fake_llm.rejections == []


def test_verbose_chat_shows_whole_tool_calls(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    fake_llm.enqueue(
        reply(
            "Note it",
            [
                call(
                    "core_memory_append",
                    label="human",
                    content="Likes: tea",
                    request_heartbeat=True,
                )
            ],
        ),
        say("Noted."),
    )
    finished = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(tmp_path / "chat.db"), "chat", "sam"]
        + ["--verbose"],
        input="I like tea\n",
        capture_output=True,
        text=True,
        env=chat_env,
        timeout=60,
    )
    assert finished.returncode == 0, finished.stderr
    # Each argument on its own line, and the result in full below the call.
    assert 'tool core_memory_append (ok)\n{\n  "label": "human",\n' in finished.stdout
    assert '  "content": "Likes: tea",\n' in finished.stdout
    assert "\n-> Appended to block 'human'" in finished.stdout
    assert "Noted." in finished.stdout and fake_llm.rejections == []


def test_multi_line_input(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    fake_llm.enqueue(say("one"), say("two"), say("three"))
    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    child.sendline("first line \\")
    child.expect_exact("...> ")
    command(child, "second line")
    child.sendline('"""')
    child.sendline("a block")
    child.sendline("")
    child.expect_exact("...> ")
    command(child, 'with a gap"""')
    command(child, "//slash at the start")
    leave(child)
    assert user_messages(tmp_path) == [
        "first line \nsecond line",
        "a block\n\nwith a gap",
        "/slash at the start",
    ]
    assert fake_llm.rejections == []


# Writes the next text of edits.json into the file, and logs what it was
# opened on. A text starting with WAIT: is written only after a Ctrl-C.
EDITOR_SCRIPT = """\
import json, pathlib, signal, sys
target = pathlib.Path(sys.argv[1])
queue = pathlib.Path(sys.argv[0]).with_name("edits.json")
texts = json.loads(queue.read_text())
with queue.with_name("seen.txt").open("a") as seen:
    seen.write(target.read_text() + "\\n--\\n")
text = texts.pop(0)
queue.write_text(json.dumps(texts))
if text.startswith("WAIT:"):
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
    print("editor waits for Ctrl-C", flush=True)
    signal.sigtimedwait([signal.SIGINT], 20)
    text = text[len("WAIT:"):]
target.write_text(text)
"""


def test_edit_in_the_editor_keeps_text_that_does_not_fit(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path, human_limit=40)
    script = tmp_path / "editor.py"
    script.write_text(EDITOR_SCRIPT)
    too_long = "Name: Alice. Likes: tea, long walks and very long sentences."
    texts = [too_long, "Name: Alice\n", too_long, "WAIT:Name: Alice B."]
    (tmp_path / "edits.json").write_text(json.dumps(texts))
    chat_env["EDITOR"] = f"{sys.executable} {script}"
    child = spawn(chat_env, tmp_path / "chat.db", "sam")

    child.sendline("/edit human")
    child.expect("over its limit of 40")
    child.expect("Your text is kept in ([^\\s\x1b]+)")
    kept = Path(child.match.group(1))
    child.expect_exact("Edit it again? [y/N]")
    saved = command(child, "y")
    assert "Saved block 'human' (11/40 chars)." in saved
    assert kept.read_text() == too_long
    # The editor was reopened on the text that did not fit, not the old value.
    assert (tmp_path / "seen.txt").read_text() == f"\n--\n{too_long}\n--\n"

    child.sendline("/edit human")
    child.expect_exact("Edit it again? [y/N]")
    command(child, "n")
    assert Agent.load("sam", db=tmp_path / "chat.db").block("human").value == "Name: Alice"
    assert len(list(kept.parent.iterdir())) == 2

    # Ctrl-C in the editor is the editor's business: the edit goes on.
    child.sendline("/edit human")
    child.expect_exact("editor waits for Ctrl-C")
    child.sendintr()
    child.expect_exact("Saved block 'human' (14/40 chars).")
    child.expect(PROMPT)
    assert Agent.load("sam", db=tmp_path / "chat.db").block("human").value == "Name: Alice B."

    assert "is read-only" in command(child, "/edit persona")
    assert "no block labelled 'ghost'" in command(child, "/edit ghost")
    assert "Usage: /edit LABEL" in command(child, "/edit")
    leave(child)


def test_create_an_agent_when_there_is_none(fake_llm, chat_env, tmp_path):
    db = tmp_path / "empty.db"
    home = tmp_path / "memgpt_home"
    home.mkdir()
    # The new agent's defaults come from config.toml, as for `memgpt-lite create`.
    (home / "config.toml").write_text('model = "llama3.2"\ncontext_window = 8192\n')
    child = pexpect.spawn(
        sys.executable,
        ["-m", "memgpt_lite", "--db", str(db), "chat"],
        env=chat_env,
        encoding="utf-8",
        timeout=20,
        dimensions=(50, 200),
    )
    child.expect_exact("No agents yet")
    child.expect_exact("Name of the new agent:")
    child.sendline("not a valid name!")
    child.expect_exact("Model [llama3.2]:")
    child.sendline("gpt-4o")
    child.expect_exact("Error: cannot create agent")
    child.expect_exact("Name of the new agent:")
    child.sendline("bob")
    child.expect_exact("Model [llama3.2]:")
    child.sendline("")
    child.expect_exact("Chatting with bob (llama3.2)")
    child.expect(PROMPT)
    leave(child)
    agents = Store(db).list_agents()
    assert [(a.name, a.llm.model) for a, _ in agents] == [("bob", "llama3.2")]
    assert agents[0][0].settings.context_window == 8192
    assert agents[0][0].block_ids  # persona and human from the templates


def test_piped_chat_is_plain_text(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    Agent.create("zed", "gpt-4o-mini", db=tmp_path / "chat.db")
    fake_llm.enqueue(
        reply(
            "I should greet",
            [call("core_memory_append", label="human", content="x", request_heartbeat=True)],
        ),
        say("**Hello** from Sam"),
    )
    entries = ["sam", "hi there", "/memory", "/context", "/pop x", "/pop ²", "/nope"]
    entries.append("/block ghost x")
    finished = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(tmp_path / "chat.db"), "chat"],
        input="\n".join(entries) + "\n",
        capture_output=True,
        text=True,
        env=chat_env,
        timeout=60,
    )
    assert finished.returncode == 0, finished.stderr
    out = finished.stdout
    # The menu and its prompt go to stderr: stdout has the replies only.
    assert "1. sam" in finished.stderr and "2. zed" in finished.stderr
    assert "Chat with" in finished.stderr and "1. sam" not in out and "Chat with" not in out
    # Replies only: no prompts, thoughts, tool lines or footer; markdown as written.
    assert "**Hello** from Sam\n" in out and PROMPT not in out
    assert "thought:" not in out and "tool core_memory" not in out
    assert "tokens in context" not in out
    assert out.count("Usage: /pop [N]") == 2 and "Unknown command /nope" in out
    assert "Error: agent 'sam' has no block labelled 'ghost'" in out
    assert not ANSI_ESCAPE.search(out + finished.stderr)
    assert "Traceback" not in finished.stderr
    assert not (tmp_path / "memgpt_home" / "chat_history").exists()
    assert user_messages(tmp_path) == ["hi there"]
    assert fake_llm.rejections == []


def test_an_unanswered_message_is_named_now_and_in_the_next_session(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    fake_llm.enqueue(error(400, "the model is loading"))

    def chat(*entries: str) -> str:
        finished = subprocess.run(
            [sys.executable, "-m", "memgpt_lite", "--db", str(tmp_path / "chat.db"), "chat", "sam"],
            input="\n".join(entries) + "\n",
            capture_output=True,
            text=True,
            env=chat_env,
            timeout=60,
        )
        assert finished.returncode == 0 and "Traceback" not in finished.stderr
        return finished.stdout

    note = 'Your message "is it on?" was not answered: /retry sends it again, /pop drops it.'
    out = chat("is it on?")
    assert "Error: the model endpoint" in out and "the model is loading" in out and note in out
    assert note in chat()  # told again when the chat opens
    fake_llm.enqueue(say("yes"))
    out = chat("/retry")
    assert "Sending again: is it on?" in out and "yes" in out and note not in chat()
    assert user_messages(tmp_path) == ["is it on?"]
    assert fake_llm.rejections == []


def test_a_home_that_is_a_file_does_not_stop_the_chat(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    chat_env["MEMGPT_LITE_HOME"] = str(home)
    fake_llm.enqueue(say("Hello!"))
    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    notice = " ".join(CSI_SEQUENCE.sub("", child.before).split())
    assert (
        f"The input history is not kept: $MEMGPT_LITE_HOME ({home}) is a file, not a folder."
        in notice
    )
    assert "Hello!" in command(child, "hi")
    leave(child)
    assert user_messages(tmp_path) == ["hi"]
    assert home.read_text() == "not a folder"


def make_careful_agent(tmp_path: Path) -> Agent:
    """An agent whose archival inserts wait for approval."""
    return Agent.create(
        "sam",
        "gpt-4o-mini",
        db=tmp_path / "chat.db",
        settings=AgentSettings(tool_rules=[needs_approval(INSERT)]),
    )


INSERT = "archival_memory_insert"


def passages(tmp_path: Path) -> int:
    with Store(tmp_path / "chat.db") as store:
        return store.agent_stats(store.get_agent("sam").id).passage_count


def asks_to_insert(content: str) -> Any:
    return reply(f"Note {content}", [call(INSERT, content=content, request_heartbeat=True)])


def test_approvals_are_asked_for_then_and_after_a_restart(fake_llm, chat_env, tmp_path):
    make_careful_agent(tmp_path)
    fake_llm.enqueue(asks_to_insert("Beth: 3 March"), say("Understood."))
    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    child.sendline("remember Beth's birthday")
    child.expect_exact(
        f"sam wants to run {INSERT}(content='Beth: 3 March', request_heartbeat=True)"
    )
    child.expect_exact("Approve? [y/N] ")
    child.sendline("n")
    child.expect_exact("Reason for the agent (optional): ")
    assert "Understood." in command(child, "it is a surprise party")
    assert passages(tmp_path) == 0
    denied = fake_llm.chat_requests[-1]["messages"][-1]
    assert denied["role"] == "tool"
    assert denied["content"].endswith("Their reason: it is a surprise party")

    # Ctrl-C at the question leaves the call waiting; a message meanwhile is refused.
    fake_llm.enqueue(asks_to_insert("Ann: 9 May"))
    child.sendline("and Ann's")
    child.expect_exact("Approve? [y/N] ")
    child.sendintr()
    child.expect_exact(f"Not answered: {INSERT} still waits; /approve or /deny [reason] answers.")
    child.expect(PROMPT)
    refused = command(child, "hello?")
    assert (
        "Error: agent 'sam' is waiting for approval of a tool call (archival_memory_insert): "
        "approve or deny it before sending a new message" in refused
    )
    assert "Traceback" not in refused and passages(tmp_path) == 0
    leave(child)

    # A new session asks at once; Ctrl-D there leaves it waiting for /approve.
    child = spawn(chat_env, tmp_path / "chat.db", "sam", prompt=False)
    child.expect_exact(f"sam wants to run {INSERT}(content='Ann: 9 May'")
    child.expect_exact("Approve? [y/N] ")
    child.sendeof()
    child.expect_exact("Not answered:")
    child.expect(PROMPT)
    assert passages(tmp_path) == 0
    fake_llm.enqueue(say("Saved Ann's birthday."))
    approved = command(child, "/approve")
    assert f"tool {INSERT}(" in approved and "Saved Ann's birthday." in approved
    assert passages(tmp_path) == 1
    assert "has no tool call waiting for approval" in command(child, "/approve")
    leave(child)
    assert fake_llm.rejections == []


def test_deny_with_a_reason_and_a_step_that_asks_again(fake_llm, chat_env, tmp_path):
    make_careful_agent(tmp_path)
    fake_llm.enqueue(asks_to_insert("one"), asks_to_insert("two"), say("Kept one only."))
    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    child.sendline("remember two things")
    child.expect_exact(f"{INSERT}(content='one'")
    child.expect_exact("Approve? [y/N] ")
    child.sendline("y")
    # The step goes on after the approval, and asks again for the next call.
    child.expect_exact(f"{INSERT}(content='two'")
    child.expect_exact("Approve? [y/N] ")
    child.sendintr()
    child.expect(PROMPT)
    assert passages(tmp_path) == 1
    assert "Kept one only." in command(child, "/deny one is enough")
    assert fake_llm.chat_requests[-1]["messages"][-1]["content"].endswith(
        "Their reason: one is enough"
    )
    assert passages(tmp_path) == 1
    assert "/approve" in command(child, "/help") and "/deny [REASON]" in command(child, "/help")
    leave(child)
    assert fake_llm.rejections == []


def test_piped_chat_asks_on_stderr(fake_llm, chat_env, tmp_path):
    make_careful_agent(tmp_path)

    def chat(*entries: str) -> subprocess.CompletedProcess[str]:
        finished = subprocess.run(
            [sys.executable, "-m", "memgpt_lite", "--db", str(tmp_path / "chat.db"), "chat", "sam"],
            input="".join(f"{entry}\n" for entry in entries),
            capture_output=True,
            text=True,
            env=chat_env,
            timeout=60,
        )
        assert finished.returncode == 0 and "Traceback" not in finished.stderr
        return finished

    fake_llm.enqueue(asks_to_insert("Beth"))
    first = chat("remember Beth")  # the input ends at the question
    assert first.stdout == ""
    assert f"sam wants to run {INSERT}(content='Beth'" in first.stderr
    assert "Approve? [y/N] " in first.stderr and "Not answered:" in first.stderr
    fake_llm.enqueue(say("Saved."))
    second = chat("y")  # asked again when the chat opens
    assert second.stdout == "Saved.\n" and "Approve? [y/N] " in second.stderr
    assert passages(tmp_path) == 1
    assert not ANSI_ESCAPE.search(first.stdout + first.stderr + second.stdout + second.stderr)
    assert fake_llm.rejections == []


def test_each_of_several_waiting_calls_gets_its_own_answer(fake_llm, chat_env, tmp_path):
    make_careful_agent(tmp_path)
    fake_llm.enqueue(
        reply(tool_calls=[call(INSERT, content="keep"), call(INSERT, content="drop")]),
        say("Kept one."),
    )
    finished = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(tmp_path / "chat.db"), "chat", "sam"],
        input="remember two things\ny\nn\nnot that one\n",
        capture_output=True,
        text=True,
        env=chat_env,
        timeout=60,
    )
    assert finished.returncode == 0 and "Traceback" not in finished.stderr
    assert finished.stderr.count("Approve? [y/N] ") == 2
    assert passages(tmp_path) == 1
    with Store(tmp_path / "chat.db") as store:
        kept, _ = store.list_passages(store.get_agent("sam").id, 10)
    results = [m for m in fake_llm.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert results[0]["content"] != results[1]["content"]
    assert results[1]["content"].endswith("Their reason: not that one")
    assert finished.stdout == "Kept one.\n" and [p.text for p in kept] == ["keep"]


def test_a_turn_without_a_reply_says_how_to_send_the_message_again(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    remember = call("core_memory_append", label="human", content="Likes tea.")
    fake_llm.enqueue(reply(tool_calls=[remember]), say("Tea it is."))
    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    turn = " ".join(command(child, "I like tea").split())
    assert "(sam ended its turn without a reply: no_heartbeat)" in turn
    assert 'Your message "I like tea" was not answered: /retry sends it again' in turn
    assert "Tea it is." in command(child, "/retry")
    leave(child)
    assert user_messages(tmp_path) == ["I like tea"]
    assert fake_llm.rejections == []
