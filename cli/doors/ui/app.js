// The timeline page: one WebSocket to `snapstore ui` (docs/api.md), rendered with DOM calls
// only (never HTML built from the store's text). No build step, no dependency.
"use strict";

const params = new URLSearchParams(location.search);
const TOKEN = params.get("token") || "";
// How long a move waits for its answer before its buttons are given back (ms); `?patience=`
// shortens it.
const PATIENCE = Number(params.get("patience")) > 0 ? Number(params.get("patience")) : 30000;
// The store's clock when the page was served (seconds), so that "5 min ago" is said as the
// command line says it; it runs on with the browser's.
const SERVED = Number(document.querySelector('meta[name="snapstore-now"]').content) * 1000;
const SKEW = Number.isFinite(SERVED) && SERVED > 0 ? SERVED - Date.now() : 0;

const $ = (id) => document.getElementById(id);
let socket = null;
let current = params.get("session");
let nextId = 1;
const pending = new Map(); // request_id -> {timer, onReply}
const state = { running: null, moving: false, ops: [], turns: new Map() };

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
  box.textContent = text || "";
  box.dataset.kind = kind || "info";
  box.hidden = !text;
}

function progress(text) {
  $("progress-text").textContent = text || "";
  $("progress").hidden = !text;
  document.body.setAttribute("aria-busy", text ? "true" : "false");
}

// -- time --------------------------------------------------------------------------------------

function now() {
  return (Date.now() + SKEW) / 1000;
}

// How long ago, as `snapstore log` says it: "just now", "5 min ago", "3 h ago", "2 days ago",
// then the date.
function ago(seconds) {
  if (!seconds) return "";
  const delta = Math.max(0, now() - seconds);
  if (delta < 45) return "just now";
  if (delta < 3600) return `${Math.round(delta / 60)} min ago`;
  if (delta < 86400) return `${Math.round(delta / 3600)} h ago`;
  if (delta < 7 * 86400) return count(Math.round(delta / 86400), "day") + " ago";
  return new Date(seconds * 1000).toLocaleDateString();
}

function when(seconds, cls) {
  const node = el("span", `ago ${cls || ""}`.trim(), ago(seconds));
  node.dataset.time = seconds;
  node.title = new Date(seconds * 1000).toLocaleString();
  return node;
}

function retime() {
  for (const node of document.querySelectorAll(".ago[data-time]")) {
    node.textContent = ago(Number(node.dataset.time));
  }
}

function count(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function short(id) {
  return id ? id.slice(0, 8) : "(start)";
}

// -- the socket --------------------------------------------------------------------------------

// Send one request. A move (`progress` given) disables every move button until its answer,
// or PATIENCE ms, and says what it waits for; `onReply` takes the answer instead of the page.
function send(action, extra, options) {
  const opts = options || {};
  const requestId = "r" + nextId++;
  const frame = Object.assign({ action: action, session_id: current, request_id: requestId }, extra);
  if (!socket || socket.readyState !== WebSocket.OPEN) {
    notice("Not connected to snapstore ui; retrying.", "error");
    return;
  }
  const entry = { onReply: opts.onReply, timer: null, move: Boolean(opts.progress) };
  if (entry.move) {
    notice("");
    progress(opts.progress);
    state.moving = true;
    entry.timer = setTimeout(() => {
      pending.delete(requestId);
      settle();
      notice(`No answer after ${Math.round(PATIENCE / 1000)} s: the store may be busy. ` +
        "Try again; the operation log shows what was done.", "error");
    }, PATIENCE);
    buttons();
  }
  pending.set(requestId, entry);
  socket.send(JSON.stringify(frame));
}

function settle() {
  state.moving = [...pending.values()].some((p) => p.move);
  if (!state.moving) progress("");
  buttons();
}

// Every move button follows the session: none while a turn of it runs, or a move is waiting.
function buttons() {
  const live = socket && socket.readyState === WebSocket.OPEN;
  const blocked = !live || !current || Boolean(state.running) || state.moving;
  for (const b of document.querySelectorAll("button.move")) b.disabled = blocked;
  $("running").hidden = !state.running;
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
    buttons();
  });
  socket.addEventListener("close", () => {
    link.dataset.state = "down";
    link.textContent = "disconnected";
    buttons();
    setTimeout(connect, 1000);
  });
  socket.addEventListener("message", (event) => receive(JSON.parse(event.data)));
}

