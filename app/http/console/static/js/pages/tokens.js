// #/tokens: the scoped tokens (admin), a page at a time by id: which keys and operations each
// may use, a new one, and revocation.
import { del, get, post, vocabulary } from "../api.js";
import { html, useState } from "../lib.js";
import {
  Check,
  Confirm,
  Copyable,
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

const PAGE_SIZE = 50;

export function Tokens() {
  const pages = usePages();
  const tokens = useLoad(() => get("/v1/tokens", { limit: PAGE_SIZE, after: pages.after }), [pages.after]);
  const task = useTask();
  const [revoking, setRevoking] = useState(null);
  const [issued, setIssued] = useState(null);

  async function revoke() {
    const token = revoking;
    setRevoking(null);
    await task.run("revoke", () => del(`/v1/tokens/${encodeURIComponent(token.id)}`),
      `Token ${token.id} revoked.`);
    tokens.reload();
  }

  return html`
    <${Heading}>Tokens</${Heading}>
    <p class="lead">Scoped tokens for applications: each may use the keys its patterns match, for
      the operations it names. The admin token is not listed.</p>
    ${issued && html`<${Issued} token=${issued} onDone=${() => setIssued(null)} />`}
    <${CreateToken} onIssued=${(token) => { setIssued(token); tokens.reload(); }} />
    <section aria-labelledby="tokens-title">
      <h2 id="tokens-title">Scoped tokens</h2>
      <${Outcome} task=${task} />
      <${ErrorNote} error=${tokens.error} />
      ${!tokens.value ? !tokens.error && html`<${Loading} what="the tokens" />`
        : tokens.value.tokens.length === 0 ? html`<p class="empty">No scoped tokens.</p>`
        : html`<${Table} caption="Scoped tokens"
            head=${["Id", "Description", "Keys", "Operations", "Created", "Expires", "Rate limit", ""]}>
          ${tokens.value.tokens.map((token) => html`<tr key=${token.id}>
            <th scope="row"><code>${token.id}</code></th>
            <td>${token.description || html`<span class="muted">none</span>`}</td>
            <td>${token.keys.map((pattern) => html`<code class="pattern">${pattern}</code> `)}</td>
            <td>${token.operations.join(", ")}</td>
            <td><${Time} iso=${token.created_at} /></td>
            <td>${token.expires_at ? html`<${Time} iso=${token.expires_at} />` : "never"}</td>
            <td>${token.rate_per_second ? `${token.rate_per_second}/s per worker` : "none"}</td>
            <td><button type="button" class="danger small" onClick=${() => setRevoking(token)}
              disabled=${task.busy !== null} aria-label=${`Revoke token ${token.id}`}>Revoke</button></td>
          </tr>`)}
        </${Table}>`}
      ${tokens.value && html`<${Pager} pages=${pages} next=${tokens.value.next} label="Pages of tokens" />`}
    </section>
    ${revoking && html`<${Confirm} title=${`Revoke token ${revoking.id}?`} action="Revoke"
        onConfirm=${revoke} onCancel=${() => setRevoking(null)}>
      <p>Every request with this token is refused from now on (on other processes within their
        token cache's lifetime). A revoked token cannot be brought back: issue a new one.</p>
      ${revoking.description && html`<p>Description: ${revoking.description}</p>`}
    </${Confirm}>`}`;
}

function Issued({ token, onDone }) {
  return html`<section class="panel issued" aria-labelledby="issued-title">
    <h2 id="issued-title">Token ${token.id} issued</h2>
    <p><strong>Copy it now: it is shown only once.</strong> The service keeps only its hash.</p>
    <${Copyable} label="The new token" value=${token.token} />
    <button type="button" onClick=${onDone}>Done</button>
  </section>`;
}

const TTL_UNITS = [["86400", "days"], ["3600", "hours"], ["60", "minutes"]];
const NEW_TOKEN = { description: "", keys: "", operations: [], ttl: "", ttlUnit: "86400", rate: "" };

function CreateToken({ onIssued }) {
  const [form, setForm] = useState(NEW_TOKEN);
  const known = useLoad(vocabulary, []);
  const task = useTask();
  const set = (name) => (value) => setForm({ ...form, [name]: value });
  const toggle = (operation) => (on) => setForm({
    ...form,
    operations: on ? [...form.operations, operation] : form.operations.filter((op) => op !== operation),
  });

  async function create(event) {
    event.preventDefault();
    const issued = await task.run("create", () => {
      if (form.operations.length === 0) throw new Error("Operations: choose at least one");
      const body = {
        description: form.description.trim(),
        keys: form.keys.split(/[\s,]+/).filter(Boolean),
        operations: form.operations,
      };
      if (form.ttl.trim() !== "") body.ttl_seconds = Math.round(Number(form.ttl) * Number(form.ttlUnit));
      if (form.rate.trim() !== "") body.rate_per_second = Number(form.rate);
      return post("/v1/tokens", body);
    });
    if (issued) {
      setForm(NEW_TOKEN);
      onIssued(issued);
    }
  }

  if (known.error) return html`<${ErrorNote} error=${known.error} />`;
  if (!known.value) return html`<${Loading} what="the operations" />`;
  return html`<details class="panel">
    <summary>Issue a token</summary>
    <form onSubmit=${create}>
      <${Field} label="Description" value=${form.description} onValue=${set("description")} maxlength="200" />
      <${Field} label="Key name patterns" value=${form.keys} onValue=${set("keys")} required
        spellcheck="false" hint="separated by spaces or commas; * ? [seq] match as in a shell, e.g. orders-*" />
      <fieldset>
        <legend>Operations</legend>
        <div class="checks">
          ${known.value.tokenOperations.map((operation) => html`<${Check} label=${operation}
            checked=${form.operations.includes(operation)} onValue=${toggle(operation)} />`)}
        </div>
      </fieldset>
      <div class="row">
        <${Field} label="Lifetime" type="number" min="0" step="any" value=${form.ttl} onValue=${set("ttl")}
          hint="empty: no expiry" />
        <${Field} label="Lifetime unit" options=${TTL_UNITS} value=${form.ttlUnit} onValue=${set("ttlUnit")} />
        <${Field} label="Requests a second" type="number" min="0" step="any" value=${form.rate}
          onValue=${set("rate")} hint="per worker process; empty: no limit" />
      </div>
      <div class="actions">
        <button type="submit" class="primary" disabled=${task.busy !== null}>Issue</button>
      </div>
      <${ErrorNote} error=${task.error} />
    </form>
  </details>`;
}
