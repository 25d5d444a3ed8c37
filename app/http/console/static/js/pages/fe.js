// #/fe: the functional-encryption keys, with the rank of what each has released against its
// max_rank and its keygen quota. #/fe/<name>: the functions released under a version of one.
import { get, keyPage, keyPath } from "../api.js";
import { isFe, quotaText } from "../keys.js";
import { html, useState } from "../lib.js";
import { href } from "../router.js";
import {
  ErrorNote,
  Field,
  Heading,
  Loading,
  Pager,
  Table,
  Time,
  useLoad,
  usePages,
} from "../ui.js";

const PAGE_SIZE = 20;
// The released functions a page lists, newest first; the rank and quota use them all.
const SHOWN_FUNCTIONS = 200;

// Every page of the functions released under a version, oldest first, as one answer; the
// later pages ask for the first one's version, should the key rotate meanwhile.
async function functionsOf(name, version) {
  const path = `/v1/fe/${encodeURIComponent(name)}/functions`;
  let page = await get(path, { key_version: version, limit: 1000 });
  const functions = [...page.functions];
  while (page.next !== null) {
    page = await get(path, { key_version: page.key_version, limit: 1000, after: page.next });
    functions.push(...page.functions);
  }
  return { ...page, functions };
}

export function FeKeys({ route }) {
  if (route.rest.length > 0) return html`<${FeKey} name=${route.rest[0]} />`;
  return html`<${FeList} />`;
}

function FeList() {
  const pages = usePages();
  const page = useLoad(
    () => keyPage({ after: pages.after, size: PAGE_SIZE, match: (key) => isFe(key.type) }),
    [pages.after],
  );
  return html`
    <${Heading}>Functional-encryption keys</${Heading}>
    <p class="lead">Each functional key reveals one function of the encrypted data. The rank of
      the functions released under a key version measures what their holders can learn
      together; max_rank caps it.</p>
    <${ErrorNote} error=${page.error} />
    ${!page.value ? !page.error && html`<${Loading} what="the FE keys" />` : html`
      ${page.value.keys.length === 0
        ? html`<p class="empty">No functional-encryption keys here.</p>`
        : html`<${Table} caption="Functional-encryption keys"
            head=${["Name", "Type", "n", "Latest version", "Rank of the latest version", "Keygen quota"]}>
          ${page.value.keys.map((key) => html`<tr key=${key.name}>
            <th scope="row"><a href=${href(["fe", key.name])}>${key.name}</a></th>
            <td>${key.type} <span class="muted">${key.curve}</span></td>
            <td class="number">${key.dimension}</td>
            <td class="number">v${key.latest_version}</td>
            <td>${key.state === "active" ? html`<${LatestRank} name=${key.name} version=${key.latest_version} />` : "pending deletion"}</td>
            <td>${key.fe_policy?.keygen_quota ? quotaText(key.fe_policy.keygen_quota) : html`<span class="muted">none</span>`}</td>
          </tr>`)}
        </${Table}>`}
      ${page.value.searchedTo && html`<p class="hint" role="status">
        ${`Looked through the keys up to “${page.value.searchedTo}”: Next looks on.`}</p>`}
      <${Pager} pages=${pages} next=${page.value.next} label="Pages of FE keys" />`}`;
}

function LatestRank({ name, version }) {
  const released = useLoad(() => functionsOf(name, version), [name, version]);
  if (released.error) return html`<span class="muted">${released.error.title}</span>`;
  if (!released.value) return html`<span class="muted">…</span>`;
  return html`<${Rank} released=${released.value} />`;
}

export function Rank({ released }) {
  const { rank, max_rank: max } = released;
  const count = released.functions.length;
  const label = `${count} function${count === 1 ? "" : "s"} released, rank ${rank}`;
  if (max === null || max === undefined) return html`<span>${label}, no maximum</span>`;
  return html`<span class="rank">
    <meter min="0" max=${Math.max(max, 1)} value=${rank} high=${Math.max(max - 1, 0)} optimum="0"
      aria-label=${`rank ${rank} of at most ${max}`}></meter>
    ${label} of at most ${max}
  </span>`;
}

function FeKey({ name }) {
  const key = useLoad(() => get(keyPath(name)), [name]);
  return html`
    <p class="crumbs"><a href=${href(["fe"])}>FE keys</a> /</p>
    <${Heading}>Functions released under ${name}</${Heading}>
    <${ErrorNote} error=${key.error} />
    ${key.value && html`<p><a href=${href(["keys", name])}>The key's page</a>: ${key.value.type},
      n=${key.value.dimension}, ${key.value.curve}.</p>
      <${Functions} name=${name} info=${key.value} />`}`;
}

// Per token, the functional keys made within the quota's period, newest window first.
function quotaUse(functions, quota) {
  const since = Date.now() - quota.period_seconds * 1000;
  const counts = new Map();
  for (const record of functions) {
    if (new Date(record.time).getTime() >= since) {
      counts.set(record.principal, (counts.get(record.principal) ?? 0) + 1);
    }
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1]);
}

export function Functions({ name, info }) {
  const [version, setVersion] = useState(String(info.latest_version));
  const released = useLoad(() => functionsOf(name, version), [name, version]);
  const quota = info.fe_policy?.keygen_quota;
  const versions = info.versions.map((v) => String(v.version)).reverse();
  const shown = released.value ? [...released.value.functions].reverse().slice(0, SHOWN_FUNCTIONS) : [];
  return html`<div class="functions">
    <${Field} label="Key version" options=${versions} value=${version} onValue=${setVersion} />
    <${ErrorNote} error=${released.error} />
    ${!released.value ? !released.error && html`<${Loading} what="the released functions" />` : html`
      <p><${Rank} released=${released.value} /></p>
      ${quota && html`<h3>Keygen quota: ${quotaText(quota)}</h3>
        ${quotaUse(released.value.functions, quota).length === 0
          ? html`<p class="muted">No functional keys of this version within the last period.</p>`
          : html`<${Table} caption="Quota used per token" head=${["Token", "Keys within the period", "Left"]}>
            ${quotaUse(released.value.functions, quota).map(([principal, used]) => html`<tr key=${principal}>
              <th scope="row">${principal}</th><td class="number">${used}</td>
              <td class="number">${Math.max(quota.count - used, 0)}</td></tr>`)}
          </${Table}>`}`}
      ${shown.length === 0 ? html`<p class="empty">No function released under v${version}.</p>` : html`
        <${Table} caption="Released functions" head=${["Function", "Token", "Time", "Rank after"]}>
          ${shown.map((record, index) => html`<tr key=${index}>
            <td><code>${JSON.stringify(record.function)}</code></td>
            <td>${record.principal}</td>
            <td><${Time} iso=${record.time} /></td>
            <td class="number">${record.rank}</td>
          </tr>`)}
        </${Table}>
        ${released.value.functions.length > shown.length && html`<p class="hint">
          ${`The newest ${shown.length} of ${released.value.functions.length} are listed.`}</p>`}`}`}
  </div>`;
}
