// kafkalab Explorer, the browser half: frame list, field tree and bytes, linked both ways.
//
// State that matters to Python is in the model (selected_frame, selected_path, filter_text, sort); everything
// else here (expanded nodes, the hex tab shown, the window of bytes drawn, pane sizes) is view state.
// The frame list is virtual: only the rows in view exist in the DOM, and they are fetched from Python a page
// at a time ({type: "rows", start, count, version} -> {type: "rows", start, rows, version}); list_version
// changes when the filter or the sort changes what row i is, which empties the cache.
// The view of a frame comes from Python as {frame, title, diagnostics, missing?, buffers: [{label, data}],
// nodes: [{p, l, w, s, e, b, x, depth, parent, d, c}]}: b is the buffer a node's offsets s..e refer to;
// x >= 0 means the node opens buffer x.
// Tests read the DOM through data-attributes: .kl-hex[data-buffer][data-sel-start][data-sel-end],
// .kl-byte[data-offset].kl-sel, .kl-tree[data-selected-path], .kl-node[data-path], .kl-row[data-frame],
// .kl-explorer[data-notice], .kl-filter[data-error].
// h() (element building) comes from dom.js and statisticsPanel() from statistics.js, which the widget puts
// in front of this file.

const WINDOW = 4096; // bytes drawn at once in the hex pane
const WIDTH = 16;
const OPEN_DEPTH = 2;
const ROW_H = 20;    // px, fixed: the list's geometry is index * ROW_H
const PAGE = 100;    // rows per request
const OVERSCAN = 30; // rows drawn above and below the view
const CACHE_MAX = 20000;
const COLUMN_WIDTH = {
  frame: "7ch", time: "15ch", stream: "4ch", src: "17ch", dst: "17ch", kind: "3ch", api_key: "4ch",
  api_name: "14ch", api_version: "3ch", correlation_id: "7ch", client_id: "14ch", size: "7ch",
  latency_ms: "8ch", error: "13ch", record_count: "5ch", summary: "minmax(28ch, 1fr)",
};
const DROP_ORDER = ["stream", "client_id", "record_count", "dst", "src", "time", "api_version", "correlation_id"];
const SUMMARY_MIN_CH = 30; // narrower than this, columns are dropped (in DROP_ORDER) so the summary stays in view
const CELL_PAD_PX = 12;
const COLUMN_HEAD = {
  frame: "No.", src: "source", dst: "destination", kind: "", api_name: "API", api_version: "v",
  correlation_id: "corr", latency_ms: "ms", record_count: "recs",
};

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

// Scroll `container` (only it, never the page) so that `node` is in view.
function reveal(container, node) {
  if (!node || !container.clientHeight) return;
  const c = container.getBoundingClientRect(), r = node.getBoundingClientRect();
  if (r.top < c.top || r.bottom > c.bottom) container.scrollTop += r.top - c.top - c.height / 3;
}

// A drag handle that reports how far the pointer moved from where the drag started.
function dragger(handle, onStart, onMove) {
  handle.addEventListener("pointerdown", (event) => {
    const x0 = event.clientX, y0 = event.clientY, start = onStart();
    handle.setPointerCapture(event.pointerId);
    const move = (e) => onMove(start, e.clientX - x0, e.clientY - y0);
    const up = () => { handle.removeEventListener("pointermove", move); handle.removeEventListener("pointerup", up); };
    handle.addEventListener("pointermove", move);
    handle.addEventListener("pointerup", up);
    event.preventDefault();
  });
}

