// tidepool playground (docs/playground.md): a client of this server's /mcp,
// nothing more. Each run is one native sandbox/exec per chosen policy, each
// POST a client of its own (no MCP session is needed for native methods).
// The elements the browser test reads (tests/browser/playground.test.mjs):
//   .card[data-policy][data-layer][data-kind][data-state]  one per policy
//   .layer[data-name].lit                                   the layer that decided
//   [data-field=kind|rule|message|syscall|stdout|stderr|value|usage]
//   #policy-status[data-ok], #policy-errors li[data-line][data-column]
"use strict";

const LAYERS = ["host", "kernel", "process", "language"]; // outside in
const PREFERRED = ["strict", "standard", "permissive", "data", "kernel-only"];
const DEFAULT_ON = ["strict", "standard", "kernel-only"];
const SAMPLE = {
  python: 'import statistics\ndata = [3, 1, 4, 1, 5, 9, 2, 6]\nprint("mean", statistics.mean(data))\nsorted(data)\n',
  lua: 'local t = {}\nfor i = 1, 10 do t[#t + 1] = i * i end\nprint("squares", table.concat(t, " "))\nreturn t\n',
};

const $ = (id) => document.getElementById(id);
let nextId = 1;
let lessons = [];
let lesson = null; // the lesson chosen, while its code is in the editor
let token = sessionStorage.getItem("tidepool-token") || "";

// ---- the protocol ------------------------------------------------------------

class RpcError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

// One JSON-RPC request, POSTed alone; its result, or a thrown RpcError.
async function rpc(method, params) {
  const headers = { "Content-Type": "application/json", Accept: "application/json" };
  if (token) headers.Authorization = "Bearer " + token;
  const body = JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params });
  const r = await fetch("/mcp", { method: "POST", headers, body, cache: "no-store" });
  if (r.status === 401) {
    $("token-box").hidden = false;
    $("token").focus();
    throw new RpcError(401, "this server needs a bearer token (top right)");
  }
  let msg;
  try {
    msg = await r.json();
  } catch (e) {
    throw new RpcError(r.status, "HTTP " + r.status + ": not a JSON-RPC answer");
  }
  if (msg.error) throw new RpcError(msg.error.code, msg.error.message);
  return msg.result;
}

// ---- small helpers -------------------------------------------------------------

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k != null) e.append(k);
  return e;
}

function bytes(n) {
  if (n == null) return "—";
  if (n < 1024) return n + " B";
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + " KiB";
  return (n / 1024 / 1024).toFixed(1) + " MiB";
}

function ms(n) {
  return n == null ? "—" : n < 10 ? n.toFixed(2) + " ms" : Math.round(n) + " ms";
}

function lang() {
  return document.querySelector('input[name="lang"]:checked').value;
}

function setLang(l) {
  for (const r of document.querySelectorAll('input[name="lang"]')) r.checked = r.value === l;
}

function status(text, bad) {
  const s = $("status");
  s.textContent = text || "";
  s.classList.toggle("bad", !!bad);
}

// ---- editors: a textarea with line numbers ----------------------------------------

function editor(area, gutter, onInput) {
  const sync = () => {
    const n = area.value.split("\n").length;
    if (gutter.childElementCount !== n) {
      gutter.textContent = "";
      for (let i = 1; i <= n; i++) gutter.append(el("span", { "data-line": i, text: i }));
    }
    gutter.scrollTop = area.scrollTop;
  };
  area.addEventListener("input", () => {
    sync();
    if (onInput) onInput();
  });
  area.addEventListener("scroll", () => (gutter.scrollTop = area.scrollTop));
  area.addEventListener("keydown", (ev) => {
    if (ev.key === "Tab" && !ev.shiftKey && !ev.ctrlKey && !ev.altKey && !ev.metaKey) {
      ev.preventDefault(); // four spaces; Esc then Tab leaves the editor
      area.setRangeText("    ", area.selectionStart, area.selectionEnd, "end");
      area.dispatchEvent(new Event("input"));
    }
    if (ev.key === "Escape") area.blur();
  });
  return {
    set(text) {
      area.value = text;
      area.scrollTop = 0;
      sync();
    },
    sync,
  };
}

