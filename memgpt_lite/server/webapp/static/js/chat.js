// The chat with one agent: its recent messages (older ones a page at a
// time), a message box whose replies stream in, approvals of waiting tool
// calls, and retry or pop for a message that was never answered.

import { ApiError, del, events, get, path, send } from "./api.js";
import { byId, field, fill, h } from "./dom.js";
import { Turn, historyItems, noteItem, userItem } from "./messages.js";

const SHOWN_MESSAGES = 100;

export class Chat {
  /** `stepped` is called after every step, to refresh what it may have changed. */
  constructor(stepped) {
    this.stepped = stepped;
    this.agent = null;
    this.log = byId("log");
    this.form = byId("send-form");
    this.box = byId("message");
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit();
    });
    this.box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.submit();
      }
    });
  }

  route(...parts) {
    return path("api/agents", this.agent.name, ...parts);
  }

  append(item) {
    const atEnd = this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 40;
    this.log.append(item);
    if (atEnd) this.log.scrollTop = this.log.scrollHeight;
    return item;
  }

  async open(agent) {
    this.agent = agent;
    this.form.hidden = false;
    await this.reload();
  }

  /** The stored conversation, the calls that wait, the unanswered message. */
  async reload() {
    const name = this.agent.name;
    const [page, waiting, unanswered] = await Promise.all([
      get(`${this.route("messages")}?limit=${SHOWN_MESSAGES}`),
      get(this.route("approvals")),
      get(this.route("unanswered")),
    ]);
    if (this.agent?.name !== name) return; // another agent was chosen meanwhile
    fill(this.log, historyItems(page.messages));
    this.older = page.total - page.messages.length; // stored before the oldest shown
    if (this.older > 0) this.log.prepend(this.olderItem());
    this.markUnanswered(unanswered.messages);
    if (waiting.length) this.append(this.approvalItem(waiting));
    this.log.scrollTop = this.log.scrollHeight;
  }

  /** A button that shows the messages stored before the oldest shown, a page at a time. */
  olderItem() {
    const button = h("button", { type: "button" }, "Show older messages");
    const item = h("li", { class: "msg older" }, button);
    button.addEventListener("click", () => this.showOlder(item));
    return item;
  }

  async showOlder(item) {
    const name = this.agent.name;
    const messages = this.route("messages");
    // Counted from the newest, which steps since the load have moved on.
    const { total } = await get(`${messages}?limit=1`);
    const limit = Math.min(SHOWN_MESSAGES, this.older);
    const page = await get(`${messages}?limit=${limit}&offset=${total - this.older}`);
    if (this.agent?.name !== name) return; // another agent was chosen meanwhile
    const height = this.log.scrollHeight;
    item.after(...historyItems(page.messages));
    this.older -= page.messages.length;
    if (this.older <= 0 || !page.messages.length) item.remove();
    this.log.scrollTop += this.log.scrollHeight - height; // the view stays where it was
  }

  async submit() {
    const text = this.box.value;
    if (!text.trim()) return;
    this.box.value = "";
    this.append(userItem(text));
    await this.step("messages", { message: text, stream: true });
  }

  /** Run one step through a streamed route, showing its events as they
   * come; after the steps sent before it, as the server runs them. */
  step(route, body) {
    const name = this.agent.name; // this agent's, though another be shown when it runs
    const target = this.route(route);
    const run = async () => {
      this.form.setAttribute("aria-busy", "true");
      try {
        await this.streamed(name, target, body);
      } finally {
        if (this.running === queued) this.form.removeAttribute("aria-busy");
      }
    };
    const queued = (this.running ?? Promise.resolve()).catch(() => {}).then(run);
    this.running = queued;
    return queued;
  }

  async streamed(name, target, body) {
    const shown = () => this.agent?.name === name; // another agent's log is not written to
    const turn = new Turn(
      (item) => (shown() ? this.append(item) : item),
      (callId) => this.log.querySelector(`.msg.call[data-call="${CSS.escape(callId)}"]`),
    );
    try {
      const response = await send("POST", target, body);
      for await (const event of events(response)) turn.handle(event);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      turn.append(noteItem(error.message, "error"));
    }
    if (!shown()) return;
    if (turn.failure) {
      await this.reload(); // shows the unanswered message's choices
      this.append(noteItem(turn.failure, "error"));
    } else if (turn.approvals) this.append(this.approvalItem(turn.approvals));
    this.stepped();
  }

  /** The calls that wait, with Approve and Deny for all of them; when
   * several wait, each has its own too, and the answers go once every call
   * has one. */
  approvalItem(calls) {
    const reason = h("input", { type: "text", name: "reason" });
    let item;
    const answer = async (body) => {
      item.remove();
      await this.step("approvals", { ...body, stream: true });
    };
    const all = (approve) => () => answer({ approve, reason: reason.value });
    const chosen = new Map();
    const choose = (call, approve, row) => () => {
      chosen.set(call.id, approve);
      row.dataset.answer = approve ? "approved" : "denied";
      for (const button of row.querySelectorAll("button")) {
        button.setAttribute("aria-pressed", String(button.dataset.approve === String(approve)));
      }
      if (chosen.size < calls.length) return;
      const approvals = calls.map((each) => ({
        approve: chosen.get(each.id),
        reason: reason.value,
        tool_call_id: each.id,
      }));
      answer({ approvals });
    };
    const listed = calls.map((call, index) => {
      const row = h(
        "li",
        {},
        h(
          "details",
          { open: true },
          h("summary", {}, h("code", { text: call.name })),
          h("pre", { text: call.arguments }),
        ),
      );
      if (calls.length > 1) {
        const own = (approve, verb) =>
          h(
            "button",
            {
              type: "button",
              "aria-pressed": "false",
              "aria-label": `${verb} call ${index + 1} (${call.name})`,
              "data-approve": String(approve),
              onclick: choose(call, approve, row),
            },
            verb,
          );
        row.append(h("div", { class: "actions" }, own(true, "Approve"), own(false, "Deny")));
      }
      return row;
    });
    const several = calls.length > 1;
    item = h(
      "li",
      { class: "msg approval" },
      h("p", { text: `Waiting for your approval (${calls.length} call${several ? "s" : ""}):` }),
      h("ul", { class: "calls" }, listed),
      field("Reason", reason),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", onclick: all(true) }, several ? "Approve all" : "Approve"),
        h(
          "button",
          { type: "button", class: "danger", onclick: all(false) },
          several ? "Deny all" : "Deny",
        ),
      ),
    );
    return item;
  }

  /** Mark the messages that were never answered; the last can be sent again or dropped. */
  markUnanswered(messages) {
    const userItems = [...this.log.querySelectorAll(".msg.user")];
    const last = userItems[userItems.length - 1];
    for (const message of messages) {
      const item = this.log.querySelector(`.msg.user[data-id="${CSS.escape(message.id)}"]`);
      if (!item) continue;
      item.classList.add("unanswered");
      const note = h("p", { class: "note" }, "Not answered.");
      if (item === last) {
        note.append(
          " ",
          h("button", { type: "button", onclick: () => this.retry(message) }, "Retry"),
          " ",
          h("button", { type: "button", onclick: () => this.pop(message) }, "Pop"),
        );
      }
      item.append(note);
    }
  }

  async pop(message) {
    await this.dropped(message);
    await this.reload();
    this.stepped();
  }

  /** Drop the unanswered message and send its text again. */
  async retry(message) {
    await this.dropped(message);
    await this.reload();
    this.append(userItem(message.content ?? ""));
    await this.step("messages", { message: message.content ?? "", stream: true });
  }

  async dropped(message) {
    try {
      await del(this.route("unanswered", message.id));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.append(noteItem(error.message, "error"));
    }
  }

  close() {
    this.agent = null;
    this.form.hidden = true;
    fill(this.log);
  }
}
