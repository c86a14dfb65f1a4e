"""An agent on a local OpenAI-compatible server: Ollama or the llama.cpp server.

Start a server with an 8k context, then run the example (no API key needed):
    OLLAMA_CONTEXT_LENGTH=8192 ollama serve        # and: ollama pull llama3.2
    python examples/local_endpoint.py

    llama-server -m model.gguf --jinja -c 8192 --port 8080
    python examples/local_endpoint.py --server llamacpp

What local models need, and what this example sets:
- base_url: stored with the agent, so later runs (and `memgpt-lite send`) find it;
- context_window: the window the server really runs. Ollama silently cuts a
  prompt that is too long, so the agent must know it to compact in time;
- tool_choice "auto": many local servers refuse "required" (the agent would
  fall back by itself; setting it saves the failed first call). With "auto"
  the model may answer in plain text, which is taken as its reply.
"""

from __future__ import annotations

import argparse

from memgpt_lite import Agent, AgentSettings, Block, NotFoundError

SERVERS = {
    "ollama": ("http://localhost:11434/v1", "llama3.2"),
    # llama-server answers to any model name with the model it loaded.
    "llamacpp": ("http://localhost:8080/v1", "local-model"),
}


def get_agent(base_url: str, model: str, context_window: int) -> Agent:
    try:
        agent = Agent.load("local", base_url=base_url)
    except NotFoundError:
        return Agent.create(
            "local",
            model,
            blocks=[
                Block(label="persona", value="I am a helpful assistant running on this machine."),
                Block(label="human", value=""),
            ],
            base_url=base_url,
            settings=AgentSettings(context_window=context_window),
            llm_options={"tool_choice": "auto"},
        )
    agent.state.llm.base_url = base_url  # the server may have moved since the last run
    agent.save()
    return agent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=SERVERS, default="ollama")
    parser.add_argument("--base-url", help="override the server's usual URL")
    parser.add_argument("--model", help="override the server's usual model")
    parser.add_argument("--context-window", type=int, default=8192)
    args = parser.parse_args()
    default_url, default_model = SERVERS[args.server]
    agent = get_agent(
        args.base_url or default_url, args.model or default_model, args.context_window
    )
    text = "Hi! I'm Alice and I keep bees."
    print(f"you: {text}")
    for reply in agent.step(text).replies:
        print(f"{agent.state.name}: {reply}")
    view = agent.context_overview()
    print(
        f"\n{view.model} at {agent.state.llm.base_url}: the next request takes "
        f"{view.total_tokens:,} of {view.context_window:,} tokens"
    )


if __name__ == "__main__":
    main()
