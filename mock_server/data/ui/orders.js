// The orders list: filtered by account, status and merchant_order_id, newest first, one page
// of PAGE_SIZE at a time (a sandbox may hold 10,000 orders; only a page is ever rendered).
// Live `order` events update the rows they touch; a burst of them is applied once per frame.

import { get, query } from "./api.js";
import {
  debounce,
  el,
  errorText,
  field,
  money,
  notice,
  replaceChildren,
  shortId,
  statusBadge,
  table,
} from "./dom.js";
import * as store from "./store.js";

export const PAGE_SIZE = 50;
export const STATUSES = ["pending", "processing", "need_client_code", "completed", "partial", "failed"];
const COLUMNS = ["Created", "Order", "Account", "Item", "Qty", "Price", "Status", "merchant_order_id"];

// Kept between visits, so going back from an order page returns to the same page of results.
const saved = { account_id: "", status: "", merchant_order_id: "", offset: 0 };

export function mountOrders(main) {
  const rowsById = new Map();
  let total = 0;
  let pendingEvents = new Map();

  const accountSelect = el("select", { id: "filter-account", name: "account_id" });
  const statusSelect = el(
    "select",
    { id: "filter-status", name: "status" },
    el("option", { value: "", text: "Any status" }),
    STATUSES.map((status) => el("option", { value: status, text: status })),
  );
  const refInput = el("input", {
    id: "filter-ref",
    name: "merchant_order_id",
    type: "search",
    placeholder: "exact match",
    autocomplete: "off",
  });
  const filters = el(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter orders" },
    field("filter-account", "Account", accountSelect),
    field("filter-status", "Status", statusSelect),
    field("filter-ref", "merchant_order_id", refInput),
    el("button", { type: "submit", text: "Filter" }),
  );
  const summary = el("p", { id: "orders-summary", class: "summary", "aria-live": "polite" });
  const problem = el("p", { class: "notice", role: "alert", hidden: true });
  const list = table("Orders, newest first", COLUMNS, "orders");
  const previous = el("button", { type: "button", id: "orders-previous", class: "secondary", text: "← Newer" });
  const next = el("button", { type: "button", id: "orders-next", class: "secondary", text: "Older →" });
  const pager = el("div", { class: "pager" }, previous, next);

  main.append(el("h2", { text: "Orders" }), filters, summary, problem, list.node, pager);

  statusSelect.value = saved.status;
  refInput.value = saved.merchant_order_id;
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    applyFilters();
  });
  accountSelect.addEventListener("change", applyFilters);
  statusSelect.addEventListener("change", applyFilters);
  previous.addEventListener("click", () => turnPage(-PAGE_SIZE));
  next.addEventListener("click", () => turnPage(PAGE_SIZE));

  function applyFilters() {
    saved.account_id = accountSelect.value;
    saved.status = statusSelect.value;
    saved.merchant_order_id = refInput.value.trim();
    saved.offset = 0;
    load();
  }

  function turnPage(delta) {
    saved.offset = Math.max(0, saved.offset + delta);
    load();
  }

  async function fillAccounts() {
    const accounts = await store.accounts();
    replaceChildren(
      accountSelect,
      el("option", { value: "", text: "All accounts" }),
      accounts.map((account) => el("option", { value: account.id, text: account.email })),
    );
    accountSelect.value = saved.account_id;
  }

  async function load() {
    try {
      const page = await get(
        `/_mock/orders${query({
          account_id: saved.account_id,
          status: saved.status,
          merchant_order_id: saved.merchant_order_id,
          sort: "newest",
          offset: saved.offset,
          limit: PAGE_SIZE,
        })}`,
      );
      if (page.orders.length === 0 && saved.offset > 0 && page.total > 0) {
        saved.offset = Math.max(0, Math.floor((page.total - 1) / PAGE_SIZE) * PAGE_SIZE);
        return load(); // the page emptied (a reset, a filter): show the last one
      }
      notice(problem, "");
      rowsById.clear();
      total = page.total;
      replaceChildren(list.tbody, page.orders.map(rowFor));
      updateSummary();
    } catch (error) {
      notice(problem, errorText(error), "error");
    }
  }

  function rowFor(order) {
    const link = el("a", { href: `#/orders/${order.id}`, text: shortId(order.id), title: order.id });
    const row = el(
      "tr",
      { "data-id": order.id, "data-status": order.status },
      el("td", { text: order.created_at }),
      el("td", { class: "mono" }, link),
      el("td", { text: order.created_by ? order.created_by.email : "" }),
      el("td", { class: "wrap", text: order.item_name }),
      el("td", { class: "num", text: order.quantity }),
      el("td", { class: "num", text: money(order.price) }),
      el("td", {}, statusBadge(order.status)),
      el("td", { text: order.merchant_order_id ?? "" }),
    );
    // The whole row opens the order for a mouse; the link does it for the keyboard.
    row.addEventListener("click", (event) => {
      if (event.target.tagName !== "A") location.hash = `#/orders/${order.id}`;
    });
    rowsById.set(order.id, row);
    return row;
  }

  function updateSummary() {
    const shown = rowsById.size;
    const first = shown ? saved.offset + 1 : 0;
    summary.textContent = total
      ? `Showing ${first.toLocaleString("en")}–${(saved.offset + shown).toLocaleString("en")} of ${total.toLocaleString("en")} orders`
      : "No orders match.";
    previous.disabled = saved.offset === 0;
    next.disabled = saved.offset + shown >= total;
  }

  function matches(order, accountId) {
    return (
      (!saved.account_id || saved.account_id === accountId) &&
      (!saved.status || saved.status === order.status) &&
      (!saved.merchant_order_id || saved.merchant_order_id === order.merchant_order_id)
    );
  }

  const reloadSoon = debounce(load, 250);

  /** Apply the events gathered since the last frame: each order once, at its latest state. */
  function applyEvents() {
    const events = pendingEvents;
    pendingEvents = new Map();
    let newestShown = list.tbody.firstElementChild;
    for (const { order, account_id: accountId } of events.values()) {
      const row = rowsById.get(order.id);
      const wanted = matches(order, accountId);
      if (row && wanted) {
        rowsById.delete(order.id);
        row.replaceWith(rowFor(order));
      } else if (row || (wanted && saved.offset > 0)) {
        reloadSoon(); // it left this page's filter, or pages below the first shift
      } else if (wanted && isNewest(order, newestShown)) {
        newestShown = rowFor(order);
        list.tbody.prepend(newestShown);
        total += 1;
        trimToPage();
      } else if (wanted) {
        reloadSoon(); // an older order entered the filter somewhere down the list
      }
    }
    updateSummary();
  }

  function isNewest(order, firstRow) {
    if (!firstRow) return true;
    return order.created_at >= firstRow.firstElementChild.textContent;
  }

  function trimToPage() {
    while (list.tbody.rows.length > PAGE_SIZE) {
      const last = list.tbody.lastElementChild;
      rowsById.delete(last.dataset.id);
      last.remove();
    }
  }

  fillAccounts().catch((error) => notice(problem, errorText(error), "error"));
  load();

  return {
    onEvent(name, data) {
      if (name !== "order") return;
      if (!pendingEvents.size) requestAnimationFrame(applyEvents);
      pendingEvents.set(data.order.id, data);
    },
    refresh() {
      fillAccounts().catch(() => {});
      load();
    },
  };
}
