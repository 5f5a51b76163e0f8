// npm's oauth-1.0a: the OAuth 1.0a three-legged flow signed by the
// library, used as its README shows (a hash_function made with node:crypto;
// oauth.toHeader(oauth.authorize(request, token)) for the header, the
// authorize() result as the form body for the body), sent with fetch.
import crypto from 'node:crypto';
import OAuth from 'oauth-1.0a';
import { BASE, DOG, Browser, done, expect, expectStatus, need, run } from './yardtest.mjs';

const KEY = need('YARD_CONSUMER_KEY');
const SECRET = need('YARD_CONSUMER_SECRET');
// The callback the consumer was registered with (any, for a consumer
// registered without one); the flow reads the verifier from it.
const CALLBACK = process.env.YARD_CONSUMER_CALLBACK || 'https://client.example/callback';
const browser = new Browser();

function client(method) {
  const alg = { 'HMAC-SHA1': 'sha1', 'HMAC-SHA256': 'sha256' }[method];
  return OAuth({
    consumer: { key: KEY, secret: SECRET },
    signature_method: method,
    hash_function: (base, key) => crypto.createHmac(alg, key).update(base).digest('base64'),
  });
}

/** Sends a signed request: the protocol parameters in the header, or in the form body. */
function send(oauth, where, request, token, init = {}) {
  const params = oauth.authorize(request, token);
  if (where === 'body') {
    return fetch(request.url, {
      method: request.method,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params).toString(),
    });
  }
  return fetch(request.url, { method: request.method, ...init, headers: { ...(init.headers ?? {}), ...oauth.toHeader(params) } });
}

async function tokenRequest(oauth, where, request, token) {
  const resp = await send(oauth, where, request, token);
  await expectStatus(resp, 200);
  return Object.fromEntries(new URLSearchParams(await resp.text()));
}

async function threeLegged(oauth, where) {
  const rt = await tokenRequest(oauth, where, { url: BASE + '/oauth/request_token', method: 'POST', data: { oauth_callback: CALLBACK } });
  expect(rt.oauth_callback_confirmed === 'true', `request token: ${JSON.stringify(rt)}`);
  const back = new URL(await browser.signInAndAllow(`${BASE}/oauth/authorize?oauth_token=${encodeURIComponent(rt.oauth_token)}`));
  expect(back.href.startsWith(CALLBACK + '?') && back.searchParams.get('oauth_token') === rt.oauth_token, `callback ${back}`);
  const at = await tokenRequest(oauth, where,
    { url: BASE + '/oauth/access_token', method: 'POST', data: { oauth_verifier: back.searchParams.get('oauth_verifier') } },
    { key: rt.oauth_token, secret: rt.oauth_token_secret });
  expect(at.oauth_token?.startsWith('at_'), `access token: ${JSON.stringify(at)}`);
  return { key: at.oauth_token, secret: at.oauth_token_secret };
}

function header(method) {
  return async () => {
    const oauth = client(method);
    const token = await threeLegged(oauth, 'header');
    await expectStatus(await send(oauth, 'header', { url: BASE + DOG + '?fields=all', method: 'GET' }, token), 200);
    const body = JSON.stringify({ name: 'Pip', email: 'pip@example.org' });
    await expectStatus(await send(oauth, 'header', { url: BASE + '/v1/dogs', method: 'POST' }, token,
      { headers: { 'Content-Type': 'application/json' }, body }), 201);
  };
}

async function body() {
  const oauth = client('HMAC-SHA1');
  const token = await threeLegged(oauth, 'body');
  // The protected call: a DELETE of a dog made for it (with the header), the parameters in its form body.
  const made = await send(oauth, 'header', { url: BASE + '/v1/dogs', method: 'POST' }, token,
    { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'Tmp', email: 'tmp@example.org' }) });
  await expectStatus(made, 201);
  const id = (await made.json()).id;
  await expectStatus(await send(oauth, 'body', { url: `${BASE}/v1/dogs/${id}/`, method: 'DELETE' }, token), 204);
}

const scheme = 'OAuth 1.0a';
await run('oauth-1.0a', scheme, 'HMAC-SHA1 (node:crypto), toHeader(): request token, sign-in and Allow, access token, GET and JSON POST', header('HMAC-SHA1'));
await run('oauth-1.0a', scheme, 'the same with HMAC-SHA256', header('HMAC-SHA256'));
await run('oauth-1.0a', scheme, 'authorize() as the form body (RFC 5849 §3.5.2): the three legs and a DELETE', body);
done();
