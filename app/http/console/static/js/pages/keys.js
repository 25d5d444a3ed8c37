// #/keys: the keys the token may read, a page at a time, with a search by name and the form
// that creates one. #/keys/<name>: that key (pages/key.js).
import { keyPage, post, vocabulary } from "../api.js";
import { FePolicyFields } from "../fe-policy.js";
import { feFieldsOf, fePolicyOf, isFe, isQuadratic, policyPhrases, typeGroups } from "../keys.js";
import { html, useState } from "../lib.js";
import { go, href } from "../router.js";
import {
  Check,
  ErrorNote,
  Field,
  Heading,
  Loading,
  Pager,
  SubmitOrCancel,
  Table,
  Time,
  useLoad,
  usePages,
  useTask,
} from "../ui.js";
import { ImportKey } from "./key-import.js";
import { Key } from "./key.js";

const PAGE_SIZES = ["25", "50", "100"];

export function Keys({ route }) {
  if (route.rest.length > 0) {
    const { params } = route;
    const notice = params.has("created") ? "Key created." : params.has("imported") ? "Key imported." : null;
    return html`<${Key} name=${route.rest[0]} notice=${notice} />`;
  }
  return html`<${KeyList} />`;
}

function KeyList() {
  // The form open under the toolbar: "create", "import" or none.
  const [form, setForm] = useState(null);
  const [search, setSearch] = useState("");
  const [applied, setApplied] = useState("");
  const [size, setSize] = useState(PAGE_SIZES[0]);
  const pages = usePages();
  const page = useLoad(() => {
    const needle = applied.toLowerCase();
    const match = needle ? (key) => key.name.toLowerCase().includes(needle) : null;
    return keyPage({ after: pages.after, size: Number(size), match });
  }, [pages.after, applied, size]);

  function find(event) {
    event.preventDefault();
    pages.reset();
    setApplied(search.trim());
  }

  return html`
    <${Heading}>Keys</${Heading}>
    <div class="toolbar">
      <form class="search" role="search" onSubmit=${find}>
        <${Field} label="Name contains" type="search" value=${search} onValue=${setSearch}
          spellcheck="false" autocomplete="off" />
        <button type="submit">Search</button>
      </form>
      <${Field} label="Keys per page" options=${PAGE_SIZES} value=${size}
        onValue=${(value) => { pages.reset(); setSize(value); }} />
      <button type="button" class="primary" aria-expanded=${form === "create"}
        onClick=${() => setForm(form === "create" ? null : "create")}>Create a key</button>
      <button type="button" aria-expanded=${form === "import"}
        onClick=${() => setForm(form === "import" ? null : "import")}>Import a backup</button>
    </div>
    ${form === "create" && html`<${CreateKey} onCancel=${() => setForm(null)} />`}
    ${form === "import" && html`<${ImportKey} onCancel=${() => setForm(null)} />`}
    <${ErrorNote} error=${page.error} />
    ${page.loading && !page.value ? html`<${Loading} what="the keys" />` : page.value && html`
      <${KeyTable} keys=${page.value.keys} searched=${applied} />
      ${page.value.searchedTo && html`<p class="hint" role="status">
        ${`Searched the keys up to “${page.value.searchedTo}”: Next searches on.`}</p>`}
      <${Pager} pages=${pages} next=${page.value.next} label="Pages of keys" />`}`;
}

function KeyTable({ keys, searched }) {
  if (keys.length === 0) {
    return html`<p class="empty">${searched ? `No key on this page has “${searched}” in its name.` : "No keys here."}</p>`;
  }
  return html`<${Table} caption="Keys" head=${["Name", "Type", "State", "Latest version", "Policies", "Created"]}>
    ${keys.map((key) => html`<tr key=${key.name}>
      <th scope="row"><a href=${href(["keys", key.name])}>${key.name}</a></th>
      <td>${key.type}${key.dimension ? html` <span class="muted">n=${key.dimension}</span>` : ""}</td>
      <td><${State} keyInfo=${key} /></td>
      <td class="number">v${key.latest_version}</td>
      <td>${policyPhrases(key).join(", ") || html`<span class="muted">none</span>`}</td>
      <td><${Time} iso=${key.created_at} /></td>
    </tr>`)}
  </${Table}>`;
}

