// The explorer's Statistics panel (Wireshark's Statistics menu): Conversations, I/O graph, Response time.
// Every number comes from Python (the `statistics` trait, made by kafkalab.notebook.statistics from the
// plots' data functions); this file only lays them out. Clicking a row (or an I/O graph line or legend
// entry) applies the display filter Python put on it (`stream == N`, `api_name == "Produce"`).
// Tests read: .kl-stats[data-tab], .kl-conv[data-stream][data-filter], .kl-lat[data-api][data-filter],
// .kl-stats .io-series[data-api].

const STAT_TABS = [["conversations", "Conversations"], ["io", "I/O graph"], ["latency", "Response time"]];

function statisticsPanel(model, applyFilter) {
  let tab = "conversations";
  const toggle = h("button", { class: "kl-stats-toggle", text: "Statistics",
    title: "conversations, I/O graph and response time per API of the frames in the list's table" });
  const tabs = h("div", { class: "kl-stats-tabs" });
  const content = h("div", { class: "kl-stats-content" });
  const panel = h("div", { class: "kl-stats", style: "display:none" }, tabs, content);

  const ms = (v) => (v == null ? "–" : v.toFixed(3));
  const count = (v) => (v == null ? "" : Number(v).toLocaleString("en-US"));
  const clock = (iso) => (iso ? iso.slice(11, 23) : "");
  function table(head, rows) {
    return h("table", { class: "kl-stats-table" },
      h("thead", {}, h("tr", {}, ...head.map(([text, title]) => h("th", { text, title: title || text })))),
      h("tbody", {}, ...rows));
  }
  function row(cls, attrs, cells) {
    const tr = h("tr", Object.assign({ class: cls, title: `show only: ${attrs["data-filter"]}` }, attrs));
    for (const [text, numeric] of cells) tr.append(h("td", { class: numeric ? "kl-num" : "", text: String(text) }));
    return tr;
  }

  function draw() {
    const stats = model.get("statistics") || {};
    const shown = Object.keys(stats).length > 0;
    panel.style.display = shown ? "" : "none";
    toggle.classList.toggle("kl-active", shown);
    panel.dataset.tab = tab;
    tabs.replaceChildren(...STAT_TABS.map(([key, label]) =>
      h("button", { class: `kl-stats-tab${key === tab ? " kl-active" : ""}`, "data-tab": key, text: label })),
      h("span", { class: "kl-stats-note", text: shown ? `${count(stats.frames)} frames · click a row to filter` : "" }));
    if (!shown) { content.replaceChildren(); return; }
    if (tab === "conversations") {
      content.replaceChildren(table(
        [["stream"], ["client"], ["server"], ["frames"], ["requests"], ["errors", "responses carrying an error"],
         ["bytes →", "bytes the client sent"], ["← bytes", "bytes the server sent"], ["first"], ["last"], ["duration s"]],
        stats.conversations.map((c) => row("kl-conv", { "data-stream": String(c.stream), "data-filter": c.filter }, [
          [c.stream, true], [c.client], [c.server], [count(c.frames), true], [count(c.requests), true],
          [count(c.errors), true], [count(c.client_bytes), true], [count(c.server_bytes), true],
          [clock(c.first)], [clock(c.last)], [c.duration_s.toFixed(3), true]]))));
    } else if (tab === "latency") {
      content.replaceChildren(table(
        [["API"], ["requests"], ["answered"], ["unanswered", "requests that expected an answer and got none"],
         ["acks=0", "Produce with acks=0: no answer expected"], ["errors"], ["p50 ms"], ["p90 ms"], ["p99 ms"], ["max ms"]],
        stats.latency.map((a) => row("kl-lat", { "data-api": a.api, "data-filter": a.filter }, [
          [a.api], [count(a.requests), true], [count(a.answered), true], [count(a.unanswered), true],
          [count(a.acks0), true], [count(a.errors), true], [ms(a.p50_ms), true], [ms(a.p90_ms), true],
          [ms(a.p99_ms), true], [ms(a.max_ms), true]]))));
    } else {
      content.innerHTML = stats.io_svg;      // SVG made by kafkalab.notebook.plots.io_svg, text escaped
    }
  }

  toggle.addEventListener("click", () => {
    model.send({ type: "statistics", show: !Object.keys(model.get("statistics") || {}).length });
  });
  tabs.addEventListener("click", (event) => {
    const button = event.target.closest(".kl-stats-tab");
    if (button) { tab = button.dataset.tab; draw(); }
  });
  content.addEventListener("click", (event) => {
    const target = event.target.closest("[data-filter]");
    if (target) applyFilter(target.dataset.filter);
  });
  model.on("change:statistics", draw);
  draw();
  return { toggle, panel, dispose: () => model.off("change:statistics", draw) };
}
