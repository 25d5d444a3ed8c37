// #/status: liveness, readiness, and the figures of /metrics an operator looks at first.
import { get, vocabulary } from "../api.js";
import { html } from "../lib.js";
import { ErrorNote, Heading, Loading, Table, useLoad } from "../ui.js";

// Prometheus' text format: `name{label="value",...} number`, comments skipped.
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const match = SAMPLE.exec(line);
    if (!match) continue;
    const labels = {};
    for (const [, name, value] of (match[2] ?? "").matchAll(LABEL)) {
      labels[name] = value.replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    }
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

const sum = (samples, name, where = () => true) =>
  samples.filter((s) => s.name === name && where(s.labels)).reduce((total, s) => total + s.value, 0);

// The latency below which `share` of the requests fell, from the histogram's buckets (the
// bucket's upper bound: what Prometheus' histogram_quantile would interpolate within).
function quantile(samples, share) {
  const buckets = new Map();
  for (const s of samples) {
    if (s.name !== "cipherd_http_request_duration_seconds_bucket") continue;
    buckets.set(s.labels.le, (buckets.get(s.labels.le) ?? 0) + s.value);
  }
  const ordered = [...buckets.entries()]
    .map(([le, count]) => [le === "+Inf" ? Infinity : Number(le), count])
    .sort((a, b) => a[0] - b[0]);
  const total = ordered.length ? ordered[ordered.length - 1][1] : 0;
  if (total === 0) return null;
  return ordered.find(([, count]) => count >= share * total)[0];
}

const ms = (seconds) => (seconds === null ? "—" : seconds === Infinity ? "over 10 s" : `≤ ${seconds * 1000} ms`);

function grouped(samples, name, by) {
  const totals = new Map();
  for (const s of samples) {
    if (s.name !== name) continue;
    const group = by(s.labels);
    totals.set(group, (totals.get(group) ?? 0) + s.value);
  }
  return totals;
}

