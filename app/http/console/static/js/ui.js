// The pieces every page is made of: loading, outcomes, labelled fields, confirmation, paging.
import { html, useEffect, useId, useRef, useState } from "./lib.js";

// The value of `load()`, loaded again when `deps` change or on `reload()`; an answer that comes
// after a newer request was made is dropped. A value is only ever shown with the `deps` it was
// loaded for (a reload keeps it in view meanwhile), so that a page moving from one key to
// another never shows, nor asks the service about, the new name with the old key's details.
export function useLoad(load, deps) {
  const loadedFor = JSON.stringify(deps);
  const [state, setState] = useState({ value: undefined, error: null, loading: true, deps: null });
  const generation = useRef(0);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const mine = ++generation.current;
    setState((previous) => ({ ...previous, error: null, loading: true }));
    load().then(
      (value) => mine === generation.current &&
        setState({ value, error: null, loading: false, deps: loadedFor }),
      (error) => mine === generation.current &&
        setState({ value: undefined, error, loading: false, deps: loadedFor }),
    );
  }, [loadedFor, tick]);
  const current = state.deps === loadedFor;
  return {
    value: current ? state.value : undefined,
    error: current ? state.error : null,
    loading: state.loading || !current,
    reload: () => setTick((n) => n + 1),
  };
}

// An action the user started: `run` it, and `busy`, `error` and `done` (the message of its
// success) follow it.
export function useTask() {
  const [state, setState] = useState({ busy: null, error: null, done: null });
  async function run(name, task, success) {
    setState({ busy: name, error: null, done: null });
    try {
      const result = await task();
      const done = typeof success === "function" ? success(result) : success;
      setState({ busy: null, error: null, done: done ?? null });
      return result;
    } catch (error) {
      setState({ busy: null, error, done: null });
      return undefined;
    }
  }
  return { ...state, run, clear: () => setState({ busy: null, error: null, done: null }) };
}

const FORBIDDEN = "This token may not do this: the admin token, or a token with the operation " +
  "for this key, may.";

export function ErrorNote({ error }) {
  if (!error) return null;
  const detail = error.status === 403 && !error.problem?.detail ? FORBIDDEN : error.message;
  const status = error.status ? ` (${error.status})` : "";
  // An Error of the console's own (a form it could not read) has no title: its message says it.
  const title = error.title ?? "Not sent";
  return html`<div class="note error" role="alert">
    <strong>${title}${status}</strong>${detail && detail !== title ? `: ${detail}` : ""}
  </div>`;
}

// The end of a form that opens in place of a page's list (a new key, an imported one): its
// action, held back while the task runs, the way back, and why the task failed. Success needs
// no note here: the page moves to what the form made.
export function SubmitOrCancel({ task, action, onCancel }) {
  return html`<div class="actions">
      <button type="submit" class="primary" disabled=${task.busy !== null}>${action}</button>
      <button type="button" onClick=${onCancel}>Cancel</button>
    </div>
    <${ErrorNote} error=${task.error} />`;
}

export function Outcome({ task }) {
  if (task.error) return html`<${ErrorNote} error=${task.error} />`;
  return html`<p class="note done" role="status" aria-live="polite">${task.done ?? ""}</p>`;
}

export function Loading({ what }) {
  return html`<p class="loading" role="status">Loading ${what}…</p>`;
}

