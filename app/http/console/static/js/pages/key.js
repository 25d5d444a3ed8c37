// #/keys/<name>: one key, its versions, public part and policies, and what the admin does to it.
import { del, get, keyPath, patch, post } from "../api.js";
import { FePolicyFields } from "../fe-policy.js";
import { feFieldsOf, fePolicyOf, hasPublicPart, isFe, isQuadratic } from "../keys.js";
import { html, useState } from "../lib.js";
import { href } from "../router.js";
import {
  Check,
  Confirm,
  Copyable,
  ErrorNote,
  Field,
  Heading,
  Loading,
  Outcome,
  Table,
  Time,
  useLoad,
  useTask,
  when,
} from "../ui.js";
import { Functions } from "./fe.js";
import { State } from "./keys.js";

export function Key({ name, notice }) {
  const key = useLoad(() => get(keyPath(name)), [name]);
  // The policy form starts afresh from each new state of the key; its outcome outlives it.
  const saving = useTask();
  if (key.error) {
    return html`<${Heading}>Key ${name}</${Heading}><${ErrorNote} error=${key.error} />`;
  }
  if (!key.value) return html`<${Heading}>Key ${name}</${Heading}><${Loading} what="the key" />`;
  const info = key.value;
  const pending = info.state === "pending-deletion";
  return html`
    <p class="crumbs"><a href=${href(["keys"])}>Keys</a> /</p>
    <${Heading}>Key ${name}</${Heading}>
    ${notice && html`<p class="note done" role="status">${notice}</p>`}
    <${Summary} info=${info} />
    <${Actions} info=${info} onChange=${key.reload} />
    <${Versions} info=${info} />
    ${hasPublicPart(info.type) && !info.derived && !pending && html`<${PublicPart} info=${info} />`}
    ${!pending && html`<${Policies} key=${info.updated_at} info=${info} task=${saving} onChange=${key.reload} />`}
    ${info.allow_backup && !pending && html`<${Backup} name=${name} />`}
    ${isFe(info.type) && !pending && html`<section aria-labelledby="fe-title">
      <h2 id="fe-title">Released functions</h2>
      <${Functions} name=${name} info=${info} />
    </section>`}`;
}

function Summary({ info }) {
  const rows = [
    ["Type", info.type],
    ["State", html`<${State} keyInfo=${info} />`],
    ["Latest version", `v${info.latest_version}`],
    ["Created", html`<${Time} iso=${info.created_at} />`],
    ["Updated", html`<${Time} iso=${info.updated_at} />`],
  ];
  if (info.dimension) rows.splice(1, 0, ["Dimension", info.dimension], ["Curve", info.curve]);
  return html`<dl class="summary">${rows.map(([term, value]) => html`<div><dt>${term}</dt><dd>${value}</dd></div>`)}</dl>`;
}

