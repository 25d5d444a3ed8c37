// The npm package `aez` (1.0.1) as a peer for cipherd's tests and benchmark.
//
// Reads one JSON request from stdin and writes one JSON reply to stdout, so that a single node
// process handles a whole batch:
//
//   {"op": "encrypt" | "decrypt", "cases": [{"key", "nonce", "ad", "tau", "data"}, ...]}
//     key, nonce, data: hex; nonce and ad may be null; ad is a list of hex strings.
//     -> {"results": [hex, or null when decrypt rejects, ...]}
//
//   {"op": "bench", "sizes": [...], "tau": 16, "seconds": 1.0}
//     encrypts a random message of each size with a random 48-byte key and a 16-byte nonce
//     for about `seconds`, timed inside node.
//     -> {"results": [{"size", "ops", "seconds"}, ...]}
'use strict';

const crypto = require('crypto');
const aez = require('aez');

function fromHex(value) {
  return value === null ? null : Buffer.from(value, 'hex');
}

function run(request) {
  if (request.op === 'encrypt' || request.op === 'decrypt') {
    const fn = aez[request.op];
    return request.cases.map((c) => {
      const ad = c.ad === null ? null : c.ad.map(fromHex);
      const out = fn(fromHex(c.key), fromHex(c.nonce), ad, c.tau, fromHex(c.data));
      return out === null ? null : out.toString('hex');
    });
  }
  if (request.op === 'bench') {
    return request.sizes.map((size) => {
      const key = crypto.randomBytes(48);
      const nonce = crypto.randomBytes(16);
      const message = crypto.randomBytes(size);
      const expected = size + request.tau;
      let ops = 0;
      const start = process.hrtime.bigint();
      let elapsed = 0;
      do {
        for (let k = 0; k < 8; k++) {
          if (aez.encrypt(key, nonce, null, request.tau, message).length !== expected) {
            throw new Error('wrong ciphertext length');
          }
        }
        ops += 8;
        elapsed = Number(process.hrtime.bigint() - start) / 1e9;
      } while (elapsed < request.seconds);
      return { size, ops, seconds: elapsed };
    });
  }
  throw new Error(`unknown op ${request.op}`);
}

const chunks = [];
process.stdin.on('data', (chunk) => chunks.push(chunk));
process.stdin.on('end', () => {
  const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  process.stdout.write(JSON.stringify({ results: run(request) }));
});
