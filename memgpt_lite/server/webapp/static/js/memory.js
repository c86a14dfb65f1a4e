// Core memory and the context window: each block editable in place, with
// its size out of its limit and its history as diffs; a bar of where the
// next request's tokens go.

import { ApiError, get, path, put } from "./api.js";
import { byId, errorLine, fill, h, newId, when } from "./dom.js";

/** The context window's sections, grouped as the bar shows them. */
const GROUPS = [
  ["system", "System"],
  ["blocks", "Blocks"],
  ["tools", "Tools"],
  ["summary", "Summary"],
  ["messages", "Messages"],
];

function groupOf(section) {
  if (section.startsWith("block:")) return "blocks";
  if (section === "tool schemas") return "tools";
  if (section === "summary") return "summary";
  if (section === "messages") return "messages";
  return "system"; // the instructions and the memory metadata
}

export async function showContext(agentName) {
  const overview = await get(path("api/agents", agentName, "context"));
  const tokens = Object.fromEntries(GROUPS.map(([key]) => [key, 0]));
  for (const [section, count] of Object.entries(overview.sections)) {
    tokens[groupOf(section)] += count;
  }
  const window = overview.context_window;
  const share = (count) => `${Math.min(100, (100 * count) / window).toFixed(2)}%`;
  const segments = GROUPS.map(([key, name]) => {
    const segment = h("span", { class: `seg ${key}`, title: `${name}: ${tokens[key]}` });
    segment.style.width = share(tokens[key]); // through the DOM: the page's policy allows no inline style
    return segment;
  });
  const bar = byId("context-bar");
  fill(bar, segments);
  const used = Object.values(tokens).reduce((a, b) => a + b, 0);
  bar.setAttribute("aria-label", `Context window: ${used} of ${window} tokens used`);
  const legend = GROUPS.map(([key, name]) =>
    h("li", {}, h("span", { class: `swatch ${key}` }), `${name} ${tokens[key]}`),
  );
  legend.push(h("li", { class: "total" }, `${used} / ${window} tokens (${overview.model})`));
  fill(byId("context-legend"), legend);
}

/** The Memory tab: one editor per block. */
export class CoreMemory {
  constructor(panel) {
    this.panel = panel;
    this.editors = new Map(); // label -> BlockEditor
    this.agentName = null;
  }

  async show(agentName) {
    const changed = agentName !== this.agentName;
    this.agentName = agentName;
    const blocks = await get(path("api/agents", agentName, "blocks"));
    if (changed) {
      this.editors = new Map();
      fill(this.panel, h("h3", { text: "Core memory" }));
    }
    for (const block of blocks) {
      let editor = this.editors.get(block.label);
      if (!editor) {
        editor = new BlockEditor(agentName, block);
        this.editors.set(block.label, editor);
        this.panel.append(editor.element);
      }
      editor.update(block);
    }
  }
}

class BlockEditor {
  constructor(agentName, block) {
    this.agentName = agentName;
    this.label = block.label;
    this.stored = block.value; // what the block held when last read: the save's `expected`
    const id = newId("block");
    this.text = h("textarea", { id, rows: 4, spellcheck: "true" });
    this.text.addEventListener("input", () => this.count());
    this.size = h("span", { class: "size", "aria-live": "polite" });
    this.error = errorLine();
    this.history = h("div", { class: "history" });
    const details = h("details", {}, h("summary", {}, "History"), this.history);
    details.addEventListener("toggle", () => details.open && this.showHistory());
    this.details = details;
    this.save = h("button", { type: "button", onclick: () => this.saved() }, "Save");
    this.revert = h("button", { type: "button", class: "danger", onclick: () => this.reverted() }, "Revert");
    this.element = h(
      "div",
      { class: "block" },
      h("div", { class: "block-head" }, h("label", { for: id, text: block.label }), this.size),
      block.description ? h("p", { class: "hint", text: block.description }) : null,
      this.text,
      this.error,
      h("div", { class: "actions" }, this.save, this.revert),
      details,
    );
    this.text.value = block.value;
  }

  /** The block as stored now; the user's unsaved text is kept. */
  update(block) {
    const editing = this.text.value !== this.stored;
    this.limit = block.limit;
    this.text.readOnly = block.read_only;
    this.save.hidden = block.read_only;
    this.revert.hidden = block.read_only;
    if (!editing) {
      this.text.value = block.value;
      this.stored = block.value;
    }
    this.count();
  }

  count() {
    const size = this.text.value.length;
    this.size.textContent = `${size} / ${this.limit}`;
    this.element.classList.toggle("over", size > this.limit);
  }

  async saved() {
    this.error.textContent = "";
    try {
      const route = path("api/agents", this.agentName, "blocks", this.label);
      const block = await put(route, { value: this.text.value, expected: this.stored });
      this.stored = block.value;
      this.text.value = block.value;
      this.count();
      this.error.textContent = "";
      this.element.dispatchEvent(new CustomEvent("block-saved", { bubbles: true }));
      if (this.details.open) await this.showHistory();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.error.textContent = error.message; // the user's text stays in the box
      await this.reread();
    }
  }

  /** After a refused save: the block as stored now, which a second Save
   * replaces (the user has been told) and Revert brings into the box. */
  async reread() {
    const block = await get(path("api/agents", this.agentName, "blocks", this.label));
    if (block.value !== this.stored) {
      this.stored = block.value;
      this.error.textContent +=
        ". Its new text is in History: Save again to replace it, or Revert to take it.";
    }
    this.limit = block.limit;
    this.count();
  }

  reverted() {
    this.text.value = this.stored;
    this.error.textContent = "";
    this.count();
  }

  async showHistory() {
    const route = path("api/agents", this.agentName, "block-history", this.label);
    const history = await get(route);
    const versions = [...history.versions].reverse(); // the newest first
    fill(
      this.history,
      h(
        "ol",
        { class: "versions" },
        versions.map((version) =>
          h(
            "li",
            {},
            h("p", { class: "meta" }, `Version ${version.number}, ${when(version.created_at)}, by ${version.author}`),
            diffView(version.diff),
          ),
        ),
      ),
    );
  }
}

function diffView(diff) {
  const lines = diff.split("\n").filter((line) => !line.startsWith("---") && !line.startsWith("+++"));
  return h(
    "pre",
    { class: "diff" },
    lines.map((line) => {
      const kind = line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "";
      return h(kind === "add" ? "ins" : kind === "del" ? "del" : "span", { class: kind || null }, `${line}\n`);
    }),
  );
}
