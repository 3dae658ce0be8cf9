// The dashboard's entry point: the token prompt, the sandbox switcher, the live stream,
// and the hash router that mounts one view at a time in <main>.
//
// Each view module exports a mount(main, params) that returns {onEvent, refresh}: the
// stream's events go to the view on screen, which updates only what they touch.

import { control, forgetMerchantTokens, get, openStream, sandboxId, setTokenPrompt } from "./api.js";
import { orderOfDelivery, refreshClock, scheduleJobsRefresh, setNow, setupClock } from "./clock.js";
import { debounce, el, errorText } from "./dom.js";
import { mountAccounts } from "./accounts.js";
import { mountCatalog } from "./catalog.js";
import { mountOrder } from "./order.js";
import { mountOrders } from "./orders.js";
import { mountPlace } from "./place.js";
import { mountScenarios } from "./scenarios.js";
import * as store from "./store.js";
import { mountFaults, mountJournal } from "./tools.js";

const ROUTES = [
  { pattern: /^orders\/([^/]+)$/, nav: "orders", title: "Order", mount: mountOrder },
  { pattern: /^orders$/, nav: "orders", title: "Orders", mount: mountOrders },
  { pattern: /^place$/, nav: "place", title: "Place an order", mount: mountPlace },
  { pattern: /^accounts(?:\/([^/]+))?$/, nav: "accounts", title: "Accounts", mount: mountAccounts },
  { pattern: /^catalog$/, nav: "catalog", title: "Catalog", mount: mountCatalog },
  { pattern: /^scenarios$/, nav: "scenarios", title: "Scenarios", mount: mountScenarios },
  { pattern: /^faults$/, nav: "faults", title: "Faults", mount: mountFaults },
  { pattern: /^journal$/, nav: "journal", title: "Request journal", mount: mountJournal },
];

const $ = (id) => document.getElementById(id);
let current = null; // the mounted view: {onEvent, refresh}

// -- routing ------------------------------------------------------------------------------

function route() {
  const path = decodeURIComponent(location.hash.replace(/^#\/?/, "")) || "orders";
  const found = ROUTES.find((candidate) => candidate.pattern.test(path));
  if (!found) {
    location.replace("#/orders");
    return;
  }
  const params = found.pattern.exec(path).slice(1);
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.view === found.nav) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${found.title} · ${sandboxId} · Ordering sandbox`;
  const main = $("main");
  main.replaceChildren();
  current = found.mount(main, params) || null;
}

// -- live events --------------------------------------------------------------------------

let seenReady = false;

function onEvent(name, data) {
  if (name === "ready") {
    setNow(data.now);
    // Reconnected: what happened while the stream was down was missed, so read it again.
    if (seenReady) refreshEverything();
    seenReady = true;
  } else if (name === "clock") {
    setNow(data.now);
    scheduleJobsRefresh();
  } else if (name === "order") {
    scheduleJobsRefresh();
    if (!$("sandbox-box").hidden) refreshSandboxesSoon(); // its order count
  } else if (name === "delivery") {
    orderOfDelivery.set(data.id, data.order_id);
    scheduleJobsRefresh();
  } else if (name === "reset") {
    refreshEverything();
    return;
  }
  if (current && current.onEvent) current.onEvent(name, data);
}

function refreshEverything() {
  store.invalidate();
  forgetMerchantTokens();
  refreshClock().catch(showFatal);
  if (current && current.refresh) current.refresh();
}

function onStreamState(state) {
  const live = $("live");
  live.textContent = state === "live" ? "live" : "reconnecting…";
  live.className = `live live-${state}`;
}

// -- the admin token ----------------------------------------------------------------------

function askForToken(reason) {
  const dialog = $("token-dialog");
  const input = $("token-input");
  $("token-message").textContent =
    reason === "refused"
      ? "That token was refused. Type the server's --admin-token."
      : "This sandbox runs with --admin-token: type it to see its data.";
  input.value = "";
  return new Promise((resolve) => {
    const form = $("token-form");
    const submit = (event) => {
      event.preventDefault();
      if (!input.value.trim()) return;
      finish(input.value.trim());
    };
    // Escape closes the dialog: nothing works without the token, so the next call asks again.
    const closed = () => finish("");
    const finish = (token) => {
      form.removeEventListener("submit", submit);
      dialog.removeEventListener("close", closed);
      if (dialog.open) dialog.close();
      resolve(token);
    };
    form.addEventListener("submit", submit);
    dialog.addEventListener("close", closed);
    if (!dialog.open) dialog.showModal();
    input.focus();
  });
}

// -- sandboxes ----------------------------------------------------------------------------

/** The page of sandbox `id`: the root paths for the default one. */
function pageOf(id) {
  return `${id === "default" ? "" : `/_mock/sandboxes/${encodeURIComponent(id)}`}/_mock/ui/`;
}

/** The switcher's list; options are updated in place, so an open list stays open. */
async function refreshSandboxes() {
  const listed = (await get("/_mock/sandboxes", { root: true })).sandboxes;
  const select = $("sandbox");
  const options = new Map([...select.options].map((option) => [option.value, option]));
  for (const sandbox of listed) {
    const text = `${sandbox.id} (${sandbox.orders} orders)`;
    const option = options.get(sandbox.id);
    if (option) option.textContent = text;
    else select.append(el("option", { value: sandbox.id, selected: sandbox.id === sandboxId, text }));
  }
}

const refreshSandboxesSoon = debounce(() => refreshSandboxes().catch(() => {}), 1000);

async function setupSandboxes() {
  try {
    await refreshSandboxes();
  } catch {
    return; // a control token of one sandbox cannot list them: no switcher then
  }
  const select = $("sandbox");
  // Switching loads that sandbox's own page, so the address says which one is shown.
  select.addEventListener("change", () => location.assign(pageOf(select.value) + location.hash));
  $("new-sandbox").addEventListener("click", async () => {
    try {
      const created = await control("POST", "/_mock/sandboxes", {}, { root: true });
      location.assign(pageOf(created.id) + location.hash);
    } catch (error) {
      showFatal(error);
    }
  });
  $("sandbox-box").hidden = false;
}

function showFatal(error) {
  const main = $("main");
  main.prepend(el("p", { class: "notice error", role: "alert", text: errorText(error) }));
}

// -- start --------------------------------------------------------------------------------

setTokenPrompt(askForToken);
setupClock();
window.addEventListener("hashchange", () => {
  route();
  $("main").focus({ preventScroll: true }); // a screen reader lands on the new view
});
refreshClock()
  .then(setupSandboxes)
  .catch(showFatal);
route();
openStream(onEvent, onStreamState);
