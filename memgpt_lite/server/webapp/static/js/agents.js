// The agents: the list, a new agent (blocks, model, tool set), import of an
// agent file (.af or ours), export, delete.

import { ApiError, del, get, path, post } from "./api.js";
import { byId, fill, h, newId, say } from "./dom.js";

const DEFAULT_BLOCKS = [
  { label: "persona", value: "I am a helpful assistant who remembers what matters.", limit: 2000 },
  { label: "human", value: "", limit: 2000 },
];

export async function listAgents() {
  return get("api/agents");
}

/** The agents in the list, each a link to its chat; `current` marked. */
export function showAgents(agents, current) {
  const items = agents.map((agent) => {
    const link = h(
      "a",
      { href: `#/${encodeURIComponent(agent.name)}`, "aria-current": agent.name === current ? "page" : null },
      agent.display_name ?? agent.name,
    );
    return h("li", {}, link, h("span", { class: "model", text: agent.llm.model }));
  });
  if (!items.length) items.push(h("li", { class: "hint" }, "No agents yet: make one with New agent."));
  fill(byId("agent-list"), items);
}

function blockRow(block) {
  const id = newId("new-block");
  return h(
    "div",
    { class: "new-block" },
    h("label", { for: `${id}-label`, text: "Label" }),
    h("input", { id: `${id}-label`, class: "label", value: block.label, required: true }),
    h("label", { for: `${id}-limit`, text: "Limit" }),
    h("input", { id: `${id}-limit`, class: "limit", type: "number", min: 1, value: String(block.limit) }),
    h("label", { for: `${id}-value`, text: "Text" }),
    h("textarea", { id: `${id}-value`, class: "value", rows: 2, value: block.value }),
  );
}

function formBlocks() {
  return [...byId("create-blocks").querySelectorAll(".new-block")].map((row) => ({
    label: row.querySelector(".label").value.trim(),
    value: row.querySelector(".value").value,
    limit: Number(row.querySelector(".limit").value) || 2000,
  }));
}

/** The New agent dialog; `created(agent)` is called with the agent made. */
export function setUpCreate(created) {
  const dialog = byId("create-dialog");
  byId("new-agent").addEventListener("click", async () => {
    byId("create-form").reset();
    byId("create-error").textContent = "";
    fill(byId("create-blocks"), h("legend", {}, "Core memory blocks"), DEFAULT_BLOCKS.map(blockRow));
    dialog.showModal();
    await offerModels();
  });
  byId("add-block").addEventListener("click", () => {
    byId("create-blocks").append(blockRow({ label: "", value: "", limit: 2000 }));
  });
  byId("create-cancel").addEventListener("click", () => dialog.close());
  byId("create-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const tools = byId("create-tools").value.split(",").map((t) => t.trim()).filter(Boolean);
    const body = {
      name: byId("create-name").value.trim(),
      model: byId("create-model").value.trim(),
      blocks: formBlocks(),
      settings: { tool_set: byId("create-tool-set").value },
      tools,
    };
    try {
      const agent = await post("api/agents", body);
      dialog.close();
      created(agent);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      byId("create-error").textContent = error.message;
    }
  });
}

/** The models the server knows, offered in the model fields. */
export async function offerModels() {
  const list = byId("model-list");
  if (!list.childElementCount) {
    try {
      const models = await get("v1/models/");
      fill(list, models.map((m) => h("option", { value: m.name })));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error; // no list: the field takes any name
    }
  }
  const model = byId("create-model");
  if (!model.value && list.firstElementChild) model.value = list.firstElementChild.value;
}

/** Import an agent file chosen in the file field; `imported(name)` after. */
export function setUpImport(imported) {
  const input = byId("import-file");
  input.addEventListener("change", async () => {
    const file = input.files[0];
    if (!file) return;
    try {
      const report = await importFile(JSON.parse(await file.text()));
      if (!report) return;
      say(`Imported ${report.name}.`);
      imported(report.name);
    } catch (error) {
      if (!(error instanceof ApiError) && !(error instanceof SyntaxError)) throw error;
      say(`Import failed: ${error.message}`);
    } finally {
      input.value = "";
    }
  });
}

/** The file stored as a new agent; under another name if its own is taken. */
async function importFile(file) {
  let route = "api/agents/import";
  for (;;) {
    try {
      return await post(route, file);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 409) throw error;
      const name = window.prompt(`${error.message}. Import it under another name:`);
      if (!name) return null;
      route = `api/agents/import?${new URLSearchParams({ name })}`;
    }
  }
}

export async function exportAgent(agent) {
  const file = await get(path("api/agents", agent.name, "export"));
  const link = h("a", {
    href: URL.createObjectURL(new Blob([JSON.stringify(file, null, 2)], { type: "application/json" })),
    download: `${agent.name}.af`,
  });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

export async function deleteAgent(agent) {
  const named = agent.display_name ?? agent.name;
  if (!window.confirm(`Delete ${named}, with its messages and archival memory?`)) return false;
  await del(path("api/agents", agent.name));
  say(`Deleted ${named}.`);
  return true;
}
