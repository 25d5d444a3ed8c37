// The console's pages, in the order of its menu: a page is a view of the route (`#/<path>/...`)
// and one line here.
import { Audit } from "./pages/audit.js";
import { FeKeys } from "./pages/fe.js";
import { Keys } from "./pages/keys.js";
import { Status } from "./pages/status.js";
import { Tokens } from "./pages/tokens.js";

export const PAGES = [
  { path: "keys", title: "Keys", view: Keys },
  { path: "audit", title: "Audit trail", view: Audit },
  { path: "tokens", title: "Tokens", view: Tokens },
  { path: "fe", title: "FE keys", view: FeKeys },
  { path: "status", title: "Status", view: Status },
];
