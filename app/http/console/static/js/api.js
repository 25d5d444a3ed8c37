// The service's public API, called with this tab's token. Nothing here writes the token
// anywhere but sessionStorage and the Authorization header: never a URL, never the console.

const TOKEN_KEY = "cipherd.token";
// The console is served at <service>/ui/: the API is one level up, whatever the prefix.
const SERVICE = new URL("../", document.baseURI);

export const session = {
  token: () => sessionStorage.getItem(TOKEN_KEY),
  start: (token) => sessionStorage.setItem(TOKEN_KEY, token),
  end: () => sessionStorage.removeItem(TOKEN_KEY),
};

// A refusal, with the RFC 9457 problem document the service sent (or one made up for it).
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.title = problem.title || `HTTP ${status}`;
    this.problem = problem;
  }
}

// Told when the service refuses the session's token (401): the session is over.
const refusedListeners = new Set();
export function onRefused(listener) {
  refusedListeners.add(listener);
  return () => refusedListeners.delete(listener);
}

export function serviceUrl(path, query = {}) {
  const target = new URL(path.replace(/^\//, ""), SERVICE);
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") {
      target.searchParams.set(name, String(value));
    }
  }
  return target;
}

async function problemOf(answer) {
  try {
    const body = await answer.json();
    if (body && typeof body === "object") return body;
  } catch {
    // not JSON: the status says enough
  }
  return { title: answer.statusText || `HTTP ${answer.status}` };
}

// `token`: the one to try instead of the session's (signing in). `anonymous`: send none.
// `accept`: statuses besides 2xx whose body is the answer (a 503 from /readyz).
export async function call(method, path, options = {}) {
  const { query, body, anonymous = false, text = false, accept = [] } = options;
  const token = options.token ?? session.token();
  const headers = { Accept: text ? "text/plain" : "application/json, application/problem+json" };
  if (!anonymous && token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, cache: "no-store", credentials: "omit", redirect: "error" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let answer;
  try {
    answer = await fetch(serviceUrl(path, query), init);
  } catch (error) {
    throw new ApiError(0, { title: "The service did not answer", detail: error.message });
  }
  if (answer.status === 401 && !anonymous && options.token === undefined) {
    session.end();
    for (const listener of refusedListeners) listener();
  }
  if (!answer.ok && !accept.includes(answer.status)) {
    throw new ApiError(answer.status, await problemOf(answer));
  }
  if (answer.status === 204) return null;
  return text ? answer.text() : answer.json();
}

export const get = (path, query, options) => call("GET", path, { ...options, query });
export const post = (path, body, options) => call("POST", path, { ...options, body });
export const patch = (path, body) => call("PATCH", path, { body });
export const del = (path, query) => call("DELETE", path, { query });

export const keyPath = (name, ...rest) =>
  ["/v1/keys", encodeURIComponent(name), ...rest].join("/");

// The OpenAPI document, read once: the key types, token operations and operation ids the
// running service takes, so that the console never offers one it does not.
let described;
export function describe() {
  described ??= get("/openapi.json", {}, { anonymous: true }).catch((error) => {
    described = undefined;
    throw error;
  });
  return described;
}

function enumOf(schema) {
  if (!schema) return [];
  if (schema.enum) return schema.enum;
  return (schema.anyOf ?? []).flatMap((option) => option.enum ?? []);
}

export async function vocabulary() {
  const document = await describe();
  const schemas = document.components.schemas;
  const ids = new Set();
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) ids.add(operation.operationId);
  }
  return {
    version: document.info.version,
    keyTypes: enumOf(schemas.KeyCreate.properties.type),
    curves: enumOf(schemas.KeyCreate.properties.curve),
    tokenOperations: enumOf(schemas.Operation),
    operationIds: [...ids].filter(Boolean).sort(),
    paths: Object.keys(document.paths),
  };
}

// Keys are read this many at a time when the console looks through them (a search, the FE keys),
// and at most this many pages at one go: a search never asks more of the service than that
// before it shows what it found.
const SCAN_LIMIT = 1000;
const SCAN_PAGES = 10;

// A page of `size` keys after `after`: the service's own page, or, with `match`, the keys that
// match, found by reading the list in turn. `next` continues; `searchedTo` is set when the
// bound stopped the search before the page was full.
export async function keyPage({ after, size, match }) {
  if (!match) {
    const answer = await get("/v1/keys", { limit: size, after });
    return { keys: answer.keys, next: answer.next, searchedTo: null };
  }
  const keys = [];
  let cursor = after;
  for (let read = 0; read < SCAN_PAGES; read++) {
    const answer = await get("/v1/keys", { limit: SCAN_LIMIT, after: cursor });
    for (const key of answer.keys) {
      if (!match(key)) continue;
      keys.push(key);
      if (keys.length === size) return { keys, next: key.name, searchedTo: null };
    }
    if (answer.next === null) return { keys, next: null, searchedTo: null };
    cursor = answer.next;
  }
  return { keys, next: cursor, searchedTo: cursor };
}
