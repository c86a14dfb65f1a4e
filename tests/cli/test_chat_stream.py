"""The streaming chat and its first-run polish: the reply on the terminal as
the model writes it (a real `memgpt-lite chat` on a pseudo-terminal, against
the fake server holding back the rest of an answer), a piped chat that prints
the replies only, single line breaks kept, Ctrl-D inside an entry, and
`/model` with a model whose context window is not known."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from rich.console import Console
from support.chat_terminal import CSI_SEQUENCE, PROMPT, leave, spawn, stored

from memgpt_lite import Agent, Store
from memgpt_lite.cli.render import ReplyMarkdown, StepRenderer, finished_length
from memgpt_lite.models import AgentSettings
from memgpt_lite.testing import call, cut, reply, say

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX-only")


def make_agent(tmp_path: Path, model: str = "gpt-4o-mini", window: int | None = None) -> Agent:
    settings = AgentSettings(context_window=window)
    return Agent.create("sam", model, settings=settings, db=tmp_path / "chat.db")


def piped_chat(env: dict[str, str], tmp_path: Path, *entries: str, end: str = "\n") -> str:
    """`memgpt-lite chat sam` with `entries` piped in; its stdout."""
    finished = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(tmp_path / "chat.db"), "chat", "sam"],
        input="\n".join(entries) + end,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert finished.returncode == 0, finished.stderr
    assert "Traceback" not in finished.stderr
    return finished.stdout


def test_the_reply_is_on_the_terminal_before_the_step_ends(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    fake_llm.stream_piece_chars = 12
    answer = "First words arrive now, while the server holds back the end of this sentence."
    # The headers and the first events of the streamed answer, then silence.
    fake_llm.enqueue(cut(say(answer), after=6, hang=True))
    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    child.sendline("tell me something slowly")
    child.expect_exact("First words")
    # Read from the terminal while the model's answer is still held back.
    assert fake_llm.hanging == 1
    assert "end of this sentence" not in CSI_SEQUENCE.sub("", child.before + child.after)
    child.sendintr()  # Ctrl-C: the step stops; what it stored stays consistent
    child.expect_exact("(cancelled)")
    child.expect(PROMPT)
    fake_llm.enqueue(say("All there now."))
    child.sendline("again?")
    child.expect_exact("All there now.")
    child.expect(PROMPT)
    leave(child)
    assert stored(tmp_path)[0] == ("user", "tell me something slowly")
    assert fake_llm.rejections == []


def test_a_streamed_turn_shows_thoughts_tools_and_paragraphs_in_order(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    fake_llm.enqueue(
        reply(
            "Note her name",
            [call("core_memory_append", label="human", content="Alice", request_heartbeat=True)],
        ),
        say("Hi **Alice**!\n\nRoses are red,\nviolets are blue.", content="Greet her"),
    )
    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    child.sendline("I am Alice")
    child.expect(PROMPT)
    screen = CSI_SEQUENCE.sub("", child.before)
    order = [
        "thought: Note her name",
        "tool core_memory_append(",
        "-> Appended to block 'human'",
        "thought: Greet her",
        "Hi Alice!",
        "Roses are red,",
        "violets are blue.",
    ]
    # Where each first reached the terminal (the live region's redraws only repeat).
    firsts = [screen.index(text) for text in order]
    assert firsts == sorted(firsts), screen
    assert re.search(r"Roses are red, *\r\nviolets are blue\.", screen)  # the line break kept
    assert "red, violets" not in screen
    assert re.search(r"[\d,]+/32,000 tokens in context", screen)
    # The turn's tokens and the agent's totals, priced: gpt-4o-mini's price is known.
    assert re.search(r"this turn: [\d,]+ tokens \([\d,]+ in, [\d,]+ out\), \$[\d.]+", screen)
    assert re.search(r"[\d,]+ tokens in all, \$[\d.]+", screen)
    leave(child)


def test_a_piped_chat_prints_the_replies_only(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    fake_llm.enqueue(
        reply(
            "Note it",
            [call("core_memory_append", label="human", content="x", request_heartbeat=True)],
        ),
        say("First reply."),
        say("Second reply,\nin two lines."),
    )
    out = piped_chat(chat_env, tmp_path, "hello", "and again")
    assert out == "First reply.\nSecond reply,\nin two lines.\n"


def test_ctrl_d_inside_a_block_sends_what_was_typed(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    fake_llm.enqueue(say("Got the block."), say("Got the line."))
    child = spawn(chat_env, tmp_path / "chat.db", "sam")
    # Each line after the prompt for it: a Ctrl-D typed ahead, before line
    # editing has the terminal, would be the terminal's end of file instead.
    for line in ('"""', "a long text", "of two lines"):
        child.sendline(line)
        child.expect_exact("...> ")
    child.sendeof()  # Ctrl-D before the closing quotes
    child.expect_exact("(Ctrl-D ended the entry: sending what you typed)")
    child.expect_exact("Got the block.")
    child.expect(PROMPT)
    child.sendline("a line going on \\")
    child.expect_exact("...> ")
    child.sendeof()
    child.expect_exact("Got the line.")
    child.expect(PROMPT)
    leave(child)  # Ctrl-D at an empty prompt still leaves
    users = [content for role, content in stored(tmp_path) if role == "user"]
    assert users == ["a long text\nof two lines", "a line going on "]


