// kafkalab Explorer, the browser half: frame list, field tree and bytes, linked both ways.
//
// State that matters to Python is in the model (selected_frame, selected_path, filter_text); everything else
// here (expanded nodes, the hex tab shown, the window of bytes drawn) is view state. The view of a frame comes
// from Python as {frame, title, diagnostics, buffers: [{label, data}], nodes: [{p, l, w, s, e, b, x, depth,
// parent, d, c}]}: b is the buffer a node's offsets s..e refer to; x >= 0 means the node opens buffer x.
// Tests read the DOM through data-attributes: .kl-hex[data-buffer][data-sel-start][data-sel-end],
// .kl-byte[data-offset].kl-sel, .kl-tree[data-selected-path], .kl-node[data-path], .kl-row[data-frame].

const WINDOW = 4096; // bytes drawn at once in the hex pane
const WIDTH = 16;
const OPEN_DEPTH = 2;

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

function toBytes(data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof DataView) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (typeof data === "string") {
    const out = new Uint8Array(data.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(data.substr(2 * i, 2), 16);
    return out;
  }
  return new Uint8Array(0);
}

function hex2(n) { return n.toString(16).padStart(2, "0"); }

function render({ model, el }) {
  const state = { index: -1, buffer: 0, windowStart: 0, expanded: new Set(), bytes: [] };
  let filterTimer = null;

  const filter = h("input", { class: "kl-filter", type: "search", placeholder: "filter: summary, API, error, client, address, frame number" });
  filter.value = model.get("filter_text");
  const count = h("span", { class: "kl-count" });
  const live = h("span", { class: "kl-live", text: "● live" });
  const list = h("div", { class: "kl-list", tabindex: "0" });
  const title = h("div", { class: "kl-title" });
  const tree = h("div", { class: "kl-tree" });
  const tabs = h("div", { class: "kl-tabs" });
  const hex = h("div", { class: "kl-hex" });
  const root = h("div", { class: "kl-explorer" },
    h("div", { class: "kl-toolbar" }, filter, count, live),
    list,
    title,
    h("div", { class: "kl-panes" }, tree, h("div", { class: "kl-bytes" }, tabs, hex)));
  el.append(root);

  // ---------------------------------------------------------------- frame list
  function drawList() {
    const columns = model.get("columns");
    const rows = model.get("rows");
    const selected = model.get("selected_frame");
    const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
    const body = h("tbody");
    for (const row of rows) {
      const tr = h("tr", { class: "kl-row", "data-frame": String(row.frame) });
      if (row.frame === selected) tr.classList.add("kl-selected");
      if (row.error) tr.classList.add("kl-error");
      if (row.kind) tr.classList.add(`kl-${row.kind}`);
      for (const c of columns) {
        let v = row[c];
        if (typeof v === "number" && !Number.isInteger(v)) v = v.toFixed(3);
        tr.append(h("td", { class: `kl-col-${c}`, text: v == null ? "" : String(v) }));
      }
      body.append(tr);
    }
    const table = h("table", {}, h("thead", {}, h("tr", {}, ...columns.map((c) => h("th", { text: c })))), body);
    list.replaceChildren(table);
    const total = model.get("row_total"), matches = model.get("match_total");
    count.textContent = matches === total ? `${total} frames` : `${matches} of ${total} frames`;
    if (rows.length < matches) count.textContent += ` (${rows.length} shown)`;
    live.style.display = model.get("following") ? "" : "none";
    if (model.get("following") && atBottom) list.scrollTop = list.scrollHeight;
  }

  list.addEventListener("click", (event) => {
    const tr = event.target.closest(".kl-row");
    if (!tr) return;
    model.set("selected_frame", Number(tr.dataset.frame));
    model.save_changes();
  });
  list.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    const rows = model.get("rows");
    const at = rows.findIndex((r) => r.frame === model.get("selected_frame"));
    const next = rows[Math.max(0, Math.min(rows.length - 1, at + (event.key === "ArrowDown" ? 1 : -1)))];
    if (next) { model.set("selected_frame", next.frame); model.save_changes(); }
    event.preventDefault();
  });
  filter.addEventListener("input", () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => { model.set("filter_text", filter.value); model.save_changes(); }, 200);
  });

  function markSelectedRow() {
    const selected = String(model.get("selected_frame"));
    for (const tr of list.querySelectorAll(".kl-row")) {
      const on = tr.dataset.frame === selected;
      tr.classList.toggle("kl-selected", on);
      if (on) tr.scrollIntoView({ block: "nearest" });
    }
  }

  // ---------------------------------------------------------------- field tree
  function nodes() { return (model.get("view") || {}).nodes || []; }

  function drawTree() {
    const view = model.get("view") || {};
    title.replaceChildren(h("span", { text: view.frame ? `#${view.frame} ${view.title || ""}` : "no frame selected" }),
      ...(view.diagnostics || []).map((d) => h("span", { class: "kl-diag", text: ` ⚠ ${d}` })));
    tree.replaceChildren();
    if (nodes().length) tree.append(drawNode(0));
    tree.dataset.selectedPath = state.index >= 0 ? nodes()[state.index].p : "";
  }

  function drawNode(i) {
    const n = nodes()[i];
    const open = state.expanded.has(i);
    const toggle = h("span", { class: "kl-toggle", text: n.c.length ? (open ? "▾" : "▸") : " " });
    const label = h("div", { class: "kl-label", "data-index": String(i), style: `padding-left:${n.depth * 14}px` },
      toggle, h("span", { class: "kl-name", text: n.l }), h("span", { class: "kl-span", text: ` ${n.w}` }));
    if (i === state.index) label.classList.add("kl-selected");
    if (n.d.length) label.classList.add("kl-has-diag");
    const box = h("div", { class: "kl-node", "data-path": n.p, "data-start": String(n.s), "data-end": String(n.e), "data-buffer": String(n.b) }, label);
    for (const d of n.d) box.append(h("div", { class: "kl-diag", style: `padding-left:${n.depth * 14 + 26}px`, text: `⚠ ${d}` }));
    if (n.c.length && open) {
      const kids = h("div", { class: "kl-children" });
      for (const c of n.c) kids.append(drawNode(c));
      box.append(kids);
    }
    return box;
  }

  tree.addEventListener("click", (event) => {
    const label = event.target.closest(".kl-label");
    if (!label) return;
    const i = Number(label.dataset.index);
    if (event.target.classList.contains("kl-toggle")) {
      if (state.expanded.has(i)) state.expanded.delete(i); else state.expanded.add(i);
      drawTree();
      return;
    }
    selectIndex(i, true);
  });

  function expandTo(i) {
    for (let p = nodes()[i].parent; p >= 0; p = nodes()[p].parent) state.expanded.add(p);
  }

  // ---------------------------------------------------------------- bytes
  function drawTabs() {
    const buffers = (model.get("view") || {}).buffers || [];
    tabs.replaceChildren(...buffers.map((b, k) => {
      const tab = h("button", { class: "kl-tab", "data-buffer": String(k), text: b.label, title: b.path || b.label });
      if (k === state.buffer) tab.classList.add("kl-active");
      return tab;
    }));
    tabs.style.display = buffers.length > 1 ? "" : "none";
  }

  tabs.addEventListener("click", (event) => {
    const tab = event.target.closest(".kl-tab");
    if (!tab) return;
    state.buffer = Number(tab.dataset.buffer);
    state.windowStart = 0;
    drawTabs();
    drawHex();
  });

  function selectedSpan() {
    if (state.index < 0) return null;
    const n = nodes()[state.index];
    return n.b === state.buffer ? [n.s, n.e] : null;
  }

  function drawHex() {
    const bytes = state.bytes[state.buffer] || new Uint8Array(0);
    const span = selectedSpan();
    hex.dataset.buffer = String(state.buffer);
    hex.dataset.selStart = span ? String(span[0]) : "";
    hex.dataset.selEnd = span ? String(span[1]) : "";
    const first = state.windowStart, last = Math.min(bytes.length, first + WINDOW);
    const out = [];
    if (first > 0) out.push(h("button", { class: "kl-page", "data-page": "-1", text: `▲ ${first} earlier bytes` }));
    for (let row = first; row < last; row += WIDTH) {
      const hexCells = h("span", { class: "kl-hexcells" });
      const chars = h("span", { class: "kl-chars" });
      for (let i = row; i < Math.min(row + WIDTH, last); i++) {
        const b = bytes[i];
        const on = span && span[0] <= i && i < span[1];
        hexCells.append(h("span", { class: on ? "kl-byte kl-sel" : "kl-byte", "data-offset": String(i), text: hex2(b) }));
        chars.append(h("span", { class: on ? "kl-char kl-sel" : "kl-char", "data-offset": String(i), text: b >= 32 && b < 127 ? String.fromCharCode(b) : "." }));
      }
      out.push(h("div", { class: "kl-hexrow" }, h("span", { class: "kl-offset", text: row.toString(16).padStart(4, "0") }), hexCells, chars));
    }
    if (last < bytes.length) out.push(h("button", { class: "kl-page", "data-page": "1", text: `▼ ${bytes.length - last} more bytes` }));
    hex.replaceChildren(...out);
    const firstSel = hex.querySelector(".kl-byte.kl-sel");
    if (firstSel) firstSel.scrollIntoView({ block: "nearest" });
  }

  hex.addEventListener("click", (event) => {
    const page = event.target.closest(".kl-page");
    if (page) {
      const size = (state.bytes[state.buffer] || []).length;
      state.windowStart = Math.max(0, Math.min(size - 1, state.windowStart + Number(page.dataset.page) * WINDOW));
      state.windowStart -= state.windowStart % WIDTH;
      drawHex();
      return;
    }
    const cell = event.target.closest("[data-offset]");
    if (!cell) return;
    const i = nodeAt(state.buffer, Number(cell.dataset.offset));
    if (i >= 0) selectIndex(i, true);
  });

  // The deepest node of `buffer` covering `offset`, never entering a node that opens another buffer.
  function nodeAt(buffer, offset) {
    const all = nodes();
    if (!all.length) return -1;
    let candidates = buffer === 0 ? [0] : ((all.find((n) => n.x === buffer) || { c: [] }).c);
    let best = -1;
    for (;;) {
      const hit = candidates.find((i) => all[i].x < 0 && all[i].s <= offset && offset < all[i].e);
      if (hit === undefined) return best;
      best = hit;
      candidates = all[hit].c;
    }
  }

  // ---------------------------------------------------------------- selection
  function selectIndex(i, fromUser) {
    state.index = i;
    if (i >= 0) {
      const n = nodes()[i];
      state.buffer = n.b;
      if (n.s < state.windowStart || n.s >= state.windowStart + WINDOW) {
        state.windowStart = Math.max(0, n.s - (n.s % WIDTH) - 4 * WIDTH);
      }
      expandTo(i);
    }
    drawTree();
    drawTabs();
    drawHex();
    const label = tree.querySelector(".kl-label.kl-selected");
    if (label) label.scrollIntoView({ block: "nearest" });
    if (fromUser) {
      model.set("selected_path", i >= 0 ? nodes()[i].p : "");
      model.save_changes();
    }
  }

  function followPath() {
    const path = model.get("selected_path");
    const all = nodes();
    if (state.index >= 0 && state.index < all.length && all[state.index].p === path) return;
    selectIndex(path ? all.findIndex((n) => n.p === path) : -1, false);
  }

  function onView() {
    const view = model.get("view") || {};
    state.bytes = (view.buffers || []).map((b) => toBytes(b.data));
    state.expanded = new Set();
    nodes().forEach((n, i) => { if (n.depth < OPEN_DEPTH) state.expanded.add(i); });
    state.index = -1;
    state.buffer = 0;
    state.windowStart = 0;
    markSelectedRow();
    const path = model.get("selected_path");
    selectIndex(path ? nodes().findIndex((n) => n.p === path) : -1, false);
  }

  root.style.height = model.get("height");
  model.on("change:rows", drawList);
  model.on("change:columns", drawList);
  model.on("change:following", drawList);
  model.on("change:selected_frame", markSelectedRow);
  model.on("change:view", onView);
  model.on("change:selected_path", followPath);
  const onFilterText = () => { if (filter.value !== model.get("filter_text")) filter.value = model.get("filter_text"); };
  const onHeight = () => { root.style.height = model.get("height"); };
  model.on("change:filter_text", onFilterText);
  model.on("change:height", onHeight);
  drawList();
  onView();
  root.dataset.ready = "1";

  return () => {
    clearTimeout(filterTimer);
    model.off("change:rows", drawList);
    model.off("change:columns", drawList);
    model.off("change:following", drawList);
    model.off("change:selected_frame", markSelectedRow);
    model.off("change:view", onView);
    model.off("change:selected_path", followPath);
    model.off("change:filter_text", onFilterText);
    model.off("change:height", onHeight);
  };
}

export default { render };
