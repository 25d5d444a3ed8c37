// Round trips through the client @hey-api/openapi-ts generates from openapi.yaml (into
// ./client beside this file): type-checked by `tsc --strict`, then run against the service at
// CIPHERD_ADDR with the admin token CIPHERD_TOKEN: ECIES as JSON and as raw bytes, AEZ, and
// functional encryption. Exits non-zero on the first answer that is not the expected one.
import { randomBytes } from 'node:crypto';
import { client } from './client/client.gen';
import {
  aezDecrypt, aezEncrypt, eciesDecrypt, eciesDecryptRaw, eciesEncrypt, eciesEncryptRaw,
  feDecrypt, feEncrypt, feKeygen, keysCreateKey,
} from './client/sdk.gen';

function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`round trip failed: ${what}`);
}

const b64 = (data: Uint8Array): string => Buffer.from(data).toString('base64');

async function main(): Promise<void> {
  const token = setting('CIPHERD_TOKEN');
  client.setConfig({ baseUrl: setting('CIPHERD_ADDR'), auth: () => token });

  await keysCreateKey({ throwOnError: true, body: { name: 'hey-ecies', type: 'ecies-secp256k1' } });
  await keysCreateKey({ throwOnError: true, body: { name: 'hey-aez', type: 'aez' } });
  await keysCreateKey({ throwOnError: true, body: { name: 'hey-fe', type: 'ipfe-opt', dimension: 3 } });

  const message = randomBytes(300);
  const path = { name: 'hey-ecies' };
  const sealed = await eciesEncrypt({ throwOnError: true, path, body: { plaintext: b64(message) } });
  const opened = await eciesDecrypt({
    throwOnError: true, path, body: { ciphertext: sealed.data.ciphertext },
  });
  check(Buffer.from(opened.data.plaintext, 'base64').equals(message), 'ECIES');

  const raw = await eciesEncryptRaw({ throwOnError: true, path, body: new Blob([message]) });
  const rawOpened = await eciesDecryptRaw({ throwOnError: true, path, body: raw.data });
  check(Buffer.from(await rawOpened.data.arrayBuffer()).equals(message), 'ECIES raw');

  const aez = { nonce: b64(Buffer.from('nonce-1')), ad: [b64(Buffer.from('header'))] };
  const aezSealed = await aezEncrypt({
    throwOnError: true, path: { name: 'hey-aez' }, body: { plaintext: b64(message), tau: 16, ...aez },
  });
  const aezOpened = await aezDecrypt({
    throwOnError: true, path: { name: 'hey-aez' }, body: { ciphertext: aezSealed.data.ciphertext, ...aez },
  });
  check(Buffer.from(aezOpened.data.plaintext, 'base64').equals(message), 'AEZ');

  const fe = { name: 'hey-fe' };
  const functional = await feKeygen({ throwOnError: true, path: fe, body: { y: [1, 2, 3] } });
  const encrypted = await feEncrypt({ throwOnError: true, path: fe, body: { x: [4, 5, 6] } });
  const result = await feDecrypt({
    throwOnError: true,
    path: fe,
    body: {
      functional_key: functional.data.functional_key,
      ciphertext: encrypted.data.ciphertext,
      bounds: [0, 100],
    },
  });
  check(result.data.result === 32, `FE: ${result.data.result}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
