// One order's whole life: every field the merchant sees, its statuses on the virtual clock,
// the scenario that drove it and why, its ledger entries, its webhook deliveries with every
// attempt (redeliver), and the client-code form while it waits in need_client_code.

import { control, get, merchant } from "./api.js";
import { orderOfDelivery } from "./clock.js";
import {
  debounce,
  el,
  errorText,
  facts,
  field,
  humanSeconds,
  ledgerRow,
  money,
  notice,
  pretty,
  replaceChildren,
  secondsBetween,
  statusBadge,
  table,
} from "./dom.js";
import * as store from "./store.js";
import { statusTimeline, stepsTimeline } from "./timeline.js";

const MONEY_FIELDS = new Set(["price", "refund_amount"]);

export function mountOrder(main, [orderId]) {
  const summary = el("section", { "aria-labelledby": "order-fields-title" });
  const life = el("section", { "aria-labelledby": "order-life-title" });
  const ledger = el("section", { "aria-labelledby": "order-ledger-title" });
  const deliveries = el("section", { id: "deliveries", "aria-labelledby": "deliveries-title" });
  const problem = el("p", { class: "notice", role: "alert", hidden: true });
  const clientCode = clientCodeForm(orderId);

  main.append(
    el("p", {}, el("a", { href: "#/orders", text: "← All orders" })),
    el("h2", {}, "Order ", el("span", { class: "mono", text: orderId })),
    problem,
    clientCode.node,
    el("div", { class: "columns" }, el("div", {}, life, ledger), summary),
    deliveries,
  );

  async function load() {
    try {
      const detail = await get(`/_mock/orders/${encodeURIComponent(orderId)}`);
      notice(problem, "");
      for (const delivery of detail.deliveries) orderOfDelivery.set(delivery.id, orderId);
      clientCode.show(detail.order.status === "need_client_code", detail.account_id);
      renderFields(summary, detail.order);
      await renderLife(life, detail);
      renderDeliveries(deliveries, detail.deliveries);
      await renderLedger(ledger, detail.account_id, orderId);
    } catch (error) {
      notice(problem, errorText(error), "error");
    }
  }

  const loadSoon = debounce(load, 60);
  load();

  return {
    onEvent(name, data) {
      const mine =
        (name === "order" && data.order.id === orderId) ||
        (name === "delivery" && data.order_id === orderId);
      if (mine) loadSoon();
    },
    refresh: load,
  };
}

function renderFields(section, order) {
  const pairs = Object.entries(order).map(([key, value]) => [key, fieldValue(key, value)]);
  replaceChildren(section, el("h3", { id: "order-fields-title", text: "Fields" }), facts(pairs));
}

/** One order field, as readable text: money in major units, objects as key: value lines. */
function fieldValue(key, value) {
  if (key === "status") return statusBadge(value);
  if (MONEY_FIELDS.has(key)) return money(value);
  if (value === null || value === "") return el("span", { class: "muted", text: "—" });
  if (Array.isArray(value)) {
    return value.length
      ? el("ul", { class: "plain mono" }, value.map((item) => el("li", { text: String(item) })))
      : el("span", { class: "muted", text: "none" });
  }
  if (typeof value === "object") {
    const entries = Object.entries(value);
    if (!entries.length) return el("span", { class: "muted", text: "none" });
    return el(
      "ul",
      { class: "plain" },
      entries.map(([k, v]) => el("li", {}, el("span", { class: "muted", text: `${k}: ` }), String(v ?? "—"))),
    );
  }
  return el("span", { class: typeof value === "number" ? "" : "mono", text: String(value) });
}

async function renderLife(section, detail) {
  const scenarios = await store.scenarios().catch(() => ({ scenarios: [] }));
  const scenario = scenarios.scenarios.find((candidate) => candidate.name === detail.scenario);
  const reason = detail.scenario_reason || {};
  replaceChildren(
    section,
    el("h3", { id: "order-life-title", text: "Status timeline" }),
    statusTimeline(detail.history),
    el("h3", { text: "Scenario" }),
    facts([
      ["scenario", el("span", { id: "order-scenario", class: "mono", text: detail.scenario })],
      ["chosen by", el("span", { id: "order-scenario-source", text: reason.source || "—" })],
      ["why", el("span", { id: "order-scenario-reason", text: reason.detail || "—" })],
    ]),
    scenario ? stepsTimeline(scenario.steps) : null,
  );
}

async function renderLedger(section, accountId, orderId) {
  const query = `?order_id=${encodeURIComponent(orderId)}`;
  const ledger = await get(`/_mock/accounts/${encodeURIComponent(accountId)}/ledger${query}`);
  const entries = ledger.entries;
  const { node, tbody } = table("Ledger entries of this order", ["Kind", "Amount", "Balance after", "At"]);
  tbody.append(...entries.map((entry) => ledgerRow(entry, false)));
  replaceChildren(
    section,
    el("h3", { id: "order-ledger-title", text: "Ledger" }),
    entries.length ? node : el("p", { class: "muted", text: "No balance movement." }),
    el("p", { class: "muted small" }, el("a", { href: `#/accounts/${accountId}`, text: "The account's whole ledger" })),
  );
}