function Figures({ samples }) {
  const requests = "cipherd_http_requests_total";
  const total = sum(samples, requests);
  const byClass = grouped(samples, requests, (l) => `${l.status?.[0] ?? "?"}xx`);
  const byRoute = [...grouped(samples, requests, (l) => `${l.method} ${l.route}`).entries()]
    .sort((a, b) => b[1] - a[1]).slice(0, 10);
  const refused = [...grouped(samples, "cipherd_refused_total", (l) => l.reason).entries()];
  const caches = [...new Set(samples.filter((s) => s.name.startsWith("cipherd_cache_")).map((s) => s.labels.cache))]
    .filter(Boolean).sort();
  const cacheRow = (cache) => {
    const hits = sum(samples, "cipherd_cache_events_total", (l) => l.cache === cache && l.event === "hit");
    const misses = sum(samples, "cipherd_cache_events_total", (l) => l.cache === cache && l.event === "miss");
    const rate = hits + misses ? `${((100 * hits) / (hits + misses)).toFixed(1)} %` : "—";
    const entries = sum(samples, "cipherd_cache_entries", (l) => l.cache === cache);
    const bytes = sum(samples, "cipherd_cache_bytes", (l) => l.cache === cache);
    return html`<tr key=${cache}><th scope="row">${cache}</th><td class="number">${hits}</td>
      <td class="number">${misses}</td><td class="number">${rate}</td><td class="number">${entries}</td>
      <td class="number">${(bytes / 1024).toFixed(0)} KiB</td></tr>`;
  };
  const crypto = [...grouped(samples, "cipherd_crypto_operation_duration_seconds_count", (l) => `${l.family} ${l.operation}`).entries()]
    .sort((a, b) => b[1] - a[1]).slice(0, 10);
  const cryptoSeconds = grouped(samples, "cipherd_crypto_operation_duration_seconds_sum", (l) => `${l.family} ${l.operation}`);
  const term = samples.find((s) => s.name === "cipherd_keyring_term");
  const termVersions = [...grouped(samples, "cipherd_keyring_versions", (l) => l.term).entries()];
  return html`
    <section aria-labelledby="requests-title">
      <h2 id="requests-title">Requests</h2>
      <dl class="summary">
        <div><dt>Answered</dt><dd>${total}</dd></div>
        ${[...byClass.entries()].sort().map(([status, count]) => html`<div><dt>${status}</dt><dd>${count}</dd></div>`)}
        <div><dt>Median latency</dt><dd>${ms(quantile(samples, 0.5))}</dd></div>
        <div><dt>99th percentile</dt><dd>${ms(quantile(samples, 0.99))}</dd></div>
      </dl>
      ${byRoute.length > 0 && html`<${Table} caption="Busiest routes" head=${["Route", "Requests"]}>
        ${byRoute.map(([route, count]) => html`<tr key=${route}><th scope="row"><code>${route}</code></th><td class="number">${count}</td></tr>`)}
      </${Table}>`}
    </section>
    <section aria-labelledby="crypto-title">
      <h2 id="crypto-title">Cryptographic operations</h2>
      ${crypto.length === 0 ? html`<p class="muted">None yet.</p>` : html`<${Table} caption="Cryptographic operations"
          head=${["Operation", "Count", "Mean time"]}>
        ${crypto.map(([operation, count]) => html`<tr key=${operation}><th scope="row">${operation}</th>
          <td class="number">${count}</td>
          <td class="number">${((cryptoSeconds.get(operation) / count) * 1e6).toFixed(0)} µs</td></tr>`)}
      </${Table}>`}
    </section>
    <section aria-labelledby="refused-title">
      <h2 id="refused-title">Refused by a bound</h2>
      ${refused.length === 0 ? html`<p class="muted">None.</p>` : html`<dl class="summary">
        ${refused.map(([reason, count]) => html`<div><dt>${reason}</dt><dd>${count}</dd></div>`)}</dl>`}
    </section>
    <section aria-labelledby="caches-title">
      <h2 id="caches-title">Caches</h2>
      ${caches.length === 0 ? html`<p class="muted">No cache figures yet.</p>` : html`<${Table} caption="Caches"
          head=${["Cache", "Hits", "Misses", "Hit rate", "Entries", "Memory"]}>${caches.map(cacheRow)}</${Table}>`}
    </section>
    <section aria-labelledby="keyring-title">
      <h2 id="keyring-title">Keyring</h2>
      <dl class="summary">
        <div><dt>Newest term</dt><dd>${term ? term.value : "—"}</dd></div>
        ${termVersions.map(([which, count]) => html`<div><dt>Versions, ${which} term</dt><dd>${count}</dd></div>`)}
        <div><dt>Rewrapped</dt><dd>${sum(samples, "cipherd_keyring_rewrapped_versions_total")}</dd></div>
      </dl>
    </section>`;
}

export function Status() {
  const state = useLoad(async () => {
    const [live, ready, metrics, known] = await Promise.all([
      get("/healthz", {}, { anonymous: true }),
      get("/readyz", {}, { anonymous: true, accept: [503] }),
      get("/metrics", {}, { anonymous: true, text: true }),
      vocabulary(),
    ]);
    return { live, ready, metrics, version: known.version, checked: new Date().toISOString() };
  }, []);
  const value = state.value;
  return html`
    <${Heading}>Status</${Heading}>
    <div class="actions"><button type="button" onClick=${state.reload} disabled=${state.loading}>Refresh</button></div>
    <${ErrorNote} error=${state.error} />
    ${!value ? !state.error && html`<${Loading} what="the status" />` : html`
      <dl class="summary health">
        <div><dt>Liveness</dt><dd class=${value.live.status === "ok" ? "good" : "bad"}>${value.live.status === "ok" ? "alive" : value.live.status}</dd></div>
        <div><dt>Readiness</dt><dd class=${value.ready.status === "ok" ? "good" : "bad"}>${value.ready.status === "ok" ? "ready" : "not ready: the key store does not answer or take writes"}</dd></div>
        <div><dt>Version</dt><dd>${value.version}</dd></div>
        <div><dt>Checked</dt><dd>${value.checked.slice(0, 19).replace("T", " ")} UTC</dd></div>
      </dl>
      <${Figures} samples=${parseMetrics(value.metrics)} />
      <details class="panel"><summary>Every metric</summary><pre>${value.metrics}</pre></details>`}`;
}
