// The two smaller views: injected faults (add, list, clear) and the request journal of
// merchant calls, which grows live from `journal` events.

import { control, get } from "./api.js";
import { debounce, el, errorText, field, notice, replaceChildren, table } from "./dom.js";

const JOURNAL_ROWS = 100;
const METHODS = ["*", "GET", "POST", "PUT", "PATCH", "DELETE"];

export function mountFaults(main) {
  const problem = el("p", { class: "notice", role: "alert", hidden: true });
  const list = table("Active faults", ["Id", "Method", "Path", "Status", "Times left", "Latency", "After commit"]);
  const clear = el("button", { type: "button", class: "secondary", text: "Clear every fault" });
  main.append(
    el("h2", { text: "Faults" }),
    el("p", { class: "muted", text: "Make the merchant API misbehave on purpose: a matching call gets an error status." }),
    problem,
    faultForm(() => load()),
    list.node,
    clear,
  );
  clear.addEventListener("click", async () => {
    try {
      await control("DELETE", "/_mock/faults");
      await load();
    } catch (error) {
      notice(problem, errorText(error), "error");
    }
  });

  async function load() {
    try {
      const { faults } = await get("/_mock/faults");
      notice(problem, "");
      replaceChildren(
        list.tbody,
        faults.length
          ? faults.map((fault) =>
              el(
                "tr",
                {},
                el("td", { class: "num", text: fault.id }),
                el("td", { text: fault.method }),
                el("td", { class: "mono", text: fault.path }),
                el("td", { class: "num", text: fault.status }),
                el("td", { class: "num", text: fault.times ?? "always" }),
                el("td", { class: "num", text: `${fault.latency_ms} ms` }),
                el("td", { text: fault.after_commit ? "yes" : "no" }),
              ),
            )
          : el("tr", {}, el("td", { colspan: "7", class: "muted", text: "No fault: the merchant API behaves." })),
      );
    } catch (error) {
      notice(problem, errorText(error), "error");
    }
  }

  load();
  const loadSoon = debounce(load, 200);
  return {
    onEvent(name) {
      if (name === "journal") loadSoon(); // a call may have used a fault up
    },
    refresh: load,
  };
}

function faultForm(reload) {
  const method = el("select", { id: "fault-method" }, METHODS.map((m) => el("option", { value: m, text: m })));
  const path = el("input", { id: "fault-path", required: true, placeholder: "/api/v1/orders/*", autocomplete: "off" });
  const status = el("input", { id: "fault-status", type: "number", min: "400", max: "599", value: "503", class: "narrow" });
  const times = el("input", { id: "fault-times", type: "number", min: "1", placeholder: "always", class: "narrow" });
  const latency = el("input", { id: "fault-latency", type: "number", min: "0", max: "60000", value: "0", class: "narrow" });
  const afterCommit = el("input", { id: "fault-after-commit", type: "checkbox" });
  const result = el("p", { class: "notice", role: "status", hidden: true });
  const form = el(
    "form",
    { class: "inline panel", "aria-label": "Add a fault" },
    field("fault-method", "Method", method),
    field("fault-path", "Path (fnmatch)", path),
    field("fault-status", "Status", status),
    field("fault-times", "Times", times),
    field("fault-latency", "Latency ms", latency),
    el("div", { class: "field check" }, afterCommit, el("label", { for: "fault-after-commit", text: "after commit" })),
    el("button", { type: "submit", text: "Add fault" }),
    result,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const fault = {
      method: method.value,
      path: path.value.trim(),
      status: Number(status.value),
      latency_ms: Number(latency.value || 0),
      after_commit: afterCommit.checked,
    };
    if (times.value) fault.times = Number(times.value);
    try {
      await control("POST", "/_mock/faults", fault);
      notice(result, "");
      await reload();
    } catch (error) {
      notice(result, errorText(error), "error");
    }
  });
  return form;
}

export function mountJournal(main) {
  const problem = el("p", { class: "notice", role: "alert", hidden: true });
  const list = table("Merchant API calls, newest first", ["Time", "Method", "Path", "Status", "Body"], "journal");
  main.append(
    el("h2", { text: "Request journal" }),
    el("p", { class: "muted", text: `The last ${JOURNAL_ROWS} merchant API calls, newest first, live.` }),
    problem,
    list.node,
  );

  async function load() {
    try {
      const { requests } = await get(`/_mock/requests?limit=${JOURNAL_ROWS}`);
      notice(problem, "");
      replaceChildren(list.tbody, requests.map(journalRow));
    } catch (error) {
      notice(problem, errorText(error), "error");
    }
  }

  load();
  return {
    onEvent(name, entry) {
      if (name !== "journal") return;
      list.tbody.prepend(journalRow(entry));
      while (list.tbody.rows.length > JOURNAL_ROWS) list.tbody.lastElementChild.remove();
    },
    refresh: load,
  };
}

function journalRow(entry) {
  return el(
    "tr",
    {},
    el("td", { text: entry.time }),
    el("td", { text: entry.method }),
    el("td", { class: "mono wrap", text: entry.path }),
    el("td", { class: `num ${entry.status >= 400 ? "bad" : ""}`, text: entry.status }),
    el("td", { class: "mono wrap body", text: entry.body }),
  );
}
