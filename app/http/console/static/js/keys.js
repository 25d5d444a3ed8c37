// What the console knows of key types and key policies, for every page that shows keys.
import { duration } from "./ui.js";

export const isFe = (type) => /^(ipfe|qfe)-/.test(type);
export const isQuadratic = (type) => type.startsWith("qfe-");

// The types whose keys have a public part (GET /v1/keys/{name}/public answers 409 for others).
const PUBLIC_TYPES = new Set(["ecdsa-secp256k1", "ed25519", "ipfe-tao"]);
export const hasPublicPart = (type) =>
  type.startsWith("ecies-") || type.startsWith("qfe-") || PUBLIC_TYPES.has(type);

const FAMILIES = [
  ["ECIES", (type) => type.startsWith("ecies-")],
  ["Authenticated encryption", (type) => type === "aez"],
  ["Signatures", (type) => type === "ecdsa-secp256k1" || type === "ed25519"],
  ["HMAC", (type) => type === "hmac"],
  ["Functional encryption: inner products", (type) => type.startsWith("ipfe-")],
  ["Functional encryption: quadratic", (type) => type.startsWith("qfe-")],
];

// The types grouped for a <select>; a type the console does not know yet goes under "Other".
export function typeGroups(types) {
  const groups = FAMILIES.map(([group, member]) => ({ group, options: types.filter(member) }));
  const known = new Set(groups.flatMap((group) => group.options));
  groups.push({ group: "Other", options: types.filter((type) => !known.has(type)) });
  return groups.filter((group) => group.options.length > 0);
}

export function quotaText(quota) {
  return `${quota.count} per ${duration(quota.period_seconds)} per token`;
}

// A key's policies, each as a short phrase.
export function policyPhrases(key) {
  const phrases = [];
  if (key.deletion_protection) phrases.push("deletion protected");
  if (key.exportable) phrases.push("exportable");
  if (key.allow_backup) phrases.push("backup allowed");
  if (key.auto_rotate_seconds) phrases.push(`rotates every ${duration(key.auto_rotate_seconds)}`);
  if (key.min_decryption_version > 1) phrases.push(`decrypts from v${key.min_decryption_version}`);
  if (key.min_encryption_version > 0) phrases.push(`encrypts from v${key.min_encryption_version}`);
  const fe = key.fe_policy;
  if (fe) {
    if (fe.max_rank !== undefined && fe.max_rank !== null) phrases.push(`max rank ${fe.max_rank}`);
    if (fe.keygen_quota) phrases.push(`quota ${quotaText(fe.keygen_quota)}`);
    if (fe.allowed_functions) {
      const multiples = fe.allow_multiples ? " and multiples" : "";
      phrases.push(`${fe.allowed_functions.length} allowed functions${multiples}`);
    }
    if (fe.max_abs_entry !== undefined && fe.max_abs_entry !== null) {
      phrases.push(`entries within ±${fe.max_abs_entry}`);
    }
  }
  return phrases;
}

// The FE policy fields of a form (strings, as the inputs hold them) as the API takes them, or
// an Error naming the field that is wrong.
export function fePolicyOf(fields) {
  const policy = {};
  const integer = (name, text) => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 0) throw new Error(`${name}: a whole number, 0 or more`);
    return value;
  };
  if (fields.maxRank !== "") policy.max_rank = integer("Maximum rank", fields.maxRank);
  if (fields.maxAbsEntry !== "") {
    policy.max_abs_entry = integer("Largest entry", fields.maxAbsEntry);
  }
  if (fields.quotaCount !== "" || fields.quotaPeriod !== "") {
    policy.keygen_quota = {
      count: integer("Quota: keys", fields.quotaCount),
      period_seconds: integer("Quota: period", fields.quotaPeriod),
    };
  }
  if (fields.allowedFunctions.trim() !== "") {
    try {
      policy.allowed_functions = JSON.parse(fields.allowedFunctions);
    } catch {
      throw new Error("Allowed functions: a JSON list of vectors (or of matrices for quadratic keys)");
    }
    policy.allow_multiples = fields.allowMultiples;
  }
  return policy;
}

export function feFieldsOf(policy) {
  const text = (value) => (value === undefined || value === null ? "" : String(value));
  return {
    maxRank: text(policy?.max_rank),
    maxAbsEntry: text(policy?.max_abs_entry),
    quotaCount: text(policy?.keygen_quota?.count),
    quotaPeriod: text(policy?.keygen_quota?.period_seconds),
    allowedFunctions: policy?.allowed_functions ? JSON.stringify(policy.allowed_functions) : "",
    allowMultiples: Boolean(policy?.allow_multiples),
  };
}
