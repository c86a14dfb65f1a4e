// The app: which agent is open (the address's #/NAME/VIEW), and the views
// of it, kept up to date after each step and edit.

import { deleteAgent, exportAgent, listAgents, offerModels, setUpCreate, setUpImport, showAgents } from "./agents.js";
import { forgetKey, get, path } from "./api.js";
import { Archival } from "./archival.js";
import { Chat } from "./chat.js";
import { byId, say } from "./dom.js";
import { CoreMemory, showContext } from "./memory.js";
import { ConversationSearch, Settings, Tools } from "./panels.js";

const VIEWS = ["memory", "archival", "history", "tools", "settings"];

let agents = [];
let current = null; // the open agent, as GET /api/agents/{agent} shows it

const chat = new Chat(() => refresh());
const memory = new CoreMemory(byId("panel-memory"));
const archival = new Archival(byId("panel-archival"));
const search = new ConversationSearch(byId("panel-history"));
const tools = new Tools(byId("panel-tools"), () => refresh());
const settings = new Settings(byId("panel-settings"), () => refresh());

/** The agent named in the address, and the view it asks for. */
function wanted() {
  const [name, view] = location.hash.replace(/^#\/?/, "").split("/");
  return { name: name ? decodeURIComponent(name) : null, view: VIEWS.includes(view) ? view : null };
}

async function showList() {
  agents = await listAgents();
  showAgents(agents, current?.name);
}

async function follow() {
  const { name, view } = wanted();
  if (view) select(view);
  if (!name) {
    if (agents.length) location.replace(`#/${encodeURIComponent(agents[0].name)}`);
    else close();
    return;
  }
  if (current?.name === name) return;
  try {
    await open(await get(path("api/agents", name)));
  } catch (error) {
    if (error.status !== 404) throw error;
    say(`There is no agent named ${name}.`);
    close();
  }
}

async function open(agent) {
  current = agent;
  showAgents(agents, agent.name);
  byId("chat-title").textContent = agent.display_name ?? agent.name;
  document.querySelector(".chat-head-actions").hidden = false;
  byId("mind").hidden = false;
  await Promise.all([chat.open(agent), showMind()]);
}

function close() {
  current = null;
  byId("chat-title").textContent = agents.length ? "No agent chosen" : "No agents yet";
  document.querySelector(".chat-head-actions").hidden = true;
  byId("mind").hidden = true;
  chat.close();
}

async function showMind() {
  const name = current.name;
  await Promise.all([
    showContext(name),
    memory.show(name),
    archival.show(name),
    tools.show(current),
    offerModels(),
  ]);
  search.show(name);
  settings.show(current);
}

/** After a step or a change: the agent as stored now, in every view. */
async function refresh() {
  if (!current) return;
  current = await get(path("api/agents", current.name));
  await showMind();
}

function select(view) {
  for (const name of VIEWS) {
    const tab = byId(`tab-${name}`);
    const chosen = name === view;
    tab.setAttribute("aria-selected", String(chosen));
    tab.tabIndex = chosen ? 0 : -1;
    byId(`panel-${name}`).hidden = !chosen;
  }
}

function setUpTabs() {
  const tabs = VIEWS.map((name) => byId(`tab-${name}`));
  tabs.forEach((tab, i) => {
    tab.addEventListener("click", () => select(VIEWS[i]));
    tab.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (!step) return;
      const next = (i + step + tabs.length) % tabs.length;
      select(VIEWS[next]);
      tabs[next].focus();
    });
  });
}

function setUpActions() {
  setUpCreate(async (agent) => {
    await showList();
    location.hash = `#/${encodeURIComponent(agent.name)}`;
  });
  setUpImport(async (name) => {
    await showList();
    if (name) location.hash = `#/${encodeURIComponent(name)}`;
  });
  byId("export-agent").addEventListener("click", () => exportAgent(current));
  byId("delete-agent").addEventListener("click", async () => {
    if (!(await deleteAgent(current))) return;
    current = null;
    await showList();
    location.hash = agents.length ? `#/${encodeURIComponent(agents[0].name)}` : "#/";
    if (!agents.length) close();
  });
  byId("forget-key").addEventListener("click", () => {
    forgetKey();
    say("The key is forgotten: the next request asks for one.");
  });
  byId("panel-memory").addEventListener("block-saved", () => showContext(current.name));
  document.querySelector(".skip").addEventListener("click", (event) => {
    event.preventDefault(); // the address names the agent, not a place in the page
    byId("message").focus();
  });
  window.addEventListener("hashchange", follow);
}

async function start() {
  setUpTabs();
  setUpActions();
  await showList();
  await follow();
  document.body.dataset.ready = "true"; // for scripts and tests: the first view is shown
}

start();
