// The timeline page: one WebSocket to `snapstore ui` (docs/api.md), rendered with DOM calls
// only (never HTML built from the store's text). No build step, no dependency.
"use strict";

const params = new URLSearchParams(location.search);
const TOKEN = params.get("token") || "";
// How long a button waits for its answer before it is given back (ms); `?patience=` shortens it.
const PATIENCE = Number(params.get("patience")) > 0 ? Number(params.get("patience")) : 30000;

const $ = (id) => document.getElementById(id);
let socket = null;
let current = params.get("session");
let nextId = 1;
const pending = new Map(); // request_id -> {button, timer}

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function button(label, cls, onClick) {
  const b = el("button", cls, label);
  b.type = "button";
  b.addEventListener("click", () => onClick(b));
  return b;
}

function notice(text, kind) {
  const box = $("notice");
  box.textContent = text;
  box.dataset.kind = kind || "info";
  box.hidden = !text;
}

// Send one request; a button given is disabled until its answer, or PATIENCE ms.
function send(action, extra, btn) {
  const requestId = "r" + nextId++;
  const frame = Object.assign({ action: action, session_id: current, request_id: requestId }, extra);
  if (!socket || socket.readyState !== WebSocket.OPEN) {
    notice("Not connected to snapstore ui; retrying.", "error");
    return;
  }
  if (btn) {
    btn.disabled = true;
    const timer = setTimeout(() => {
      pending.delete(requestId);
      btn.disabled = false;
      notice(`No answer after ${Math.round(PATIENCE / 1000)} s: the store may be busy. ` +
        "Try again; the operation log shows what was done.", "error");
    }, PATIENCE);
    pending.set(requestId, { button: btn, timer: timer });
  }
  socket.send(JSON.stringify(frame));
}

function connect() {
  const link = $("link");
  socket = new WebSocket(`ws://${location.host}/ws?token=${encodeURIComponent(TOKEN)}`);
  socket.addEventListener("open", () => {
    link.dataset.state = "live";
    link.textContent = "live";
    send("sessions", { session_id: null });
    send("ops", { session_id: null });
    if (current) send("load_session", {});
  });
  socket.addEventListener("close", () => {
    link.dataset.state = "down";
    link.textContent = "disconnected";
    setTimeout(connect, 1000);
  });
  socket.addEventListener("message", (event) => receive(JSON.parse(event.data)));
}

function receive(frame) {
  const data = frame.data || {};
  const waiting = pending.get(data.request_id);
  if (waiting) {
    clearTimeout(waiting.timer);
    waiting.button.disabled = false;
    pending.delete(data.request_id);
  }
  const mine = data.session_id === current;
  switch (frame.type) {
    case "sessions": return showSessions(data.sessions);
    case "ops": return showOps(data.ops);
    case "session": return mine && showSession(data);
    case "diff": return mine && showDiff(data);
    case "rewind_result":
    case "switch_result":
    case "undo_result": return mine && showResult(frame.type, data);
    case "error": return (mine || data.session_id === null) &&
      notice(`${data.message} (${data.code})`, "error");
  }
}

function choose(session) {
  current = session;
  const url = new URL(location.href);
  url.searchParams.set("session", session);
  history.replaceState(null, "", url);
  $("result").hidden = true;
  notice("");
  send("load_session", {});
  for (const item of $("sessions").children) {
    item.classList.toggle("chosen", item.dataset.session === current);
  }
}

function showSessions(sessions) {
  const list = $("sessions");
  list.replaceChildren();
  for (const s of sessions) {
    const item = el("li", s.session_id === current ? "chosen" : "");
    item.dataset.session = s.session_id;
    const pick = button(s.session_id, "session", () => choose(s.session_id));
    const who = s.agent || "api";
    item.append(pick, el("small", "", `${who} · ${count(s.turns, "turn")} · ${when(s.time)}`));
    if (s.open_turn) item.append(el("small", "running", "a turn is running"));
    list.append(item);
  }
  if (!current && sessions.length) choose(sessions[0].session_id);
}

function when(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleString() : "";
}

