// Import a backup file (what a key's page downloads) as a key of this service.
import { post } from "../api.js";
import { html, useState } from "../lib.js";
import { go, href } from "../router.js";
import { Field, SubmitOrCancel, useTask } from "../ui.js";

// A backup file is the body of POST /v1/keys/import: {"backup": "<base64>"}. Anything else is
// refused here rather than sent.
async function backupIn(file) {
  if (!file) throw new Error("Backup file: choose one");
  let document;
  try {
    document = JSON.parse(await file.text());
  } catch {
    throw new Error("Backup file: not JSON; choose a file the console downloaded");
  }
  if (typeof document?.backup !== "string") {
    throw new Error("Backup file: it has no backup; choose a file the console downloaded");
  }
  return document.backup;
}

export function ImportKey({ onCancel }) {
  const [file, setFile] = useState(null);
  const [name, setName] = useState("");
  const task = useTask();
  async function restore(event) {
    event.preventDefault();
    const key = await task.run("import", async () => {
      const body = { backup: await backupIn(file) };
      if (name.trim()) body.name = name.trim();
      return post("/v1/keys/import", body);
    });
    if (key) go(href(["keys", key.name], { imported: "1" }));
  }
  return html`<form class="panel" onSubmit=${restore} aria-labelledby="import-key-title">
    <h2 id="import-key-title">Import a backup</h2>
    <p class="hint">A backup made for this service's wrapping key, by this service or one whose
      signature it trusts (CIPHERD_BACKUP_SIGNERS).</p>
    <div class="row">
      <${Field} label="Backup file" type="file" accept=".json,application/json" required
        onChange=${(e) => setFile(e.currentTarget.files[0] ?? null)} />
      <${Field} label="Name" value=${name} onValue=${setName} maxlength="128" spellcheck="false"
        pattern="[A-Za-z0-9][A-Za-z0-9._\\-]*" autocomplete="off" hint="empty: the name it was backed up under" />
    </div>
    <${SubmitOrCancel} task=${task} action="Import" onCancel=${onCancel} />
  </form>`;
}