// ---- policies --------------------------------------------------------------------

function order(names) {
  const rank = (n) => (PREFERRED.includes(n) ? PREFERRED.indexOf(n) : PREFERRED.length);
  return names.slice().sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

async function loadPolicies() {
  const list = (await rpc("sandbox/policy/list", {})).policies;
  const names = order(list.map((p) => p.name));
  const desc = Object.fromEntries(list.map((p) => [p.name, p.description]));
  const box = $("policies");
  const view = $("policy-view");
  const anyDefault = names.some((n) => DEFAULT_ON.includes(n));
  for (const n of names) {
    const on = anyDefault ? DEFAULT_ON.includes(n) : true;
    const cb = el("input", { type: "checkbox", value: n, "data-policy": n });
    cb.checked = on;
    box.append(el("label", { title: desc[n] || "" }, cb, " " + n));
    view.append(el("option", { value: n, text: n }));
  }
  view.value = names.includes("strict") ? "strict" : names[0];
  await showPolicy();
}

function chosenPolicies() {
  return [...document.querySelectorAll("#policies input:checked")].map((c) => c.value);
}

async function showPolicy() {
  const name = $("policy-view").value;
  const pre = $("policy-json");
  try {
    const p = await rpc("sandbox/policy/get", { name });
    pre.textContent = JSON.stringify(p, null, 2);
  } catch (e) {
    pre.textContent = e.message;
  }
}

function copyPolicy() {
  const base = $("policy-view").value;
  const text = JSON.stringify(
    { name: "my-" + base, extends: base, limits: { cpu_ms: 500 }, python: { modules: ["math"] } },
    null,
    2,
  );
  policyEditor.set(text + "\n");
  checkSoon(0);
}

// ---- the policy checker: sandbox/policy/check, debounced --------------------------------

let checkTimer = null;
let checkSeq = 0;

function checkSoon(delay) {
  clearTimeout(checkTimer);
  checkTimer = setTimeout(checkPolicy, delay == null ? 300 : delay);
}

function markGutter(lines) {
  for (const s of $("policy-gutter").children)
    s.classList.toggle("err", lines.has(Number(s.dataset.line)));
}

function goTo(area, line, column) {
  const rows = area.value.split("\n");
  let at = 0;
  for (let i = 0; i < line - 1 && i < rows.length; i++) at += rows[i].length + 1;
  at += Math.max(0, column - 1);
  area.focus();
  area.setSelectionRange(at, at);
}

async function checkPolicy() {
  const text = $("policy-edit").value;
  const st = $("policy-status");
  const ul = $("policy-errors");
  const seq = ++checkSeq;
  if (text.trim() === "") {
    st.textContent = "";
    st.removeAttribute("data-ok");
    ul.textContent = "";
    markGutter(new Set());
    return;
  }
  let r;
  try {
    r = await rpc("sandbox/policy/check", { text });
  } catch (e) {
    if (seq !== checkSeq) return;
    st.textContent = e.message;
    st.dataset.ok = "false";
    return;
  }
  if (seq !== checkSeq) return; // an older answer than what is on screen
  ul.textContent = "";
  st.dataset.ok = String(r.ok);
  if (r.ok) {
    st.textContent = "\u2713 valid: policy '" + r.policy.name + "'. Only the operator can " +
      "load it (--policy-dir), so no run here can use it.";
  } else {
    const n = r.errors.length + (r.more || 0);
    st.textContent = "\u2717 " + n + (n === 1 ? " error" : " errors") +
      " (the same as tidepool policy check prints)";
  }
  const lines = new Set();
  for (const e of r.errors) {
    lines.add(e.line);
    const li = el(
      "li",
      { "data-line": e.line, "data-column": e.column, tabindex: "0" },
      el("span", { class: "loc", text: e.line ? "line " + e.line + ", column " + e.column : "" }),
      el("span", { class: "msg", text: e.message }),
    );
    const jump = () => goTo($("policy-edit"), e.line, e.column);
    li.addEventListener("click", jump);
    li.addEventListener("keydown", (ev) => ev.key === "Enter" && jump());
    ul.append(li);
  }
  if (r.more) ul.append(el("li", { class: "more", text: "... and " + r.more + " more" }));
  markGutter(lines);
}

// ---- lessons -----------------------------------------------------------------------

async function loadLessons() {
  const r = await fetch("/lessons.json", { cache: "no-store" });
  lessons = (await r.json()).lessons || [];
  const sel = $("lesson");
  for (const [l, label] of [["python", "Python"], ["lua", "Lua"]]) {
    const g = el("optgroup", { label });
    for (const x of lessons.filter((x) => x.lang === l))
      g.append(el("option", { value: x.id, text: x.title }));
    sel.append(g);
  }
}

function chooseLesson() {
  const id = $("lesson").value;
  lesson = lessons.find((x) => x.id === id) || null;
  const info = $("lesson-info");
  if (lesson == null) {
    info.hidden = true;
    return;
  }
  setLang(lesson.lang);
  codeEditor.set(lesson.code);
  $("lesson-teaches").textContent = lesson.teaches || "";
  $("lesson-limits").textContent = lesson.limits
    ? "sent with each run: limits " + JSON.stringify(lesson.limits)
    : "";
  info.hidden = false;
  status("");
}

// ---- running -------------------------------------------------------------------------

function layerBox(lit) {
  // host > kernel > process > language > the code, drawn nested
  let inner = el("div", { class: "core" + (lit === "none" ? " ok" : "") },
    lit === "none" ? "allowed" : "code");
  for (const name of LAYERS.slice().reverse()) {
    const box = el("div", { class: "layer" + (name === lit ? " lit" : ""), "data-name": name },
      el("span", { class: "lname", text: name + (name === lit ? " \u2014 decided" : "") }),
      inner);
    inner = box;
  }
  return el("div", { class: "layers" }, inner);
}

function field(name, label, value, cls) {
  const dd = el("dd", { "data-field": name, class: cls || "" });
  dd.textContent = value == null || value === "" ? "\u2014" : value;
  return [el("dt", { text: label }), dd];
}

function newCard(policy) {
  return el("article", { class: "card", "data-policy": policy, "data-state": "running" },
    el("header", {}, el("h3", { text: policy }), el("span", { class: "verdict", text: "running\u2026" })),
    layerBox(null));
}

function usageText(u) {
  if (!u) return "";
  const parts = ["cpu " + ms(u.cpu_ms), "wall " + ms(u.wall_ms), "memory " + bytes(u.memory_peak_bytes)];
  if (u.instructions)
    parts.push(u.instructions.toLocaleString("en") + (u.instructions === 1 ? " instruction" : " instructions"));
  return parts.join(" \u00b7 ");
}

function fill(card, policy, r, fault) {
  const e = r && r.error;
  const layer = fault ? "none" : e && e.layer ? e.layer : "none";
  card.dataset.layer = layer;
  card.dataset.kind = fault ? "request_refused" : e ? e.kind || "" : "ok";
  card.dataset.ok = String(!!(r && r.ok));
  card.textContent = "";
  const verdict = fault ? "refused: not run" : r.ok ? "allowed" : "stopped: " + e.kind;
  card.append(
    el("header", {}, el("h3", { text: policy }),
      el("span", { class: "verdict " + (fault ? "fault" : r.ok ? "ok" : "bad"), text: verdict })),
    layerBox(layer));
  const dl = el("dl");
  if (fault) {
    const what = typeof fault.code === "number" ? "JSON-RPC error " + fault.code : "request failed";
    dl.append(...field("kind", "kind", what),
      ...field("rule", "rule", null), ...field("message", "message", fault.message, "msg"));
  } else {
    const where = e && e.line ? " (line " + e.line + ")" : "";
    dl.append(
      ...field("kind", "kind", e ? e.kind : "ok"),
      ...field("rule", "rule", e && e.rule, "mono"),
      ...field("message", "message", e ? e.message + where : null, "msg"),
    );
    if (e && e.syscall) dl.append(...field("syscall", "syscall", e.syscall, "mono"));
    dl.append(
      ...field("stdout", "stdout", r.stdout, "out"),
      ...field("stderr", "stderr", r.stderr, "out"),
      ...field("value", "value", r.value == null ? null : JSON.stringify(r.value), "mono"),
      ...field("usage", "usage", usageText(r.usage)),
    );
  }
  card.append(dl);
  if (e && e.traceback) {
    card.append(el("details", {}, el("summary", { text: "traceback" }),
      el("pre", { class: "out", text: e.traceback })));
  }
  const want = lesson && lesson.lang === lang() && lesson.expect && lesson.expect[policy];
  if (want && !fault) {
    const wl = want.layer || "none";
    card.append(el("p", { class: "expect " + (wl === layer ? "match" : "miss"), "data-expect": wl },
      (wl === layer ? "\u2713 " : "\u2717 ") + "lesson expects: " +
      (want.layer ? want.layer + " (" + want.kind + ")" : "allowed")));
  }
  card.dataset.state = "done";
}

async function run() {
  const policies = chosenPolicies();
  const code = $("code").value;
  if (policies.length === 0) return status("Choose at least one policy.", true);
  if (code.trim() === "") return status("Write some code first.", true);
  const l = lang();
  const limits = lesson && lesson.lang === l && lesson.code === code ? lesson.limits : null;
  const box = $("results");
  box.textContent = "";
  box.style.setProperty("--n", Math.min(policies.length, 4));
  const btn = $("run");
  btn.disabled = true;
  status("running under " + policies.join(", ") + "\u2026");
  const t0 = performance.now();
  await Promise.all(policies.map(async (policy) => {
    const card = newCard(policy);
    box.append(card);
    const params = { lang: l, code, policy };
    if (limits) params.limits = limits;
    try {
      fill(card, policy, await rpc("sandbox/exec", params), null);
    } catch (e) {
      fill(card, policy, null, { code: e.code, message: e.message });
    }
  }));
  btn.disabled = false;
  status("done in " + ms(performance.now() - t0) + (limits ? " (with the lesson's limits)" : ""));
}

// ---- start -------------------------------------------------------------------------

let codeEditor, policyEditor;

async function start() {
  codeEditor = editor($("code"), $("code-gutter"), () => {
    if (lesson && $("code").value !== lesson.code) $("lesson-limits").textContent =
      lesson.limits ? "edited: the lesson's limits are no longer sent" : "";
  });
  policyEditor = editor($("policy-edit"), $("policy-gutter"), () => checkSoon());
  codeEditor.set(SAMPLE.python);
  policyEditor.set("");
  $("lesson").addEventListener("change", chooseLesson);
  for (const r of document.querySelectorAll('input[name="lang"]')) {
    r.addEventListener("change", () => {
      const samples = Object.values(SAMPLE);
      if ($("code").value === "" || samples.includes($("code").value)) codeEditor.set(SAMPLE[lang()]);
      if (lesson && lesson.lang !== lang()) {
        $("lesson").value = "";
        chooseLesson();
      }
    });
  }
  $("run").addEventListener("click", run);
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && document.activeElement === $("code")) {
      ev.preventDefault();
      run();
    }
  });
  $("policy-view").addEventListener("change", showPolicy);
  $("policy-copy").addEventListener("click", copyPolicy);
  $("token-box").addEventListener("submit", (ev) => {
    ev.preventDefault();
    token = $("token").value.trim();
    sessionStorage.setItem("tidepool-token", token);
    $("token-box").hidden = true;
    boot();
  });
  await boot();
}

async function boot() {
  try {
    if (lessons.length === 0) await loadLessons();
    if ($("policies").querySelectorAll("input").length === 0) await loadPolicies();
    document.body.dataset.ready = "true";
    status("");
  } catch (e) {
    status(e.message, true);
  }
}

document.addEventListener("DOMContentLoaded", start);
