// "Place an order as a merchant would": the request goes through the merchant API with a
// token of the chosen account, and the page shows the equivalent curl commands and the
// answer, so what a person does here is one paste away from a script.

import { base, control, merchant } from "./api.js";
import { cents, el, errorText, field, notice, pretty, replaceChildren } from "./dom.js";
import * as store from "./store.js";

export function mountPlace(main) {
  const accountSelect = el("select", { id: "place-account", name: "account", required: true });
  const itemSelect = el("select", { id: "place-item", name: "item", required: true });
  const itemFacts = el("p", { id: "place-item-facts", class: "muted small" });
  const itemFields = el("fieldset", { id: "place-fields", class: "item-fields" });
  const quantity = el("input", { id: "place-quantity", name: "quantity", type: "number", inputmode: "decimal" });
  const reference = el("input", { id: "place-ref", name: "merchant_order_id", autocomplete: "off" });
  const priceGuard = el("input", {
    id: "place-price",
    name: "price",
    type: "number",
    step: "0.01",
    min: "0",
    inputmode: "decimal",
  });
  const scenarioSelect = el("select", { id: "place-scenario", name: "scenario" });
  const problem = el("p", { class: "notice", role: "alert", hidden: true });
  const explanation = el("div", { id: "place-explain", class: "panel", hidden: true, "aria-live": "polite" });
  const result = el("section", { id: "place-result", hidden: true, "aria-labelledby": "place-result-title" });
  const explain = el("button", { type: "button", class: "secondary", text: "Which scenario would it get?" });

  const form = el(
    "form",
    // novalidate: a person may send a request the sandbox refuses, to see its error.
    { id: "place-form", class: "stack", novalidate: true, "aria-labelledby": "place-title" },
    field("place-account", "Account", accountSelect),
    field("place-item", "Item", itemSelect),
    itemFacts,
    itemFields,
    field("place-quantity", "Quantity", quantity),
    field("place-ref", "merchant_order_id", reference, "optional; unique per account"),
    field("place-price", "Price guard", priceGuard, "optional, major units: refused if the price differs"),
    field("place-scenario", "Scenario", scenarioSelect, "sent as the X-Mock-Scenario header"),
    el("div", { class: "actions" }, el("button", { type: "submit", text: "Place order" }), explain),
  );
  main.append(
    el("h2", { id: "place-title", text: "Place an order as a merchant would" }),
    el("p", { class: "muted" }, "Sent to ", el("code", { text: "POST /api/v1/orders" }), " with the account's API key exchanged for a token."),
    problem,
    el("div", { class: "columns" }, form, el("div", {}, explanation, result)),
  );

  let items = [];
  let accounts = [];

  async function fill() {
    let scenarios;
    [accounts, items, scenarios] = await Promise.all([store.accounts(), store.catalog(), store.scenarios()]);
    const keepAccount = accountSelect.value;
    const keepItem = itemSelect.value;
    replaceChildren(accountSelect, accounts.map((account) => el("option", { value: account.id, text: account.email })));
    replaceChildren(
      itemSelect,
      items.map((item) =>
        el("option", {
          value: item.id,
          text: `${item.id} · ${item.name} · ${cents(item.price)}${item.in_stock ? "" : " · out of stock"}`,
        }),
      ),
    );
    replaceChildren(
      scenarioSelect,
      el("option", { value: "", text: "(let the sandbox choose)" }),
      scenarios.scenarios.map((scenario) => el("option", { value: scenario.name, text: scenario.name })),
    );
    if (keepAccount) accountSelect.value = keepAccount;
    if (keepItem) itemSelect.value = keepItem;
    renderItem();
  }

  function selectedItem() {
    return items.find((item) => String(item.id) === itemSelect.value);
  }

  /** The chosen item's input fields: text as inputs, choices as selects of their options. */
  function renderItem() {
    const item = selectedItem();
    if (!item) return;
    const stock = item.stock === undefined ? "" : ` · ${item.stock} in stock`;
    itemFacts.textContent =
      `${item.product_type} · ${cents(item.price)} per ${item.amount_per_price} · quantity ` +
      `${item.min_quantity}..${item.max_quantity}${stock}${item.client_code ? " · asks for a client code" : ""}`;
    quantity.step = item.product_type === "topup" ? "any" : "1";
    quantity.value = item.min_quantity;
    replaceChildren(
      itemFields,
      el("legend", { text: item.fields.length ? "Item fields" : "Item fields: none" }),
      item.fields.map(inputForField),
    );
  }

  function body() {
    const item = selectedItem();
    const request = { item_id: item.id };
    if (quantity.value !== "") request.quantity = Number(quantity.value);
    if (reference.value.trim()) request.merchant_order_id = reference.value.trim();
    if (priceGuard.value !== "") request.price = Number(priceGuard.value);
    if (item.fields.length) {
      request.fields = {};
      for (const spec of item.fields) {
        const input = document.getElementById(fieldId(spec));
        request.fields[spec.name] = spec.type === "choice" ? Number(input.value) : input.value;
      }
    }
    return request;
  }

  function headers() {
    return scenarioSelect.value ? { "X-Mock-Scenario": scenarioSelect.value } : {};
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    notice(problem, "");
    const account = accounts.find((candidate) => candidate.id === accountSelect.value);
    if (!account || !account.api_keys.length) {
      notice(problem, "That account has no API key: issue one on the Accounts page.", "error");
      return;
    }
    const request = body();
    try {
      const answer = await merchant(account.api_keys[0], "POST", "/api/v1/orders", request, headers());
      showResult(account.api_keys[0], request, answer);
    } catch (error) {
      notice(problem, errorText(error), "error");
    }
  });

  explain.addEventListener("click", async () => {
    try {
      const answer = await control("POST", "/_mock/scenarios/explain", {
        body: body(),
        account_id: accountSelect.value,
        headers: headers(),
      });
      // A weighted draw is described, not made: `scenario` is null and `candidates`
      // lists what the order would be drawn among (docs/control-api.md, "Why this scenario").
      const drawn = answer.scenario === null;
      replaceChildren(
        explanation,
        el("h3", { text: drawn ? "The sandbox would draw among" : "The sandbox would choose" }),
        drawn
          ? el(
              "ul",
              { id: "place-explain-candidates" },
              (answer.candidates || []).map((candidate) =>
                el(
                  "li",
                  {},
                  el("strong", { class: "mono", text: candidate.scenario }),
                  ` weight ${candidate.weight}, ${Math.round(candidate.share * 1000) / 10}%`,
                ),
              ),
            )
          : null,
        el(
          "p",
          {},
          drawn ? null : el("strong", { class: "mono", text: answer.scenario }),
          `${drawn ? "" : " "}(${answer.reason.source}): ${answer.reason.detail}`,
        ),
        answer.near_misses.length
          ? el(
              "ul",
              {},
              answer.near_misses.map((miss) => el("li", { text: `${miss.scenario}: ${miss.why}` })),
            )
          : null,
      );
    } catch (error) {
      replaceChildren(explanation, el("p", { class: "notice error", text: errorText(error) }));
    }
    explanation.hidden = false;
  });

  function showResult(apiKey, request, answer) {
    const created = answer.status === 201;
    replaceChildren(
      result,
      el("h3", { id: "place-result-title", text: "The same request with curl" }),
      el("pre", { id: "place-curl", class: "code", text: curlCommands(apiKey, request, headers()) }),
      el("h3", {}, "Answer ", el("span", { id: "place-status", class: created ? "badge badge-completed" : "badge badge-failed", text: `HTTP ${answer.status}` })),
      created ? el("p", {}, el("a", { id: "place-open", href: `#/orders/${answer.body.id}`, text: "Open this order" })) : null,
      el("pre", { id: "place-answer", class: "code", text: pretty(JSON.stringify(answer.body)) }),
    );
    result.hidden = false;
  }

  itemSelect.addEventListener("change", renderItem);
  fill().catch((error) => notice(problem, errorText(error), "error"));
  return {
    refresh() {
      fill().catch((error) => notice(problem, errorText(error), "error"));
    },
  };
}

