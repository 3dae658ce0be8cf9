// Scenarios: every loaded script with its steps drawn as a timeline, the queue for the next
// orders, and a YAML loader whose `line: reason` errors are shown next to the text.

import { control } from "./api.js";
import { el, errorText, facts, field, notice, replaceChildren, table } from "./dom.js";
import * as store from "./store.js";
import { stepsTimeline } from "./timeline.js";

const EXAMPLE = `scenarios:
  - name: slow_then_partial
    description: Processing after 10 s, half delivered after a minute.
    steps:
      - after: 10s
        status: processing
      - after: 1m
        status: partial
        deliver: "50%"
        error: ORDER_TIMEOUT
`;

export function mountScenarios(main) {
  const problem = el("p", { class: "notice", role: "alert", hidden: true });
  const queueBox = el("section", { id: "queue", "aria-labelledby": "queue-title" });
  const listBox = el("section", { id: "scenario-list", "aria-labelledby": "scenario-list-title" });
  const queueForm = el("form", { class: "inline panel", "aria-label": "Queue a scenario" });
  main.append(
    el("h2", { text: "Scenarios" }),
    problem,
    el("div", { class: "columns" }, el("div", {}, queueBox, queueForm), loader(() => load())),
    listBox,
  );

  async function load() {
    try {
      store.invalidate("scenarios");
      const [{ scenarios, queue }, accounts] = await Promise.all([store.scenarios(), store.accounts()]);
      notice(problem, "");
      renderQueue(queueBox, queue, accounts);
      fillQueueForm(queueForm, scenarios, accounts, load);
      replaceChildren(
        listBox,
        el("h3", { id: "scenario-list-title", text: `Loaded scenarios (${scenarios.length})` }),
        el("div", { class: "cards" }, scenarios.map(scenarioCard)),
      );
    } catch (error) {
      notice(problem, errorText(error), "error");
    }
  }

  load();
  return { refresh: load };
}

function scenarioCard(scenario) {
  const pricing = scenario.pricing
    ? Object.entries(scenario.pricing)
        .filter(([, value]) => value !== null)
        .map(([key, value]) => `${key} ${value}`)
        .join(", ")
    : "catalog price";
  return el(
    "article",
    { class: "scenario", "data-scenario": scenario.name },
    el("h4", { class: "mono", text: scenario.name }),
    el("p", { text: scenario.description || "" }),
    stepsTimeline(scenario.steps),
    facts([
      ["source", el("span", { class: "mono small", text: scenario.source })],
      ["chosen", chosenBy(scenario)],
      ["pricing", pricing],
    ]),
  );
}

/** How a scenario can be chosen besides header and queue (docs/scenarios.md, "Selecting one"). */
function chosenBy(scenario) {
  if (scenario.weight !== null && scenario.weight !== undefined) {
    return `drawn with weight ${scenario.weight}${scenario.match ? " when its match holds" : ""}`;
  }
  return scenario.match ? "automatically when its match holds" : "by header or queue";
}

function renderQueue(box, queue, accounts) {
  const email = (id) => (accounts.find((account) => account.id === id) || {}).email || id;
  const { node, tbody } = table("Queued scenarios", ["Scenario", "Account", "Remaining"]);
  tbody.append(
    ...queue.map((entry) =>
      el(
        "tr",
        {},
        el("td", { class: "mono", text: entry.scenario }),
        el("td", { text: entry.account_id ? email(entry.account_id) : "any account" }),
        el("td", { class: "num", text: entry.remaining ?? "every order" }),
      ),
    ),
  );
  replaceChildren(
    box,
    el("h3", { id: "queue-title", text: "Queue for the next orders" }),
    queue.length ? node : el("p", { class: "muted", text: "Empty: match rules, weighted draws and defaults decide." }),
  );
}

