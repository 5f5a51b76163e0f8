// Shared by the Node.js client scripts of TestThirdPartyClients (see
// ../python/yardtest.py: the same environment, with the same defaults, and
// the same result lines).
// The scripts run from the directory npm installed the packages into, so
// that their imports resolve; NODE_EXTRA_CA_CERTS names yard's certificate.
import { readFileSync } from 'node:fs';

/** A variable without a safe default (docs/clients.md, "Running the scripts by hand"). */
export function need(name) {
  if (!process.env[name]) {
    console.error(`${process.argv[1]}: set ${name} (docs/clients.md, "Running the scripts by hand")`);
    process.exit(1);
  }
  return process.env[name];
}

export const BASE = process.env.YARD_URL || 'https://localhost:8443'; // the server's base URL
export const USER = need('YARD_USER');
export const PASSWORD = need('YARD_PASSWORD');
// The server's --token-alg: what the access tokens are signed with, and what
// the JWKS lets a library verify (the default HS256 cannot be).
export const TOKEN_ALG = process.env.YARD_TOKEN_ALG || 'EdDSA';
export const DOG = process.env.YARD_DOG || (await firstDog()); // /v1/dogs/ID/, a dog of USER (default: the first one)

async function firstDog() {
  const resp = await fetch(BASE + '/v1/dogs?max=1', { headers: { Authorization: 'Basic ' + Buffer.from(`${USER}:${PASSWORD}`).toString('base64') } });
  const page = resp.ok ? await resp.json() : null;
  if (!page?.items?.length) {
    console.error(`${process.argv[1]}: no YARD_DOG, and GET /v1/dogs as ${USER} answered ${resp.status}`);
    process.exit(1);
  }
  return `/v1/dogs/${page.items[0].id}/`;
}

let failed = false;

/** The version npm installed of a package. */
export function version(pkg) {
  return JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url))).version;
}

/** Runs one flow and prints its result line; fn may return the flow's description. */
export async function run(pkg, scheme, flow, fn) {
  const line = { library: pkg, language: 'Node.js', version: version(pkg), scheme, flow, ok: true };
  try {
    const got = await fn();
    if (typeof got === 'string') line.flow = got;
  } catch (e) {
    failed = true;
    line.ok = false;
    line.error = `${e?.stack ?? e}${e?.cause ? `\ncause: ${e.cause.stack ?? e.cause}` : ''}`;
  }
  console.log(JSON.stringify(line));
}

export function done() {
  process.exit(failed ? 1 : 0);
}

export function expect(cond, what) {
  if (!cond) throw new Error(what);
}

export async function expectStatus(resp, want) {
  if (resp.status !== want) {
    throw new Error(`${resp.url}: got ${resp.status}, want ${want}: ${(await resp.text()).slice(0, 2000)}`);
  }
}

/** The forms of a page: their action and the fields a browser sends (hidden and text inputs, ticked checkboxes). */
export function forms(html) {
  const out = [];
  const attrs = (tag) => Object.fromEntries([...tag.matchAll(/([a-z_-]+)(?:="([^"]*)")?/g)].map((m) => [m[1], decode(m[2] ?? '')]));
  for (const [, open, body] of html.matchAll(/<form([^>]*)>([\s\S]*?)<\/form>/g)) {
    const fields = {};
    for (const [tag] of body.matchAll(/<input[^>]*>/g)) {
      const a = attrs(tag.slice(6));
      const type = a.type ?? 'text';
      if (a.name && (type === 'hidden' || type === 'text' || (type === 'checkbox' && 'checked' in a))) {
        fields[a.name] = a.value || (type === 'checkbox' ? 'on' : '');
      }
    }
    out.push({ action: attrs(open).action ?? '', fields });
  }
  return out;
}

function decode(s) {
  return s.replace(/&(#\d+|#x[0-9a-f]+|amp|lt|gt|quot|apos);/gi, (_, e) =>
    e[0] === '#' ? String.fromCodePoint(e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10))
      : { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[e.toLowerCase()]);
}

/** A person at a browser without JavaScript: fetch, a cookie jar, redirects followed while they stay on yard. */
export class Browser {
  cookies = new Map();
  host = new URL(BASE).host;

  async request(url, init = {}) {
    const headers = { ...(init.headers ?? {}) };
    if (this.cookies.size) headers.Cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const resp = await fetch(url, { ...init, headers, redirect: 'manual' });
    // getSetCookie is Node.js 19.7 and later; before, the header joined with ", ".
    const set = resp.headers.getSetCookie?.() ?? (resp.headers.get('set-cookie') ?? '').split(/,\s*(?=[^;,=\s]+=)/).filter(Boolean);
    for (const c of set) {
      const [pair] = c.split(';');
      const i = pair.indexOf('=');
      this.cookies.set(pair.slice(0, i), pair.slice(i + 1));
    }
    return resp;
  }

  /** GETs url, following redirects on yard; returns { resp, url, text } of the last answer. */
  async open(url) {
    return this.follow(url, await this.request(url));
  }

  async submit(pageURL, form, fields) {
    const to = new URL(form.action, pageURL).href;
    const resp = await this.request(to, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...form.fields, ...fields }).toString(),
    });
    return this.follow(to, resp);
  }

  async follow(url, resp) {
    for (let i = 0; i < 10; i++) {
      if (![301, 302, 303, 307, 308].includes(resp.status)) return { resp, url, text: await resp.text() };
      const to = new URL(resp.headers.get('location'), url);
      if (to.host !== this.host) return { resp, url, text: '' }; // the client's callback
      url = to.href;
      resp = await this.request(url);
    }
    throw new Error('too many redirects');
  }

  /** Opens an authorisation or checkid_setup URL, signs in if asked, presses Allow; returns where yard redirects to. */
  async signInAndAllow(url) {
    let page = await this.open(url);
    let f = forms(page.text);
    if (page.resp.status === 200 && f.length && f[0].action.startsWith('/signin')) {
      page = await this.submit(page.url, f[0], { username: USER, password: PASSWORD });
    }
    expect(page.resp.status === 200 && page.text.includes('value="allow"'), `no consent page at ${page.url}: ${page.resp.status} ${page.text.slice(0, 2000)}`);
    f = forms(page.text);
    const back = await this.submit(page.url, f[0], { decision: 'allow' });
    expect(back.resp.status === 303, `Allow: got ${back.resp.status}, want 303`);
    return new URL(back.resp.headers.get('location'), back.url).href;
  }
}
