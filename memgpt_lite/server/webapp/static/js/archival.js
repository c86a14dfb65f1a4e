// Archival memory: search it (by words, tags and dates), insert, delete;
// a superseded passage is marked with the one that replaced it.

import { ApiError, del, get, path, post } from "./api.js";
import { errorLine, field, fill, h, when } from "./dom.js";

const PAGE = 20;

function tagList(text) {
  return text
    .split(",")
    .map((tag) => tag.trim())
    .filter(Boolean);
}

export class Archival {
  constructor(panel) {
    this.panel = panel;
    this.agentName = null;
    this.query = h("input", { type: "search", name: "query" });
    this.tags = h("input", { type: "text", name: "tags", placeholder: "comma-separated" });
    this.start = h("input", { type: "date", name: "start" });
    this.end = h("input", { type: "date", name: "end" });
    this.count = h("p", { class: "count", "aria-live": "polite" });
    this.results = h("ol", { class: "passages" });
    this.error = errorLine();
    this.newText = h("textarea", { name: "text", rows: 3 });
    this.newTags = h("input", { type: "text", name: "new-tags", placeholder: "comma-separated" });
    this.insertError = errorLine();
    fill(
      panel,
      h("h3", { text: "Archival memory" }),
      h(
        "form",
        { class: "filters", role: "search", "aria-label": "Archival memory", onsubmit: (e) => this.searched(e) },
        field("Search for", this.query),
        field("Tags", this.tags),
        field("From", this.start),
        field("To", this.end),
        h("button", { type: "submit" }, "Search"),
      ),
      this.error,
      this.count,
      this.results,
      h("h3", { text: "Insert a passage" }),
      h(
        "form",
        { class: "insert", onsubmit: (e) => this.inserted(e) },
        field("Passage", this.newText),
        field("Its tags", this.newTags),
        h("button", { type: "submit" }, "Insert"),
      ),
      this.insertError,
    );
  }

  /** The agent's passages; for the same agent again (after a step), the
   * same search again, as its memory may have changed. */
  async show(agentName) {
    if (agentName !== this.agentName) {
      this.agentName = agentName;
      for (const input of [this.query, this.tags, this.start, this.end]) input.value = "";
    }
    await this.search();
  }

  route(...parts) {
    return path("api/agents", this.agentName, "passages", ...parts);
  }

  async searched(event) {
    event.preventDefault();
    await this.search();
  }

  /** Passages for the query (best first), or without one the newest. */
  async search() {
    const params = new URLSearchParams({ limit: PAGE });
    for (const tag of tagList(this.tags.value)) params.append("tags", tag);
    const query = this.query.value.trim();
    let route = `${this.route()}?`;
    if (query) {
      params.set("query", query);
      if (this.start.value) params.set("start", this.start.value);
      if (this.end.value) params.set("end", this.end.value);
      route = `${this.route("search")}?`;
    }
    this.error.textContent = "";
    try {
      const page = await get(route + params);
      let passages = page.passages;
      if (!query) passages = passages.filter((p) => this.inDates(p)); // the list has no date filter
      this.count.textContent = query
        ? `${page.total} passages match.`
        : `${page.total} passages; the newest shown.`;
      fill(this.results, await Promise.all(passages.map((p) => this.item(p))));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.error.textContent = error.message;
    }
  }

  inDates(passage) {
    const day = passage.created_at.slice(0, 10);
    return (!this.start.value || day >= this.start.value) && (!this.end.value || day <= this.end.value);
  }

  async item(passage) {
    const meta = [when(passage.created_at), ...passage.tags.map((tag) => `#${tag}`)].join(" · ");
    const remove = h("button", { type: "button", class: "danger", onclick: () => this.deleted(passage) }, "Delete");
    return h(
      "li",
      { class: passage.superseded_by ? "passage superseded" : "passage", "data-id": passage.id },
      h("p", { class: "text", text: passage.text }),
      h("p", { class: "meta", text: meta }),
      passage.superseded_by ? await this.replacedBy(passage) : null,
      h("div", { class: "actions" }, remove),
    );
  }

  async replacedBy(passage) {
    const note = h("p", { class: "replaced" }, `Superseded ${when(passage.superseded_at)} by: `);
    try {
      const newer = await get(this.route(passage.superseded_by));
      note.append(h("q", { text: newer.text }));
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 404) throw error;
      note.append("a passage since deleted.");
    }
    return note;
  }

  async deleted(passage) {
    if (!window.confirm(`Delete this passage?\n\n${passage.text.slice(0, 200)}`)) return;
    await del(this.route(passage.id));
    await this.search();
  }

  async inserted(event) {
    event.preventDefault();
    this.insertError.textContent = "";
    try {
      await post(this.route(), { text: this.newText.value, tags: tagList(this.newTags.value) });
      this.newText.value = "";
      this.newTags.value = "";
      await this.search();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.insertError.textContent = error.message;
    }
  }
}
