// npm's openid (OpenID for Node.js), a relying party used as its README
// shows: RelyingParty.authenticate discovers the provider and associates,
// the browser signs in and allows, verifyAssertion checks the assertion.
// Associations are kept by the library's default in-memory store; the
// README's saveAssociation mix-in is wrapped only to see which type it made.
import crypto from 'node:crypto';
import openid from 'openid';
import { BASE, USER, Browser, done, expect, run } from './yardtest.mjs';

// The library hashes the Diffie-Hellman shared secret as Node's
// computeSecret returns it, padded with zero bytes to the prime's length,
// where OpenID 2.0 §8.4.2 hashes btwoc(secret), its shortest form (as
// yard does). In about one association of 256 the secret begins with a
// zero byte, the library derives another MAC key, and every signature it
// checks fails ("Invalid signature"). The padding is taken off here, as
// the library would need to, so that the test does not fail by chance.
const computeSecret = crypto.DiffieHellman.prototype.computeSecret;
crypto.DiffieHellman.prototype.computeSecret = function (...args) {
  const s = computeSecret.apply(this, args);
  return typeof s === 'string' ? s.replace(/^\0+/, '') : s.subarray(s.findIndex((b) => b !== 0));
};

const RETURN_TO = 'https://rp.example.org/back';
const REALM = 'https://rp.example.org/';
const browser = new Browser();

const associations = [];
const save = openid.saveAssociation;
openid.saveAssociation = (provider, type, handle, secret, expiry, callback) => {
  associations.push(type);
  save(provider, type, handle, secret, expiry, callback);
};

const authenticate = (rp, identifier) =>
  new Promise((resolve, reject) => rp.authenticate(identifier, false, (err, url) => (err ? reject(new Error(err.message)) : resolve(url))));
const verify = (rp, url) =>
  new Promise((resolve, reject) => rp.verifyAssertion(url, (err, result) => (err ? reject(new Error(err.message)) : resolve(result))));

async function signIn(identifier, stateless) {
  const rp = new openid.RelyingParty(RETURN_TO, REALM, stateless, true,
    [new openid.SimpleRegistration({ nickname: 'required', email: 'optional' })]);
  const start = await authenticate(rp, identifier);
  expect(start?.startsWith(BASE + '/openid/login?'), `the relying party sends the user to ${start}`);
  const back = await browser.signInAndAllow(start);
  expect(back.startsWith(RETURN_TO + '?'), `sent back to ${back}`);
  const result = await verify(rp, back);
  expect(result.authenticated && result.claimedIdentifier === `${BASE}/openid/id/${USER}`, `result ${JSON.stringify(result)}`);
  expect(result.nickname === USER, `sreg nickname ${result.nickname}`);
}

const scheme = 'OpenID 2.0';
await run('openid', scheme, 'RelyingParty (strict) with SREG: discovery of /openid, association, checkid_setup, sign-in and Allow, '
  + 'verifyAssertion → authenticated with the user\'s identifier and nickname', async () => {
  await signIn(BASE + '/openid', false);
  expect(associations.length === 1, `associations made: ${associations}`);
  return `RelyingParty (strict) with SREG: discovery of /openid, HMAC-${associations[0].toUpperCase()} association, checkid_setup, sign-in and Allow, `
    + 'verifyAssertion → authenticated with the user\'s identifier and nickname';
});
await run('openid', scheme, 'stateless RelyingParty: discovery of the claimed identifier /openid/id/{name}, '
  + 'verifyAssertion with check_authentication', () => signIn(`${BASE}/openid/id/${USER}`, true));
done();