function Actions({ info, onChange }) {
  const task = useTask();
  const [asking, setAsking] = useState(null);
  const [days, setDays] = useState("");
  const name = info.name;
  const pending = info.state === "pending-deletion";
  const trimmable = info.versions.filter((v) => v.version < info.min_decryption_version);

  async function act(which, request, success) {
    setAsking(null);
    const done = await task.run(which, request, success);
    if (done !== undefined) onChange();
  }
  const rotate = () => act("rotate", () => post(keyPath(name, "rotate")),
    (key) => `Rotated: v${key.latest_version} is the latest version.`);
  const restore = () => act("restore", () => post(keyPath(name, "restore")),
    "Restored: the key is back with every version.");
  const trim = () => act("trim", () => post(keyPath(name, "trim")),
    `Trimmed: ${trimmable.map((v) => `v${v.version}`).join(", ")} destroyed.`);
  const schedule = () => act("delete", () => {
    const window = days.trim() === "" ? undefined : Math.round(Number(days) * 86400);
    return del(keyPath(name), { window_seconds: window });
  }, (answer) => `Deletion scheduled: the key will be destroyed on ${when(answer.deletion_date)} unless restored.`);

  const busy = task.busy !== null;
  return html`<section aria-labelledby="actions-title">
    <h2 id="actions-title">Actions</h2>
    <div class="actions">
      ${pending
        ? html`<button type="button" class="primary" onClick=${restore} disabled=${busy}>Restore</button>`
        : html`
          <button type="button" class="primary" onClick=${rotate} disabled=${busy}>Rotate</button>
          <button type="button" onClick=${() => setAsking("trim")} disabled=${busy || trimmable.length === 0}
            title=${trimmable.length === 0 ? "Nothing below the minimum decryption version" : undefined}>Trim old versions</button>
          <button type="button" class="danger" onClick=${() => setAsking("delete")}
            disabled=${busy || info.deletion_protection}
            aria-describedby=${info.deletion_protection ? "protected" : undefined}>Schedule deletion</button>`}
      <a class="button" href=${href(["audit"], { key: name })}>Audit records</a>
    </div>
    ${info.deletion_protection && !pending && html`<p id="protected" class="hint">Deletion protection is
      on: turn it off under Policies to delete the key.</p>`}
    ${task.busy && html`<p class="loading" role="status">Working (${task.busy})…</p>`}
    <${Outcome} task=${task} />
    ${asking === "trim" && html`<${Confirm} title=${`Trim key ${name}?`} action="Destroy these versions"
        onConfirm=${trim} onCancel=${() => setAsking(null)}>
      <p>This destroys ${trimmable.map((v) => `v${v.version}`).join(", ")} (below the minimum
        decryption version, v${info.min_decryption_version}) for good: what they encrypted can never
        be decrypted again, and no restore brings them back. v${info.min_decryption_version} becomes the
        oldest version.</p>
    </${Confirm}>`}
    ${asking === "delete" && html`<${Confirm} title=${`Schedule the deletion of ${name}?`}
        action="Schedule deletion" typed=${name} onConfirm=${schedule} onCancel=${() => setAsking(null)}>
      <p>From now until its destruction every use of the key is refused. Until the date, Restore
        brings it back with every version; after it, the key and everything it encrypted are gone.</p>
      <${Field} label="Days until destruction" type="number" min="0" step="any" value=${days}
        onValue=${setDays} hint="empty: the service's default window (CIPHERD_DELETION_WINDOW_SECONDS)" />
    </${Confirm}>`}
  </section>`;
}

function Versions({ info }) {
  const encrypts = (version) => version >= (info.min_encryption_version || 0);
  return html`<section aria-labelledby="versions-title">
    <h2 id="versions-title">Versions</h2>
    <${Table} caption="Versions" head=${["Version", "Created", "Decrypts", "Encryption may ask for it"]}>
      ${[...(info.versions ?? [])].reverse().map((v) => html`<tr key=${v.version}>
        <th scope="row">v${v.version}${v.version === info.latest_version ? " (latest)" : ""}</th>
        <td><${Time} iso=${v.created_at} /></td>
        <td>${v.version >= info.min_decryption_version ? "yes" : "no"}</td>
        <td>${encrypts(v.version) ? "yes" : "no"}</td>
      </tr>`)}
    </${Table}>
  </section>`;
}

function PublicPart({ info }) {
  const [version, setVersion] = useState(String(info.latest_version));
  const part = useLoad(() => get(keyPath(info.name, "public"), { version }), [info.name, version, info.latest_version]);
  const usable = info.versions.map((v) => String(v.version)).reverse();
  return html`<section aria-labelledby="public-title">
    <h2 id="public-title">Public key</h2>
    <${Field} label="Version" options=${usable} value=${version} onValue=${setVersion} />
    <${ErrorNote} error=${part.error} />
    ${part.value && html`<${Copyable} label=${`Public key of v${part.value.version} (base64)`} value=${part.value.public_key} />`}
  </section>`;
}

function policyFields(info) {
  return {
    minDecryption: String(info.min_decryption_version),
    minEncryption: String(info.min_encryption_version),
    autoRotateDays: info.auto_rotate_seconds ? String(info.auto_rotate_seconds / 86400) : "",
    deletionProtection: info.deletion_protection,
    exportable: info.exportable,
    fe: feFieldsOf(info.fe_policy),
  };
}

