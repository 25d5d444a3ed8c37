// #/audit: the audit trail (admin), filtered by key, principal, operation, outcome and time,
// a page at a time, every field of a record on demand, and the verification of its chains.
import { get, post, vocabulary } from "../api.js";
import { html, useState } from "../lib.js";
import { go, href } from "../router.js";
import {
  ErrorNote,
  Field,
  Heading,
  Loading,
  Outcome,
  Pager,
  Table,
  Time,
  useLoad,
  usePages,
  useTask,
} from "../ui.js";

const FILTERS = ["key", "principal", "operation", "outcome", "since", "until"];
const OUTCOMES = [
  ["", "any"],
  ["success", "success (below 400)"],
  ["failure", "failure (400 and above)"],
  ...["400", "401", "403", "404", "409", "422", "429", "503"].map((status) => [status, `status ${status}`]),
];
const PAGE_SIZES = ["50", "100", "250"];
// The trail reads oldest first: these start it at a recent moment.
const RECENT = [["Last hour", 3600], ["Last day", 86400], ["Last week", 7 * 86400]];

// A datetime-local value ("2026-12-03T14:05") read as UTC, as the API takes it.
function utc(local) {
  if (!local) return undefined;
  return `${local.length === 16 ? `${local}:00` : local}Z`;
}

function filtersOf(params) {
  return Object.fromEntries(FILTERS.map((name) => [name, params.get(name) ?? ""]));
}

export function Audit({ route }) {
  const filters = filtersOf(route.params);
  const query = new URLSearchParams(filters).toString();
  return html`
    <${Heading}>Audit trail</${Heading}>
    <${Verify} />
    <${Filters} key=${query} initial=${filters} />
    <${Records} key=${query} filters=${filters} />`;
}

function Filters({ initial }) {
  const [form, setForm] = useState(initial);
  const known = useLoad(vocabulary, []);
  const set = (name) => (value) => setForm({ ...form, [name]: value });
  function apply(event) {
    event.preventDefault();
    go(href(["audit"], form));
  }
  return html`<form class="panel filters" onSubmit=${apply} aria-label="Filter the records">
    <div class="row">
      <${Field} label="Key" value=${form.key} onValue=${set("key")} spellcheck="false" maxlength="128" />
      <${Field} label="Principal" value=${form.principal} onValue=${set("principal")} spellcheck="false"
        maxlength="64" hint="admin, a token's id, or system" />
      <${Field} label="Operation" value=${form.operation} onValue=${set("operation")} spellcheck="false"
        maxlength="64" list="audit-operations" hint="e.g. keys_rotate_key" />
      <${Field} label="Outcome" options=${OUTCOMES} value=${form.outcome} onValue=${set("outcome")} />
    </div>
    <div class="row">
      <${Field} label="From (UTC)" type="datetime-local" step="1" value=${form.since} onValue=${set("since")} />
      <${Field} label="Until (UTC)" type="datetime-local" step="1" value=${form.until} onValue=${set("until")} />
    </div>
    <datalist id="audit-operations">
      ${(known.value?.operationIds ?? []).map((id) => html`<option value=${id}></option>`)}
    </datalist>
    <div class="actions">
      <button type="submit" class="primary">Filter</button>
      <button type="button" onClick=${() => go(href(["audit"]))}>Clear</button>
      ${RECENT.map(([label, seconds]) => html`<button type="button" onClick=${() => go(href(["audit"], {
        ...form,
        since: new Date(Date.now() - seconds * 1000).toISOString().slice(0, 19),
        until: "",
      }))}>${label}</button>`)}
    </div>
  </form>`;
}

function Records({ filters }) {
  const pages = usePages();
  const [size, setSize] = useState(PAGE_SIZES[0]);
  const page = useLoad(() => get("/v1/audit", {
    key: filters.key,
    principal: filters.principal,
    operation: filters.operation,
    outcome: filters.outcome,
    since: utc(filters.since),
    until: utc(filters.until),
    limit: size,
    after: pages.after,
  }), [pages.after, size]);
  return html`<section aria-labelledby="records-title">
    <h2 id="records-title">Records, oldest first</h2>
    <${Field} label="Records per page" options=${PAGE_SIZES} value=${size}
      onValue=${(value) => { pages.reset(); setSize(value); }} />
    <${ErrorNote} error=${page.error} />
    ${!page.value ? !page.error && html`<${Loading} what="the records" />` : html`
      ${page.value.records.length === 0
        ? html`<p class="empty">No record matches.</p>`
        : html`<${Table} caption="Audit records"
            head=${["Time", "Principal", "Operation", "Key", "Status", "Fields"]}>
          ${page.value.records.map((record) => html`<${Record} key=${`${record.chain}:${record.seq}`} record=${record} />`)}
        </${Table}>`}
      <${Pager} pages=${pages} next=${page.value.next} label="Pages of records" />`}
  </section>`;
}

