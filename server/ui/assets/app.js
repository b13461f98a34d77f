// hubsync dashboard: plain script, no framework, nothing loaded from elsewhere.
"use strict";
(function () {
  const meta = (n) => document.querySelector('meta[name="' + n + '"]').content;
  const base = meta("base");
  const csrf = meta("csrf-token");
  const $ = (s) => document.querySelector(s);

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "style") e.style.cssText = v; // CSSOM, which the CSP allows
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids.flat()) {
      if (k === undefined || k === null) continue;
      e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return e;
  }

  async function api(method, path, body) {
    const opts = { method, headers: { "X-CSRF-Token": csrf }, credentials: "same-origin" };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(base + "/api/" + path, opts);
    if (r.status === 401) { location.href = base + "/login"; throw new Error("signed out"); }
    const data = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(data.message || data.error || ("HTTP " + r.status));
    return data;
  }

  function flash(msg, bad) {
    const f = $("#flash");
    f.textContent = msg;
    f.className = "flash" + (bad ? " bad" : "");
    f.hidden = false;
  }

  function age(s) {
    if (!s) return "–";
    if (s < 60) return Math.round(s) + " s";
    if (s < 3600) return Math.round(s / 60) + " min";
    if (s < 86400) return (s / 3600).toFixed(1) + " h";
    return (s / 86400).toFixed(1) + " d";
  }
  const when = (t) => (t ? new Date(t).toLocaleString() : "–");
  const sum = (a) => a.reduce((x, y) => x + y, 0);

  // barChart draws per-minute series as stacked bars in an inline SVG.
  function barChart(box, series) {
    const W = 600, H = 160, L = 34, B = 18, n = series[0].values.length;
    const totals = series[0].values.map((_, i) => sum(series.map((s) => s.values[i])));
    const max = Math.max(1, ...totals);
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("role", "img");
    const add = (tag, a, text) => {
      const e = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(a)) e.setAttribute(k, v);
      if (text !== undefined) e.textContent = text;
      svg.append(e);
      return e;
    };
    const ph = H - B - 4, bw = (W - L) / n;
    add("line", { x1: L, y1: 4, x2: W, y2: 4, stroke: "#eef0f3" });
    add("line", { x1: L, y1: 4 + ph, x2: W, y2: 4 + ph, stroke: "#dde1e7" });
    add("text", { x: L - 4, y: 12, "text-anchor": "end", "font-size": 10, fill: "#687385" }, String(max));
    add("text", { x: L - 4, y: 4 + ph, "text-anchor": "end", "font-size": 10, fill: "#687385" }, "0");
    add("text", { x: L, y: H - 4, "font-size": 10, fill: "#687385" }, "−60 min");
    add("text", { x: W, y: H - 4, "text-anchor": "end", "font-size": 10, fill: "#687385" }, "now");
    for (let i = 0; i < n; i++) {
      let y = 4 + ph;
      for (const s of series) {
        const v = s.values[i];
        if (!v) continue;
        const h = (v / max) * ph;
        y -= h;
        const r = add("rect", { x: L + i * bw + 0.5, y: y, width: Math.max(bw - 1, 1), height: h, fill: s.color });
        const t = document.createElementNS(ns, "title");
        t.textContent = s.name + ": " + v + " (" + (n - 1 - i) + " min ago)";
        r.append(t);
      }
    }
    box.replaceChildren(svg, el("div", { class: "legend" },
      series.map((s) => el("span", {}, el("i", { style: "background:" + s.color }), s.name + " " + sum(s.values)))));
  }

  // ---- overview ----
  async function overview() {
    let d;
    try {
      d = await api("GET", "overview");
    } catch (e) {
      flash("Refresh failed: " + e.message, true);
      return;
    }
    $("#flash").hidden = true;
    $("#updated").textContent = "updated " + new Date(d.now).toLocaleTimeString();
    const s = d.activity.series;
    const card = (id, label, value, cls) =>
      el("div", { class: "card", id }, el("div", { class: "muted" }, label), el("div", { class: "big " + (cls || "") }, value));
    $("#totals").replaceChildren(
      card("t-pending", "Pending", d.pending),
      card("t-dead", "Dead letters", d.dead_letters, d.dead_letters > 0 ? "failed" : ""),
      card("t-429", "HubSpot 429s, last hour", sum(s.hubspot_429), sum(s.hubspot_429) > 0 ? "failed" : ""),
      card("t-sig", "Webhook signature failures, last hour", sum(s.webhook_signature_failures), sum(s.webhook_signature_failures) > 0 ? "failed" : ""));
    const rows = d.queues.map((q) => el("tr", { "data-queue": q.direction + "/" + q.key },
      el("td", {}, q.direction), el("td", {}, q.key || "–"),
      el("td", { class: "n pending" }, q.counts.pending),
      el("td", { class: "n processing" }, q.counts.processing),
      el("td", { class: "n processed" }, q.counts.processed),
      el("td", { class: "n" }, q.counts.failed > 0
        ? el("a", { class: "failed", href: base + "/deadletters?direction=" + encodeURIComponent(q.direction) + "&key=" + encodeURIComponent(q.key) }, q.counts.failed)
        : "0"),
      el("td", { class: "n age" }, age(q.oldest_pending_age_seconds))));
    if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 7, class: "muted" }, "No events yet.")));
    $("#queues tbody").replaceChildren(...rows);

    const b = d.budget;
    if (b) {
      const pct = Math.min(100, Math.round((100 * b.used) / Math.max(1, b.limit)));
      $("#budget").replaceChildren(
        el("div", {}, "Window: ", el("b", { id: "b-used" }, b.used), " of " + b.limit + " calls per " + (b.window_ns / 1e9) + " s",
          b.booked > 0 ? ", " + b.booked + " booked ahead" : ""),
        el("div", { class: "meter" }, el("div", { class: pct >= 90 ? "hot" : "", style: "width:" + pct + "%" })),
        el("div", {}, "Today: " + b.calls_today + (b.daily_limit > 0 ? " of " + b.daily_limit : "") + " calls"),
        el("div", { class: b.paused_until ? "failed" : "" }, b.paused_until ? "Paused after a 429 until " + when(b.paused_until) : "Not paused"),
        el("div", { class: "muted" }, "Key " + b.key));
    } else {
      $("#budget").replaceChildren(el("p", { class: "muted" }, d.budget_error || "No shared budget in this process."));
    }
    $("#lasthour").replaceChildren(el("table", {}, el("tbody", {},
      [["Inbound processed", sum(s.processed_inbound)], ["Outbound processed", sum(s.processed_outbound)],
       ["HubSpot calls", sum(s.hubspot_calls)], ["HubSpot 429s", sum(s.hubspot_429)],
       ["Budget refusals (work released)", sum(s.budget_denied)], ["Webhook signature failures", sum(s.webhook_signature_failures)]]
        .map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", { class: "n" }, v))))));
    barChart($("#chart-throughput"), [
      { name: "inbound", color: "#3b6fd4", values: s.processed_inbound },
      { name: "outbound", color: "#ff7a59", values: s.processed_outbound }]);
    barChart($("#chart-calls"), [
      { name: "calls", color: "#2e9d5b", values: s.hubspot_calls.map((v, i) => Math.max(0, v - s.hubspot_429[i])) },
      { name: "429", color: "#c8363d", values: s.hubspot_429 }]);
  }

  // ---- dead letters ----
  let next = "";
  const selected = new Set();
  function filter() {
    return {
      direction: $("#f-direction").value, key: $("#f-key").value.trim(),
      object_type: $("#f-type").value.trim(), error: $("#f-error").value.trim(),
    };
  }
  function query(f, after) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(f)) if (v) p.set(k, v);
    if (after) p.set("after", after);
    return p.toString();
  }
  function updateButtons() {
    $("#retry-selected").disabled = selected.size === 0;
    $("#discard-selected").disabled = selected.size === 0;
    $("#count").textContent = selected.size ? selected.size + " selected" : "";
  }
  function dlRow(d) {
    const box = el("input", { type: "checkbox", class: "pick", "aria-label": "select " + d.id,
      onchange: (e) => { e.target.checked ? selected.add(d.id) : selected.delete(d.id); updateButtons(); } });
    const recordLink = d.direction === "outbound"
      ? el("a", { href: base + "/record?type=" + encodeURIComponent(d.object_type) + "&id=" + encodeURIComponent(d.record_id) }, d.record_id)
      : d.direction === "inbound"
        ? el("a", { href: base + "/record?type=" + encodeURIComponent(d.object_type) + "&hubspot_id=" + encodeURIComponent(d.record_id) }, d.record_id)
        : d.record_id;
    const details = el("details", {}, el("summary", {}, "payload"), el("pre", {}, JSON.stringify(d.payload, null, 2)));
    if (d.would_send) {
      const w = d.would_send;
      details.append(el("div", {}, el("b", {}, "Would send: "), w.action + " " + w.hubspot_type + (w.skipped ? " — " + w.skipped : "") + (w.error ? " — " + w.error : "")));
      if (w.properties) details.append(el("pre", { class: "would-send" }, JSON.stringify(w.properties, null, 2)));
    }
    return el("tr", { "data-id": d.id },
      el("td", {}, box),
      el("td", {}, el("div", {}, d.event_type + " · " + d.object_type), el("div", { class: "muted" }, d.key || "internal"), el("div", { class: "muted" }, when(d.last_modified_date))),
      el("td", {}, recordLink),
      el("td", {}, el("div", { class: "failed err" }, d.error_message), details),
      el("td", { class: "n" }, d.attempt),
      el("td", {}, el("button", { class: "retry-one", onclick: () => retry({ direction: d.direction, ids: [d.id] }) }, "Retry")));
  }
  async function loadDead(more) {
    const f = filter();
    if (!more) { next = ""; selected.clear(); updateButtons(); }
    let d;
    try {
      d = await api("GET", "deadletters?" + query(f, more ? next : ""));
    } catch (e) {
      flash(e.message, true);
      return;
    }
    const rows = d.dead_letters.map(dlRow);
    const tb = $("#dls tbody");
    if (more) tb.append(...rows);
    else tb.replaceChildren(...rows);
    if (!tb.children.length) tb.append(el("tr", { class: "empty" }, el("td", { colspan: 6, class: "muted" }, "No dead letters match.")));
    next = d.next || "";
    $("#more").hidden = !next;
    history.replaceState(null, "", "?" + query(f));
  }
  async function loadDiscarded() {
    let d;
    try {
      d = await api("GET", "discarded");
    } catch (e) {
      flash(e.message, true);
      return;
    }
    const rows = d.discarded.map((x) => el("tr", { "data-id": x.id },
      el("td", {}, when(x.discarded_date)),
      el("td", {}, x.direction + " · " + x.event_type + " · " + x.object_type, el("div", { class: "muted" }, x.key || "internal")),
      el("td", {}, x.record_id), el("td", { class: "reason" }, x.reason), el("td", { class: "muted" }, x.error_message)));
    if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 5, class: "muted" }, "Nothing discarded.")));
    $("#discarded tbody").replaceChildren(...rows);
  }
  async function retry(body) {
    try {
      const r = await api("POST", "deadletters/retry", body);
      flash("Re-queued " + r.requeued + " dead letter(s).");
    } catch (e) {
      flash("Retry failed: " + e.message, true);
    }
    await loadDead(false);
  }
  function deadLetters() {
    const p = new URLSearchParams(location.search);
    if (p.get("direction")) $("#f-direction").value = p.get("direction");
    $("#f-key").value = p.get("key") || "";
    $("#f-type").value = p.get("object_type") || "";
    $("#f-error").value = p.get("error") || "";
    $("#filter").addEventListener("submit", (e) => { e.preventDefault(); loadDead(false); });
    $("#more").addEventListener("click", () => loadDead(true));
    $("#select-all").addEventListener("change", (e) => {
      for (const b of document.querySelectorAll("#dls input.pick")) {
        b.checked = e.target.checked;
        const id = b.closest("tr").dataset.id;
        e.target.checked ? selected.add(id) : selected.delete(id);
      }
      updateButtons();
    });
    $("#retry-selected").addEventListener("click", () => retry({ direction: filter().direction, ids: [...selected] }));
    $("#retry-all").addEventListener("click", () => {
      const f = filter();
      const parts = Object.entries(f).filter(([, v]) => v).map(([k, v]) => k + " = " + v);
      $("#confirm-text").textContent = "Re-queue every dead letter matching " + parts.join(", ") + "? This cannot be undone.";
      $("#confirm").hidden = false;
    });
    $("#confirm-no").addEventListener("click", () => { $("#confirm").hidden = true; });
    $("#confirm-yes").addEventListener("click", () => {
      $("#confirm").hidden = true;
      const f = filter();
      retry({ direction: f.direction, all: true, key: f.key, object_type: f.object_type, error: f.error });
    });
    $("#discard-selected").addEventListener("click", async () => {
      const reason = $("#discard-reason").value.trim();
      if (!reason) { flash("Give a reason to discard: it is kept with the events.", true); $("#discard-reason").focus(); return; }
      try {
        const r = await api("POST", "deadletters/discard", { direction: filter().direction, ids: [...selected], reason });
        flash("Discarded " + r.discarded + " dead letter(s).");
        $("#discard-reason").value = "";
      } catch (e) {
        flash("Discard failed: " + e.message, true);
      }
      await loadDead(false);
      await loadDiscarded();
    });
    loadDead(false);
    loadDiscarded();
  }

  // ---- record ----
  let current = null;
  function eventRows(tb, evs) {
    const rows = evs.map((e) => el("tr", {},
      el("td", {}, when(e.created_date)),
      el("td", {}, e.event_type, e.payload ? el("details", {}, el("summary", {}, "payload"), el("pre", {}, JSON.stringify(e.payload, null, 2))) : null),
      el("td", { class: e.status }, e.status + (e.attempt ? " (" + e.attempt + ")" : "")),
      el("td", { class: "failed" }, e.error_message || "")));
    if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 4, class: "muted" }, "None kept.")));
    tb.replaceChildren(...rows);
  }
  function fieldRows(r, hs) {
    const seen = new Set();
    const rows = [];
    const fmt = (v) => (v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v));
    for (const m of r.mapping) {
      seen.add(m.Local);
      const local = r.fields ? fmt(r.fields[m.Local]) : "";
      const remote = hs ? fmt(hs.properties[m.HubSpot]) : "";
      const differ = hs && local !== remote;
      rows.push(el("tr", { class: differ ? "diff" : "", "data-field": m.Local },
        el("td", {}, m.Local), el("td", { class: "local" }, local), el("td", {}, m.HubSpot + (m.Direction ? " (" + m.Direction + ")" : "")),
        el("td", { class: "remote" }, hs ? remote : "–")));
    }
    for (const [k, v] of Object.entries(r.fields || {})) {
      if (seen.has(k)) continue;
      rows.push(el("tr", { "data-field": k }, el("td", {}, k), el("td", { class: "local" }, fmt(v)), el("td", { class: "muted" }, "not synced"), el("td", {}, "")));
    }
    $("#r-fields tbody").replaceChildren(...rows);
  }
  async function openRecord(p) {
    try {
      current = await api("GET", "record?" + p.toString());
    } catch (e) {
      $("#record").hidden = true;
      flash(e.message, true);
      return;
    }
    $("#flash").hidden = true;
    const r = current;
    $("#record").hidden = false;
    $("#r-title").textContent = r.object_type + " " + r.id + (r.found ? " · version " + r.version : " · not found locally (deleted?)");
    $("#r-link").replaceChildren(r.hubspot_id
      ? el("span", {}, "Linked to HubSpot " + r.hubspot_type + " ", el("b", { id: "r-hubspot-id" }, r.hubspot_id))
      : el("span", { class: "muted" }, "Not linked to HubSpot yet."));
    $("#r-read").disabled = !r.hubspot_id || !r.hubspot_configured;
    fieldRows(r, null);
    eventRows($("#r-inbound tbody"), r.inbound);
    eventRows($("#r-outbound tbody"), r.outbound);
    history.replaceState(null, "", "?type=" + encodeURIComponent(r.object_type) + "&id=" + encodeURIComponent(r.id));
  }
  function record() {
    const p = new URLSearchParams(location.search);
    if (p.get("type")) $("#r-type").value = p.get("type");
    $("#r-id").value = p.get("id") || "";
    $("#r-hsid").value = p.get("hubspot_id") || "";
    $("#lookup").addEventListener("submit", (e) => {
      e.preventDefault();
      const q = new URLSearchParams({ type: $("#r-type").value });
      if ($("#r-id").value.trim()) q.set("id", $("#r-id").value.trim());
      else q.set("hubspot_id", $("#r-hsid").value.trim());
      openRecord(q);
    });
    $("#r-read").addEventListener("click", async () => {
      if (!current) return;
      try {
        const hs = await api("POST", "record/hubspot?type=" + encodeURIComponent(current.object_type) + "&id=" + encodeURIComponent(current.id));
        fieldRows(current, hs);
        flash("Read HubSpot " + current.hubspot_type + " " + hs.hubspot_id + (hs.archived ? " (archived)" : "") + "; differences are highlighted.");
      } catch (e) {
        flash("HubSpot read failed: " + e.message, true);
      }
    });
    if (p.get("id") || p.get("hubspot_id")) openRecord(p);
  }

  const page = document.body.dataset.page;
  if (page === "overview") {
    const tick = async () => { await overview(); setTimeout(tick, 2000); };
    tick();
  } else if (page === "deadletters") {
    deadLetters();
  } else if (page === "record") {
    record();
  }
})();
