// harness HTML report: renders the embedded JSON lazily; no network, no libraries.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("harness-data").textContent);
  var targets = data.targets || [];
  var PAGE = 100; // documents rendered per "show more"
  var sideBySide = false;
  var sections = [];
  var current = -1;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // -- hazards ----------------------------------------------------------------------------
  var findings = data.findings || [];
  if (findings.length) {
    var box = document.getElementById("findings-box");
    var list = document.getElementById("findings");
    var FIRST = 5;
    findings.forEach(function (f, i) {
      var li = el("li");
      if (i >= FIRST) li.hidden = true;
      li.appendChild(el("span", "sev " + f.severity, f.severity));
      li.appendChild(el("strong", null, f.rule + (f.cluster ? " (" + f.cluster + ")" : "") + ": "));
      li.appendChild(document.createTextNode(f.message));
      if (f.members && f.members.length) {  // one cause: its findings behind a toggle
        var det = el("details", "members");
        det.appendChild(el("summary", null, "each of the " + f.members.length + " findings"));
        var ul = el("ul");
        f.members.forEach(function (m) {
          var item = el("li");
          item.appendChild(el("code", null, m.id));
          item.appendChild(document.createTextNode(" " + m.message));
          ul.appendChild(item);
        });
        det.appendChild(ul);
        li.appendChild(det);
      }
      list.appendChild(li);
    });
    if (findings.length > FIRST) {
      var all = el("button", "more", "show all " + findings.length + " findings");
      all.type = "button";
      all.addEventListener("click", function () {
        list.querySelectorAll("li[hidden]").forEach(function (li) { li.hidden = false; });
        all.hidden = true;
      });
      box.appendChild(all);
    }
    box.hidden = false;
  }

  // -- graph: actual size in a scrolling box (click: fit to the page), edge kinds toggled --
  function fitOnClick(box) { box.addEventListener("click", function () { box.classList.toggle("fit"); }); }
  document.querySelectorAll(".graph-box").forEach(fitOnClick);
  document.querySelectorAll(".edge-toggles input[data-kind]").forEach(function (box) {
    box.addEventListener("change", function () {
      document.querySelectorAll(".graph-box").forEach(function (g) {
        g.classList.toggle("hide-" + box.dataset.kind, !box.checked);
      });
    });
  });
  var wholeButton = document.getElementById("whole-graph");
  if (wholeButton) wholeButton.addEventListener("click", function () {
    var tpl = document.getElementById("whole-graph-svg");
    var first = document.querySelector(".graph-box");
    var box = el("div", first ? first.className.replace(/\bfit\b/, "") : "graph-box");
    box.appendChild(tpl.content.cloneNode(true));
    fitOnClick(box);
    wholeButton.parentNode.replaceWith(box);
  });

  // -- intra-line highlight: the part of a value that differs ---------------------------
  function split(a, b) {
    var p = 0;
    while (p < a.length && p < b.length && a[p] === b[p]) p++;
    var s = 0;
    while (s < a.length - p && s < b.length - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
    return [a.slice(0, p), a.slice(p, a.length - s), b.slice(p, b.length - s), a.slice(a.length - s)];
  }
  function marked(parent, text, mid, cls, pre, post) {
    if (pre) parent.appendChild(document.createTextNode(pre));
    if (mid) parent.appendChild(el("span", cls, mid));
    if (post) parent.appendChild(document.createTextNode(post));
    if (!pre && !mid && !post) parent.appendChild(document.createTextNode(text));
  }

  // -- what changes: each object once, its field changes, where ----------------------------
  var changes = data.changes || [];
  function fieldLine(f) {
    var div = el("div");
    div.appendChild(el("span", "path", f.path));
    div.appendChild(document.createTextNode(": "));
    if (f.lines) {
      f.lines.forEach(function (line) {
        var t = line.replace(/^\s\s/, "");
        div.appendChild(el("div", t[0] === "-" ? "v-old" : t[0] === "+" ? "v-new" : null, t));
      });
      return div;
    }
    if (f.text !== undefined) { div.appendChild(document.createTextNode(f.text)); return div; }
    var parts = split(f.before, f.after);
    var old = el("span", "v-old"); marked(old, f.before, parts[1], "hl-del", parts[0], parts[3]);
    var neu = el("span", "v-new"); marked(neu, f.after, parts[2], "hl-add", parts[0], parts[3]);
    div.appendChild(old);
    div.appendChild(document.createTextNode(" -> "));
    div.appendChild(neu);
    return div;
  }
  function changeItem(c) {
    var li = el("li", c.real ? "change" : "change moved");
    var head = el("div", "change-head");
    var opCls = c.op === "+" ? "op op-add" : c.op === "-" ? "op op-del" : "op op-chg";
    head.appendChild(el("span", opCls, c.op));
    head.appendChild(el("code", null, c.id));
    if (c.op !== "~" || !c.fields.length) head.appendChild(el("span", "muted", c.what));
    head.appendChild(el("span", "where", "in: " + c.places));
    li.appendChild(head);
    (c.also || []).forEach(function (a) {  // the same change, arrived another way
      li.appendChild(el("div", "where", "and in: " + a.places + ", " + a.what));
    });
    if (c.fields.length) {
      var box = el("div", "fieldlines");
      c.fields.forEach(function (f) { box.appendChild(fieldLine(f)); });
      if (c.more) box.appendChild(el("div", "muted", "... and " + c.more + " more fields (open the diff)"));
      li.appendChild(box);
    }
    var doc = c.ref[0] >= 0 && targets[c.ref[0]] ? targets[c.ref[0]].docs[c.ref[1]] : null;
    if (doc) {
      var open = el("button", "link", "diff");
      open.type = "button";
      var body = null;
      open.addEventListener("click", function () {
        if (body) { body.remove(); body = null; open.textContent = "diff"; return; }
        body = el("div", "body");
        body.appendChild(docBody(doc, c.fields.length > 0 && !c.more));
        li.appendChild(body);
        open.textContent = "hide diff";
      });
      head.appendChild(open);
    }
    return li;
  }
  if (changes.length) {
    var clist = document.getElementById("changes");
    var CHANGES_FIRST = 20;
    var real = changes.filter(function (c) { return c.real; }).length;
    document.getElementById("changes-title").textContent = real
      ? "What changes (" + real + (real === 1 ? " object" : " objects") + (changes.length > real ? ", then " + (changes.length - real) + " moves" : "") + ")"
      : "What moves (" + changes.length + ")";
    changes.slice(0, CHANGES_FIRST).forEach(function (c) { clist.appendChild(changeItem(c)); });
    if (changes.length > CHANGES_FIRST) {
      var rest = el("button", "more", "show all " + changes.length);
      rest.type = "button";
      rest.addEventListener("click", function () {
        changes.slice(CHANGES_FIRST).forEach(function (c) { clist.appendChild(changeItem(c)); });
        rest.remove();
      });
      document.getElementById("changes-box").appendChild(rest);
    }
    document.getElementById("changes-box").hidden = false;
  }

  // -- filter -----------------------------------------------------------------------------
  var KEYS = { target: 1, kind: 1, name: 1, cluster: 1, ns: 1, namespace: 1 };
  function parseFilter(text) {
    var terms = [];
    text.toLowerCase().split(/\s+/).forEach(function (word) {
      if (!word) return;
      var i = word.indexOf(":");
      var key = i > 0 ? word.slice(0, i) : "";
      if (key && KEYS[key]) terms.push({ key: key === "namespace" ? "ns" : key, value: word.slice(i + 1) });
      else terms.push({ key: "", value: word });
    });
    return terms;
  }
  function docMatches(d, terms) {
    for (var i = 0; i < terms.length; i++) {
      var t = terms[i];
      if (t.key === "kind" && d.kind.toLowerCase().indexOf(t.value) < 0) return false;
      if (t.key === "name" && d.name.toLowerCase().indexOf(t.value) < 0) return false;
      if (t.key === "ns" && d.namespace.toLowerCase().indexOf(t.value) < 0) return false;
    }
    return true;
  }
  function hasDocTerms(terms) {
    return terms.some(function (t) { return t.key === "kind" || t.key === "name" || t.key === "ns"; });
  }
  function targetMatches(t, terms) {
    for (var i = 0; i < terms.length; i++) {
      var term = terms[i];
      if (term.key === "target" && t.name.toLowerCase().indexOf(term.value) < 0) return false;
      if (term.key === "cluster" && (t.cluster || "paths").toLowerCase().indexOf(term.value) < 0) return false;
      if (term.key === "") {
        var hay = (t.name + " " + t.cluster + " " + t.kind).toLowerCase();
        if (hay.indexOf(term.value) < 0 && !t.docs.some(function (d) { return d.id.toLowerCase().indexOf(term.value) >= 0; })) return false;
      }
    }
    if (hasDocTerms(terms)) return t.docs.some(function (d) { return docMatches(d, terms); });
    return true;
  }
  var terms = [];
  function applyFilter() {
    terms = parseFilter(document.getElementById("filter").value);
    var shown = 0;
    sections.forEach(function (s) {
      var ok = targetMatches(s.t, terms);
      s.el.hidden = !ok;
      s.row.hidden = !ok;
      if (ok) shown++;
      if (s.rendered) { s.rendered = false; s.body.textContent = ""; if (s.el.open) renderSection(s); }
    });
    document.getElementById("shown").textContent = shown + " of " + sections.length + " targets";
  }

  // -- diffs --------------------------------------------------------------------------------
  function yamlLine(parent, text) {
    var m = /^(\s*(?:- )?)([^\s:#][^:]*?)(:)(\s.*|$)/.exec(text);
    if (m) {
      parent.appendChild(document.createTextNode(m[1]));
      parent.appendChild(el("span", "k", m[2]));
      parent.appendChild(document.createTextNode(m[3] + m[4]));
    } else if (/^\s*#/.test(text)) {
      parent.appendChild(el("span", "c", text));
    } else {
      parent.appendChild(document.createTextNode(text));
    }
  }
  // A run of removed lines followed by as many added ones: each pair is one line changed,
  // and the part that differs is highlighted.
  function pairs(lines) {
    var partner = {};
    var i = 0;
    while (i < lines.length) {
      if (lines[i][0] === "-" && lines[i].lastIndexOf("--- ", 0) !== 0) {
        var d = i; while (d < lines.length && lines[d][0] === "-") d++;
        var a = d; while (a < lines.length && lines[a][0] === "+" && lines[a].lastIndexOf("+++ ", 0) !== 0) a++;
        if (a - d === d - i) for (var k = 0; k < d - i; k++) { partner[i + k] = d + k; partner[d + k] = i + k; }
        i = a > d ? a : d;
      } else i++;
    }
    return partner;
  }
  function unified(diff) {
    var pre = el("pre", "diff");
    var lines = diff.replace(/\n$/, "").split("\n");
    var partner = pairs(lines);
    lines.forEach(function (line, n) {
      var c = line[0], cls = "l";
      if (line.lastIndexOf("--- ", 0) === 0 || line.lastIndexOf("+++ ", 0) === 0) cls += " f";
      else if (c === "@") cls += " h";
      else if (c === "+") cls += " a";
      else if (c === "-") cls += " d";
      var span = el("span", cls);
      if (partner[n] !== undefined && cls.indexOf(" f") < 0) {
        var other = lines[partner[n]].slice(1), mine = line.slice(1);
        var parts = c === "-" ? split(mine, other) : split(other, mine);
        span.appendChild(document.createTextNode(c));
        marked(span, mine, c === "-" ? parts[1] : parts[2], c === "-" ? "hl-del" : "hl-add", parts[0], parts[3]);
      } else if (c === "+" || c === "-" || c === " ") {
        if (cls.indexOf(" f") < 0) { span.appendChild(document.createTextNode(c)); yamlLine(span, line.slice(1)); }
        else span.textContent = line;
      } else span.textContent = line;
      pre.appendChild(span);
    });
    return pre;
  }
  function sideBySideTable(diff) {
    var table = el("table", "sbs");
    var rows = [], dels = [], adds = [];
    function flush() {
      var n = Math.max(dels.length, adds.length);
      for (var i = 0; i < n; i++) rows.push([dels[i], adds[i], dels[i] !== undefined ? "d" : "", adds[i] !== undefined ? "a" : ""]);
      dels = []; adds = [];
    }
    diff.replace(/\n$/, "").split("\n").forEach(function (line) {
      var c = line[0];
      if (line.lastIndexOf("--- ", 0) === 0 || line.lastIndexOf("+++ ", 0) === 0) return;
      if (c === "@") { flush(); rows.push([line, line, "h", "h"]); }
      else if (c === "-") dels.push(line.slice(1));
      else if (c === "+") adds.push(line.slice(1));
      else { flush(); rows.push([line.slice(1), line.slice(1), "", ""]); }
    });
    flush();
    rows.forEach(function (r) {
      var tr = el("tr");
      var left = el("td", r[2]); var right = el("td", r[3]);
      if (r[0] !== undefined) yamlLine(left, r[0]);
      if (r[1] !== undefined) yamlLine(right, r[1]);
      tr.appendChild(left); tr.appendChild(right);
      table.appendChild(tr);
    });
    return table;
  }
  function docBody(d, noFields) {
    var frag = document.createDocumentFragment();
    if (d.fields && d.fields.length && !noFields) frag.appendChild(el("pre", "fields", d.fields.join("\n")));
    if (d.diff) frag.appendChild(sideBySide ? sideBySideTable(d.diff) : unified(d.diff));
    if (d.text) {
      var pre = el("pre", "diff");
      d.text.split("\n").forEach(function (line) {
        var span = el("span", "l " + (d.op === "+" ? "a" : "d"));
        span.appendChild(document.createTextNode(d.op));
        yamlLine(span, line);
        pre.appendChild(span);
      });
      frag.appendChild(pre);
    }
    if (!frag.childNodes.length) frag.appendChild(el("p", "muted", "no textual difference"));
    return frag;
  }
  function docEntry(d) {
    var det = el("details", "doc");
    var sum = el("summary");
    var opCls = d.op === "+" ? "op op-add" : d.op === "-" ? "op op-del" : "op op-chg";
    sum.appendChild(el("span", opCls, d.op));
    sum.appendChild(el("code", null, d.id));
    sum.appendChild(document.createTextNode(" \u2014 " + d.title));
    det.appendChild(sum);
    det.addEventListener("toggle", function () {
      if (det.open && !det.dataset.done) { det.dataset.done = "1"; det.appendChild(docBody(d)); }
    });
    return det;
  }

  // -- sections -----------------------------------------------------------------------------
  function renderSection(s) {
    s.rendered = true;
    var t = s.t;
    if (t.error) s.body.appendChild(el("div", "error-msg", t.error));
    var docs = hasDocTerms(terms) ? t.docs.filter(function (d) { return docMatches(d, terms); }) : t.docs;
    if (!docs.length && !t.error) s.body.appendChild(el("p", "muted", t.status === "ok" ? "renders cleanly" : "no documents differ"));
    var shown = 0;
    function more() {
      var end = Math.min(docs.length, shown + PAGE);
      var frag = document.createDocumentFragment();
      for (; shown < end; shown++) frag.appendChild(docEntry(docs[shown]));
      s.body.insertBefore(frag, button);
      button.hidden = shown >= docs.length;
      button.textContent = "show " + Math.min(PAGE, docs.length - shown) + " more of " + (docs.length - shown);
    }
    var button = el("button", "more");
    button.type = "button";
    button.addEventListener("click", more);
    s.body.appendChild(button);
    more();
  }
  function countsText(t) {
    var before = t.before === null ? "-" : t.before, after = t.after === null ? "-" : t.after;
    return before + " -> " + after + " documents (-" + t.counts[1] + ", +" + t.counts[0] + ", ~" + t.counts[2] + ")";
  }
  var tbody = document.querySelector("#targets tbody");
  var holder = document.getElementById("sections");
  var frag = document.createDocumentFragment();
  var rows = document.createDocumentFragment();
  targets.forEach(function (t, i) {
    var det = el("details", "target");
    det.id = "t" + i;
    det.dataset.target = t.name;
    var sum = el("summary");
    sum.appendChild(el("code", null, t.name));
    sum.appendChild(document.createTextNode(": " + (t.error ? "render error" : countsText(t))));
    det.appendChild(sum);
    var body = el("div", "body");
    det.appendChild(body);
    var s = { t: t, el: det, body: body, rendered: false, row: null };
    det.addEventListener("toggle", function () { if (det.open && !s.rendered) renderSection(s); });
    var tr = el("tr", "status-" + t.status);
    tr.appendChild(el("td", null, t.cluster || "paths"));
    var name = el("td"); name.appendChild(el("code", null, t.name)); tr.appendChild(name);
    tr.appendChild(el("td", null, t.kind));
    var docsCell = t.error ? "render error" : (t.before === null ? "-" : t.before) + " -> " + (t.after === null ? "-" : t.after);
    if (t.status === "added") docsCell += " (new)";
    if (t.status === "removed") docsCell += " (removed)";
    tr.appendChild(el("td", null, docsCell));
    tr.appendChild(el("td", "n", "+" + t.counts[0]));
    tr.appendChild(el("td", "n", "-" + t.counts[1]));
    tr.appendChild(el("td", "n", "~" + t.counts[2]));
    tr.addEventListener("click", function () { det.open = true; select(sections.indexOf(s)); det.scrollIntoView({ block: "start" }); });
    s.row = tr;
    sections.push(s);
    frag.appendChild(det);
    rows.appendChild(tr);
  });
  tbody.appendChild(rows);
  holder.appendChild(frag);
  if (!targets.length) holder.appendChild(el("p", "muted", "No target differs."));

  // -- keyboard -----------------------------------------------------------------------------
  function visible() { return sections.filter(function (s) { return !s.el.hidden; }); }
  function select(i) {
    if (current >= 0 && sections[current]) sections[current].el.classList.remove("current");
    current = i;
    if (i >= 0 && sections[i]) {
      sections[i].el.classList.add("current");
      sections[i].el.querySelector("summary").focus({ preventScroll: true });
      sections[i].el.scrollIntoView({ block: "nearest" });
    }
  }
  function step(delta) {
    var vis = visible();
    if (!vis.length) return;
    var at = vis.indexOf(sections[current]);
    var next = at < 0 ? (delta > 0 ? 0 : vis.length - 1) : Math.min(vis.length - 1, Math.max(0, at + delta));
    select(sections.indexOf(vis[next]));
  }
  var filter = document.getElementById("filter");
  filter.addEventListener("input", applyFilter);
  document.getElementById("sbs").addEventListener("change", function (e) {
    sideBySide = e.target.checked;
    sections.forEach(function (s) {
      s.el.querySelectorAll("details.doc[open]").forEach(function (d) {
        d.dataset.done = ""; while (d.childNodes.length > 1) d.removeChild(d.lastChild);
        d.open = false; d.open = true;
      });
    });
  });
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target === filter) {
      if (e.key === "Escape") { filter.value = ""; applyFilter(); filter.blur(); }
      else if (e.key === "Enter") { e.preventDefault(); filter.blur(); step(1); }
      return;
    }
    if (e.key === "/") { e.preventDefault(); filter.focus(); }
    else if (e.key === "j") step(1);
    else if (e.key === "k") step(-1);
    else if ((e.key === "o" || e.key === "Enter") && sections[current]) { e.preventDefault(); var d = sections[current].el; d.open = !d.open; }
    else if (e.key === "e" && sections[current]) {
      var sec = sections[current].el; sec.open = true;
      sec.querySelectorAll("details.doc").forEach(function (d) { d.open = true; });
    }
    else if (e.key === "s") { var box = document.getElementById("sbs"); box.checked = !box.checked; box.dispatchEvent(new Event("change")); }
    else if (e.key === "Escape") { filter.value = ""; applyFilter(); }
  });
  applyFilter();
  if (targets.length === 1) { sections[0].el.open = true; }
})();
