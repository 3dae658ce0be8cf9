// Accounts: balance, subscription, webhook URL and secret, API keys (issue, revoke), and the
// ledger with its conservation check. One account is open at a time (#/accounts/<id>).

import { control, get } from "./api.js";
import {
  debounce,
  el,
  errorText,
  facts,
  field,
  ledgerRow,
  money,
  notice,
  replaceChildren,
  table,
} from "./dom.js";
import * as store from "./store.js";

const LEDGER_ROWS = 100;

export function mountAccounts(main, [openId]) {
  const problem = el("p", { class: "notice", role: "alert", hidden: true });
  const list = table("Accounts", ["Email", "Balance", "Subscription", "Webhook URL", "API keys"], "accounts");
  const detail = el("section", { id: "account-detail", "aria-live": "polite" });
  main.append(el("h2", { text: "Accounts" }), problem, list.node, detail, createForm(() => load()));

  let accounts = [];
  let formsOf = null; // the account whose forms are on screen: live updates keep them
  const ledgerBox = el("div");

  async function load(options = {}) {
    try {
      store.invalidate("accounts");
      accounts = await store.accounts();
      notice(problem, "");
      replaceChildren(list.tbody, accounts.map(accountRow));
      const shown = accounts.find((account) => account.id === openId) || accounts[0];
      if (shown) await renderDetail(shown, options.keepForms);
    } catch (error) {
      notice(problem, errorText(error), "error");
    }
  }

  function accountRow(account) {
    return el(
      "tr",
      { "aria-current": account.id === openId ? "true" : null },
      el("td", {}, el("a", { href: `#/accounts/${account.id}`, text: account.email })),
      el("td", { class: "num", text: money(account.balance) }),
      el("td", { text: account.has_active_subscription ? "active" : "none" }),
      el("td", { class: "mono wrap", text: account.webhook_url ?? "—" }),
      el("td", { class: "num", text: account.api_keys.length }),
    );
  }

  /** The forms are rebuilt only after an action; a live event redraws the ledger alone. */
  async function renderDetail(account, keepForms) {
    const ledger = await get(`/_mock/accounts/${encodeURIComponent(account.id)}/ledger`);
    if (!keepForms || formsOf !== account.id) {
      formsOf = account.id;
      replaceChildren(
        detail,
        el("h3", {}, account.email, " ", el("span", { class: "muted mono small", text: account.id })),
        el("div", { class: "columns" }, editForm(account, load), keysPanel(account, load)),
        ledgerBox,
      );
    }
    replaceChildren(ledgerBox, ledgerPanel(ledger));
  }

  const loadSoon = debounce(() => load({ keepForms: true }), 300);
  load();
  return {
    onEvent(name) {
      if (name === "order") loadSoon(); // charges and refunds move balances
    },
    refresh: load,
  };
}

function editForm(account, reload) {
  const balance = el("input", { id: "account-balance", type: "number", step: "0.01", min: "0", value: account.balance });
  const subscription = el("input", { id: "account-subscription", type: "checkbox", checked: account.has_active_subscription });
  const webhookUrl = el("input", { id: "account-webhook-url", type: "url", value: account.webhook_url ?? "", placeholder: "none: no webhooks" });
  const secret = el("input", { id: "account-secret", value: account.webhook_secret, autocomplete: "off" });
  const result = el("p", { class: "notice", role: "status", hidden: true });
  const form = el(
    "form",
    { class: "stack panel", "aria-label": "Change the account" },
    field("account-balance", "Balance", balance, "major units; recorded as an adjustment"),
    el("div", { class: "field check" }, subscription, el("label", { for: "account-subscription", text: "Active subscription (subscriber prices)" })),
    field("account-webhook-url", "Webhook URL", webhookUrl),
    field("account-secret", "Webhook secret", secret),
    el("button", { type: "submit", text: "Save changes" }),
    result,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const changes = {};
    if (Number(balance.value) !== account.balance) changes.balance = Number(balance.value);
    if (subscription.checked !== account.has_active_subscription) changes.has_active_subscription = subscription.checked;
    const url = webhookUrl.value.trim() || null;
    if (url !== account.webhook_url) changes.webhook_url = url;
    if (secret.value !== account.webhook_secret) changes.webhook_secret = secret.value;
    try {
      await control("PATCH", `/_mock/accounts/${encodeURIComponent(account.id)}`, changes);
      store.invalidate("accounts");
      await reload();
      notice(document.querySelector("#account-detail form .notice"), "Saved.", "ok"); // the new form's
    } catch (error) {
      notice(result, errorText(error), "error");
    }
  });
  return form;
}

