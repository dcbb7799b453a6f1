/* snapcompact eval viewer: renders the pages of a static site written by snapcompact-eval-view.
 *
 * Data files are scripts under data/ that call SC.data(name, payload); they are loaded on demand
 * by inserting <script> tags, because browsers refuse fetch() on file:// pages. Nothing is ever
 * requested from anywhere but this folder. Text from records is only ever set as textContent. */
"use strict";
(function () {
  const SC = (window.SC = { cache: Object.create(null), pending: Object.create(null) });

  SC.data = function (name, payload) {
    SC.cache[name] = payload;
    const waiting = SC.pending[name];
    if (waiting) {
      delete SC.pending[name];
      waiting.resolve(payload);
    }
  };

  function load(name) {
    if (name in SC.cache) return Promise.resolve(SC.cache[name]);
    if (SC.pending[name]) return SC.pending[name].promise;
    const slot = {};
    slot.promise = new Promise((resolve, reject) => {
      slot.resolve = resolve;
      slot.reject = reject;
    });
    SC.pending[name] = slot;
    const script = document.createElement("script");
    script.src = "data/" + name + ".js";
    script.onerror = () => {
      delete SC.pending[name];
      slot.reject(new Error("missing data file data/" + name + ".js"));
    };
    document.head.appendChild(script);
    return slot.promise;
  }

  const sharded = (kind, digest) => kind + "/" + digest.slice(0, 2) + "/" + digest;
  const framePath = (digest) => "frames/" + digest.slice(0, 2) + "/" + digest + ".png";

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // replaceChildren would print a null as the text "null": drop absent parts first
  const fill = (node, ...parts) => node.replaceChildren(...parts.flat().filter((x) => x !== null && x !== undefined && x !== false));

  const hashParams = () => new URLSearchParams(location.hash.slice(1));
  function hashWith(changes) {
    const p = hashParams();
    for (const [key, value] of Object.entries(changes)) {
      if (value === null || value === undefined || value === "" || value === "all") p.delete(key);
      else p.set(key, String(value));
    }
    return "#" + p.toString();
  }
  const link = (href, text, attrs) => el("a", Object.assign({ href }, attrs || {}), text);
  const fmt = (x, digits) => (x === null || x === undefined || Number.isNaN(x) ? "–" :
    typeof x === "number" ? x.toLocaleString("en-US", { maximumFractionDigits: digits ?? 0 }) : String(x));
  const pct = (num, den) => (den ? (num / den).toFixed(3) : "–");
  const dash = (s) => (s === "" || s === null || s === undefined ? "–" : String(s));
  const roundName = (r) => (r === "rna" ? "not recorded" : r === "r0" ? "0 (in kept tail)" :
    "discarded by compaction " + r.slice(1));
  const shapeLabel = (c) => (c.arm === "text" ? "text" : c.shape + (c.frame_size ? " @" + c.frame_size : ""));

  function floorBadge(label) {
    return el("span", { class: "floor", title: label }, "legibility floor");
  }
  // kind: correct / abstained / wrong / silent wrong (a value where the truth was in the session)
  // / confabulated (a never-stated probe answered with a value); rows without it: from ok / abst
  const KIND_TITLES = {
    "silent wrong": "a wrong value where the truth was in the original session: the failure a reader cannot see",
    confabulated: "a never-stated probe (the session never says) answered with a value",
    abstained: "the reader said it could not find the answer",
  };
  function outcomeBadge(ok, err, abst, skip, kind) {
    // a question that was not asked is neither right nor wrong
    if (skip) return el("span", { class: "badge skip", title: skip }, "skipped (not asked)");
    if (err) return el("span", { class: "badge err" }, "error");
    kind = kind || (ok ? "correct" : abst ? "abstained" : "wrong");
    const cls = { correct: "ok", abstained: "abst", "silent wrong": "silent", confabulated: "confab" }[kind] || "bad";
    return el("span", { class: "badge " + cls, title: KIND_TITLES[kind] || null, "data-kind": kind }, kind);
  }
  const probeName = (kind, old) => (old ? kind + " (old default)" : kind);
  function readerBadge(name, offline) {
    return el("span", { class: "reader" + (offline ? " told" : ""), title: "who answered" }, name);
  }
  function select(name, value, options, onchange) {
    const node = el("select", { name, "aria-label": name, onchange: (ev) => onchange(ev.target.value) },
      options.map(([v, text]) => el("option", { value: v, selected: v === value }, text)));
    return el("label", { class: "filter" }, name + " ", node);
  }
  function crumbs(...parts) {
    const nav = document.getElementById("crumbs");
    nav.replaceChildren(...parts.flatMap((p) => [el("span", { class: "sep" }, "›"), p]));
  }
  function pager(page, pages, hrefFor) {
    return el("nav", { class: "pager" },
      page > 1 ? link(hrefFor(page - 1), "‹ previous", { rel: "prev" }) : el("span", { class: "off" }, "‹ previous"),
      el("span", { class: "where" }, "page " + page + " of " + pages),
      page < pages ? link(hrefFor(page + 1), "next ›", { rel: "next" }) : el("span", { class: "off" }, "next ›"));
  }

  // ------------------------------------------------------------------------------------------
  // index: one row per cell, filters, links into the cell's questions

  const INDEX_PAGE = 200;

  // [questions, correct, errors, billed tokens of the asked ones, skipped, abstained, silent wrong,
  // confabulated, never-stated answered, never-stated correct]
  function cellCounts(cell, round) {
    const rounds = round === "all" ? Object.values(cell.rounds) : [cell.rounds[round] || []];
    return rounds.reduce((a, r) => a.map((x, i) => x + (r[i] || 0)), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  }
  // recall over the stated probes asked, as the tables rank: a never-stated probe's right reply is
  // an abstention, not a recalled fact
  const statedRecall = (cell, c) => recallCell(cell, c[1] - c[9], c[0] - c[2] - c[4] - c[8], c[4]);
  // per probe kind: correct / abstained / wrong, and the silent wrongs and confabulations among the wrong
  function probeCounts(cell) {
    return Object.entries(cell.probes || {}).map(([kind, [c, a, w, s, f]]) =>
      el("div", { class: "probe", "data-probe": kind }, kind + " ", el("span", { class: "c" }, c), " / ",
        el("span", { class: "a" }, a), " / ", el("span", { class: "w" }, w),
        s ? [" · ", el("span", { class: "badge silent" }, s + " silent")] : null,
        f ? [" · ", el("span", { class: "badge confab" }, f + " confab.")] : null));
  }
  const windowName = (w) => (w === null || w === undefined ? "window not recorded" :
    Number(w).toLocaleString("en-US") + "-token window");
  const OUTCOMES = [["all", "all"], ["correct", "correct"], ["abstained", "abstained"], ["wrong", "wrong"],
    ["silent", "silent wrong"], ["confab", "confabulated"], ["skipped", "skipped (not asked)"]];
  // recall over the questions asked: an arm whose every question was skipped has none
  function recallCell(cell, correct, asked, skipped) {
    if (!asked && skipped) return el("span", { class: "badge skip", title: cell.skipped }, "skipped");
    return pct(correct, asked);
  }

  // the same arm's cell under the other reader(s): recall and a link, never in this row's ranking
  function otherReaders(cell, byId) {
    return (cell.others || []).map((o) => {
      const other = byId[o.id];
      return el("div", { class: "other" }, link("cell.html#c=" + o.id, o.reader_name, { class: "other-reader" }),
        " ", statedRecall(other, cellCounts(other, "all")));
    });
  }

  async function renderIndex(main) {
    const index = await load("index");
    const p = hashParams();
    // "" is a real strategy/policy (rows from before compaction): "~" stands for it in the address
    const f = {
      window: p.get("window") || "all", verdict: p.get("verdict") || "all",
      shape: p.get("shape") || "all", strategy: p.get("strategy") || "all", policy: p.get("policy") || "all",
      round: p.get("round") || "all", outcome: p.get("outcome") || "all",
    };
    const enc = (v) => (v === "" ? "~" : v);
    const page = Math.max(1, parseInt(p.get("page") || "1", 10));
    const go = (changes) => { location.hash = hashWith(Object.assign({ page: null }, changes)); };
    const opts = (values, show) => [["all", "all"], ...values.map((v) => [enc(String(v)), show ? show(v) : dash(v)])];
    const filters = el("div", { class: "filters" },
      select("window", f.window, opts(index.filters.window || [], windowName), (v) => go({ window: v })),
      select("verdict", f.verdict, opts(index.filters.verdict || []), (v) => go({ verdict: v })),
      select("shape", f.shape, opts(index.filters.shape), (v) => go({ shape: v })),
      select("strategy", f.strategy, opts(index.filters.strategy), (v) => go({ strategy: v })),
      select("policy", f.policy, opts(index.filters.policy), (v) => go({ policy: v })),
      select("evidence round", f.round, opts(index.filters.round, roundName), (v) => go({ round: v })),
      select("outcome", f.outcome, OUTCOMES, (v) => go({ outcome: v })));
    const rows = [];
    for (const cell of index.cells) {
      if (f.window !== "all" && String(cell.context_window) !== f.window) continue;
      if (f.verdict !== "all" && cell.verdict !== f.verdict) continue;
      if (f.shape !== "all" && cell.shape !== f.shape) continue;
      if (f.strategy !== "all" && enc(cell.strategy) !== f.strategy) continue;
      if (f.policy !== "all" && enc(cell.policy) !== f.policy) continue;
      const counts = cellCounts(cell, f.round);
      const [n, correct, errors, tokens, skipped, abstained, silent, confab] = counts;
      const asked = n - errors - skipped;
      const shown = { all: n, correct, skipped, abstained, silent, confab,
        wrong: n - skipped - correct - abstained }[f.outcome] ?? n;
      if (!shown) continue;
      rows.push({ cell, n, correct, errors, tokens, skipped, asked, shown, counts });
    }
    const pages = Math.max(1, Math.ceil(rows.length / INDEX_PAGE));
    const slice = rows.slice((page - 1) * INDEX_PAGE, page * INDEX_PAGE);
    const listName = f.outcome + "-" + f.round;
    const line = ({ cell, n, correct, errors, tokens, skipped, asked, shown, counts }) => el("tr", { "data-cell": cell.id, title: cell.arm_label },
      el("td", {}, cell.offline ? [cell.reader_id, " ", floorBadge(cell.label)] : cell.reader_id,
        " ", readerBadge(cell.reader_name, cell.offline)),
      el("td", {}, cell.line), el("td", {}, cell.target_model),
      el("td", {}, dash(cell.strategy)), el("td", {}, dash(cell.policy)),
      el("td", {}, shapeLabel(cell)), el("td", {}, dash(cell.shape_requested)),
      el("td", { class: "num" }, fmt(cell.context_window)),
      el("td", {}, el("span", { class: "verdict v-" + cell.verdict.replace(" ", "-") }, cell.verdict)),
      el("td", { class: "num" }, fmt(n)), el("td", { class: "num" }, fmt(correct)),
      el("td", { class: "num" }, fmt(skipped)),
      el("td", { class: "num" }, statedRecall(cell, counts)), el("td", { class: "num" }, fmt(errors)),
      el("td", { class: "num" }, fmt(asked + errors ? tokens / (asked + errors) : null)),
      el("td", { class: "probes" }, probeCounts(cell)),
      el("td", { class: "others" }, otherReaders(cell, byId)),
      el("td", {}, link("cell.html" + "#" + new URLSearchParams({ c: cell.id, list: listName }).toString(),
        shown + (f.outcome === "all" ? (shown === 1 ? " question" : " questions") : " " + f.outcome),
        { class: "open" })));
    // one table per window and reader: arms measured at different windows, or answered by the
    // told and the blind reader, are never ranked together; each row links its other readers' cell
    const byId = Object.fromEntries(index.cells.map((c) => [c.id, c]));
    const windows = [];
    for (const row of slice) {
      const w = row.cell.context_window ?? null, reader = row.cell.reader_name || row.cell.reader_id;
      let section = windows.find((s) => s.window === w && s.reader === reader);
      if (!section) windows.push(section = { window: w, reader, told: row.cell.offline, rows: [] });
      section.rows.push(row);
    }
    // largest window first; in a window the told reader (the legibility floor) first, then the others
    windows.sort((x, y) => (y.window ?? -1) - (x.window ?? -1) || Number(y.told) - Number(x.told));
    const head = el("thead", {}, el("tr", {}, ["reader", "model line", "target model", "strategy", "policy", "shape",
      "asked", "window", "verdict", "questions", "correct", "skipped", "recall (stated)", "errors", "billed tok/q",
      "by probe: correct / abstained / wrong", "other reader", "open"]
      .map((h) => el("th", {}, h))));
    const tables = windows.map((s) => [
      el("h2", { class: "window" }, windowName(s.window) + " · reader: " + s.reader),
      el("table", { class: "cells", "data-window": s.window === null ? "" : String(s.window), "data-reader": s.reader },
        head.cloneNode(true), el("tbody", {}, s.rows.map(line)))]).flat();
    const offline = index.cells.some((c) => c.offline);
    crumbs(el("span", {}, "cells"));
    fill(main,
      el("h1", {}, "What the model saw"),
      el("p", { class: "meta" }, index.questions + " questions in " + index.cells.length + " cells · runs: ",
        index.runs.join(", ") + " · written " + index.generated),
      offline ? el("p", { class: "note" }, floorBadge(index.offline_label), " ", index.offline_label) : null,
      el("p", { class: "meta" }, "verdict: valid = production would send this context (ranked); bound = full / truncate; " +
        "stand-in = production's path with the offline stand-in's summary; not sent = production would not. " +
        "Skipped questions were not asked (full over the model's window): never counted as wrong, never in a recall. " +
        "Recall is over the stated probes (exact, gist), as the tables rank; never-stated probes are in the probe counts."),
      filters,
      tables.length ? el("div", { id: "cells" }, ...tables) : el("p", { class: "empty", id: "cells" }, "no cell matches"),
      pages > 1 ? pager(page, pages, (n) => hashWith({ page: n })) : null);
  }

  // ------------------------------------------------------------------------------------------
  // cell: one precomputed, paged list of its questions

  async function renderCell(main) {
    const index = await load("index");
    const p = hashParams();
    const cell = index.cells.find((c) => c.id === p.get("c"));
    if (!cell) throw new Error("no such cell: " + p.get("c"));
    const [outcome, round] = (p.get("list") || "all-all").split("-");
    const page = Math.max(1, parseInt(p.get("page") || "1", 10));
    const name = outcome + "-" + round;
    const go = (changes) => { location.hash = hashWith(Object.assign({ page: null }, changes)); };
    const rounds = Object.keys(cell.rounds);
    const filters = el("div", { class: "filters" },
      select("outcome", outcome, OUTCOMES, (v) => go({ list: v + "-" + round })),
      select("evidence round", round, [["all", "all"], ...rounds.map((r) => [r, roundName(r)])],
        (v) => go({ list: outcome + "-" + v })));
    const title = [cell.line, cell.target_model, cell.arm_label || [dash(cell.strategy), dash(cell.policy), shapeLabel(cell)].join(" "),
      windowName(cell.context_window), cell.verdict].join(" · ");
    crumbs(link("index.html", "cells"), el("span", {}, title));
    const head = [el("h1", {}, title),
      el("p", { class: "meta" }, "reader " + cell.reader_id + " ", readerBadge(cell.reader_name, cell.offline), " ",
        cell.offline ? floorBadge(cell.label) : null),
      el("div", { class: "meta probes" }, "by probe kind (correct / abstained / wrong): ", probeCounts(cell)),
      filters];
    if (!cell.lists[name]) {
      fill(main, ...head, el("p", { class: "empty" }, "no question of this cell matches"));
      return;
    }
    const pages = cell.lists[name];
    const data = await load("cells/" + cell.id + "/" + name + "/p" + Math.min(page, pages));
    const rows = data.rows.map((r, i) => el("tr", { "data-id": r.id },
      el("td", { class: "num" }, (data.page - 1) * index.page_size + i + 1),
      el("td", {}, r.item + " / " + r.qid),
      el("td", { class: "q" }, r.q), el("td", {}, r.gold), el("td", {}, r.a),
      el("td", {}, probeName(r.probe || "exact", r.probe_old ?? true)),
      el("td", {}, outcomeBadge(r.ok, r.err, r.abst, r.skip, r.kind)), el("td", { class: "num" }, r.skip ? "–" : fmt(r.f1, 2)),
      el("td", { class: "num" }, r.round === null ? "–" : r.round), el("td", { class: "num" }, fmt(r.tok)),
      el("td", {}, link("question.html#id=" + r.id, "open", { class: "open" }))));
    fill(main, ...head,
      el("p", { class: "meta" }, data.total + " questions"),
      el("table", { class: "questions", id: "questions" },
        el("thead", {}, el("tr", {}, ["#", "item / question", "question", "gold", "answer", "probe", "outcome", "F1",
          "evidence round", "billed tok", ""].map((h) => el("th", {}, h)))),
        el("tbody", {}, rows)),
      pages > 1 ? pager(data.page, pages, (n) => hashWith({ page: n })) : null);
  }

  // ------------------------------------------------------------------------------------------
  // question: facts, the context as sent, the reader's transcript

  const view = { size: "seen", zoom: 1 };

  function applyFrameSize(root) {
    for (const img of root.querySelectorAll("img.frame")) {
      const w = Number(img.dataset[view.size + "W"]), h = Number(img.dataset[view.size + "H"]);
      img.style.width = Math.max(1, Math.round(w * view.zoom)) + "px";
      img.style.height = Math.max(1, Math.round(h * view.zoom)) + "px";
    }
    for (const b of root.querySelectorAll("[data-size-choice]"))
      b.setAttribute("aria-pressed", String(b.dataset.sizeChoice === view.size));
    for (const z of root.querySelectorAll("output.zoom")) z.textContent = Math.round(view.zoom * 100) + "%";
  }

  function frameToolbar(root) {
    const setSize = (s) => { view.size = s; applyFrameSize(document); };
    const zoomBy = (k) => { view.zoom = Math.min(8, Math.max(0.125, view.zoom * k)); applyFrameSize(document); };
    return el("div", { class: "toolbar" },
      el("span", {}, "frames at "),
      el("button", { type: "button", "data-size-choice": "seen", onclick: () => setSize("seen"),
        title: "the size the provider resized the frame to: what the model saw" }, "seen size"),
      el("button", { type: "button", "data-size-choice": "rendered", onclick: () => setSize("rendered"),
        title: "the frame as rendered" }, "rendered size"),
      el("span", { class: "gap" }, " zoom "),
      el("button", { type: "button", class: "zoom-out", onclick: () => zoomBy(0.5) }, "−"),
      el("output", { class: "zoom" }, "100%"),
      el("button", { type: "button", class: "zoom-in", onclick: () => zoomBy(2) }, "+"),
      el("button", { type: "button", onclick: () => { view.zoom = 1; applyFrameSize(document); } }, "1:1"));
  }

  const LONG_TEXT = 3000;
  function textBlock(text) {
    const pre = el("pre", { class: "text" });
    if (text.length <= LONG_TEXT) { pre.textContent = text; return pre; }
    pre.textContent = text.slice(0, LONG_TEXT);
    const more = el("button", { type: "button", class: "more" }, "show all " + text.length.toLocaleString() + " characters");
    more.addEventListener("click", () => { pre.textContent = text; more.remove(); });
    return el("div", {}, pre, more);
  }

  function contextView(q, context) {
    const missing = new Set(q.missing_frames || []);
    let part = 0, frame = 0;
    const messages = context.messages.map((m, mi) => el("section", { class: "message role-" + m.role },
      el("h3", {}, "message " + (mi + 1) + " · " + m.role),
      m.content.map((c) => {
        const tokens = (q.block_tokens || [])[part++];
        const tok = tokens && tokens.tokens !== null && tokens.tokens !== undefined
          ? el("span", { class: "tokens", title: tokens.method }, fmt(tokens.tokens) + " tokens") : null;
        if (c.type === "text") {
          return el("div", { class: "block text-block" },
            el("div", { class: "block-head" }, "text · " + (c.text || "").length.toLocaleString() + " chars ", tok),
            textBlock(c.text || ""));
        }
        if (c.type === "image") {
          frame += 1;
          const seenW = c.seen_width || c.width, seenH = c.seen_height || c.height;
          const img = missing.has(c.frame_hash)
            ? el("div", { class: "missing" }, "frame missing from the run's frame store")
            : el("img", { class: "frame", src: framePath(c.frame_hash), alt: "frame " + frame,
              "data-seen-w": seenW, "data-seen-h": seenH, "data-rendered-w": c.width, "data-rendered-h": c.height,
              loading: "lazy" });
          return el("figure", { class: "block image-block" },
            el("div", { class: "block-head" }, "frame " + frame + " · seen " + seenW + "×" + seenH +
              " · rendered " + c.width + "×" + c.height + " ", tok),
            el("div", { class: "frame-box" }, img),
            el("figcaption", {}, "sha256 ", el("code", { class: "hash" }, c.frame_hash)));
        }
        return el("div", { class: "block" }, "part of type " + c.type);
      })));
    return el("div", { class: "context" },
      context.source === "record" ? el("p", { class: "note" }, context.note) : null,
      frameToolbar(), messages);
  }

  function highlighted(reading, evidence, answer) {
    const cuts = new Set([0, reading.length]);
    for (const span of [evidence, answer]) if (span) { cuts.add(span[0]); cuts.add(span[1]); }
    const points = [...cuts].filter((x) => x >= 0 && x <= reading.length).sort((a, b) => a - b);
    const inside = (span, a, b) => span && a >= span[0] && b <= span[1];
    const nodes = [];
    for (let i = 0; i + 1 < points.length; i++) {
      const [a, b] = [points[i], points[i + 1]];
      if (a === b) continue;
      const text = reading.slice(a, b);
      if (inside(answer, a, b)) nodes.push(el("mark", { class: "answer" }, text));
      else if (inside(evidence, a, b)) nodes.push(el("mark", { class: "evidence" }, text));
      else nodes.push(document.createTextNode(text));
    }
    return nodes;
  }

  const WINDOW = 1200;
  function transcriptView(spans, tr) {
    const ev = spans.evidence_span, ans = spans.answer_span;
    const whole = el("pre", { class: "transcript" }, highlighted(tr.reading, ev, ans));
    let shown = whole;
    if (tr.reading.length > 2 * WINDOW + 200) {
      const centre = ev ? ev[0] : 0;
      const lo = Math.max(0, centre - WINDOW), hi = Math.min(tr.reading.length, (ev ? ev[1] : 0) + WINDOW);
      const shift = (s) => (s ? [Math.max(0, s[0] - lo), Math.min(hi, s[1]) - lo] : null);
      const part = el("pre", { class: "transcript" }, lo ? "… " : "",
        highlighted(tr.reading.slice(lo, hi), shift(ev), shift(ans)), hi < tr.reading.length ? " …" : "");
      const button = el("button", { type: "button", class: "more" },
        "show the whole reading (" + tr.reading.length.toLocaleString() + " characters)");
      button.addEventListener("click", () => { part.replaceWith(whole); button.remove(); });
      shown = el("div", {}, part, button);
    }
    return el("div", { class: "reading" },
      el("dl", { class: "facts" },
        el("dt", {}, "reader"), el("dd", {}, spans.reader === "text-qa" ? "text-qa: reads the plain history" :
          "ocr-qa: the OCR transcript of the frames at their seen size"),
        el("dt", {}, "evidence"), el("dd", {}, el("mark", { class: "evidence" }, spans.evidence)),
        el("dt", {}, "evidence found"), el("dd", {}, ev ? "yes, alignment score " + spans.score :
          "no (best alignment score " + spans.score + "): the reader abstained"),
        el("dt", {}, "answer as read"), el("dd", {}, ans ? el("mark", { class: "answer" }, spans.answer) : spans.answer)),
      el("p", { class: "legend" }, el("mark", { class: "evidence" }, "evidence"), " ",
        el("mark", { class: "answer" }, "answer"), " located in the reader's reading (whitespace folded)"),
      shown);
  }

  function facts(q) {
    const r = q.record, f = q.fields, c = q.coords;
    const row = (name, value) => [el("dt", {}, name), el("dd", {}, value)];
    const reported = r.reported_prompt_tokens === null || r.reported_prompt_tokens === undefined ? "–" : fmt(r.reported_prompt_tokens);
    return el("dl", { class: "facts" },
      row("gold answers", (r.gold_answers || []).length ? el("ul", { class: "gold" }, r.gold_answers.map((g) => el("li", {}, g))) : "–"),
      q.skipped ? row("answer", el("span", { class: "answer-text" }, "not asked: " + q.skipped)) :
        row("answer", el("span", { class: "answer-text " + (q.correct ? "ok" : "bad") }, r.answer || "(empty)")),
      row("score", q.skipped ? outcomeBadge(false, false, false, q.skipped) :
        [outcomeBadge(q.correct, !!r.error, r.abstained, null, q.kind), " EM " + fmt(r.em, 2) + " · F1 " + fmt(r.f1, 2)]),
      row("probe kind", probeName(q.probe || "exact", q.probe_old ?? true)),
      row("window · verdict", windowName(c.context_window) + " · " + dash(c.verdict)),
      r.error ? row("error", el("code", {}, r.error)) : null,
      row("reader", [readerBadge(q.reader_name || r.model, q.offline), " " + r.model + " ", q.offline ? floorBadge(q.label) : null]),
      row("target model", c.target_model + " (line " + c.line + ")"),
      row("strategy · policy", dash(c.strategy) + " · " + dash(c.policy)),
      row("shape", shapeLabel(c)),
      row("evidence round", f.evidence_round === null ? "not recorded" :
        f.evidence_round === 0 ? "0: the evidence is in the kept tail" : f.evidence_round + ": discarded by compaction " + f.evidence_round),
      row("compactions", dash(f.compactions)),
      row("frames sent · evicted", dash(r.frames) + " · " + dash(f.frames_evicted)),
      row("text tail", f.text_tail_chars === null ? "–" : fmt(f.text_tail_chars) + " chars"),
      row("context tokens", "text " + fmt(r.text_tokens) + " · image " + fmt(r.predicted_image_tokens) +
        " · billed " + fmt(r.predicted_prompt_tokens ?? q.billed_tokens)),
      row("prompt tokens", "predicted " + fmt(r.predicted_prompt_tokens) + " · reported " + reported),
      row("compaction calls", compactionBill(r, f)),
      row("item · question", r.dataset + " · " + r.item_id + " · " + r.question_id + " · seed " + r.seed));
  }

  // The session's summary / handoff requests (paid once per session) and this question's share
  // of them (results/README.md, "Billed tokens and the compaction calls"); rows written before
  // they were billed show what the summarizer reported.
  function compactionBill(r, f) {
    if (r.compaction_billed_tokens === null || r.compaction_billed_tokens === undefined) {
      return f.compaction_cost_tokens === null ? "not recorded" :
        "not billed (older row); the summarizer reported " + fmt(f.compaction_cost_tokens) + " tokens";
    }
    if (!r.compaction_calls) return "none (no summary request)";
    const share = r.context_questions ? r.compaction_billed_tokens / r.context_questions : null;
    return r.compaction_calls + " call(s): " + fmt(r.compaction_billed_tokens) + " tokens for the session (in " +
      fmt(r.compaction_input_tokens) + " + out " + fmt(r.compaction_output_tokens) + ", " +
      r.compaction_token_method + ")" + (share === null ? "" : " · " + fmt(Math.round(share)) +
      " per question of " + r.context_questions) + (r.compaction_bill_note ? " · " + r.compaction_bill_note : "");
  }

  async function questionPanel(id, compact) {
    const q = await load(sharded("q", id));
    const r = q.record;
    const panel = el("article", { class: "question-panel", "data-id": id },
      el("h2", { class: "question-text" }, r.question || "(no question)"), facts(q));
    let context = null;
    if (q.context.inline) context = q.context.inline;
    else if (q.context.hash) context = await load(sharded("ctx", q.context.hash));
    panel.appendChild(el("h3", {}, "Context as sent"));
    panel.appendChild(context ? contextView(q, context) :
      el("p", { class: "missing" }, "context " + q.context.missing + " is missing from the run"));
    if (q.transcript) {
      panel.appendChild(el("h3", {}, "The reader's transcript"));
      if (q.transcript.hash) panel.appendChild(transcriptView(q.reading, await load(sharded("tr", q.transcript.hash))));
      else panel.appendChild(el("p", { class: "missing" }, "transcript " + q.transcript.missing + " is missing from the run"));
    }
    if (!compact) {
      const raw = el("pre", { class: "json" }, JSON.stringify(r, null, 2));
      panel.appendChild(el("details", {}, el("summary", {}, "the record as stored"), raw));
    }
    return { q, panel };
  }

  function siblingsTable(group, current, other) {
    const rows = group.members.filter((m) => m.id !== current).map((m) => el("tr", { "data-id": m.id },
      el("td", {}, dash(m.reader_name)), el("td", {}, m.target_model), el("td", {}, dash(m.strategy)), el("td", {}, dash(m.policy)),
      el("td", {}, shapeLabel(m)), el("td", { class: "num" }, fmt(m.context_window)), el("td", {}, dash(m.verdict)),
      el("td", {}, outcomeBadge(m.ok, m.err, m.abst, m.skip, m.kind)), el("td", {}, m.a),
      el("td", { class: "num" }, fmt(m.tok)),
      el("td", {}, link("question.html#id=" + m.id, "open"), " · ",
        link("compare.html#" + new URLSearchParams({ a: current, b: m.id }).toString(), "side by side",
          { class: "compare" + (m.id === other ? " current" : "") }))));
    if (!rows.length) return el("p", { class: "meta" }, "asked in no other cell");
    return el("table", { class: "siblings" },
      el("thead", {}, el("tr", {}, ["reader", "target", "strategy", "policy", "shape", "window", "verdict", "outcome", "answer", "billed tok", ""].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows));
  }

  async function renderQuestion(main) {
    const id = hashParams().get("id");
    if (!id) throw new Error("no question id in the address (question.html#id=...)");
    const { q, panel } = await questionPanel(id, false);
    const group = await load(sharded("g", q.group));
    const c = q.coords;
    crumbs(link("index.html", "cells"),
      link("cell.html#c=" + q.cell, [c.line, dash(c.strategy), dash(c.policy), shapeLabel(c)].join(" · ")),
      el("span", {}, q.record.item_id + " / " + q.record.question_id));
    fill(main, panel, el("h3", {}, "The same question elsewhere"), siblingsTable(group, id, null));
    applyFrameSize(document);
  }

  async function renderCompare(main) {
    const p = hashParams();
    const a = p.get("a"), b = p.get("b");
    if (!a || !b) throw new Error("compare.html needs two question ids: compare.html#a=...&b=...");
    const [left, right] = await Promise.all([questionPanel(a, true), questionPanel(b, true)]);
    const group = await load(sharded("g", left.q.group));
    crumbs(link("index.html", "cells"), link("question.html#id=" + a, left.q.record.question_id), el("span", {}, "side by side"));
    const head = (q) => el("p", { class: "side-head" }, [q.reader_name || q.record.model, q.coords.target_model, dash(q.coords.strategy),
      dash(q.coords.policy), shapeLabel(q.coords)].join(" · "));
    fill(main, 
      el("div", { class: "compare" },
        el("div", { class: "side" }, head(left.q), left.panel),
        el("div", { class: "side" }, head(right.q), right.panel)),
      el("h3", {}, "Compare with"), siblingsTable(group, a, b));
    applyFrameSize(document);
  }

  const PAGES = { index: renderIndex, cell: renderCell, question: renderQuestion, compare: renderCompare };

  async function render() {
    const main = document.getElementById("main");
    try {
      await PAGES[document.body.dataset.page](main);
      document.body.dataset.ready = "true";
    } catch (err) {
      fill(main, el("p", { class: "error", role: "alert" }, String(err.message || err)));
      document.body.dataset.ready = "error";
    }
  }

  window.addEventListener("hashchange", () => { document.body.dataset.ready = "false"; render(); });
  render();
})();
