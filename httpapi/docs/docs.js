// The interactive API reference: reads /openapi.json and renders every
// operation with its parameters, request body, responses and a "Try it" form.
"use strict";

const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
};

function resolve(doc, obj) {
  let seen = 0;
  while (obj && obj.$ref && seen++ < 20) {
    obj = obj.$ref.replace(/^#\//, "").split("/").reduce((o, k) => (o || {})[k], doc);
  }
  return obj || {};
}

function schemaText(doc, schema, depth = 0) {
  schema = resolve(doc, schema);
  if (depth > 4) return "…";
  if (schema.allOf) {
    return schema.allOf.map((s) => schemaText(doc, s, depth)).join(" & ");
  }
  if (schema.type === "object" || schema.properties) {
    const req = new Set(schema.required || []);
    const props = Object.entries(schema.properties || {}).map(([k, v]) =>
      "  ".repeat(depth + 1) + k + (req.has(k) ? "" : "?") + ": " + schemaText(doc, v, depth + 1));
    return "{\n" + props.join(",\n") + "\n" + "  ".repeat(depth) + "}";
  }
  if (schema.type === "array") return "[" + schemaText(doc, schema.items || {}, depth) + "]";
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (schema.oneOf) return schema.oneOf.map((s) => schemaText(doc, s, depth)).join(" | ");
  return Array.isArray(schema.type) ? schema.type.join(" | ") : (schema.type || "any");
}

// asTyped keeps a query string as typed, so that the car query grammar's
// "," (either value), "!" (exclude), ";" (pair separator), "+" (space) and
// "%XX" escapes reach the server unchanged (docs/cars.md). Only what cannot
// stand in a query string is percent-encoded: white space, "#", "&" (but
// in a whole query string, where it separates pairs), a "%" that starts no
// escape, and non-ASCII characters.
function asTyped(s, whole = false) {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "%" && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) out += c;
    else if (/[A-Za-z0-9\-._~!$'()*+,;=:@\/?]/.test(c) || (whole && c === "&")) out += c;
    else {
      const cp = s.codePointAt(i);
      if (cp > 0xffff) i++;
      out += encodeURIComponent(String.fromCodePoint(cp));
    }
  }
  return out;
}

const byId = (id) => document.getElementById(id);
const utf8 = (s) => new TextEncoder().encode(s);
const hex = (buf) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join("");
const sha256 = async (s) => hex(await crypto.subtle.digest("SHA-256", utf8(s)));
async function hmacSHA256(key, s) {
  const k = await crypto.subtle.importKey("raw", utf8(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return hex(await crypto.subtle.sign("HMAC", k, utf8(s)));
}
const base64 = (s) => btoa(String.fromCharCode(...utf8(s)));
// RFC 5849 §3.6 percent-encoding.
const oauthEncode = (s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
const formDecode = (s) => decodeURIComponent(s.replace(/\+/g, " "));

// signQuery adds a signed request's query variables (docs/auth.md, "Signed
// requests"), binding the method and the body.
async function signQuery(method, path, qs, body) {
  const add = [
    "timestamp=" + Math.floor(Date.now() / 1000),
    "apiKey=" + encodeURIComponent(byId("cred-apikey").value.trim()),
    "method=" + method,
    "bodyhash=" + await sha256(body || ""),
  ];
  qs = [qs, ...add].filter(Boolean).join("&");
  const pairs = qs.split("&").filter(Boolean).map((p) => {
    const i = p.indexOf("=");
    const [n, v] = i < 0 ? [p, ""] : [p.slice(0, i), p.slice(i + 1)];
    return [formDecode(n).toLowerCase(), formDecode(v)];
  }).filter(([n]) => n !== "signature");
  const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  const bytes = (s) => String.fromCharCode(...utf8(s));
  pairs.sort((a, b) => cmp(bytes(a[0]), bytes(b[0])) || cmp(bytes(a[1]), bytes(b[1])));
  const signed = decodeURIComponent(path) + "?" + pairs.map(([n, v]) => n + "=" + v).join("&");
  return qs + "&signature=" + await hmacSHA256(byId("cred-secret").value, signed);
}

// digestAuthorization answers the SHA-256 Digest challenge of a 401
// (RFC 7616 §3.4), or returns null when there is none.
async function digestAuthorization(res, method, uri) {
  const all = res.headers.get("WWW-Authenticate") || "";
  const m = all.match(/Digest\s+((?:[a-z0-9_-]+=(?:"[^"]*"|[^,\s]*)\s*,?\s*)+)/gi) || [];
  const challenge = m.map((c) => Object.fromEntries([...c.matchAll(/([a-z0-9_-]+)=(?:"([^"]*)"|([^,\s]*))/gi)]
    .map((x) => [x[1].toLowerCase(), x[2] !== undefined ? x[2] : x[3]])))
    .find((c) => (c.algorithm || "").toUpperCase() === "SHA-256");
  if (!challenge) return null;
  const user = byId("cred-user").value, pass = byId("cred-password").value;
  const cnonce = hex(crypto.getRandomValues(new Uint8Array(12))), nc = "00000001";
  const ha1 = await sha256(user + ":" + challenge.realm + ":" + pass);
  const ha2 = await sha256(method + ":" + uri);
  const response = await sha256([ha1, challenge.nonce, nc, cnonce, "auth", ha2].join(":"));
  const q = (s) => '"' + s.replace(/[\\"]/g, "\\$&") + '"';
  return "Digest username=" + q(user) + ", realm=" + q(challenge.realm) + ", nonce=" + q(challenge.nonce) +
    ", uri=" + q(uri) + ", algorithm=SHA-256, qop=auth, nc=" + nc + ", cnonce=" + q(cnonce) +
    ", response=" + q(response) + (challenge.opaque !== undefined ? ", opaque=" + q(challenge.opaque) : "");
}

// HTTP/2 carries no reason phrase; these are RFC 9110's (and RFC 6585's).
const reasons = {
  200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 205: "Reset Content",
  304: "Not Modified", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
  405: "Method Not Allowed", 406: "Not Acceptable", 409: "Conflict", 410: "Gone",
  412: "Precondition Failed", 413: "Content Too Large", 415: "Unsupported Media Type",
  428: "Precondition Required", 429: "Too Many Requests", 500: "Internal Server Error",
  503: "Service Unavailable",
};

// tryRequest sends one request with the credentials of the box and
// returns the answer as text: status, headers and body. Cookies go only
// with the session scheme (credentials "omit" otherwise), so a 401 never
// makes the browser ask for a password: it prompts only for requests that
// may carry credentials of its own. Redirects are followed: a page cannot
// read a redirect's status or headers (fetch's "manual" mode answers an
// opaque response with status 0), so the answer says where it ended.
async function tryRequest(method, path, qs, headers, body) {
  const scheme = byId("scheme").value;
  headers = { ...headers };
  if (scheme === "basic") headers["Authorization"] = "Basic " + base64(byId("cred-user").value + ":" + byId("cred-password").value);
  if (scheme === "bearer") {
    headers["Authorization"] = "Bearer " + byId("cred-token").value.trim();
    if (byId("cred-xpassword").value) headers["X-Password"] = byId("cred-xpassword").value;
  }
  if (scheme === "header" && byId("authz").value.trim()) headers["Authorization"] = byId("authz").value.trim();
  if (scheme === "oauth") {
    const p = {
      oauth_consumer_key: byId("cred-ckey").value.trim(), oauth_token: byId("cred-otoken").value.trim(),
      oauth_signature_method: "PLAINTEXT", oauth_timestamp: String(Math.floor(Date.now() / 1000)),
      oauth_nonce: hex(crypto.getRandomValues(new Uint8Array(12))), oauth_version: "1.0",
      oauth_signature: oauthEncode(byId("cred-csecret").value) + "&" + oauthEncode(byId("cred-osecret").value),
    };
    headers["Authorization"] = 'OAuth realm="yard", ' + Object.entries(p).map(([k, v]) => k + '="' + oauthEncode(v) + '"').join(", ");
  }
  if (scheme === "signed") qs = await signQuery(method, path, qs, body);
  if (scheme === "session") {
    // Chromium asks for a password when a request that carries the
    // browser's own credentials (cookies) meets a 401 with a Basic or
    // Digest challenge, which is what a request without a live session
    // gets. So cookies go only while the session signed in on this page
    // is live (GET /sessions/{key} is public: the key is the credential).
    if (!(await sessionLive())) {
      sessionKey = null;
      byId("session-status").textContent = "";
      liveUpdate();
      return "Not sent: there is no live session. Press “Sign in (POST /sessions)” in the credentials box first.";
    }
  }
  // The request target as the browser sends it (its URL parser may
  // percent-encode a few more characters, such as "'" in a query).
  const target = new URL(path + (qs ? "?" + qs : ""), location.href);
  const url = target.pathname + target.search;
  const send = () => fetch(url, {
    method, headers, body, redirect: "follow", cache: "no-store",
    credentials: scheme === "session" ? "same-origin" : "omit",
  });
  let res = await send();
  if (scheme === "digest" && res.status === 401) {
    const a = await digestAuthorization(res, method, url);
    if (a) {
      headers["Authorization"] = a;
      res = await send();
    }
  }
  let redirectedTo = res.redirected ? res.url : null;
  let note = "";
  if (scheme === "digest" && redirectedTo && res.status === 401) {
    // A Digest answer names its request target (RFC 7616 §3.4.6), so the
    // redirected request needs an answer of its own. A GET stays a GET
    // whatever the redirect, so it is sent again; another method may have
    // become a GET (303) or not (308), which a page cannot tell.
    const to = new URL(redirectedTo);
    const a = (method === "GET" || method === "HEAD") && await digestAuthorization(res, method, to.pathname + to.search);
    if (a) {
      res = await fetch(to.pathname + to.search, { method, headers: { ...headers, Authorization: a }, redirect: "follow", cache: "no-store", credentials: "omit" });
      if (res.redirected) redirectedTo = res.url;
    } else {
      note = "Digest answers one request target: the redirected request was refused. Send it again at " + redirectedTo + "\n";
    }
  }
  const text = await res.text();
  const hs = [...res.headers.entries()].map(([k, v]) => k + ": " + v).join("\n");
  let head = method + " " + url + "\n";
  if (redirectedTo) {
    head += "Redirected: the browser followed a redirect to " + redirectedTo +
      " (a page cannot see the redirect's own status and headers; curl -i shows them)\n" + note;
  }
  return head + "\n" + res.status + " " + (res.statusText || reasons[res.status] || "") + "\n" + hs + "\n\n" + text;
}

// The credentials box shows the fields of the chosen scheme.
function showScheme() {
  const scheme = byId("scheme").value;
  for (const e of document.querySelectorAll("[data-schemes]")) e.hidden = !e.dataset.schemes.split(" ").includes(scheme);
}

// sessionKey is the key of the session signed in on this page.
let sessionKey = null;
const sessionCookie = (value, extra) => { document.cookie = "sessionToken=" + value + "; Path=/; Secure; SameSite=Strict" + extra; };

// sessionLive reports whether the session signed in on this page is live
// (GET /sessions/{key} is public: the key is the credential).
async function sessionLive() {
  if (!sessionKey) return false;
  const res = await fetch("/sessions/" + encodeURIComponent(sessionKey), { credentials: "omit", cache: "no-store" });
  return res.ok;
}

// restoreSession takes up the session this page signed in on an earlier
// visit: its sessionToken cookie is the page's own (one it can read), and
// counts only while the session is live.
async function restoreSession() {
  const c = document.cookie.split(";").map((s) => s.trim()).find((s) => s.startsWith("sessionToken="));
  if (!c || sessionKey) return;
  sessionKey = c.slice("sessionToken=".length);
  if (await sessionLive()) {
    byId("session-status").textContent = "signed in (a session of an earlier visit)";
  } else {
    sessionKey = null;
  }
  liveUpdate();
}

// sessionSignIn starts a cookie session. The request carries no
// credentials of the browser ("omit"), so that a wrong password is a 401
// shown here rather than the browser's password dialog; such a request
// may not set cookies, so the page sets the sessionToken cookie itself
// from the key in the answer (a cookie the page can read: not HttpOnly).
async function sessionSignIn() {
  const status = byId("session-status");
  status.textContent = "…";
  try {
    const res = await fetch("/sessions", {
      method: "POST", credentials: "omit", cache: "no-store", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ username: byId("cred-user").value, password: byId("cred-password").value }),
    });
    const text = await res.text();
    if (res.status === 201) {
      sessionKey = JSON.parse(text).key;
      sessionCookie(sessionKey, "");
      status.textContent = "signed in (session " + res.headers.get("Location") + ")";
      liveUpdate();
    } else {
      status.textContent = res.status + " " + (reasons[res.status] || "") + ": " + text;
    }
  } catch (e) {
    status.textContent = String(e);
  }
}

// sessionSignOut ends the session (DELETE /sessions/{key}) and drops the cookie.
async function sessionSignOut() {
  const status = byId("session-status");
  if (sessionKey) {
    const res = await fetch("/sessions/" + encodeURIComponent(sessionKey), { method: "DELETE", credentials: "omit" });
    status.textContent = "signed out (" + res.status + ")";
  } else {
    status.textContent = "";
  }
  sessionKey = null;
  sessionCookie("", "; Max-Age=0");
  liveUpdate();
}

// The live events panel (docs/events.md, "Streams"): an EventSource on
// /v1/events, which the browser authenticates with the session cookie
// (same origin). The page opens it only while the session signed in here
// is live, and reconnects by itself after an error, resuming with after=
// (the last id shown), rather than leaving it to EventSource: a request
// without a live session gets a 401 with Basic and Digest challenges,
// which would make the browser ask for a password. Event data is shown as
// text, never as markup.
const live = {
  source: null, // the open EventSource
  starting: false, // checking the session before opening it
  timer: null, // the pending reconnection
  lastId: "", // the id of the last event shown
  failures: 0, // errors since the last open
  // The event types to listen to (an EventSource delivers each type to
  // its own listeners); main reads them from /openapi.json.
  types: ["bark.created", "bark.running", "bark.succeeded", "bark.failed", "bark.canceled", "bark.deleted",
    "dog.created", "dog.updated", "dog.deleted", "order.created", "order.updated",
    "car.created", "car.updated", "car.deleted", "car.imported", "garage.created", "garage.updated", "garage.deleted",
    "webhook.disabled"],
};
const liveMax = 200; // events kept in the list

const liveShow = (text) => { byId("live-status").textContent = text; };

// liveUpdate sets the buttons (and, when idle, the status) from the
// session: without one the panel says how to sign in.
function liveUpdate() {
  const active = !!(live.source || live.timer);
  if (!sessionKey) {
    liveStop();
    liveShow("Not signed in. Choose “Cookie session” in the credentials box above, sign in " +
      "(POST /sessions), then press Start to see your events as they happen.");
  } else if (!active) {
    liveShow("Signed in. Press Start to see your events as they happen.");
  }
  byId("live-start").disabled = !sessionKey || active;
  byId("live-stop").disabled = !(live.source || live.timer);
}

// liveStart opens the stream, after the last event shown if any.
async function liveStart() {
  clearTimeout(live.timer);
  live.timer = null;
  if (live.source || live.starting) return;
  live.starting = true;
  let ok = false, unreachable = false;
  try {
    ok = await sessionLive();
  } catch (e) {
    unreachable = true;
  } finally {
    live.starting = false;
  }
  if (!ok) {
    if (unreachable) {
      live.timer = setTimeout(liveStart, 3000);
      liveShow("The server cannot be reached; trying again in 3 s…");
    } else {
      sessionKey = null; // the session ended
      byId("session-status").textContent = "";
    }
    liveUpdate();
    return;
  }
  const es = new EventSource("/v1/events" + (live.lastId ? "?after=" + encodeURIComponent(live.lastId) : ""));
  live.source = es;
  es.addEventListener("open", () => {
    live.failures = 0;
    liveShow("Streaming GET /v1/events: new events appear below.");
  });
  for (const type of ["message", ...live.types]) es.addEventListener(type, liveEvent);
  es.addEventListener("error", () => {
    // A dropped stream, a server cutting a slow reader off, or a refusal
    // (429 past the streams a person may hold): again after 3 s (the
    // stream's retry:), doubling up to a minute while it keeps failing.
    es.close();
    if (live.source !== es) return;
    live.source = null;
    const wait = Math.min(3000 * 2 ** live.failures++, 60000);
    liveShow("The stream stopped; trying again in " + Math.round(wait / 1000) + " s…");
    live.timer = setTimeout(liveStart, wait);
    liveUpdate();
  });
  liveUpdate();
}

// liveStop closes the stream.
function liveStop() {
  clearTimeout(live.timer);
  live.timer = null;
  if (live.source) live.source.close();
  live.source = null;
}

// liveEvent lists one event: its type and its subject (the resource's URL).
function liveEvent(ev) {
  // Ids only grow (docs/events.md): a smaller one was shown already.
  if (ev.lastEventId) {
    if (live.lastId && ev.lastEventId.length === live.lastId.length && ev.lastEventId <= live.lastId) return;
    live.lastId = ev.lastEventId;
  }
  let subject = "";
  try {
    subject = String(JSON.parse(ev.data).subject || "");
  } catch (e) {
    subject = "(data that is not JSON)";
  }
  const item = el("li", {}, el("span", { class: "live-type" }, ev.type), el("span", { class: "live-subject" }, subject));
  item.dataset.id = ev.lastEventId;
  const list = byId("live-events");
  list.append(item);
  while (list.children.length > liveMax) list.firstElementChild.remove();
}

function renderOp(doc, path, method, op) {
  const body = el("div", { class: "body" });
  if (op.description) body.append(el("p", {}, op.description));
  const params = (op.parameters || []).map((p) => resolve(doc, p));
  if (params.length) {
    const t = el("table", {}, el("tr", {}, el("th", {}, "parameter"), el("th", {}, "in"), el("th", {}, "description")));
    for (const p of params) t.append(el("tr", {}, el("td", {}, el("code", {}, p.name)), el("td", {}, p.in), el("td", {}, p.description || "")));
    body.append(el("h4", {}, "Parameters"), t);
  }
  const rb = op.requestBody && resolve(doc, op.requestBody);
  if (rb && rb.content) {
    body.append(el("h4", {}, "Request body"));
    for (const [type, media] of Object.entries(rb.content)) {
      body.append(el("div", {}, el("code", {}, type)), el("pre", {}, schemaText(doc, media.schema || {})));
    }
  }
  const rt = el("table", {}, el("tr", {}, el("th", {}, "status"), el("th", {}, "meaning"), el("th", {}, "body")));
  for (const [code, r0] of Object.entries(op.responses || {})) {
    const r = resolve(doc, r0);
    const types = Object.keys(r.content || {}).join(", ");
    rt.append(el("tr", {}, el("td", {}, code), el("td", {}, r.description || ""), el("td", {}, el("code", {}, types))));
  }
  body.append(el("h4", {}, "Responses"), rt);

  // Try it.
  const form = el("form", { class: "try" });
  const inputs = {};
  // The signed-request variables are the credentials box's to fill.
  const signed = (p) => (p.$ref || "").startsWith("#/components/parameters/signed-");
  const tryParams = (op.parameters || []).filter((p) => !signed(p)).map((p) => resolve(doc, p));
  for (const p of tryParams.filter((p) => p.in === "path" || p.in === "query" || p.in === "header")) {
    inputs[p.in + ":" + p.name] = el("input", { name: p.name, placeholder: p.in });
    form.append(el("label", {}, p.name + " (" + p.in + ")", inputs[p.in + ":" + p.name]));
  }
  let bodyInput = null;
  if (rb && rb.content) {
    bodyInput = el("textarea", { name: "body", placeholder: "JSON body" });
    form.append(el("label", {}, "body", bodyInput));
  }
  let rawQuery = null;
  if (method === "get") {
    rawQuery = el("input", { name: "query", placeholder: "color=red,blue;make=!ford" });
    form.append(el("label", {}, "more of the query string, as typed", rawQuery));
  }
  const out = el("pre", { class: "answer" }, "");
  form.append(el("button", { type: "submit" }, "Try it"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    let url = path;
    const pairs = [];
    const headers = {};
    for (const [key, input] of Object.entries(inputs)) {
      const [where, name] = key.split(":");
      if (!input.value) continue;
      // A path segment as typed too (/search/color=red,blue reads the
      // grammar from the raw path), but "/" and "?" stay inside it.
      if (where === "path") url = url.replace("{" + name + "}", asTyped(input.value).replace(/[/?]/g, encodeURIComponent));
      if (where === "query") pairs.push(asTyped(name) + "=" + asTyped(input.value));
      if (where === "header") headers[name] = input.value;
    }
    if (rawQuery && rawQuery.value) pairs.push(asTyped(rawQuery.value, true));
    if (bodyInput && bodyInput.value) headers["Content-Type"] = "application/json";
    out.textContent = "…";
    try {
      out.textContent = await tryRequest(method.toUpperCase(), url, pairs.join("&"), headers,
        bodyInput && bodyInput.value ? bodyInput.value : undefined);
    } catch (e) {
      out.textContent = String(e);
    }
  });
  body.append(el("h4", {}, "Try it"), form);

  const summary = el("summary", {},
    el("span", { class: "method " + method }, method),
    el("span", { class: "path" }, path),
    el("span", {}, op.summary || ""));
  if (Array.isArray(op.security) && op.security.length === 0) summary.append(el("span", { class: "public" }, "public"));
  const d = el("details", { class: "op" }, summary, body);
  if (op.operationId) d.id = "op-" + op.operationId;
  d.dataset.search = (method + " " + path + " " + (op.tags || []).join(" ") + " " + (op.summary || "")).toLowerCase();
  return d;
}

async function main() {
  byId("scheme").addEventListener("change", showScheme);
  byId("session-signin").addEventListener("click", sessionSignIn);
  byId("session-signout").addEventListener("click", sessionSignOut);
  byId("live-start").addEventListener("click", liveStart);
  byId("live-stop").addEventListener("click", () => { liveStop(); liveUpdate(); });
  showScheme();
  liveUpdate();
  restoreSession().catch(() => {});
  const res = await fetch("/openapi.json");
  const doc = await res.json();
  const types = ((((doc.components || {}).schemas || {}).Event || {}).properties || {}).type;
  if (types && Array.isArray(types.enum)) live.types = types.enum;
  document.getElementById("summary").textContent = (doc.info.summary || "") + " Version " + doc.info.version + ".";
  const byTag = new Map();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "put", "post", "delete", "patch", "head", "options"].includes(method)) continue;
      const tag = (op.tags || ["other"])[0];
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push(renderOp(doc, path, method, op));
    }
  }
  const ops = document.getElementById("ops");
  const tagDesc = new Map((doc.tags || []).map((t) => [t.name, t.description]));
  for (const [tag, items] of byTag) {
    ops.append(el("h2", {}, tag), el("p", {}, tagDesc.get(tag) || ""), ...items);
  }
  document.getElementById("filter").addEventListener("input", (ev) => {
    const q = ev.target.value.toLowerCase();
    for (const d of document.querySelectorAll("details.op")) d.hidden = q && !d.dataset.search.includes(q);
  });
}

main().catch((e) => { document.getElementById("summary").textContent = "Could not load /openapi.json: " + e; });
