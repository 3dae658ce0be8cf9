// Data that several views share and that changes rarely (accounts, catalog, scenarios),
// read once and kept until something says it changed (a reset, an edit, a sandbox switch).

import { get } from "./api.js";

const reads = new Map();

function cached(key, path, pick) {
  if (!reads.has(key)) {
    const read = get(path).then(pick);
    read.catch(() => reads.delete(key)); // a failed read is tried again next time
    reads.set(key, read);
  }
  return reads.get(key);
}

export const accounts = () => cached("accounts", "/_mock/accounts", (body) => body.accounts);
export const catalog = () => cached("catalog", "/_mock/catalog", (body) => body.items);
export const scenarios = () => cached("scenarios", "/_mock/scenarios", (body) => body);

/** Forget `keys` ("accounts", "catalog", "scenarios"), or everything. */
export function invalidate(...keys) {
  if (!keys.length) reads.clear();
  for (const key of keys) reads.delete(key);
}
