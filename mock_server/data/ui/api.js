// Every request the page makes: the documented /_mock calls (with the admin token when the
// server asks for one), the merchant API for "place an order as a merchant would", and the
// live event stream. Nothing here touches the DOM; the token prompt is handed in by app.js.

const TOKEN_KEY = "ordering-sandbox.admin-token";

/**
 * The page is served at `{base}/_mock/ui/`: "" for the default sandbox on the root paths,
 * `/_mock/sandboxes/{id}` for one sandbox. Every call goes under the same base, so each
 * view shows that sandbox alone.
 */
export function basePath(pathname) {
  const at = pathname.lastIndexOf("/_mock/ui/");
  return at > 0 ? pathname.slice(0, at) : "";
}

export const base = basePath(location.pathname);
export const sandboxId = (/^\/_mock\/sandboxes\/([^/]+)$/.exec(base) || [null, "default"])[1];

/** A refused call: its status and the spec's error envelope. */
export class ApiError extends Error {
  constructor(status, body) {
    const detail = (body && (body.detail || body.error)) || `HTTP ${status}`;
    super(detail);
    this.status = status;
    this.code = body && body.code;
    this.detail = detail;
    this.body = body;
  }
}

// -- the admin token ----------------------------------------------------------------------

let askForToken = async () => {
  throw new Error("no token prompt installed");
};
let pendingAsk = null;

/** app.js installs the dialog: `ask(reason)` resolves with the token a person typed. */
export function setTokenPrompt(ask) {
  askForToken = ask;
}

function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

/**
 * A 401 `not_authenticated`: ask once, however many calls were refused at the same time,
 * and keep the answer for this tab only (sessionStorage: never in a URL, gone with the tab).
 */
async function needToken() {
  if (!pendingAsk) {
    const reason = storedToken() ? "refused" : "needed";
    pendingAsk = askForToken(reason).then((token) => {
      try {
        sessionStorage.setItem(TOKEN_KEY, token);
      } finally {
        pendingAsk = null;
      }
    });
  }
  return pendingAsk;
}

function authHeaders() {
  const token = storedToken();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

async function readBody(response) {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function isAuthRefusal(response, body) {
  return response.status === 401 && body && body.code === "not_authenticated";
}

/**
 * One control call: `control("POST", "/_mock/clock/advance", {seconds: 1})`.
 * A string body is sent as YAML (the scenario loader). `root: true` calls the server's
 * root paths (the sandbox list) whatever sandbox the page shows. Throws ApiError.
 */
export async function control(method, path, body, options = {}) {
  for (;;) {
    const headers = authHeaders();
    let payload;
    if (typeof body === "string") {
      headers["Content-Type"] = "application/yaml";
      payload = body;
    } else if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      payload = JSON.stringify(body);
    }
    const url = (options.root ? "" : base) + path;
    const response = await fetch(url, { method, headers, body: payload, cache: "no-store" });
    const data = await readBody(response);
    if (isAuthRefusal(response, data)) {
      await needToken();
      continue;
    }
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }
}

export const get = (path, options) => control("GET", path, undefined, options);

export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, value);
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

// -- the merchant API ---------------------------------------------------------------------

const tokensByApiKey = new Map();

async function merchantCall(method, path, body, headers) {
  const response = await fetch(base + path, {
    method,
    headers: { "Content-Type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
  });
  return { status: response.status, body: await readBody(response) };
}

/** Exchange an API key for an access token, as a merchant does (cached per key). */
export async function merchantToken(apiKey, fresh) {
  if (!fresh && tokensByApiKey.has(apiKey)) return tokensByApiKey.get(apiKey);
  const answer = await merchantCall("POST", "/api/v1/auth/token/client", { api_key: apiKey }, {});
  if (answer.status !== 200) throw new ApiError(answer.status, answer.body);
  tokensByApiKey.set(apiKey, answer.body.access_token);
  return answer.body.access_token;
}

/**
 * A merchant call with the account's token; the answer is returned whatever its status
 * (the page shows it). An expired token (they age on the virtual clock) is renewed once.
 */
export async function merchant(apiKey, method, path, body, headers = {}) {
  let token = await merchantToken(apiKey);
  let answer = await merchantCall(method, path, body, { ...headers, Authorization: `Bearer ${token}` });
  if (answer.status === 401) {
    token = await merchantToken(apiKey, true);
    answer = await merchantCall(method, path, body, { ...headers, Authorization: `Bearer ${token}` });
  }
  return answer;
}

export function forgetMerchantTokens() {
  tokensByApiKey.clear();
}

// -- the live stream ----------------------------------------------------------------------

/**
 * Read `GET /_mock/events` with fetch (EventSource cannot send the admin token), parse its
 * `event:`/`data:` frames, and reconnect with backoff when it ends (server restart,
 * `overflow`, network). `onEvent(name, data)` gets every event; `onState("live" |
 * "reconnecting")` the connection's state. Every `ready` after the first means events
 * may have been missed: app.js re-reads the state then.
 */
export function openStream(onEvent, onState) {
  let delay = 500;
  const run = async () => {
    for (;;) {
      try {
        const response = await fetch(`${base}/_mock/events`, {
          headers: authHeaders(),
          cache: "no-store",
        });
        if (response.status === 401) {
          await response.text();
          await needToken();
          continue;
        }
        if (!response.ok || !response.body) throw new Error(`events: HTTP ${response.status}`);
        await readFrames(response.body, (name, data) => {
          if (name === "ready") {
            delay = 500;
            onState("live");
          }
          onEvent(name, data);
        });
      } catch {
        // The stream broke (server gone, network); the loop below reconnects.
      }
      onState("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 10000);
    }
  };
  run();
}

async function readFrames(stream, onFrame) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffered += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let end = buffered.indexOf("\n\n");
    while (end >= 0) {
      const frame = parseFrame(buffered.slice(0, end));
      buffered = buffered.slice(end + 2);
      if (frame) onFrame(frame.name, frame.data);
      end = buffered.indexOf("\n\n");
    }
  }
}

/** One SSE frame: `event:` and `data:` lines; `:` lines are keep-alive comments. */
export function parseFrame(text) {
  let name = "message";
  const data = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  try {
    return { name, data: JSON.parse(data.join("\n")) };
  } catch {
    return { name, data: data.join("\n") };
  }
}