// A labelled form control: <input> by default, `multiline` for a <textarea>, `options` (values,
// [value, label] pairs, or {group, options} groups) for a <select>.
export function Field({ label, hint, options, multiline, onValue, ...control }) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  const common = { id, "aria-describedby": hintId, onInput: (e) => onValue?.(e.currentTarget.value) };
  let element;
  if (options) {
    element = html`<select ...${common} ...${control}>${options.map(renderOption)}</select>`;
  } else if (multiline) {
    element = html`<textarea ...${common} ...${control}></textarea>`;
  } else {
    element = html`<input ...${common} ...${control} />`;
  }
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${element}
    ${hint && html`<small id=${hintId} class="hint">${hint}</small>`}
  </div>`;
}

function renderOption(option) {
  if (option && option.group) {
    return html`<optgroup label=${option.group}>${option.options.map(renderOption)}</optgroup>`;
  }
  const [value, label] = Array.isArray(option) ? option : [option, option];
  return html`<option value=${value}>${label}</option>`;
}

export function Check({ label, hint, checked, onValue, ...control }) {
  const id = useId();
  return html`<div class="field check">
    <input type="checkbox" id=${id} checked=${checked} aria-describedby=${hint ? `${id}-hint` : undefined}
      onChange=${(e) => onValue(e.currentTarget.checked)} ...${control} />
    <label for=${id}>${label}</label>
    ${hint && html`<small id=${`${id}-hint`} class="hint">${hint}</small>`}
  </div>`;
}

// A modal question before a destructive action. With `typed`, the action waits until the user
// has typed that text (a key's name). `children` may hold further fields of the action.
export function Confirm({ title, children, action, typed, onConfirm, onCancel }) {
  const dialog = useRef(null);
  const [entered, setEntered] = useState("");
  useEffect(() => {
    const element = dialog.current;
    element.showModal();
    return () => element.open && element.close();
  }, []);
  const ready = typed === undefined || entered === typed;
  function submit(event) {
    event.preventDefault();
    if (ready) onConfirm();
  }
  return html`<dialog ref=${dialog} class="confirm" aria-labelledby="confirm-title"
      onCancel=${(e) => { e.preventDefault(); onCancel(); }}>
    <form onSubmit=${submit}>
      <h2 id="confirm-title">${title}</h2>
      ${children}
      ${typed !== undefined && html`<${Field} label=${`Type ${typed} to confirm`} value=${entered}
        onValue=${setEntered} autocomplete="off" spellcheck="false" required />`}
      <div class="actions">
        <button type="submit" class="danger" disabled=${!ready}>${action}</button>
        <button type="button" onClick=${onCancel}>Cancel</button>
      </div>
    </form>
  </dialog>`;
}

// Pages that move by cursor: `trail` holds the cursors of the pages before this one.
export function usePages() {
  const [trail, setTrail] = useState([]);
  const [after, setAfter] = useState(null);
  return {
    after,
    number: trail.length + 1,
    forward(next) {
      setTrail([...trail, after]);
      setAfter(next);
    },
    back() {
      setAfter(trail[trail.length - 1] ?? null);
      setTrail(trail.slice(0, -1));
    },
    reset() {
      setTrail([]);
      setAfter(null);
    },
  };
}

export function Pager({ pages, next, label }) {
  return html`<nav class="pager" aria-label=${label}>
    <button type="button" onClick=${pages.back} disabled=${pages.number === 1}>Previous</button>
    <span>Page ${pages.number}</span>
    <button type="button" onClick=${() => pages.forward(next)} disabled=${next === null || next === undefined}>Next</button>
  </nav>`;
}

export function Table({ caption, head, children }) {
  return html`<div class="table" tabindex="0" role="region" aria-label=${caption}>
    <table>
      <caption class="visually-hidden">${caption}</caption>
      <thead><tr>${head.map((cell) => html`<th scope="col">${cell}</th>`)}</tr></thead>
      <tbody>${children}</tbody>
    </table>
  </div>`;
}

export function Heading({ children }) {
  return html`<h1 tabindex="-1">${children}</h1>`;
}

// "2026-12-03 14:05:22 UTC": one zone for every time the console shows, the one the audit
// trail and the API use.
export function when(iso) {
  if (!iso) return "—";
  const moment = new Date(iso);
  if (Number.isNaN(moment.getTime())) return iso;
  return `${moment.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

export function Time({ iso }) {
  return html`<time datetime=${iso}>${when(iso)}</time>`;
}

const UNITS = [
  [86400, "d"],
  [3600, "h"],
  [60, "min"],
];

export function duration(seconds) {
  for (const [size, unit] of UNITS) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size} ${unit}`;
  }
  return `${seconds} s`;
}

export function Copyable({ label, value }) {
  const id = useId();
  const [copied, setCopied] = useState(false);
  async function copy() {
    const area = document.getElementById(id);
    area.select();
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      setCopied(false); // selected: the user copies it
    }
  }
  return html`<div class="field copyable">
    <label for=${id}>${label}</label>
    <textarea id=${id} readonly rows="3" spellcheck="false">${value}</textarea>
    <button type="button" onClick=${copy}>${copied ? "Copied" : "Copy"}</button>
  </div>`;
}