function renderDeliveries(section, deliveries) {
  replaceChildren(
    section,
    el("h3", { id: "deliveries-title", text: `Webhook deliveries (${deliveries.length})` }),
    deliveries.length
      ? deliveries.map(deliveryBlock)
      : el("p", { class: "muted", text: "None: the account has no webhook_url, or the order has not settled." }),
  );
}

function deliveryBlock(delivery) {
  const result = el("p", { class: "notice", role: "status", hidden: true });
  const redeliver = el("button", {
    type: "button",
    id: `redeliver-${delivery.id}`,
    text: "Redeliver now",
  });
  redeliver.addEventListener("click", async () => {
    redeliver.disabled = true;
    try {
      // The answer is the delivery with the new attempt; the `delivery` event re-reads it too.
      const answer = await control("POST", `/_mock/webhooks/${encodeURIComponent(delivery.id)}/redeliver`);
      const last = answer.attempts[answer.attempts.length - 1];
      notice(result, `Sent again: ${last.status_code ?? last.error}`, last.status_code === 200 ? "ok" : "");
    } catch (error) {
      notice(result, errorText(error), "error");
    } finally {
      redeliver.disabled = false;
    }
  });
  return el(
    "article",
    { class: "delivery", "data-delivery": delivery.id, "aria-label": `Delivery ${delivery.id}` },
    el(
      "header",
      { class: "delivery-head" },
      el("h4", {}, `Delivery ${delivery.copy ? `copy ${delivery.copy}` : ""} `, statusBadge(delivery.status)),
      redeliver,
    ),
    result,
    facts([
      ["id", el("span", { class: "mono", text: delivery.id })],
      ["url", el("span", { class: "mono", text: delivery.url ?? "— (not sent yet)" })],
      ["next attempt", delivery.next_attempt_at ?? "—"],
    ]),
    attemptsTable(delivery.attempts),
    el(
      "details",
      {},
      el("summary", { text: "Signed body and headers" }),
      el("h5", { text: "Headers" }),
      facts(Object.entries(delivery.headers || {}).map(([name, value]) => [name, el("span", { class: "mono", text: value })])),
      el("h5", { text: "Body (the exact bytes sent)" }),
      el("pre", { class: "code", text: delivery.body }),
      el("h5", { text: "Body, indented" }),
      el("pre", { class: "code", text: pretty(delivery.body) }),
    ),
  );
}

function attemptsTable(attempts) {
  const { node, tbody } = table(
    "Attempts",
    ["#", "At", "Since previous", "Status code", "Error", "Duration", "Kind"],
    "attempts",
  );
  attempts.forEach((attempt, index) => {
    const gap = index ? `+${humanSeconds(secondsBetween(attempts[index - 1].at, attempt.at))}` : "";
    tbody.append(
      el(
        "tr",
        { class: attempt.status_code === 200 ? "ok" : "failed" },
        el("td", { class: "num", text: index + 1 }),
        el("td", { text: attempt.at }),
        el("td", { text: gap }),
        el("td", { class: "num", text: attempt.status_code ?? "—" }),
        el("td", { class: "wrap", text: attempt.error ?? "" }),
        el("td", { class: "num", text: `${attempt.duration_ms} ms` }),
        el("td", { text: attempt.manual ? "manual" : "scheduled" }),
      ),
    );
  });
  return attempts.length ? node : el("p", { class: "muted", text: "No attempt yet." });
}

/** The merchant's client-code call, with a token of the order's account (its first key). */
function clientCodeForm(orderId) {
  const input = el("input", { id: "client-code", name: "code", required: true, autocomplete: "off" });
  const result = el("p", { class: "notice", role: "status", hidden: true });
  let accountId = null;
  const form = el(
    "form",
    { class: "panel inline", "aria-labelledby": "client-code-title" },
    el("h3", { id: "client-code-title", text: "Waiting for a client code" }),
    field("client-code", "Client code", input),
    el("button", { type: "submit", text: "Submit code" }),
    result,
  );
  form.hidden = true;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const account = await get(`/_mock/accounts/${encodeURIComponent(accountId)}`);
      if (!account.api_keys.length) throw new Error("The account has no API key: issue one on its page.");
      const answer = await merchant(account.api_keys[0], "POST", `/api/v1/orders/${orderId}/client-code`, {
        code: input.value,
      });
      const ok = answer.status === 200;
      notice(result, ok ? "Accepted: the order is processing again." : `${answer.status}: ${answer.body.detail}`, ok ? "ok" : "error");
    } catch (error) {
      notice(result, errorText(error), "error");
    }
  });
  return {
    node: form,
    show(waiting, owner) {
      accountId = owner;
      // A settled or resumed order keeps the answer visible; only a fresh wait clears it.
      if (waiting && form.hidden) notice(result, "");
      form.hidden = !waiting && result.hidden;
    },
  };
}