export function State({ keyInfo }) {
  if (keyInfo.state === "pending-deletion") {
    const date = keyInfo.deletion_date;
    return html`<span class="state pending">pending deletion</span> ${date && html`<span class="muted">(destroyed on <${Time} iso=${date} />)</span>`}`;
  }
  return html`<span class="state active">${keyInfo.state}</span>`;
}

const NEW_KEY = {
  name: "",
  type: "",
  dimension: "",
  curve: "",
  exportable: false,
  allowBackup: false,
  deletionProtection: false,
  fe: feFieldsOf(null),
};

function CreateKey({ onCancel }) {
  const [form, setForm] = useState(NEW_KEY);
  const task = useTask();
  const known = useLoad(vocabulary, []);
  const set = (name) => (value) => setForm({ ...form, [name]: value });
  const fe = isFe(form.type);

  async function create(event) {
    event.preventDefault();
    const created = await task.run("create", () => {
      const body = { name: form.name.trim(), type: form.type };
      if (fe) {
        body.dimension = Number(form.dimension);
        if (form.curve) body.curve = form.curve;
        const policy = fePolicyOf(form.fe);
        if (Object.keys(policy).length > 0) body.fe_policy = policy;
      }
      if (form.exportable) body.exportable = true;
      if (form.allowBackup) body.allow_backup = true;
      if (form.deletionProtection) body.deletion_protection = true;
      return post("/v1/keys", body);
    });
    if (created) go(href(["keys", created.name], { created: "1" }));
  }

  if (known.error) return html`<${ErrorNote} error=${known.error} />`;
  if (!known.value) return html`<${Loading} what="the key types" />`;
  const types = [["", "Choose a type"], ...typeGroups(known.value.keyTypes)];
  return html`<form class="panel" onSubmit=${create} aria-labelledby="create-key-title">
    <h2 id="create-key-title">Create a key</h2>
    <div class="row">
      <${Field} label="Name" value=${form.name} onValue=${set("name")} required maxlength="128"
        pattern="[A-Za-z0-9_][A-Za-z0-9._\\-]*" spellcheck="false" autocomplete="off"
        hint="letters, digits, . _ and -, starting with a letter, digit or _" />
      <${Field} label="Type" options=${types} value=${form.type} onValue=${set("type")} required />
    </div>
    ${fe && html`<div class="row">
      <${Field} label="Dimension" type="number" min="1" value=${form.dimension} required
        onValue=${set("dimension")} hint=${isQuadratic(form.type) ? "n: x and y have n entries, F is n×n" : "n: the length of x and y"} />
      <${Field} label="Pairing curve" value=${form.curve} onValue=${set("curve")}
        options=${[["", "the service's default"], ...known.value.curves]} />
    </div>
    <${FePolicyFields} fields=${form.fe} quadratic=${isQuadratic(form.type)}
      onChange=${(value) => setForm({ ...form, fe: value })} />`}
    <fieldset>
      <legend>Options</legend>
      <${Check} label="Exportable" checked=${form.exportable} onValue=${set("exportable")}
        hint="the admin may read the secret (GET /v1/keys/{name}/export)" />
      <${Check} label="Allow backups" checked=${form.allowBackup} onValue=${set("allowBackup")}
        hint="the admin may back it up to another instance; cannot be changed later" />
      <${Check} label="Deletion protection" checked=${form.deletionProtection}
        onValue=${set("deletionProtection")} hint="deletion is refused until this is turned off" />
    </fieldset>
    <${SubmitOrCancel} task=${task} action="Create" onCancel=${onCancel} />
  </form>`;
}