function receive(frame) {
  const data = frame.data || {};
  const waiting = pending.get(data.request_id);
  if (waiting) {
    clearTimeout(waiting.timer);
    pending.delete(data.request_id);
    settle();
    if (waiting.onReply) return waiting.onReply(frame);
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
    case "error": return (mine || data.session_id === null) && notice(data.message, "error");
  }
}

// -- sessions ----------------------------------------------------------------------------------

function choose(session) {
  current = session;
  const url = new URL(location.href);
  url.searchParams.set("session", session);
  history.replaceState(null, "", url);
  $("result").hidden = true;
  notice("");
  state.running = null;
  send("load_session", {});
  for (const item of $("sessions").children) {
    item.classList.toggle("chosen", item.dataset.session === current);
  }
  showOps(state.ops);
  buttons();
}

// A session's name in two parts, the agent and its own id, each on one line.
function sessionName(name) {
  const cut = name.indexOf("/");
  const box = el("span", "name");
  if (cut > 0) {
    box.append(el("span", "agent", name.slice(0, cut)), el("span", "sid", name.slice(cut + 1)));
  } else {
    box.append(el("span", "agent", name));
  }
  return box;
}

function showSessions(sessions) {
  const list = $("sessions");
  list.replaceChildren();
  for (const s of sessions) {
    const item = el("li", s.session_id === current ? "chosen" : "");
    item.dataset.session = s.session_id;
    const pick = button("", "session", () => choose(s.session_id));
    pick.title = s.session_id;
    pick.append(sessionName(s.session_id));
    const about = el("small", "", `${count(s.turns, "turn")} · `);
    about.append(when(s.time));
    item.append(pick, about);
    if (s.open_turn) item.append(el("small", "running", "a turn is running"));
    list.append(item);
  }
  if (!current && sessions.length) choose(sessions[0].session_id);
}

// -- turns -------------------------------------------------------------------------------------

const SHOWN_FILES = 5; // of a turn's files, on its card

// What a turn, or a move, did to the repository: the server's lines (the command line's
// words), each labelled with its kind: git (moved), conflict (left alone), note.
function gitList(lines, cls) {
  const list = el("ul", `plan git ${cls || ""}`.trim());
  for (const line of lines) {
    const row = el("li", `plan-${line.kind}`);
    row.append(el("span", "what", line.kind), el("span", "", line.text));
    list.append(row);
  }
  return list;
}

// A turn's git lines, as `snapstore show` says them, and why git was not recorded.
function turnGit(t) {
  const lines = (t.git || []).map((text) => ({ kind: "git", text: text }));
  if (t.git_note) lines.push({ kind: "note", text: `git not recorded: ${t.git_note}` });
  return lines;
}

function turnItem(t, rewound) {
  const item = el("li", "turn");
  item.dataset.turn = t.id;
  if (t.n !== null) item.dataset.n = t.n;
  const head = el("div", "head");
  const stats = el("span", "stats");
  stats.append(
    el("span", "count", count(t.files.length, "file")),
    el("span", "added", `+${t.added}`),
    el("span", "removed", `−${t.removed}`),
  );
  head.append(
    el("span", "n", t.n !== null ? `#${t.n}` : "rewound"),
    el("code", "id", short(t.id)),
    when(t.time, "time"),
  );
  if (t.state === "open") head.append(el("span", "running", "running now"));
  head.append(stats);
  const prompt = el("p", "prompt", t.prompt || "(no prompt)");
  const files = el("ul", "files");
  for (const f of t.files.slice(0, SHOWN_FILES)) {
    const row = el("li", `st-${f.status}`);
    row.append(el("span", "path", f.path), el("span", "lines", ` +${f.added} −${f.removed}`));
    row.title = `${f.status}: ${f.path}`;
    files.append(row);
  }
  if (t.files.length > SHOWN_FILES) {
    files.append(el("li", "more", `and ${count(t.files.length - SHOWN_FILES, "more file")} ` +
      "(the diff shows them)"));
  }
  const git = turnGit(t);
  const actions = el("div", "actions");
  actions.append(button("diff", "", () => send("diff", { turn: t.id })));
  if (rewound) {
    const go = button("switch to this", "switch move", () => switchTo(t));
    go.title = "Make the files what they were right after this turn";
    actions.append(go);
  } else {
    const go = button("↩ rewind here", "rewind move", () => rewindHere(t));
    go.title = "Take back this turn and every later one; its prompt comes back to edit";
    actions.append(go);
  }
  if (t.branches) actions.append(el("span", "branches", `↻ ${t.branches} rewound after it`));
  item.append(head, prompt, files);
  if (git.length) item.append(gitList(git, "turn-git"));
  item.append(actions);
  return item;
}