def test_an_unclosed_block_at_the_end_of_piped_input_is_sent(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    fake_llm.enqueue(say("Got it."))
    out = piped_chat(chat_env, tmp_path, '"""first', "second", end="")
    assert out == "Got it.\n"
    assert [c for r, c in stored(tmp_path) if r == "user"] == ["first\nsecond"]


def test_model_with_an_unknown_window_asks_for_it(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    out = piped_chat(
        chat_env,
        tmp_path,
        "/model llama3.2",
        "/model",
        "/model llama3.2 lots",
        "/model llama3.2 32,768",
        "/model",
    )
    assert "The context window of 'llama3.2' is not known" in out
    assert "/model llama3.2 32768" in out
    assert "Usage: /model [NAME [WINDOW]]" in out
    assert "Model: gpt-4o-mini (working window 32,000 tokens of its 128,000-token" in out
    assert (
        "Model set to llama3.2 (working window 32,000 tokens of its 32,768-token context window)."
        in out
    )
    assert (
        "Model: llama3.2 (working window 32,000 tokens of its 32,768-token context window)" in out
    )
    state = Store(tmp_path / "chat.db").get_agent("sam")
    assert (state.llm.model, state.settings.context_window) == ("llama3.2", 32768)
    # A known model, or an agent whose window was set, needs no window.
    out = piped_chat(chat_env, tmp_path, "/model qwen3", "/model gpt-4o")
    assert (
        "Model set to qwen3 (working window 32,000 tokens of its 32,768-token context window)."
        in out
    )
    assert (
        "Model set to gpt-4o (working window 32,000 tokens of its 32,768-token context window)."
        in out
    )


def test_a_known_model_switches_at_once(fake_llm, chat_env, tmp_path):
    make_agent(tmp_path)
    out = piped_chat(chat_env, tmp_path, "/model gpt-4.1")
    assert out == (
        "Model set to gpt-4.1 (working window 32,000 tokens of its 1,047,576-token "
        "context window).\n"
    )


# The renderer itself, on a console writing to a string.


def test_markdown_keeps_single_line_breaks():
    console = Console(file=io.StringIO(), width=60, color_system=None)
    console.print(ReplyMarkdown("Roses are red,\nviolets are **blue**.\n\nNew paragraph."))
    lines = [line.rstrip() for line in console.file.getvalue().splitlines()]
    assert lines == ["Roses are red,", "violets are blue.", "", "New paragraph."]


def test_finished_blocks_end_at_blank_lines_outside_code_fences():
    assert finished_length("one\n\ntwo") == len("one\n\n")
    assert finished_length("one\ntwo") == 0
    assert finished_length("```\ncode\n\nmore") == 0  # inside an open fence
    assert finished_length("```\ncode\n\n```\n\nafter") == len("```\ncode\n\n```\n\n")


def test_the_renderer_prints_the_events_of_a_real_step(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    fake_llm.enqueue(
        reply(
            "Look it up",
            [call("archival_memory_search", query="tea", request_heartbeat=True)],
        ),
        say("Nothing about tea.\n\nAsk me later.", content="answer"),
    )
    console = Console(file=io.StringIO(), width=100, color_system=None)
    with StepRenderer(console, "sam", live=False, markdown=False) as renderer:
        for event in agent.stream("tea?"):
            renderer.show(event)
    lines = console.file.getvalue().splitlines()
    assert lines[0] == "thought: Look it up"
    assert lines[1].startswith("tool archival_memory_search(") and "->" in lines[1]
    assert lines[2:] == ["thought: answer", "Nothing about tea.", "", "Ask me later."]
    assert fake_llm.rejections == []


def test_replies_only_prints_just_the_replies(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    fake_llm.enqueue(say("Just this.", content="a thought"))
    console = Console(file=io.StringIO(), width=100, color_system=None)
    with StepRenderer(console, "sam", live=False, markdown=False, replies_only=True) as renderer:
        for event in agent.stream("hi"):
            renderer.show(event)
    assert console.file.getvalue() == "Just this.\n"


def test_a_plain_text_answer_is_shown_as_the_reply_not_a_thought(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    fake_llm.enqueue(reply("A plain answer,\nwithout tools."))
    console = Console(file=io.StringIO(), width=100, color_system=None)
    with StepRenderer(console, "sam", live=False, markdown=True) as renderer:
        for event in agent.stream("hi"):
            renderer.show(event)
    lines = [line.rstrip() for line in console.file.getvalue().splitlines()]
    assert lines == ["A plain answer,", "without tools."]  # no "thought:", nothing twice


def test_send_on_a_terminal_streams_the_reply(fake_llm, chat_env, tmp_path):
    """`send` shows the step as the chat does when its output is a terminal."""
    make_agent(tmp_path)
    fake_llm.stream_piece_chars = 12
    answer = "First words arrive now, while the server holds back the end of this sentence."
    fake_llm.enqueue(cut(say(answer), after=6, hang=True))
    child = spawn(chat_env, tmp_path / "chat.db", "sam", "slowly", command="send")
    child.expect_exact("First words")
    assert fake_llm.hanging == 1  # the rest of the answer is still held back
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus != 0 or child.signalstatus is not None
    assert "Traceback" not in CSI_SEQUENCE.sub("", child.before)
    assert stored(tmp_path)[0] == ("user", "slowly")


def test_a_piped_chat_that_creates_its_agent_prints_the_replies_only(fake_llm, chat_env, tmp_path):
    """No agent yet and no NAME: the questions of the new agent go to stderr."""
    fake_llm.enqueue(say("Hello, I am Ada."))
    finished = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(tmp_path / "chat.db"), "chat"],
        input="ada\ngpt-4o-mini\nhi\n",
        capture_output=True,
        text=True,
        env=chat_env,
        timeout=60,
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout == "Hello, I am Ada.\n"
    assert "Name of the new agent" in finished.stderr and "Created agent 'ada'" in finished.stderr