// What the form changes, as PATCH /v1/keys/{name} takes it: only the fields that differ.
function changes(info, form) {
  const body = {};
  const before = policyFields(info);
  if (form.minDecryption !== before.minDecryption) body.min_decryption_version = Number(form.minDecryption);
  if (form.minEncryption !== before.minEncryption) body.min_encryption_version = Number(form.minEncryption);
  if (form.autoRotateDays !== before.autoRotateDays) {
    body.auto_rotate_seconds = form.autoRotateDays.trim() === "" ? 0 : Math.round(Number(form.autoRotateDays) * 86400);
  }
  if (form.deletionProtection !== before.deletionProtection) body.deletion_protection = form.deletionProtection;
  if (form.exportable !== before.exportable) body.exportable = form.exportable;
  if (isFe(info.type)) {
    const policy = fePolicyOf(form.fe);
    if (JSON.stringify(policy) !== JSON.stringify(fePolicyOf(before.fe))) body.fe_policy = policy;
  }
  return body;
}

function Policies({ info, task, onChange }) {
  const [form, setForm] = useState(() => policyFields(info));
  const set = (name) => (value) => setForm({ ...form, [name]: value });
  const versions = info.versions.map((v) => v.version);

  async function save(event) {
    event.preventDefault();
    const saved = await task.run("save", async () => {
      const body = changes(info, form);
      if (Object.keys(body).length === 0) return null;
      return patch(keyPath(info.name), body);
    }, (answer) => (answer === null ? "Nothing to change." : "Policies saved."));
    if (saved) onChange();
  }

  return html`<section aria-labelledby="policies-title">
    <h2 id="policies-title">Policies</h2>
    <form class="panel" onSubmit=${save}>
      <div class="row">
        <${Field} label="Minimum decryption version" type="number" required
          min=${Math.min(...versions)} max=${info.latest_version} value=${form.minDecryption}
          onValue=${set("minDecryption")} hint="older versions no longer decrypt; Trim destroys them" />
        <${Field} label="Minimum encryption version" type="number" required min="0"
          max=${info.latest_version} value=${form.minEncryption} onValue=${set("minEncryption")}
          hint="the oldest version an encryption may ask for; 0: any" />
        <${Field} label="Rotate every (days)" type="number" min="0" step="any"
          value=${form.autoRotateDays} onValue=${set("autoRotateDays")} hint="empty or 0: never" />
      </div>
      <${Check} label="Deletion protection" checked=${form.deletionProtection}
        onValue=${set("deletionProtection")} hint="deletion is refused while this is on" />
      <${Check} label="Exportable" checked=${form.exportable} onValue=${set("exportable")}
        disabled=${info.exportable} hint=${info.exportable ? "once exportable, always exportable" : "can only be turned on"} />
      ${isFe(info.type) && html`<${FePolicyFields} fields=${form.fe} quadratic=${isQuadratic(info.type)}
        onChange=${(value) => setForm({ ...form, fe: value })} />`}
      <div class="actions">
        <button type="submit" class="primary" disabled=${task.busy !== null}>Save policies</button>
      </div>
      <${Outcome} task=${task} />
    </form>
  </section>`;
}

function download(filename, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  // The download has its own reference to the blob once it started.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function Backup({ name }) {
  const [wrappingKey, setWrappingKey] = useState("");
  const task = useTask();
  const own = () => task.run("wrapping key", async () => {
    setWrappingKey((await get("/v1/sys/wrapping-key")).public_key);
  }, "This service's wrapping key: the backup can be imported here.");
  async function backUp(event) {
    event.preventDefault();
    await task.run("backup", async () => {
      const answer = await post(keyPath(name, "backup"), { wrapping_key: wrappingKey.trim() });
      const day = new Date().toISOString().slice(0, 10);
      // The file is the body of POST /v1/keys/import as it is.
      download(`${name}-backup-${day}.json`, `${JSON.stringify({ backup: answer.backup })}\n`);
    }, "Backup downloaded. Only the instance that holds the wrapping key's secret can import it.");
  }
  return html`<section aria-labelledby="backup-title">
    <h2 id="backup-title">Backup</h2>
    <form class="panel" onSubmit=${backUp}>
      <${Field} label="Wrapping key of the instance that will import it (base64)" multiline rows="2"
        value=${wrappingKey} onValue=${setWrappingKey} required spellcheck="false"
        hint="GET /v1/sys/wrapping-key on that instance" />
      <div class="actions">
        <button type="button" onClick=${own} disabled=${task.busy !== null}>Use this service's wrapping key</button>
        <button type="submit" class="primary" disabled=${task.busy !== null}>Download backup</button>
      </div>
      <${Outcome} task=${task} />
    </form>
  </section>`;
}