function showSession(data) {
  state.turns = new Map([...data.turns, ...data.rewound].map((t) => [t.id, t]));
  $("title").textContent = data.session_id;
  $("title").title = data.session_id;
  const turns = $("turns");
  turns.replaceChildren(...data.turns.map((t) => turnItem(t, false)));
  if (!data.turns.length) turns.append(el("li", "hint", "No turns on this branch."));
  $("rewound").replaceChildren(...data.rewound.map((t) => turnItem(t, true)));
  $("rewound-box").hidden = !data.rewound.length;
  state.running = data.open_turn;
  buttons();
}

// -- moves -------------------------------------------------------------------------------------

const MODES = {
  both: "Rewind files and chat",
  code: "Rewind files only",
  conversation: "Rewind the chat only",
};

// A rewind of one turn's files goes at once (undo takes it back); one of several turns, of
// the conversation, or of a turn that moved the repository (HEAD, a branch), is confirmed
// first, with what a dry run says it would do.
function rewindHere(t) {
  const args = { turn: t.id, mode: $("mode").value, on_conflict: $("policy").value };
  const go = () => send("rewind", args, { progress: `Rewinding to before turn #${t.n}…` });
  if (t.n === 1 && args.mode === "code" && !(t.git || []).length) return go();
  send("rewind", Object.assign({ dry_run: true }, args), {
    progress: `Working out what rewinding to before turn #${t.n} would do…`,
    onReply: (frame) => {
      if (frame.type === "error") return notice(frame.data.message, "error");
      if (frame.data.session_id === current) confirmRewind(t, args.mode, frame.data, go);
    },
  });
}

function switchTo(t) {
  send("switch", { turn: t.id, on_conflict: $("policy").value },
    { progress: `Switching to right after ${short(t.id)}…` });
}

function undo() {
  const mode = $("mode").value === "code" ? "code" : "both";
  send("undo", { mode: mode, on_conflict: $("policy").value }, { progress: "Undoing the last rewind…" });
}

function planItems(data) {
  const items = [];
  for (const p of data.restored) items.push(["restore", p]);
  for (const p of data.merged) items.push(["merge", `${p} (keeps your edits)`]);
  for (const p of data.deleted) items.push(["delete", p]);
  for (const e of data.errors) items.push([e.kind === "conflict" ? "conflict" : "error", e.message]);
  for (const g of data.git_lines || []) items.push([g.kind, g.text]);
  return items;
}

// What a move does to the agent's chat: a sentence, and the command that resumes it (or "").
function chatWords(chat) {
  if (!chat) return ["", ""];
  if (chat.status === "rewound") return ["The agent forgets these turns; then resume it with:", chat.resume_command];
  return [chat.note ? `The chat: ${chat.note}` : "", ""];
}

// Fill `box` with a sentence and, on a line of its own, a command to copy; hide it when empty.
function say(box, words) {
  const [text, command] = words;
  box.replaceChildren(text);
  if (command) box.append(el("code", "command", command));
  box.hidden = !text;
}

