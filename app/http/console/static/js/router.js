// Where the console is: the part of the URL after "#", e.g. #/keys/orders or #/audit?key=orders.
// Only names and filters go there, never a token.
import { useEffect, useState } from "./lib.js";

function decoded(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export function currentRoute() {
  const raw = location.hash.replace(/^#\/?/, "");
  const mark = raw.indexOf("?");
  const path = mark < 0 ? raw : raw.slice(0, mark);
  const parts = path.split("/").filter(Boolean).map(decoded);
  return {
    page: parts[0] ?? "",
    rest: parts.slice(1),
    params: new URLSearchParams(mark < 0 ? "" : raw.slice(mark + 1)),
  };
}

// "#/keys/orders" from ["keys", "orders"]; the query from an object, empty values left out.
export function href(parts, query = {}) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  }
  const tail = search.toString();
  return `#/${parts.map(encodeURIComponent).join("/")}${tail ? `?${tail}` : ""}`;
}

export function go(target) {
  if (location.hash !== target) location.hash = target;
}

export function useRoute() {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const follow = () => setRoute(currentRoute());
    addEventListener("hashchange", follow);
    return () => removeEventListener("hashchange", follow);
  }, []);
  return route;
}
