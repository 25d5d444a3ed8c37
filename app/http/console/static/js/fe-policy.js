// The fields of an FE key's function policy, in the key creation form and the policy form.
import { html } from "./lib.js";
import { Check, Field } from "./ui.js";

export function FePolicyFields({ fields, onChange, quadratic }) {
  const set = (name) => (value) => onChange({ ...fields, [name]: value });
  const shape = quadratic ? "n×n matrices F, e.g. [[[1,0],[0,1]]]" : "vectors y, e.g. [[1,0,0],[0,1,0]]";
  return html`<fieldset>
    <legend>Function policy</legend>
    <p class="hint">What the holders of functional keys may learn. Empty fields set no limit.</p>
    <div class="row">
      <${Field} label="Maximum rank" type="number" min="0" value=${fields.maxRank} onValue=${set("maxRank")}
        hint="of all functions released under one key version" />
      <${Field} label="Largest entry" type="number" min="0" value=${fields.maxAbsEntry}
        onValue=${set("maxAbsEntry")} hint="the largest absolute value of an entry of y or F" />
    </div>
    <div class="row">
      <${Field} label="Quota: keys" type="number" min="1" value=${fields.quotaCount}
        onValue=${set("quotaCount")} hint="functional keys per token per period" />
      <${Field} label="Quota: period (seconds)" type="number" min="1" value=${fields.quotaPeriod}
        onValue=${set("quotaPeriod")} />
    </div>
    <${Field} label="Allowed functions (JSON)" multiline rows="3" spellcheck="false"
      value=${fields.allowedFunctions} onValue=${set("allowedFunctions")}
      hint=${`only these get keys: a list of ${shape}`} />
    <${Check} label="Allow their non-zero multiples too" checked=${fields.allowMultiples}
      onValue=${set("allowMultiples")} />
  </fieldset>`;
}
