// Small helpers for building the page: no framework, no templates.

/** An element: `props` sets attributes ("class", "for", aria-*, data-*),
 * `text`, and listeners (`onclick`...); children are nodes or strings. */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") element.textContent = value;
    else if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "value") element.value = value;
    else element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) element.append(child);
  }
  return element;
}

export function byId(id) {
  return document.getElementById(id);
}

/** Replace an element's children. */
export function fill(element, ...children) {
  element.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}

/** A time as the reader's locale writes it, to the minute. */
export function when(iso) {
  if (!iso) return "";
  const time = new Date(iso);
  return time.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

let unique = 0;
/** An id no other element of the page has. */
export function newId(prefix) {
  unique += 1;
  return `${prefix}-${unique}`;
}

/** A labelled field: a <label> and its control, the label naming it. */
export function field(labelText, control) {
  if (!control.id) control.id = newId("field");
  return h("div", { class: "field" }, h("label", { for: control.id, text: labelText }), control);
}

/** A line that says what went wrong, read out when it appears. */
export function errorLine() {
  return h("p", { class: "error", role: "alert" });
}

/** JSON text pretty-printed when it parses, else as it is. */
export function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** Say something in the header's status line (read out politely). */
export function say(text) {
  byId("status").textContent = text;
}
