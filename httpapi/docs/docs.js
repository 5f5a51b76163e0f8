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
  for (const p of params.filter((p) => p.in === "path" || p.in === "query" || p.in === "header")) {
    inputs[p.in + ":" + p.name] = el("input", { name: p.name, placeholder: p.in });
    form.append(el("label", {}, p.name + " (" + p.in + ")", inputs[p.in + ":" + p.name]));
  }
  let bodyInput = null;
  if (rb && rb.content) {
    bodyInput = el("textarea", { name: "body", placeholder: "JSON body" });
    form.append(el("label", {}, "body", bodyInput));
  }
  const out = el("pre", {}, "");
  form.append(el("button", { type: "submit" }, "Try it"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    let url = path;
    const query = new URLSearchParams();
    const headers = {};
    for (const [key, input] of Object.entries(inputs)) {
      const [where, name] = key.split(":");
      if (!input.value) continue;
      if (where === "path") url = url.replace("{" + name + "}", encodeURIComponent(input.value));
      if (where === "query") query.append(name, input.value);
      if (where === "header") headers[name] = input.value;
    }
    const authz = document.getElementById("authz").value.trim();
    if (authz) headers["Authorization"] = authz;
    if (bodyInput && bodyInput.value) headers["Content-Type"] = "application/json";
    const qs = query.toString();
    try {
      const res = await fetch(url + (qs ? "?" + qs : ""), {
        method: method.toUpperCase(), headers, credentials: "same-origin", redirect: "manual",
        body: bodyInput && bodyInput.value ? bodyInput.value : undefined,
      });
      const text = await res.text();
      const hs = [...res.headers.entries()].map(([k, v]) => k + ": " + v).join("\n");
      out.textContent = res.status + " " + res.statusText + "\n" + hs + "\n\n" + text;
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
  d.dataset.search = (method + " " + path + " " + (op.tags || []).join(" ") + " " + (op.summary || "")).toLowerCase();
  return d;
}

async function main() {
  const res = await fetch("/openapi.json");
  const doc = await res.json();
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