function confirmRewind(t, mode, plan, go) {
  const dialog = $("confirm");
  const s = plan.summary;
  $("confirm-title").textContent =
    `Rewind to before turn #${t.n} (${short(t.id)}, ${ago(s.time)})?`;
  $("confirm-prompt").textContent = t.prompt || "(no prompt)";
  $("confirm-summary").textContent = `Takes back ${count(s.turns, "turn")}: ` +
    `${count(s.files, "file")}, +${s.added} −${s.removed} lines`;
  const list = $("confirm-plan");
  list.replaceChildren();
  for (const [what, text] of planItems(plan)) {
    const row = el("li", `plan-${what}`);
    row.append(el("span", "what", what), el("span", "", text));
    list.append(row);
  }
  if (!list.children.length) list.append(el("li", "hint", "No file changes."));
  say($("confirm-chat"), chatWords(plan.conversation));
  $("confirm-notes").replaceChildren(...s.notes.map((n) => el("li", "", n)));
  $("confirm-go").textContent = MODES[mode];
  $("confirm-go").onclick = () => { dialog.close("go"); go(); };
  $("confirm-cancel").onclick = () => dialog.close("cancel");
  dialog.showModal();
  $("confirm-cancel").focus();
}

function showResult(type, data) {
  if (data.dry_run) return;
  const verb = { rewind_result: "Rewound", switch_result: "Switched", undo_result: "Undone" }[type];
  const written = data.restored_paths.length;
  const head = data.new_head_id ? `; head is now ${short(data.new_head_id)}` :
    "; no turn is left on the branch";
  $("result-title").textContent = `${verb}: ${count(data.turns_reverted.length, "turn")}, ` +
    `${count(written, "file")} written${head}`;
  $("prompt").value = data.user_text || "";
  $("prompt-box").hidden = !data.user_text;
  const chat = data.conversation;
  const resume = chat && chat.status === "rewound" && type === "rewind_result";
  say($("resume"), resume ? ["Then resume the agent with:", chat.resume_command] : ["", ""]);
  const problems = $("problems");
  problems.replaceChildren(...data.errors.map((e) => el("li", e.kind, e.message)));
  const git = data.git_lines || [];
  $("result-git").replaceChildren(...gitList(git).children);
  $("result-git").hidden = !git.length;
  const left = data.errors.length || git.some((g) => g.kind === "conflict");
  $("result").hidden = false;
  $("result").dataset.kind = left ? "partial" : "ok";
  notice("");
}

// -- the diff and the operation log -----------------------------------------------------------

function showDiff(data) {
  $("diff-title").textContent = `Diff of ${short(data.turn)}`;
  const box = $("diff");
  box.replaceChildren();
  const turn = state.turns.get(data.turn); // what it did to the repository, as its card says
  const git = turn ? turnGit(turn) : [];
  if (git.length) box.append(el("h3", "", "Git"), gitList(git, "diff-git"));
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

const OP_WORDS = { rewind: "to before", switch: "to right after", undo: "of" };

// The chosen session's operations, or (the switch) every session's, newest first.
function showOps(ops) {
  state.ops = ops;
  const all = $("ops-all").checked;
  const list = $("ops");
  list.replaceChildren();
  for (const op of ops) {
    if (!all && op.session_id !== current) continue;
    const item = el("li", op.undone_by ? "undone" : "");
    const target = op.target_n ? `#${op.target_n} ${short(op.target)}` : short(op.target);
    item.append(el("strong", "", op.action), ` ${OP_WORDS[op.action] || "of"} ${target} · `,
      count(op.files.length, "file"), " · ", when(Date.parse(op.time) / 1000));
    if (op.conflicts || op.errors) {
      item.append(el("span", "problem", ` · ${count(op.conflicts + op.errors, "path")} left`));
    }
    if (op.undone_by) item.append(" · undone");
    if ((op.git_lines || []).length) item.append(gitList(op.git_lines, "op-git"));
    if (all) {
      const who = el("span", "who", op.session_id);
      who.title = op.session_id;
      item.append(who);
    }
    list.append(item);
  }
  if (!list.children.length) {
    list.append(el("li", "hint", all ? "No rewind yet." : "No rewind in this session yet."));
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("undo").addEventListener("click", undo);
  $("ops-all").addEventListener("change", () => showOps(state.ops));
  $("copy").addEventListener("click", () => {
    navigator.clipboard.writeText($("prompt").value).then(
      () => notice("Prompt copied: paste it into the agent.", "info"),
      () => notice("Could not copy: select the prompt and copy it.", "error"),
    );
  });
  setInterval(retime, 30000);
  connect();
});