function count(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function short(id) {
  return id ? id.slice(0, 8) : "(start)";
}

function turnItem(t, rewound) {
  const item = el("li", "turn");
  item.dataset.turn = t.id;
  if (t.n !== null) item.dataset.n = t.n;
  const head = el("div", "head");
  head.append(
    el("span", "n", t.n !== null ? `#${t.n}` : "rewound"),
    el("code", "id", short(t.id)),
    el("span", "time", when(t.time)),
    el("span", "stats", count(t.files.length, "file")),
    el("span", "added", `+${t.added}`),
    el("span", "removed", `−${t.removed}`),
  );
  if (t.branches) {
    head.append(el("span", "branches", `${t.branches} rewound after it`));
  }
  const prompt = el("p", "prompt", t.prompt || "(no prompt)");
  const files = el("ul", "files");
  for (const f of t.files) {
    files.append(el("li", `st-${f.status}`, `${f.path}  +${f.added} −${f.removed}`));
  }
  const actions = el("div", "actions");
  actions.append(button("diff", "", (b) => send("diff", { turn: t.id }, b)));
  if (rewound) {
    actions.append(button("switch to this", "switch", (b) =>
      send("switch", { turn: t.id, on_conflict: $("policy").value }, b)));
  } else {
    actions.append(button("rewind here", "rewind", (b) =>
      send("rewind", { turn: t.id, mode: $("mode").value, on_conflict: $("policy").value }, b)));
  }
  item.append(head, prompt, files, actions);
  return item;
}

function showSession(data) {
  $("title").textContent = data.session_id;
  const turns = $("turns");
  turns.replaceChildren(...data.turns.map((t) => turnItem(t, false)));
  if (!data.turns.length) turns.append(el("li", "hint", "No turns on this branch."));
  if (data.open_turn) turns.prepend(el("li", "running", "A turn is running now."));
  $("rewound").replaceChildren(...data.rewound.map((t) => turnItem(t, true)));
  $("rewound-box").hidden = !data.rewound.length;
  const undoing = [...pending.values()].some((p) => p.button === $("undo"));
  if (!undoing) $("undo").disabled = false;
}

function showDiff(data) {
  $("diff-title").textContent = `Diff of ${short(data.turn)}`;
  const box = $("diff");
  box.replaceChildren();
  for (const f of data.files) {
    box.append(el("h3", "", `${f.path} (${f.status})`));
    const pre = el("pre", "patch");
    for (const line of f.lines) {
      const kind = line.startsWith("+") ? "add" : line.startsWith("-") ? "del" :
        line.startsWith("@@") ? "hunk" : "";
      pre.append(el("span", kind, line + "\n"));
    }
    if (f.truncated) pre.append(el("span", "hunk", "… (cut)\n"));
    box.append(pre);
  }
  for (const u of data.uncaptured) {
    box.append(el("p", "hint uncaptured",
      `${u.path}: never captured (${u.reason}); no rewind can restore it`));
  }
  if (!data.files.length && !data.uncaptured.length) {
    box.append(el("p", "hint", "This turn changed no file."));
  }
}

function showResult(type, data) {
  const verb = { rewind_result: "Rewound", switch_result: "Switched", undo_result: "Undone" }[type];
  const written = data.restored_paths.length;
  const head = data.new_head_id ? `; head is now ${short(data.new_head_id)}` :
    "; no turn is left on the branch";
  $("result-title").textContent = `${verb}: ${count(data.turns_reverted.length, "turn")}, ` +
    `${count(written, "file")} written${head}`;
  $("prompt").textContent = data.user_text || "";
  $("prompt-box").hidden = !data.user_text;
  const problems = $("problems");
  problems.replaceChildren();
  for (const c of data.conflicts) problems.append(el("li", "conflict", `conflict: ${c.path}: ${c.reason}`));
  for (const e of data.errors) problems.append(el("li", "error", `not written: ${e.path}: ${e.reason}`));
  $("result").hidden = false;
  $("result").dataset.kind = data.conflicts.length || data.errors.length ? "partial" : "ok";
  notice("");
}

function showOps(ops) {
  const list = $("ops");
  list.replaceChildren();
  for (const op of ops) {
    const item = el("li", op.undone_by ? "undone" : "");
    item.append(
      el("strong", "", op.action),
      el("span", "", ` of ${short(op.target)} · ${op.session_id} · ${when(Date.parse(op.time) / 1000)}`),
    );
    if (op.conflicts || op.errors) {
      item.append(el("span", "problem",
        ` · ${count(op.conflicts, "conflict")}, ${count(op.errors, "error")}`));
    }
    if (op.undone_by) item.append(el("span", "", " · undone"));
    list.append(item);
  }
  if (!ops.length) list.append(el("li", "hint", "No rewind yet."));
}

document.addEventListener("DOMContentLoaded", () => {
  $("undo").addEventListener("click", () => send("undo", { on_conflict: $("policy").value }, $("undo")));
  $("copy").addEventListener("click", () => {
    const text = $("prompt").textContent;
    navigator.clipboard.writeText(text).then(
      () => notice("Prompt copied.", "info"),
      () => notice("Could not copy: select the prompt and copy it.", "error"),
    );
  });
  connect();
});