function fillQueueForm(form, scenarios, accounts, reload) {
  const scenario = el(
    "select",
    { id: "queue-scenario", required: true },
    scenarios.map((s) => el("option", { value: s.name, text: s.name })),
  );
  const account = el(
    "select",
    { id: "queue-account" },
    el("option", { value: "", text: "any account" }),
    accounts.map((a) => el("option", { value: a.id, text: a.email })),
  );
  const count = el("input", { id: "queue-count", type: "number", min: "1", step: "1", value: "1", class: "narrow" });
  const forever = el("input", { id: "queue-forever", type: "checkbox" });
  const replace = el("input", { id: "queue-replace", type: "checkbox" });
  const result = el("p", { class: "notice", role: "status", hidden: true });
  replaceChildren(
    form,
    field("queue-scenario", "Scenario", scenario),
    field("queue-account", "For", account),
    field("queue-count", "Orders", count),
    el("div", { class: "field check" }, forever, el("label", { for: "queue-forever", text: "every order until changed" })),
    el("div", { class: "field check" }, replace, el("label", { for: "queue-replace", text: "replace what is queued" })),
    el("button", { type: "submit", text: "Queue" }),
    result,
  );
  form.onsubmit = async (event) => {
    event.preventDefault();
    const request = {
      scenario: scenario.value,
      count: forever.checked ? null : Number(count.value || 1),
      replace: replace.checked,
    };
    if (account.value) request.account_id = account.value;
    try {
      await control("POST", "/_mock/scenarios/next", request);
      await reload();
    } catch (error) {
      notice(result, errorText(error), "error");
    }
  };
}

/** The YAML loader: the server's `request body:LINE: reason` errors, one per line. */
function loader(reload) {
  const text = el("textarea", {
    id: "scenario-yaml",
    rows: "14",
    spellcheck: "false",
    "aria-describedby": "scenario-errors",
  });
  text.value = EXAMPLE;
  const errors = el("ul", { id: "scenario-errors", class: "errors", "aria-live": "polite" });
  const result = el("p", { class: "notice", role: "status", hidden: true });
  const form = el(
    "form",
    { class: "stack panel", "aria-labelledby": "loader-title" },
    el("h3", { id: "loader-title", text: "Load scenarios (YAML)" }),
    field("scenario-yaml", "Scenario document", text, "a scenario file's content; a loaded name replaces the scenario of that name"),
    el("button", { type: "submit", text: "Load" }),
    result,
    errors,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    notice(result, "");
    errors.replaceChildren();
    text.removeAttribute("aria-invalid");
    try {
      const answer = await control("POST", "/_mock/scenarios", text.value);
      notice(result, `Loaded: ${answer.loaded.join(", ")}`, "ok");
      await reload();
    } catch (error) {
      if (error.status !== 400) {
        notice(result, errorText(error), "error");
        return;
      }
      text.setAttribute("aria-invalid", "true");
      errors.append(...parseProblems(error.detail).map((problem) => problemItem(problem, text)));
    }
  });
  return form;
}

/** "request body:5: reason; request body:9: other" -> [{line: 5, reason}, {line: 9, ...}]. */
export function parseProblems(detail) {
  return String(detail)
    .split(/; (?=request body)/)
    .map((part) => {
      const match = /^request body(?::(\d+))?: ([\s\S]*)$/.exec(part);
      return match ? { line: match[1] ? Number(match[1]) : null, reason: match[2] } : { line: null, reason: part };
    });
}

/** One problem; its line is a button that puts the cursor on that line of the text. */
function problemItem(problem, textarea) {
  if (problem.line === null) return el("li", { class: "error", text: problem.reason });
  const jump = el("button", { type: "button", class: "link", text: `line ${problem.line}` });
  jump.addEventListener("click", () => {
    const lines = textarea.value.split("\n");
    const start = lines.slice(0, problem.line - 1).join("\n").length + (problem.line > 1 ? 1 : 0);
    textarea.focus();
    textarea.setSelectionRange(start, start + (lines[problem.line - 1] || "").length);
  });
  return el("li", { class: "error" }, jump, el("span", { text: `: ${problem.reason}` }));
}