function keysPanel(account, reload) {
  const result = el("p", { class: "notice", role: "status", hidden: true });
  const act = async (method, path) => {
    try {
      await control(method, path);
      await reload();
    } catch (error) {
      notice(result, errorText(error), "error");
    }
  };
  return el(
    "div",
    { class: "panel" },
    el("h4", { text: "API keys" }),
    el(
      "ul",
      { class: "keys" },
      account.api_keys.map((key) =>
        el(
          "li",
          {},
          el("code", { text: key }),
          " ",
          el("button", {
            type: "button",
            class: "secondary small",
            "aria-label": `Revoke ${key}`,
            text: "Revoke",
            onclick: () => act("DELETE", `/_mock/api-keys/${encodeURIComponent(key)}`),
          }),
        ),
      ),
    ),
    el("button", {
      type: "button",
      id: "issue-key",
      text: "Issue a key",
      onclick: () => act("POST", `/_mock/accounts/${encodeURIComponent(account.id)}/api-keys`),
    }),
    result,
    el("h4", { text: "Signature headers" }),
    el("p", { class: "mono small", text: (account.signature_headers || []).join(", ") }),
  );
}

function ledgerPanel(ledger) {
  const entries = ledger.entries.slice(-LEDGER_ROWS).reverse();
  const { node, tbody } = table("Ledger, newest first", ["Kind", "Amount", "Balance after", "Order", "At"], "ledger");
  tbody.append(...entries.map((entry) => ledgerRow(entry, true)));
  const conserved = el("span", {
    id: "ledger-conserved",
    class: ledger.conserved ? "badge badge-completed" : "badge badge-failed",
    text: ledger.conserved ? "conserved" : "NOT conserved",
  });
  return el(
    "section",
    { "aria-labelledby": "ledger-title" },
    el("h4", { id: "ledger-title" }, "Ledger ", conserved),
    facts([
      ["opening balance", money(ledger.opening_balance)],
      ["balance", el("span", { id: "ledger-balance", text: money(ledger.balance) })],
      ["entries", `${ledger.entries.length}${ledger.entries.length > LEDGER_ROWS ? ` (the last ${LEDGER_ROWS} shown)` : ""}`],
    ]),
    el("p", { class: "muted small", text: "Conserved: opening balance + adjustments − charges + refunds equals the balance." }),
    entries.length ? node : el("p", { class: "muted", text: "No movement yet." }),
  );
}

function createForm(reload) {
  const email = el("input", { id: "new-account-email", type: "email", required: true, autocomplete: "off" });
  const balance = el("input", { id: "new-account-balance", type: "number", step: "0.01", min: "0", value: "100" });
  const result = el("p", { class: "notice", role: "status", hidden: true });
  const form = el(
    "form",
    { class: "inline panel", "aria-labelledby": "new-account-title" },
    el("h3", { id: "new-account-title", text: "New account" }),
    field("new-account-email", "Email", email),
    field("new-account-balance", "Balance", balance),
    el("button", { type: "submit", text: "Create account" }),
    result,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const created = await control("POST", "/_mock/accounts", { email: email.value, balance: Number(balance.value) });
      store.invalidate("accounts");
      location.hash = `#/accounts/${created.id}`;
    } catch (error) {
      notice(result, errorText(error), "error");
      return;
    }
    await reload();
  });
  return form;
}
