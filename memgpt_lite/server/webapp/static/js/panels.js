// The other views of an agent: conversation search, its tools, its settings.

import { ApiError, del, get, patch, path, post } from "./api.js";
import { errorLine, field, fill, h, when } from "./dom.js";
import { sentMessage } from "./messages.js";

/** What a stored message said, as conversation search reads it. */
function spoken(message) {
  const sent = (message.tool_calls ?? []).map(sentMessage).filter((text) => text !== null);
  return [message.content ?? "", ...sent].filter(Boolean).join("\n");
}

export class ConversationSearch {
  constructor(panel) {
    this.query = h("input", { type: "search", name: "query", required: true });
    this.results = h("ol", { class: "found" });
    this.count = h("p", { class: "count", "aria-live": "polite" });
    this.error = errorLine();
    fill(
      panel,
      h("h3", { text: "Conversation search" }),
      h(
        "form",
        { class: "filters", role: "search", "aria-label": "Conversation", onsubmit: (e) => this.search(e) },
        field("Search the conversation for", this.query),
        h("button", { type: "submit" }, "Search"),
      ),
      this.error,
      this.count,
      this.results,
    );
  }

  show(agentName) {
    if (agentName === this.agentName) return;
    this.agentName = agentName;
    this.query.value = "";
    fill(this.results);
    this.count.textContent = "";
  }

  async search(event) {
    event.preventDefault();
    const params = new URLSearchParams({ query: this.query.value, limit: 20 });
    this.error.textContent = "";
    try {
      const page = await get(`${path("api/agents", this.agentName, "messages")}?${params}`);
      this.count.textContent = `${page.total} messages match.`;
      fill(
        this.results,
        page.messages.map((m) =>
          h(
            "li",
            { class: `found-${m.role}` },
            h("p", { class: "meta", text: `${m.role === "user" ? "You" : "Agent"}, ${when(m.created_at)}` }),
            h("p", { class: "text", text: spoken(m) }),
          ),
        ),
      );
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.error.textContent = error.message;
    }
  }
}

export class Tools {
  constructor(panel, changed) {
    this.panel = panel;
    this.changed = changed; // the agent was changed: read it again
    this.list = h("ul", { class: "tools" });
    this.name = h("input", { type: "text", name: "tool" });
    this.error = errorLine();
    fill(
      panel,
      h("h3", { text: "Tools" }),
      this.list,
      h(
        "form",
        { class: "attach", onsubmit: (e) => this.attach(e) },
        field("Tool to attach (registered or built-in)", this.name),
        h("button", { type: "submit" }, "Attach"),
      ),
      this.error,
    );
  }

  async show(agent) {
    this.agent = agent;
    const tools = await get(`${path("v1/agents", agent.id, "tools")}?limit=200&order=asc`);
    const attached = new Set(agent.tool_names);
    fill(
      this.list,
      tools.map((tool) =>
        h(
          "li",
          {},
          h(
            "details",
            {},
            h("summary", {}, h("code", { text: tool.name }), ` ${tool.description ?? ""}`),
            h("pre", { text: JSON.stringify(tool.json_schema?.parameters ?? {}, null, 2) }),
          ),
          attached.has(tool.name)
            ? h("button", { type: "button", onclick: () => this.detach(tool.name) }, `Detach ${tool.name}`)
            : null,
        ),
      ),
    );
  }

  async attach(event) {
    event.preventDefault();
    await this.act(() => post(path("api/agents", this.agent.name, "tools"), { tools: [this.name.value.trim()] }));
    this.name.value = "";
  }

  async detach(name) {
    await this.act(() => del(path("api/agents", this.agent.name, "tools", name)));
  }

  async act(change) {
    this.error.textContent = "";
    try {
      await change();
      await this.changed();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.error.textContent = error.message;
    }
  }
}

export class Settings {
  constructor(panel, changed) {
    this.changed = changed;
    this.model = h("input", { type: "text", name: "model", list: "model-list", required: true });
    this.window = h("input", { type: "number", name: "working_window", min: 0, step: 1 });
    this.toolSet = h(
      "select",
      { name: "tool_set" },
      ["memgpt", "letta-v1", "anthropic-memory"].map((name) => h("option", { value: name }, name)),
    );
    this.error = errorLine();
    this.saved = h("p", { class: "hint", "aria-live": "polite" });
    fill(
      panel,
      h("h3", { text: "Settings" }),
      h(
        "form",
        { class: "settings", onsubmit: (e) => this.save(e) },
        field("Model", this.model),
        field("Working window (tokens; empty: the default, 0: the model's whole window)", this.window),
        field("Tool set", this.toolSet),
        h("button", { type: "submit" }, "Save settings"),
      ),
      this.error,
      this.saved,
    );
  }

  show(agent) {
    this.agent = agent;
    this.model.value = agent.llm.model;
    this.window.value = agent.settings.working_window ?? "";
    this.toolSet.value = agent.settings.tool_set;
    this.saved.textContent = "";
  }

  async save(event) {
    event.preventDefault();
    const windowText = this.window.value.trim();
    const settings = {
      working_window: windowText === "" ? null : Number(windowText),
      tool_set: this.toolSet.value,
    };
    this.error.textContent = "";
    try {
      await patch(path("api/agents", this.agent.name), { model: this.model.value.trim(), settings });
      this.saved.textContent = "Saved.";
      await this.changed();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.error.textContent = error.message;
    }
  }
}
