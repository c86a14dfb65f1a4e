// The server's HTTP API, as any client calls it: JSON in and out, errors as
// {"detail": "one line"}, a key as "Authorization: Bearer KEY" when the
// server asks for one (a 401), kept in this browser's localStorage.

import { byId } from "./dom.js";

const KEY_ITEM = "memgpt-lite.api-key";

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

/** A route's path, each part encoded (a block label's slashes kept). */
export function path(...parts) {
  return parts.map((part) => String(part).split("/").map(encodeURIComponent).join("/")).join("/");
}

export function storedKey() {
  return localStorage.getItem(KEY_ITEM);
}

export function forgetKey() {
  localStorage.removeItem(KEY_ITEM);
  showKeyButton();
}

function showKeyButton() {
  byId("forget-key").hidden = !storedKey();
}

let asking = null; // the key question on screen, which every 401 waits for

function askForKey(detail) {
  if (asking) return asking;
  const dialog = byId("key-dialog");
  const input = byId("key-input");
  byId("key-reason").textContent =
    `${detail}. Give an API key of yours (memgpt-lite keys create --user NAME).`;
  input.value = "";
  asking = new Promise((resolve) => {
    const answered = (event) => {
      event.preventDefault();
      const key = input.value.trim();
      if (!key) return;
      localStorage.setItem(KEY_ITEM, key);
      byId("key-form").removeEventListener("submit", answered);
      dialog.close();
      showKeyButton();
      asking = null;
      resolve();
    };
    byId("key-form").addEventListener("submit", answered);
  });
  // A key is needed to go on: Escape does not close the question.
  dialog.addEventListener("cancel", (event) => event.preventDefault(), { once: true });
  dialog.showModal();
  input.focus();
  return asking;
}

async function detailOf(response) {
  try {
    const body = await response.json();
    if (typeof body.detail === "string") return body.detail;
    return JSON.stringify(body.detail ?? body);
  } catch {
    return `${response.status} ${response.statusText}`;
  }
}

/** A request to the API; the response itself, once it is not a 401 (the
 * key is asked for, and the request made again). An error status throws. */
export async function send(method, route, body) {
  for (;;) {
    const headers = { Accept: "application/json" };
    const key = storedKey();
    if (key) headers.Authorization = `Bearer ${key}`;
    const init = { method, headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(route, init);
    if (response.status === 401) {
      const detail = await detailOf(response);
      localStorage.removeItem(KEY_ITEM);
      await askForKey(detail);
      continue;
    }
    if (!response.ok) throw new ApiError(response.status, await detailOf(response));
    return response;
  }
}

/** A request whose answer is JSON (null for 204). */
export async function call(method, route, body) {
  const response = await send(method, route, body);
  return response.status === 204 ? null : response.json();
}

export const get = (route) => call("GET", route);
export const post = (route, body) => call("POST", route, body ?? {});
export const put = (route, body) => call("PUT", route, body);
export const patch = (route, body) => call("PATCH", route, body);
export const del = (route) => call("DELETE", route);

/** The events of a streamed answer (server-sent events over fetch), each
 * the parsed `data` of one frame, as they arrive. */
export async function* events(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += value.replaceAll("\r\n", "\n");
    let end = buffered.indexOf("\n\n");
    while (end >= 0) {
      const frame = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = frame
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) yield JSON.parse(data);
      end = buffered.indexOf("\n\n");
    }
  }
}

showKeyButton();
