// The catalog: every item with its price, stock and in_stock, each editable in place
// (PATCH /_mock/catalog/items/{id}). Prices are typed in major units and sent in cents,
// the feed's own unit.

import { control } from "./api.js";
import { cents, el, errorText, notice, replaceChildren, table } from "./dom.js";
import * as store from "./store.js";

const COLUMNS = ["Id", "Item", "Type", "Price", "Base / subscriber", "Quantity", "In stock", "Stock", "", ""];

export function mountCatalog(main) {
  const problem = el("p", { class: "notice", role: "alert", hidden: true });
  const list = table("Catalog", COLUMNS, "catalog");
  const reload = el("button", { type: "button", class: "secondary", text: "Reload", onclick: () => load() });
  main.append(
    el("h2", { text: "Catalog" }),
    el("p", { class: "muted" }, "Changes apply to orders created from now on. ", reload),
    problem,
    list.node,
  );

  async function load() {
    try {
      store.invalidate("catalog");
      const items = await store.catalog();
      notice(problem, "");
      replaceChildren(list.tbody, items.map(itemRow));
    } catch (error) {
      notice(problem, errorText(error), "error");
    }
  }

  load();
  // Stock moves as orders settle, but redrawing would throw away what someone is typing:
  // the list is re-read on a reset and on "Reload".
  return { refresh: load };
}

function itemRow(item) {
  const id = (name) => `item-${item.id}-${name}`;
  const price = el("input", {
    id: id("price"),
    type: "number",
    step: "0.01",
    min: "0",
    value: (item.price / 100).toFixed(2),
    class: "narrow",
  });
  const inStock = el("input", { id: id("in-stock"), type: "checkbox", checked: item.in_stock });
  const isKey = item.product_type === "key";
  const stock = isKey
    ? el("input", {
        id: id("stock"),
        type: "number",
        step: "1",
        min: "0",
        value: item.stock ?? "",
        placeholder: "unlimited",
        class: "narrow",
      })
    : null;
  const result = el("span", { class: "notice", role: "status", hidden: true });
  const save = el("button", { type: "button", id: id("save"), class: "small", text: "Save" });
  save.addEventListener("click", async () => {
    const changes = {};
    const newPrice = Math.round(Number(price.value) * 100);
    if (newPrice !== item.price) changes.price = newPrice;
    if (inStock.checked !== item.in_stock) changes.in_stock = inStock.checked;
    if (stock) {
      const newStock = stock.value === "" ? null : Number(stock.value);
      if (newStock !== (item.stock ?? null)) changes.stock = newStock;
    }
    try {
      const saved = await control("PATCH", `/_mock/catalog/items/${item.id}`, changes);
      Object.assign(item, saved);
      store.invalidate("catalog");
      notice(result, "saved", "ok");
    } catch (error) {
      notice(result, errorText(error), "error");
    }
  });
  const label = (forId, text) => el("label", { for: forId, class: "visually-hidden", text });
  return el(
    "tr",
    { "data-item": item.id },
    el("td", { class: "num", text: item.id }),
    el("td", { text: item.name }),
    el("td", { text: item.product_type + (item.client_code ? " (client code)" : "") }),
    el("td", {}, label(id("price"), `Price of ${item.name}`), price),
    el("td", { class: "num", text: `${cents(item.base_price)} / ${cents(item.subscriber_price)}` }),
    el("td", { class: "num", text: `${item.min_quantity}..${item.max_quantity}` }),
    el("td", {}, label(id("in-stock"), `${item.name} in stock`), inStock),
    el("td", {}, stock ? [label(id("stock"), `Units of ${item.name} left`), stock] : el("span", { class: "muted", text: "not counted" })),
    el("td", {}, save),
    el("td", {}, result),
  );
}
