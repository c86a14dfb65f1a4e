// The items of the conversation's log: the user's messages, the agent's
// inner thoughts, its replies, and its tool calls (which expand to their
// arguments and results); from stored messages, or from a step's events as
// they arrive (`Turn`).

import { h, pretty } from "./dom.js";

const SEND_MESSAGE = "send_message";

export function userItem(text, id) {
  return h(
    "li",
    { class: "msg user", "data-id": id },
    h("span", { class: "who", text: "You" }),
    h("p", { class: "text", text }),
  );
}

export function thoughtItem(text) {
  return h(
    "li",
    { class: "msg thought" },
    h("span", { class: "who", text: "Thought" }),
    h("p", { class: "text", text }),
  );
}

export function replyItem(text) {
  return h(
    "li",
    { class: "msg reply" },
    h("span", { class: "who", text: "Agent" }),
    h("p", { class: "text", text }),
  );
}

export function noteItem(text, kind = "note") {
  return h("li", { class: `msg ${kind}`, role: kind === "error" ? "alert" : null }, text);
}

export function callItem(call) {
  return h(
    "li",
    { class: "msg call", "data-call": call.id },
    h(
      "details",
      {},
      h("summary", {}, "Tool call: ", h("code", { text: call.name })),
      h("h4", { text: "Arguments" }),
      h("pre", { class: "arguments", text: pretty(call.arguments) }),
      h("h4", { text: "Result" }),
      h("pre", { class: "result", text: "(not run yet)" }),
    ),
  );
}

export function setResult(item, content, ok) {
  const result = item.querySelector(".result");
  result.textContent = content;
  item.classList.toggle("failed", !ok);
}

/** The message a send_message call carries, or null. */
export function sentMessage(call) {
  if (call.name !== SEND_MESSAGE) return null;
  try {
    const message = JSON.parse(call.arguments).message;
    return typeof message === "string" ? message : null;
  } catch {
    return null;
  }
}

function assistantItems(message) {
  const items = [];
  if (message.content) {
    const plainReply = message.tool_calls.length === 0;
    items.push(plainReply ? replyItem(message.content) : thoughtItem(message.content));
  }
  for (const call of message.tool_calls) {
    const sent = sentMessage(call);
    items.push(sent !== null ? replyItem(sent) : callItem(call));
  }
  return items;
}

/** The log's items for stored messages, oldest first; each tool result
 * goes into its call's item. */
export function historyItems(messages) {
  const items = [];
  const calls = new Map();
  for (const message of messages) {
    if (message.role === "user") items.push(userItem(message.content ?? "", message.id));
    if (message.role === "assistant") {
      for (const item of assistantItems(message)) {
        if (item.dataset.call) calls.set(item.dataset.call, item);
        items.push(item);
      }
    }
    if (message.role === "tool" && calls.has(message.tool_call_id)) {
      setResult(calls.get(message.tool_call_id), message.content ?? "", true);
    }
  }
  return items;
}

/** One step's items, built from its events as they arrive. */
export class Turn {
  constructor(append, shown) {
    this.append = append; // puts an item at the end of the log
    this.shown = shown; // the log's item of a tool call, if it shows it already
    this.thought = null;
    this.streaming = new Map(); // a model answer's send_message texts, by index
    this.undelivered = []; // reply items whose whole text has not come yet
    this.calls = new Map();
    this.approvals = null; // the calls that wait, if the step stopped for them
    this.failure = null;
  }

  handle(event) {
    const handler = this[`on_${event.type}`];
    if (handler) handler.call(this, event);
  }

  on_request_sent() {
    this.thought = null; // a new answer of the model
    this.streaming = new Map();
  }

  on_thought_delta(event) {
    if (!this.thought) this.thought = this.append(thoughtItem(""));
    this.thought.querySelector(".text").textContent += event.text;
  }

  on_message_delta(event) {
    let item = this.streaming.get(event.index);
    if (!item) {
      item = this.append(replyItem(""));
      this.streaming.set(event.index, item);
      this.undelivered.push(item);
    }
    item.querySelector(".text").textContent += event.text;
  }

  on_tool_call_started(event) {
    if (event.call.name === SEND_MESSAGE) return; // shown as the reply
    // A call that waited for approval is in the log already.
    const item = this.shown(event.call.id) ?? this.append(callItem(event.call));
    this.calls.set(event.call.id, item);
  }

  on_tool_returned(event) {
    const item = this.calls.get(event.call_id);
    if (item) setResult(item, event.content, event.ok);
  }

  on_reply_delivered(event) {
    const item = this.undelivered.shift();
    if (item) {
      item.querySelector(".text").textContent = event.text;
      return;
    }
    const thought = this.thought;
    if (thought && thought.querySelector(".text").textContent.trim() === event.text.trim()) {
      thought.replaceWith(replyItem(event.text)); // a plain-text answer is the reply
      this.thought = null;
      return;
    }
    this.append(replyItem(event.text));
  }

  on_approval_requested(event) {
    this.approvals = event.calls;
  }

  on_step_failed(event) {
    this.failure = event.message;
    this.append(noteItem(event.message, "error"));
  }

  on_compacted(event) {
    this.append(noteItem(`${event.evicted} older messages left the window.`));
  }
}