function render({ model, el }) {
  const state = { index: -1, buffer: 0, windowStart: 0, expanded: new Set(), bytes: [] };
  const rows = { version: -1, cache: new Map(), pending: new Set(), drawn: "" };
  let filterTimer = null, drawQueued = false;

  const filter = h("input", { class: "kl-filter", type: "search", spellcheck: "false",
    placeholder: 'display filter: api_name == "Fetch" and latency_ms > 1 · or a word to search' });
  filter.value = model.get("filter_text");
  const applyField = h("button", { class: "kl-apply", text: "Apply as filter", title: "filter on the selected field" });
  const goto = h("input", { class: "kl-goto", type: "number", min: "1", placeholder: "go to #" });
  const expertToggle = h("button", { class: "kl-expert-toggle", title: "Expert Info: every diagnostic, grouped" });
  const expertPanel = h("div", { class: "kl-expert", style: "display:none" });
  const sequenceToggle = h("button", { class: "kl-sequence-toggle", text: "Sequence",
    title: "the selected frame's connection as a sequence diagram; click an arrow to select its frame" });
  const sequencePanel = h("div", { class: "kl-sequence" });
  const savePcap = h("button", { class: "kl-save-pcap", text: "Save pcap", title: "download the frames the list shows as a pcap",
    onclick: () => model.send({ type: "pcap" }) });
  const stats = statisticsPanel(model, (text) => { filter.value = text; sendFilter(); });
  const count = h("span", { class: "kl-count" });
  const live = h("span", { class: "kl-live", text: "● live" });
  const message = h("div", { class: "kl-message" });
  const head = h("div", { class: "kl-head" });
  const body = h("div", { class: "kl-rows" });
  const spacer = h("div", { class: "kl-spacer" }, body);
  const list = h("div", { class: "kl-list", tabindex: "0" }, head, spacer);
  const split = h("div", { class: "kl-split", title: "drag to resize" });
  const title = h("div", { class: "kl-title" });
  const tree = h("div", { class: "kl-tree" });
  const tabs = h("div", { class: "kl-tabs" });
  const hex = h("div", { class: "kl-hex" });
  const copy = h("button", { class: "kl-copy", text: "Copy hex", title: "copy the selected field's bytes (or the buffer) as hex" });
  const bytesPane = h("div", { class: "kl-bytes" }, h("div", { class: "kl-bytebar" }, tabs, copy), hex);
  const vsplit = h("div", { class: "kl-vsplit", title: "drag to resize" });
  const root = h("div", { class: "kl-explorer" },
    h("div", { class: "kl-toolbar" }, filter, applyField, goto, expertToggle, sequenceToggle, stats.toggle, savePcap, count, live),
    message, expertPanel, stats.panel, sequencePanel, list, split, title,
    h("div", { class: "kl-panes" }, tree, vsplit, bytesPane));
  el.append(root);

  // ---------------------------------------------------------------- frame list (virtual)
  let shown = [], chPx = 0;

  // The columns that fit: the summary keeps SUMMARY_MIN_CH characters; the least telling columns go first.
  function fitColumns() {
    if (!chPx) {
      const probe = h("span", { text: "0".repeat(20), style: "position:absolute;visibility:hidden" });
      list.append(probe);
      chPx = probe.getBoundingClientRect().width / 20;
      probe.remove();
    }
    const width = list.clientWidth;
    const cols = model.get("columns").slice();
    const need = (cs) => cs.filter((c) => c !== "summary")
      .reduce((sum, c) => sum + parseFloat(COLUMN_WIDTH[c] || "10ch") * chPx + CELL_PAD_PX, 0);
    if (width && chPx) {
      for (const c of DROP_ORDER) {
        if (need(cols) + SUMMARY_MIN_CH * chPx <= width) break;
        const at = cols.indexOf(c);
        if (at >= 0) cols.splice(at, 1);
      }
    }
    const changed = cols.join() !== shown.join();
    shown = cols;
    return changed;
  }

  function columns() { return shown; }

  function drawHead() {
    fitColumns();
    const hidden = model.get("columns").filter((c) => !shown.includes(c));
    head.title = hidden.length ? `hidden to keep the summary in view: ${hidden.join(", ")} (widen to show)` : "";
    const sort = model.get("sort");
    const width = (c) => (c === "summary" ? COLUMN_WIDTH.summary : `calc(${COLUMN_WIDTH[c] || "10ch"} + ${CELL_PAD_PX}px)`);
    list.style.setProperty("--kl-columns", columns().map(width).join(" "));
    head.replaceChildren(...columns().map((c) => {
      const arrow = sort === c ? " ▲" : sort === `-${c}` ? " ▼" : "";
      const label = (c in COLUMN_HEAD ? COLUMN_HEAD[c] : c) + arrow;
      return h("div", { class: `kl-th kl-col-${c}`, "data-column": c, title: `sort by ${c}`, text: label });
    }));
  }

  function scheduleDraw() {
    if (drawQueued) return;
    drawQueued = true;
    requestAnimationFrame(() => { drawQueued = false; drawRows(); });
  }

  function request(page) {
    if (rows.pending.has(page)) return;
    rows.pending.add(page);
    model.send({ type: "rows", start: page * PAGE, count: PAGE, version: rows.version });
  }

  function drawRows() {
    const total = model.get("match_total");
    spacer.style.height = `${total * ROW_H}px`;
    const top = Math.max(0, list.scrollTop - head.offsetHeight);
    const height = list.clientHeight || 300;
    const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    const last = Math.min(total, Math.ceil((top + height) / ROW_H) + OVERSCAN);
    const selected = model.get("selected_frame");
    const out = [];
    for (let i = first; i < last; i++) {
      const row = rows.cache.get(i);
      if (!row) { request(Math.floor(i / PAGE)); out.push(h("div", { class: "kl-placeholder", "data-index": String(i) })); continue; }
      const tr = h("div", { class: "kl-row", "data-frame": String(row.frame), "data-index": String(i) });
      if (row.frame === selected) tr.classList.add("kl-selected");
      if (row.error) tr.classList.add("kl-error");
      if (row.kind) tr.classList.add(`kl-${row.kind}`);
      for (const c of columns()) {
        let v = row[c];
        if (c === "kind") v = v === "request" ? "→" : v === "response" ? "←" : v;
        else if (typeof v === "number" && !Number.isInteger(v)) v = v.toFixed(3);
        const text = v == null ? "" : String(v);
        tr.append(h("div", { class: `kl-td kl-col-${c}`, text, title: text }));
      }
      out.push(tr);
    }
    body.style.top = `${first * ROW_H}px`;
    body.replaceChildren(...out);
    const matches = total, all = model.get("row_total");
    count.textContent = matches === all ? `${all} frames` : `${matches} of ${all} frames`;
    live.style.display = model.get("following") ? "" : "none";
  }

  function onVersion() {
    rows.version = model.get("list_version");
    rows.cache.clear();
    rows.pending.clear();
    drawHead();
    showSelectedRow();
    scheduleDraw();
  }

  function onTotal() {
    const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 2 * ROW_H;
    spacer.style.height = `${model.get("match_total") * ROW_H}px`;
    if (model.get("following") && atBottom) list.scrollTop = list.scrollHeight;
    scheduleDraw();
  }

  // Keep the selected row in view (select=, go to, keyboard, a filter that keeps it).
  function showSelectedRow() {
    const i = model.get("selected_index");
    if (i < 0) return;
    const top = list.scrollTop, height = list.clientHeight - head.offsetHeight;
    const y = i * ROW_H;
    if (height > 0 && (y < top || y + ROW_H > top + height)) list.scrollTop = Math.max(0, y - height / 2);
    scheduleDraw();
  }

  list.addEventListener("scroll", scheduleDraw);
  function onMessage(msg, buffers) {
    if (msg && msg.type === "pcap" && buffers && buffers.length) return download(msg.name, buffers[0]);
    if (!msg || msg.type !== "rows" || msg.version !== rows.version) return;
    rows.pending.delete(Math.floor(msg.start / PAGE));
    if (rows.cache.size > CACHE_MAX) rows.cache.clear();
    for (const row of msg.rows) rows.cache.set(row._i, row);
    scheduleDraw();
  }
  head.addEventListener("click", (event) => {
    const th = event.target.closest(".kl-th");
    if (!th) return;
    const c = th.dataset.column, sort = model.get("sort");
    model.set("sort", sort === c ? `-${c}` : sort === `-${c}` ? "" : c);
    model.save_changes();
  });
  body.addEventListener("click", (event) => {
    const tr = event.target.closest(".kl-row[data-frame]");
    if (!tr) return;
    model.set("selected_frame", Number(tr.dataset.frame));
    model.save_changes();
  });
  list.addEventListener("keydown", (event) => {
    const step = { ArrowDown: 1, ArrowUp: -1, PageDown: 20, PageUp: -20 }[event.key];
    if (event.key === "End" || event.key === "Home") {
      list.scrollTop = event.key === "End" ? list.scrollHeight : 0;
      event.preventDefault();
      return;
    }
    if (!step) return;
    const at = model.get("selected_index");
    const next = rows.cache.get(Math.max(0, Math.min(model.get("match_total") - 1, at + step)));
    if (next) { model.set("selected_frame", next.frame); model.save_changes(); }
    event.preventDefault();
  });

  function sendFilter() {
    clearTimeout(filterTimer);
    if (filter.value === model.get("filter_text")) return;
    model.set("filter_text", filter.value);
    model.save_changes();
  }
  filter.addEventListener("input", () => { clearTimeout(filterTimer); filterTimer = setTimeout(sendFilter, 300); });
  filter.addEventListener("keydown", (event) => { if (event.key === "Enter") sendFilter(); });
  goto.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || !goto.value) return;
    model.send({ type: "goto", frame: Number(goto.value) });
  });
  applyField.addEventListener("click", () => {
    const field = model.get("field_filter");
    if (!field) return;
    const current = model.get("filter_text").trim();
    filter.value = current && !model.get("filter_error") ? `(${current}) and ${field}` : field;
    sendFilter();
  });

  function onFilterState() {
    if (filter.value !== model.get("filter_text") && document.activeElement !== filter) filter.value = model.get("filter_text");
    const error = model.get("filter_error");
    filter.classList.toggle("kl-bad", !!error);
    filter.dataset.error = error;
    filter.title = error;
    const field = model.get("field_filter");
    applyField.disabled = !field;
    applyField.title = field ? `filter: ${field}` : "the selected field is not a frame-list column";
    const notice = model.get("notice");
    root.dataset.notice = notice;
    message.replaceChildren(...[error && h("div", { class: "kl-filter-error", text: error }),
      notice && h("div", { class: "kl-notice", text: notice })].filter(Boolean));
  }

  // ---------------------------------------------------------------- expert info
  function drawExpert() {
    const groups = model.get("expert") || [];
    const total = groups.reduce((sum, g) => sum + g.count, 0);
    expertToggle.textContent = `⚠ ${total}`;
    expertToggle.style.display = total ? "" : "none";
    expertPanel.replaceChildren(...groups.map((g) => h("div", { class: `kl-expert-item kl-${g.severity}`, title: g.example },
      h("span", { class: "kl-expert-count", text: `${g.count} × ` }), h("span", { text: g.what }),
      ...g.frames.map((f) => h("span", { class: "kl-expert-frame", "data-frame": String(f), text: ` #${f}` })))));
  }
  expertToggle.addEventListener("click", () => {
    expertPanel.style.display = expertPanel.style.display === "none" ? "" : "none";
  });
  expertPanel.addEventListener("click", (event) => {
    const target = event.target.closest("[data-frame]");
    if (target) model.send({ type: "goto", frame: Number(target.dataset.frame) });
  });

  // ---------------------------------------------------------------- sequence diagram (drawn by Python)
  function drawSequence() {
    sequencePanel.innerHTML = model.get("sequence");   // SVG made by kafkalab.notebook.plots, text escaped
    sequencePanel.style.display = model.get("sequence") ? "" : "none";
    markSequence();
  }
  function markSequence() {
    const selected = String(model.get("selected_frame"));
    for (const g of sequencePanel.querySelectorAll(".arrow[data-frame]")) {
      g.classList.toggle("kl-seq-sel", g.dataset.frame === selected);
    }
  }
  sequenceToggle.addEventListener("click", () => {
    model.send({ type: "sequence", show: !model.get("sequence"), frame: model.get("selected_frame") });
  });
  sequencePanel.addEventListener("click", (event) => {
    const target = event.target.closest("[data-frame]");
    if (target) model.send({ type: "goto", frame: Number(target.dataset.frame) });
  });
  model.on("change:sequence", drawSequence);
  model.on("change:selected_frame", markSequence);
  drawSequence();

  function download(name, data) {
    const bytes = data instanceof DataView ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : data;
    const link = h("a", { href: URL.createObjectURL(new Blob([bytes], { type: "application/vnd.tcpdump.pcap" })), download: name });
    root.append(link);
    link.click();
    link.remove();
  }

  // ---------------------------------------------------------------- resizable split
  dragger(split, () => list.getBoundingClientRect().height, (start, dx, dy) => {
    list.style.flex = `0 0 ${Math.max(3 * ROW_H, start + dy)}px`;
    scheduleDraw();
  });
  dragger(vsplit, () => bytesPane.getBoundingClientRect().width, (start, dx) => {
    bytesPane.style.width = `${Math.max(120, start - dx)}px`;
  });

  // ---------------------------------------------------------------- field tree
  function nodes() { return (model.get("view") || {}).nodes || []; }

  function drawTree() {
    const view = model.get("view") || {};
    if (view.missing) {
      title.replaceChildren(h("span", { class: "kl-diag", text: `#${view.frame} is not available: ${view.missing}` }));
    } else {
      const partner = view.partner == null ? null : h("button", { class: "kl-partner", "data-frame": String(view.partner),
        text: view.partner > view.frame ? `response #${view.partner} →` : `← request #${view.partner}`,
        title: "go to the other half of this exchange" });
      const connection = view.frame ? h("button", { class: "kl-connection", "data-frame": String(view.frame),
        text: "this connection only", title: "filter the list to this frame's connection (stream == N)" }) : null;
      title.replaceChildren(h("span", { text: view.frame ? `#${view.frame} ${view.title || ""}` : "no frame selected" }),
        ...(partner ? [partner] : []), ...(connection ? [connection] : []), ...(view.diagnostics || []).map((d) => h("span", { class: "kl-diag", text: ` ⚠ ${d}` })));
    }
    tree.replaceChildren();
    if (nodes().length) tree.append(drawNode(0));
    else if (view.missing) tree.append(h("div", { class: "kl-missing", text: view.missing }));
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

  title.addEventListener("click", (event) => {
    const button = event.target.closest(".kl-partner");
    if (button) model.send({ type: "goto", frame: Number(button.dataset.frame) });
    const connection = event.target.closest(".kl-connection");
    if (connection) model.send({ type: "connection", frame: Number(connection.dataset.frame) });
  });

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

  copy.addEventListener("click", () => {
    const bytes = state.bytes[state.buffer] || new Uint8Array(0);
    const span = selectedSpan() || [0, bytes.length];
    const text = Array.from(bytes.subarray(span[0], span[1]), hex2).join("");
    copy.dataset.copied = text;
    if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => {});
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
    reveal(hex, hex.querySelector(".kl-byte.kl-sel"));
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
  function revealSelection() {
    reveal(tree, tree.querySelector(".kl-label.kl-selected"));
    reveal(hex, hex.querySelector(".kl-byte.kl-sel"));
  }

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
    revealSelection();
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
    scheduleDraw();
    const path = model.get("selected_path");
    selectIndex(path ? nodes().findIndex((n) => n.p === path) : -1, false);
  }

  // The first layout (the element is attached after render) and every resize: redraw rows, re-reveal.
  const resized = new ResizeObserver(() => {
    if (fitColumns()) drawHead();
    showSelectedRow();
    revealSelection();
    scheduleDraw();
  });
  resized.observe(list);

  const onHeight = () => { root.style.height = model.get("height"); };
  const handlers = {
    "msg:custom": onMessage, "change:expert": drawExpert,
    "change:list_version": onVersion, "change:columns": onVersion, "change:sort": drawHead,
    "change:match_total": onTotal, "change:row_total": scheduleDraw, "change:following": scheduleDraw,
    "change:selected_frame": scheduleDraw, "change:selected_index": showSelectedRow, "change:view": onView,
    "change:selected_path": followPath, "change:filter_text": onFilterState, "change:filter_error": onFilterState,
    "change:field_filter": onFilterState, "change:notice": onFilterState, "change:height": onHeight,
  };
  for (const [event, handler] of Object.entries(handlers)) model.on(event, handler);
  onHeight();
  onFilterState();
  drawExpert();
  onVersion();
  onView();
  root.dataset.ready = "1";

  return () => {
    clearTimeout(filterTimer);
    resized.disconnect();
    stats.dispose();
    for (const [event, handler] of Object.entries(handlers)) model.off(event, handler);
  };
}

export default { render };
