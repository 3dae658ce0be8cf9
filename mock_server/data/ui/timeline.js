// The two timelines of the page: an order's statuses on the virtual clock, and a
// scenario's scripted steps drawn to scale.

import { el, humanSeconds, secondsBetween, statusBadge } from "./dom.js";

/** history [{status, at}] as a vertical timeline, each entry with its offset from the first. */
export function statusTimeline(history) {
  const start = history.length ? history[0].at : null;
  return el(
    "ol",
    { class: "timeline", "aria-label": "Status timeline" },
    history.map((entry) =>
      el(
        "li",
        {},
        statusBadge(entry.status),
        " ",
        el("time", { datetime: entry.at, text: entry.at }),
        el("span", { class: "muted", text: ` +${humanSeconds(secondsBetween(start, entry.at))}` }),
      ),
    ),
  );
}

/**
 * steps [{after, status, error}] as segments whose widths follow their durations, so a
 * 30 s timeout looks long next to a 1 s step. The text says the same for screen readers.
 */
export function stepsTimeline(steps) {
  let elapsed = 0;
  return el(
    "ol",
    { class: "steps", "aria-label": "Scripted steps" },
    el("li", { class: "step step-start" }, statusBadge("pending"), el("span", { text: "0 s" })),
    steps.map((step) => {
      elapsed += step.after;
      const item = el(
        "li",
        { class: "step" },
        statusBadge(step.status),
        el("span", { text: `+${humanSeconds(step.after)} (at ${humanSeconds(elapsed)})` }),
        step.error ? el("span", { class: "step-error", text: step.error }) : null,
      );
      // CSSOM, not a style attribute: the page's policy refuses inline styles.
      item.style.flexGrow = String(Math.max(step.after, 0.5));
      return item;
    }),
  );
}
