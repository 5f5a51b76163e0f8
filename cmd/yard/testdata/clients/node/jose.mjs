// npm's jose: yard's tokens verified with createRemoteJWKSet and jwtVerify
// against /.well-known/jwks.json, as jose's documentation shows; then the
// access token opens an event stream with npm's eventsource (its fetch
// option adds the Authorization header, as its README shows).
import { EventSource } from 'eventsource';
import { createRemoteJWKSet, errors, jwtVerify } from 'jose';
import { BASE, DOG, PASSWORD, TOKEN_ALG, USER, done, expect, expectStatus, run } from './yardtest.mjs';

const JWKS = createRemoteJWKSet(new URL(BASE + '/.well-known/jwks.json'));

async function signIn(path) {
  const resp = await fetch(BASE + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ username: USER, password: PASSWORD }),
  });
  await expectStatus(resp, 200);
  return resp.json();
}

async function pkToken() {
  const { token } = await signIn('/auth/pk-token');
  const { payload, protectedHeader } = await jwtVerify(token, JWKS);
  expect(payload.name === USER && protectedHeader.alg === 'EdDSA', `token ${JSON.stringify({ payload, protectedHeader })}`);
  const [h, b, s] = token.split('.');
  try {
    await jwtVerify(`${h}.${b}.${s[0] === 'A' ? 'B' : 'A'}${s.slice(1)}`, JWKS);
    throw new Error('a forged signature was accepted');
  } catch (e) {
    if (!(e instanceof errors.JWSSignatureVerificationFailed)) throw e;
  }
}

async function accessToken() {
  const pair = await signIn('/auth/login');
  const { payload, protectedHeader } = await jwtVerify(pair.access_token, JWKS, { issuer: BASE, algorithms: [TOKEN_ALG] });
  expect(payload.token_use === 'access' && payload.name === USER, `claims ${JSON.stringify(payload)}`);
  expect(protectedHeader.alg === TOKEN_ALG, `alg ${protectedHeader.alg}`);
}

// The token pair on an event stream: eventsource opens /v1/events with the
// access token and receives the events of a bark made meanwhile.
async function stream() {
  const pair = await signIn('/auth/login');
  const authorization = 'Bearer ' + pair.access_token;
  const es = new EventSource(BASE + '/v1/events', {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, Authorization: authorization } }),
  });
  try {
    const got = new Promise((resolve, reject) => {
      es.addEventListener('bark.succeeded', (e) => resolve(JSON.parse(e.data)));
      es.onerror = (e) => reject(new Error(`eventsource: ${e.message ?? ''} ${e.code ?? ''}`));
      setTimeout(() => reject(new Error('no bark.succeeded within 20 s')), 20000);
    });
    await new Promise((resolve, reject) => {
      es.onopen = resolve;
      setTimeout(() => reject(new Error('the stream did not open within 20 s')), 20000);
    });
    const bark = await fetch(BASE + DOG + 'barks', { method: 'POST', headers: { Authorization: authorization } });
    expect(bark.status === 201 || bark.status === 202, `bark: ${bark.status} ${await bark.text()}`);
    const event = await got;
    expect(event.type === 'bark.succeeded', `event ${JSON.stringify(event)}`);
  } finally {
    es.close();
  }
}

await run('jose', 'Public-key token', 'POST /auth/pk-token, createRemoteJWKSet + jwtVerify (EdDSA); a forged signature refused', pkToken);
await run('jose', 'Token pair (JWT)', `POST /auth/login with serve --token-alg ${TOKEN_ALG}: jwtVerify of the access token (issuer, algorithm) with the remote JWKS`, accessToken);
await run('eventsource', 'Token pair (JWT)', 'EventSource on /v1/events with the access token (fetch option): a bark\'s bark.succeeded event arrives', stream);
done();
