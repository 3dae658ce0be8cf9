// The virtual clock panel at the top of every view: now and the mode, the advance buttons,
// and the upcoming scheduled jobs (fulfillment steps, webhook attempts) with their due times.

import { control, get } from "./api.js";
import {
  debounce,
  el,
  errorText,
  humanSeconds,
  notice,
  parseDuration,
  replaceChildren,
  secondsBetween,
  shortId,
} from "./dom.js";

const UPCOMING = 8;
const $ = (id) => document.getElementById(id);

/** Which order a webhook delivery belongs to, learnt from `delivery` events and reads. */
export const orderOfDelivery = new Map();

let now = null;

export function setNow(iso) {
  now = iso;
  $("clock-now").textContent = iso;
  $("clock-now").setAttribute("datetime", iso);
}

export async function refreshClock() {
  const clock = await get("/_mock/clock");
  setNow(clock.now);
  $("clock-mode").textContent =
    clock.mode === "manual" ? "manual clock" : `real clock ×${clock.time_scale}`;
  await refreshJobs();
}

async function refreshJobs() {
  const jobs = await get(`/_mock/jobs?upcoming=${UPCOMING}`);
  $("pending-count").textContent = String(jobs.pending);
  replaceChildren(
    $("upcoming"),
    jobs.upcoming.length
      ? jobs.upcoming.map(upcomingItem)
      : el("li", { class: "muted empty", text: "Nothing is scheduled." }),
  );
  const failures = $("job-failures");
  failures.hidden = !jobs.failures.length;
  failures.textContent = jobs.failures.length
    ? `${jobs.failures.length} scheduled job(s) raised: see GET /_mock/jobs`
    : "";
}

/** Many events at once (a load test) mean one re-read, not one each. */
export const scheduleJobsRefresh = debounce(() => refreshJobs().catch(() => {}), 150);

function upcomingItem(job) {
  const due = el("time", { datetime: job.due, text: job.due });
  const inSeconds = now ? secondsBetween(now, job.due) : null;
  const when = inSeconds === null ? "" : ` (in ${humanSeconds(Math.max(inSeconds, 0))})`;
  return el("li", {}, due, el("span", { class: "muted", text: when }), el("br"), jobLabel(job.job));
}

/** "order <id> step 2 processing" / "webhook <delivery id> attempt 2 order <id>", linked
 * to the order. */
function jobLabel(text) {
  const step = /^order (\S+) step (\d+) (\S+)/.exec(text);
  if (step) {
    return el(
      "span",
      {},
      "order ",
      el("a", { href: `#/orders/${step[1]}`, text: shortId(step[1]) }),
      ` step ${step[2]} → ${step[3]}`,
    );
  }
  const attempt = /^webhook (\S+) attempt (\d+)(?: order (\S+))?/.exec(text);
  if (attempt) {
    const orderId = attempt[3] || orderOfDelivery.get(attempt[1]);
    return el(
      "span",
      {},
      `webhook attempt ${attempt[2]}`,
      orderId
        ? [" for order ", el("a", { href: `#/orders/${orderId}`, text: shortId(orderId) })]
        : ` (delivery ${shortId(attempt[1])})`,
    );
  }
  return el("span", { text });
}

async function advance(seconds) {
  const buttons = document.querySelectorAll(".clock button");
  buttons.forEach((button) => {
    button.disabled = true;
  });
  notice($("clock-notice"), "");
  try {
    // The answer comes once everything due has run, webhook attempts included.
    const answer = await control("POST", "/_mock/clock/advance", { seconds });
    setNow(answer.now);
    await refreshJobs();
  } catch (error) {
    notice($("clock-notice"), errorText(error), "error");
  } finally {
    buttons.forEach((button) => {
      button.disabled = false;
    });
  }
}

async function advanceToNextEvent() {
  const [clock, jobs] = await Promise.all([get("/_mock/clock"), get("/_mock/jobs?upcoming=1")]);
  if (!jobs.upcoming.length) {
    notice($("clock-notice"), "Nothing is scheduled: no event to advance to.", "");
    return;
  }
  await advance(Math.max(secondsBetween(clock.now, jobs.upcoming[0].due), 0));
}

export function setupClock() {
  for (const button of document.querySelectorAll("[data-seconds]")) {
    button.addEventListener("click", () => advance(Number(button.dataset.seconds)));
  }
  $("advance-next").addEventListener("click", () =>
    advanceToNextEvent().catch((error) => notice($("clock-notice"), errorText(error), "error")),
  );
  $("advance-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const seconds = parseDuration($("advance-by").value);
    if (seconds === null) {
      notice($("clock-notice"), "Type a duration such as 90, 90s, 5m, 1h30m or 2d.", "error");
      $("advance-by").setAttribute("aria-invalid", "true");
      return;
    }
    $("advance-by").removeAttribute("aria-invalid");
    advance(seconds);
  });
}
