// Round trips through openapi-fetch with the types openapi-typescript generates from
// openapi.yaml (./schema.d.ts beside this file): type-checked by `tsc --strict`, then run against
// the service at CIPHERD_ADDR with the admin token CIPHERD_TOKEN: ECIES as JSON and as raw bytes,
// AEZ, and functional encryption. Exits non-zero on the first answer that is not the expected one.
import { randomBytes } from 'node:crypto';
import createClient from 'openapi-fetch';
import type { paths } from './schema';

function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

// openapi-fetch answers { data } or { error }: the data, or a failure naming the problem.
function answer<T>(result: { data?: T; error?: unknown }, what: string): T {
  if (result.data === undefined) throw new Error(`${what}: ${JSON.stringify(result.error)}`);
  return result.data;
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`round trip failed: ${what}`);
}

const b64 = (data: Uint8Array): string => Buffer.from(data).toString('base64');
// Raw bodies go as they are, not as JSON.
const octets = { 'Content-Type': 'application/octet-stream' };
const asIs = (body: unknown): unknown => body;

async function main(): Promise<void> {
  const api = createClient<paths>({
    baseUrl: setting('CIPHERD_ADDR'),
    headers: { Authorization: `Bearer ${setting('CIPHERD_TOKEN')}` },
  });
  const created = await Promise.all([
    api.POST('/v1/keys', { body: { name: 'fetch-ecies', type: 'ecies-secp256k1' } }),
    api.POST('/v1/keys', { body: { name: 'fetch-aez', type: 'aez' } }),
    api.POST('/v1/keys', { body: { name: 'fetch-fe', type: 'ipfe-opt', dimension: 3 } }),
  ]);
  created.forEach((key) => answer(key, 'create a key'));

  const message = randomBytes(300);
  const ecies = { params: { path: { name: 'fetch-ecies' } } };
  const sealed = answer(
    await api.POST('/v1/ecies/{name}/encrypt', { ...ecies, body: { plaintext: b64(message) } }),
    'ECIES encrypt',
  );
  const opened = answer(
    await api.POST('/v1/ecies/{name}/decrypt', { ...ecies, body: { ciphertext: sealed.ciphertext } }),
    'ECIES decrypt',
  );
  check(Buffer.from(opened.plaintext, 'base64').equals(message), 'ECIES');

  const rawSealed = answer(
    await api.POST('/v1/ecies/{name}/encrypt/raw', {
      ...ecies, headers: octets, body: message, bodySerializer: asIs, parseAs: 'arrayBuffer',
    }),
    'ECIES raw encrypt',
  );
  const rawOpened = answer(
    await api.POST('/v1/ecies/{name}/decrypt/raw', {
      ...ecies, headers: octets, body: rawSealed, bodySerializer: asIs, parseAs: 'arrayBuffer',
    }),
    'ECIES raw decrypt',
  );
  check(Buffer.from(rawOpened).equals(message), 'ECIES raw');

  const aez = { nonce: b64(Buffer.from('nonce-1')), ad: [b64(Buffer.from('header'))] };
  const aezKey = { params: { path: { name: 'fetch-aez' } } };
  const aezSealed = answer(
    await api.POST('/v1/aez/{name}/encrypt', {
      ...aezKey, body: { plaintext: b64(message), tau: 16, ...aez },
    }),
    'AEZ encrypt',
  );
  const aezOpened = answer(
    await api.POST('/v1/aez/{name}/decrypt', {
      ...aezKey, body: { ciphertext: aezSealed.ciphertext, ...aez },
    }),
    'AEZ decrypt',
  );
  check(Buffer.from(aezOpened.plaintext, 'base64').equals(message), 'AEZ');

  const fe = { params: { path: { name: 'fetch-fe' } } };
  const functional = answer(
    await api.POST('/v1/fe/{name}/keygen', { ...fe, body: { y: [1, 2, 3] } }),
    'FE keygen',
  );
  const encrypted = answer(
    await api.POST('/v1/fe/{name}/encrypt', { ...fe, body: { x: [4, 5, 6] } }),
    'FE encrypt',
  );
  const result = answer(
    await api.POST('/v1/fe/{name}/decrypt', {
      ...fe,
      body: {
        functional_key: functional.functional_key,
        ciphertext: encrypted.ciphertext,
        bounds: [0, 100],
      },
    }),
    'FE decrypt',
  );
  check(result.result === 32, `FE: ${result.result}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