function versions(value) {
  if (value === null || value === undefined) return "";
  return Array.isArray(value) ? ` v${value.join(", v")}` : ` v${value}`;
}

function Record({ record }) {
  const [open, setOpen] = useState(false);
  const fields = [
    ["time", html`<${Time} iso=${record.time} />`],
    ["request_id", record.request_id],
    ["client", record.client ?? "—"],
    ["principal", record.principal ?? "no valid token"],
    ["operation", record.operation],
    ["key", record.key ?? "—"],
    ["key_version", record.key_version === null ? "—" : JSON.stringify(record.key_version)],
    ["status", record.status],
    ["outcome", record.outcome],
    ["problem", record.problem ?? "—"],
    ["details", html`<code>${JSON.stringify(record.details)}</code>`],
    ["chain", record.chain],
    ["seq", record.seq],
    ["mac", html`<code>${record.mac}</code>`],
  ];
  // An intent (status 0) is the record of a change about to be made; its outcome follows it.
  const outcome = record.outcome === "intent"
    ? html`<span class="state">intent</span>`
    : html`<span class=${record.outcome === "success" ? "state active" : "state failure"}>${record.status}</span>`;
  return html`
    <tr>
      <td><${Time} iso=${record.time} /></td>
      <td>${record.principal ?? html`<span class="muted">none</span>`}</td>
      <td>${record.operation}</td>
      <td>${record.key ? html`<a href=${href(["keys", record.key])}>${record.key}</a>` : ""}${versions(record.key_version)}</td>
      <td>${outcome}${record.problem ? ` ${record.problem}` : ""}</td>
      <td><button type="button" class="small" aria-expanded=${open}
        aria-label=${`${open ? "Hide" : "Show"} the fields of record ${record.seq} of chain ${record.chain}`}
        onClick=${() => setOpen(!open)}>${open ? "Hide" : "Show"}</button></td>
    </tr>
    ${open && html`<tr class="record-fields"><td colspan="6">
      <dl class="fields">${fields.map(([term, value]) => html`<div><dt>${term}</dt><dd>${value}</dd></div>`)}</dl>
    </td></tr>`}`;
}

function Verify() {
  const task = useTask();
  const [result, setResult] = useState(null);
  async function verify() {
    setResult(null);
    const answer = await task.run("verify", () => post("/v1/audit/verify"));
    if (answer) setResult(answer);
  }
  return html`<section class="panel" aria-labelledby="verify-title">
    <h2 id="verify-title">Integrity</h2>
    <p>Checks every record's MAC and its place in its chain: a record changed, removed,
      reordered or forged shows as a fault.</p>
    <button type="button" class="primary" onClick=${verify} disabled=${task.busy !== null}>Verify the audit chains</button>
    ${task.busy && html`<p class="loading" role="status">Verifying…</p>`}
    <${Outcome} task=${task} />
    ${result && html`<${Verification} result=${result} />`}
  </section>`;
}

// Where the anchor that the store was compared with was kept, and when it was published.
function Anchor({ anchor }) {
  if (!anchor) {
    return html`<p>No anchor is kept: a chain cut short together with its head would not show.</p>`;
  }
  if (anchor.source === undefined) return html`<p>Anchor: <code>${JSON.stringify(anchor)}</code></p>`;
  return html`<p>Compared with the anchor kept in <strong>${anchor.source}</strong>,
    published <${Time} iso=${anchor.time} />, of ${anchor.chains} chains.</p>`;
}

function Verification({ result }) {
  const count = result.faults.length;
  const summary = `${result.records} records in ${result.chains} chains, ${count} fault${count === 1 ? "" : "s"}.`;
  return html`<div class=${result.verified ? "note done" : "note error"} role="status">
    <p><strong>${result.verified ? "Verified" : "Not verified"}</strong>: ${summary}</p>
    ${count > 0 && html`<${Table} caption="Faults" head=${["Chain", "Record", "Problem"]}>
      ${result.faults.map((fault, index) => html`<tr key=${index}>
        <td>${fault.chain ?? "the whole trail"}</td><td class="number">${fault.seq ?? "—"}</td>
        <td>${fault.problem}</td></tr>`)}
    </${Table}>`}
    <${Anchor} anchor=${result.anchor} />
  </div>`;
}
