// kafkalab message browser, the browser half: topics, a partition's offsets and records, consumer groups.
//
// Python owns every piece of data (topics, partitions, records, groups are synced traitlets, read on the
// broker's loop); this side draws them and sends requests as custom messages:
// {type: "show", topic, partition} | {type: "seek", offset} | {type: "seek_time", timestamp} | {type: "refresh"}.
// The rendering (mode) is a synced trait. Tests read the DOM through data-attributes:
// .kl-browser[data-topic][data-partition][data-offset][data-notice], .kl-topic[data-topic],
// .kl-record[data-offset], .kl-group[data-group]. h() comes from dom.js (see kafkalab.notebook.widget.esm).

function table(head, rows) {
  return h("table", { class: "kl-b-table" },
    h("thead", {}, h("tr", {}, ...head.map((c) => h("th", { text: c })))),
    h("tbody", {}, ...rows));
}

function cell(rendered) {
  return h("td", { class: `kl-b-${rendered.as}`, title: rendered.note || rendered.as, text: rendered.text });
}

function render({ model, el }) {
  const root = h("div", { class: "kl-browser" });
  const topicsPane = h("div", { class: "kl-b-topics" });
  const offsetBox = h("input", { class: "kl-b-offset", type: "number", min: "0", placeholder: "offset" });
  const timeBox = h("input", { class: "kl-b-time", type: "datetime-local", step: "0.001" });
  const mode = h("select", { class: "kl-b-mode" }, ...["auto", "json", "text", "hex"].map((m) => h("option", { value: m, text: m })));
  const notice = h("span", { class: "kl-b-notice" });
  const bar = h("div", { class: "kl-b-bar" },
    h("button", { class: "kl-b-first", text: "⇤ start", onclick: () => first() }),
    offsetBox, h("button", { class: "kl-b-seek", text: "go to offset", onclick: () => seek() }),
    timeBox, h("button", { class: "kl-b-seek-time", text: "go to time", onclick: () => seekTime() }),
    h("label", { text: " as " }), mode,
    h("button", { class: "kl-b-refresh", text: "↻", title: "refresh", onclick: () => model.send({ type: "refresh" }) }),
    notice);
  const partsPane = h("div", { class: "kl-b-parts" });
  const recordsPane = h("div", { class: "kl-b-records" });
  const groupsPane = h("div", { class: "kl-b-groups" });
  const main = h("div", { class: "kl-b-main" }, bar, partsPane, recordsPane);
  root.append(h("div", { class: "kl-b-body" }, topicsPane, main), groupsPane);
  el.append(root);

  offsetBox.addEventListener("keydown", (e) => { if (e.key === "Enter") seek(); });
  mode.addEventListener("change", () => { model.set("mode", mode.value); model.save_changes(); });

  function first() {
    const p = model.get("partitions")[model.get("partition")];
    if (p) model.send({ type: "seek", offset: p.log_start_offset });
  }
  function seek() {
    if (offsetBox.value !== "") model.send({ type: "seek", offset: Number(offsetBox.value) });
  }
  function seekTime() {
    const t = Date.parse(timeBox.value);
    if (!Number.isNaN(t)) model.send({ type: "seek_time", timestamp: t });
  }

  function drawTopics() {
    const current = model.get("topic");
    topicsPane.replaceChildren(h("div", { class: "kl-b-head", text: `topics (${model.get("topics").length})` }),
      ...model.get("topics").map((t) => h("div", {
        class: "kl-topic" + (t.topic === current ? " kl-b-sel" : "") + (t.internal ? " kl-b-internal" : ""),
        "data-topic": t.topic,
        title: `${t.partitions} partitions, ${t.records} records`,
        onclick: () => model.send({ type: "show", topic: t.topic, partition: 0 }),
      }, h("span", { text: t.topic }), h("span", { class: "kl-b-count", text: String(t.records) }))));
  }

  function drawPartitions() {
    const at = model.get("partition");
    partsPane.replaceChildren(table(["partition", "log start", "high watermark", "last stable", ""],
      model.get("partitions").map((p) => h("tr", {
        class: "kl-part" + (p.partition === at ? " kl-b-sel" : ""), "data-partition": String(p.partition),
        onclick: () => model.send({ type: "show", topic: model.get("topic"), partition: p.partition }),
      }, h("td", { text: String(p.partition) }), h("td", { text: String(p.log_start_offset) }),
      h("td", { text: String(p.high_watermark) }), h("td", { text: String(p.last_stable_offset) }),
      h("td", { text: `${p.high_watermark - p.log_start_offset} records` })))));
  }

  function drawRecords() {
    recordsPane.replaceChildren(table(["offset", "timestamp", "key", "value", "headers"],
      model.get("records").map((r) => h("tr", { class: "kl-record", "data-offset": String(r.offset) },
        h("td", { text: String(r.offset) }),
        h("td", { text: r.timestamp == null ? "" : new Date(r.timestamp).toISOString(), title: String(r.timestamp) }),
        cell(r.key), cell(r.value),
        h("td", { class: "kl-b-headers", text: r.headers.map((x) => `${x.key}: ${x.value.text}`).join("\n") })))));
  }

  function drawGroups() {
    const groups = model.get("groups");
    if (!groups.length) { groupsPane.replaceChildren(); return; }
    groupsPane.replaceChildren(h("div", { class: "kl-b-head", text: `consumer groups (${groups.length})` }),
      ...groups.map((g) => h("div", { class: "kl-group", "data-group": g.group_id, "data-kind": g.kind },
        h("div", { class: "kl-b-gtitle", text: `${g.group_id} · ${g.state} · ${g.kind}${g.protocol ? " · " + g.protocol : ""}`
          + (g.epoch == null ? "" : ` · epoch ${g.epoch}`) }),
        table(["member", "client", "host", "epoch", "assignment"], g.members.map((m) => h("tr", { class: "kl-member", "data-member": m.member_id },
          h("td", { text: m.member_id }), h("td", { text: m.client_id }), h("td", { text: m.client_host }),
          h("td", { text: m.epoch == null ? "" : String(m.epoch) }), h("td", { class: "kl-assignment", text: m.assignment.join(", ") })))),
        table(["partition", "committed", "high watermark", "lag"], g.offsets.map((o) => h("tr", { class: "kl-lag" },
          h("td", { text: `${o.topic}-${o.partition}` }), h("td", { text: String(o.committed) }),
          h("td", { text: String(o.high_watermark) }), h("td", { text: String(o.lag) })))))));
  }

  function drawState() {
    root.dataset.topic = model.get("topic");
    root.dataset.partition = String(model.get("partition"));
    root.dataset.offset = String(model.get("offset"));
    root.dataset.notice = model.get("notice");
    root.dataset.following = String(model.get("following"));
    root.style.maxHeight = model.get("height");
    notice.textContent = (model.get("following") ? "● following  " : "") + model.get("notice");
    mode.value = model.get("mode");
    if (document.activeElement !== offsetBox) offsetBox.value = String(model.get("offset"));
  }

  const all = () => { drawTopics(); drawPartitions(); drawRecords(); drawGroups(); drawState(); };
  all();
  model.on("change:topics", drawTopics);
  model.on("change:topic", () => { drawTopics(); drawState(); });
  model.on("change:partitions", drawPartitions);
  model.on("change:partition", () => { drawPartitions(); drawState(); });
  model.on("change:records", drawRecords);
  model.on("change:groups", drawGroups);
  for (const name of ["offset", "notice", "following", "mode", "height"]) model.on(`change:${name}`, drawState);
  return () => root.remove();
}

export default { render };
