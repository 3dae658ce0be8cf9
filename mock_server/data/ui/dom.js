// Small DOM and formatting helpers shared by every view.
//
// Every piece of data goes into the page as text (textContent, attribute values), never
// as HTML: order fields, webhook bodies and error details are whatever a client sent.

/** el("td", {class: "num", text: "3"}, child, ...): an element with attributes and children. */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = String(value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  add(node, ...children);
  return node;
}

/** Append nodes, strings, numbers or arrays of them; null, undefined and false are skipped. */
export function add(node, ...children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) add(node, ...child);
    else if (typeof child === "string" || typeof child === "number") {
      node.appendChild(document.createTextNode(String(child)));
    } else node.appendChild(child);
  }
  return node;
}

/** Replace every child of `node`; keeps the keyboard focus on an element that has an id. */
export function replaceChildren(node, ...children) {
  const focusedId = document.activeElement && document.activeElement.id;
  node.replaceChildren();
  add(node, ...children);
  if (focusedId && !document.activeElement?.id) document.getElementById(focusedId)?.focus();
  return node;
}

/** Money the JSON edge gives in major units (orders, balances): "20.00". */
export function money(amount) {
  return amount === null || amount === undefined ? "—" : Number(amount).toFixed(2);
}

/** Money the catalog gives in integer cents: "20.00". */
export function cents(amount) {
  return amount === null || amount === undefined ? "—" : (amount / 100).toFixed(2);
}

export function shortId(id) {
  return String(id).slice(0, 8);
}

export function statusBadge(status) {
  return el("span", { class: `badge badge-${status}`, text: status });
}

/** A table whose header is `columns` (strings); rows are added by the caller. */
export function table(caption, columns, className) {
  const tbody = el("tbody");
  const node = el(
    "table",
    { class: className || "" },
    caption ? el("caption", { class: "visually-hidden", text: caption }) : null,
    el("thead", {}, el("tr", {}, columns.map((c) => el("th", { scope: "col", text: c })))),
    tbody,
  );
  // Wide tables scroll inside their own box, so a narrow window never scrolls sideways.
  return { node: el("div", { class: "table-box" }, node), tbody };
}

/** A definition list of [term, value] pairs; values may be nodes. */
export function facts(pairs) {
  return el(
    "dl",
    { class: "facts" },
    pairs.map(([term, value]) => [el("dt", { text: term }), el("dd", {}, value)]),
  );
}

/** A message line for the result of an action: ok or error, announced to screen readers. */
export function notice(node, text, kind) {
  node.textContent = text;
  node.className = `notice ${kind || ""}`;
  node.hidden = !text;
}

export function errorText(error) {
  if (error && error.status) return `${error.status} ${error.code || ""}: ${error.detail}`;
  return String((error && error.message) || error);
}

/** Run `fn` once, `ms` after the last call: many live events, one re-read. */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/**
 * "90", "90s", "5m", "1h30m", "1.5h", "2d": seconds, or null when it is not a duration.
 * The same units the scenario language uses (ms, s, m, h, d).
 */
export function parseDuration(text) {
  const trimmed = String(text).trim().toLowerCase().replace(/\s+/g, "");
  if (!trimmed) return null;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  const unit = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };
  let total = 0;
  let rest = trimmed;
  while (rest) {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)/.exec(rest);
    if (!match) return null;
    total += Number(match[1]) * unit[match[2]];
    rest = rest.slice(match[0].length);
  }
  return total;
}

/** Seconds as a short human duration: 61 -> "1 min 1 s". */
export function humanSeconds(seconds) {
  const parts = [];
  let left = Math.round(seconds * 1000) / 1000;
  for (const [size, name] of [
    [86400, "d"],
    [3600, "h"],
    [60, "min"],
  ]) {
    if (left >= size) {
      parts.push(`${Math.floor(left / size)} ${name}`);
      left -= Math.floor(left / size) * size;
    }
  }
  if (left || !parts.length) parts.push(`${Math.round(left * 1000) / 1000} s`);
  return parts.join(" ");
}

/** Seconds between two ISO times the server gave. */
export function secondsBetween(fromIso, toIso) {
  return (Date.parse(toIso) - Date.parse(fromIso)) / 1000;
}

/** A JSON document pretty-printed, or the text itself when it is not JSON. */
export function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return String(text);
  }
}

/** A labelled control: <div class="field"><label for=id>label</label>control</div>. */
export function field(id, label, control, hint) {
  return el(
    "div",
    { class: "field" },
    el("label", { for: id, text: label }),
    control,
    hint ? el("span", { class: "hint", text: hint }) : null,
  );
}

/** One ledger entry as a table row; `withOrder` adds the order column (an account's
 * ledger shows it, an order's own entries need not). */
export function ledgerRow(entry, withOrder) {
  const order = entry.order_id
    ? el("a", { href: `#/orders/${entry.order_id}`, text: shortId(entry.order_id) })
    : "—";
  return el(
    "tr",
    {},
    el("td", { text: entry.kind }),
    el("td", { class: "num", text: money(entry.amount) }),
    el("td", { class: "num", text: money(entry.balance_after) }),
    withOrder ? el("td", { class: "mono" }, order) : null,
    el("td", { text: entry.at }),
  );
}

