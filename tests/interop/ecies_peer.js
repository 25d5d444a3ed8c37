// eciesjs 0.5.0 as an interop peer for cipherd's ECIES tests.
//
// Reads one JSON request per line on stdin and writes one JSON answer per line on stdout, so
// a test session keeps a single node process for many cases:
//   {"op": "encrypt" | "decrypt", "config": {<eciespy Config fields>}, "key": "<hex>", "data": "<hex>"}
//   -> {"ok": true, "data": "<hex>"} or {"ok": false, "error": "<message>"}
"use strict";

const readline = require("node:readline");
const { ECIES_CONFIG, encrypt, decrypt } = require("eciesjs");

function toConfig(fields) {
  const config = new ECIES_CONFIG.constructor();
  config.ellipticCurve = fields.elliptic_curve;
  config.isEphemeralKeyCompressed = fields.is_ephemeral_key_compressed;
  config.isHkdfKeyCompressed = fields.is_hkdf_key_compressed;
  config.symmetricAlgorithm = fields.symmetric_algorithm;
  config.symmetricNonceLength = fields.symmetric_nonce_length;
  return config;
}

function answer(request) {
  const config = toConfig(request.config);
  const data = Buffer.from(request.data, "hex");
  const key = Buffer.from(request.key, "hex");
  const result = request.op === "encrypt"
    ? encrypt(key, data, config)
    : decrypt(key, data, config);
  return { ok: true, data: Buffer.from(result).toString("hex") };
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  let reply;
  try {
    reply = answer(JSON.parse(line));
  } catch (error) {
    reply = { ok: false, error: String(error && error.message ? error.message : error) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