function fieldId(spec) {
  return `place-field-${spec.name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
}

function inputForField(spec) {
  const id = fieldId(spec);
  if (spec.type === "choice") {
    const select = el(
      "select",
      { id, name: spec.name },
      (spec.options || []).map((option) => el("option", { value: option.id, text: option.name ?? option.label })),
    );
    return field(id, spec.name, select);
  }
  return field(id, spec.name, el("input", { id, name: spec.name, autocomplete: "off" }));
}

/** What a shell user would type: the token exchange, then the order, quoted for sh. */
function curlCommands(apiKey, request, headers) {
  const origin = `${location.origin}${base}`;
  const header = Object.entries(headers).map(([name, value]) => ` -H ${shellQuote(`${name}: ${value}`)}`);
  return [
    `BASE=${origin}`,
    "TOKEN=$(curl -s -X POST $BASE/api/v1/auth/token/client -H 'Content-Type: application/json' \\",
    `  -d ${shellQuote(JSON.stringify({ api_key: apiKey }))} \\`,
    "  | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"access_token\"])')",
    'curl -s -X POST $BASE/api/v1/orders -H "Authorization: Bearer $TOKEN" \\',
    `  -H 'Content-Type: application/json'${header.join("")} \\`,
    `  -d ${shellQuote(JSON.stringify(request))}`,
  ].join("\n");
}

function shellQuote(text) {
  return `'${String(text).replace(/'/g, "'\\''")}'`;
}
