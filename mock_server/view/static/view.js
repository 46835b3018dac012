// The live view of platform-mock: what clients did to the mock, as it happens.
//
// It reads the admin API with the admin token, which the person gives once: it is kept in
// this tab's sessionStorage and sent as a bearer header, never in a URL. It follows the
// admin API's event stream with fetch() (an EventSource cannot send a header). Every text
// is inserted as a text node, never as markup: the server has escaped what a client sent
// (control and bidi characters shown as escapes) and hidden every credential.
"use strict";

const ADMIN = "/__admin";
const TOKEN_KEY = "platform-mock.admin-token";
const PAGE = 100; // requests fetched at once
const MAX_ROWS = 500; // requests kept on the page; older ones are a click away
const RECORDS = 50;
const HEADER_BUTTONS = ["clear-journal", "reset", "download", "forget"];
const PERMALINK = /^#request-([0-9]+)$/; // a request's own address: #request-SEQ

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || "",
  tab: "requests",
  report: null,
  rows: [], // the requests shown, newest first
  next: null, // the `before` of the older page, null when none is left
  selected: null, // seq of the request opened
  kind: "users",
  query: "",
  offset: 0,
  total: 0,
  following: null, // the AbortController of the event stream
  journal: null, // what the journal holds, as the last page said
  sort: { key: "order", descending: true }, // the requests' order: newest first
  timers: {},
};

// -- the page's own little DOM kit ------------------------------------------------------

const $ = (id) => document.getElementById(id);

function el(tag, options = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = String(value);
    else if (key === "on") for (const [event, handler] of Object.entries(value)) node.addEventListener(event, handler);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
  return node;
}

function clear(node) {
  node.replaceChildren();
  return node;
}

function later(name, delay, action) {
  clearTimeout(state.timers[name]);
  state.timers[name] = setTimeout(action, delay);
}

// -- the admin API ------------------------------------------------------------------------

class Refused extends Error {}

async function call(method, path, { query, body } = {}) {
  const url = new URL(ADMIN + path, location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== "" && value !== null && value !== undefined) url.searchParams.set(key, value);
  }
  const headers = { Authorization: `Bearer ${state.token}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
    credentials: "omit",
  });
  const data = await response.json().catch(() => null);
  if (response.status === 401 || response.status === 403) {
    stop();
    ask(data && data.message ? data.message : "This token does not open the admin API.");
    throw new Refused(String(response.status));
  }
  if (!response.ok) throw new Error(data && data.message ? data.message : `HTTP ${response.status}`);
  return data;
}

function failed(error) {
  if (!(error instanceof Refused)) console.warn("platform-mock live view:", error.message);
}

// -- the token ----------------------------------------------------------------------------

function ask(message) {
  $("main").hidden = true;
  for (const id of HEADER_BUTTONS) $(id).hidden = true;
  $("gate").hidden = false;
  $("gate-error").textContent = message || "";
  $("token").value = "";
  $("token").focus();
}

async function open(token) {
  state.token = token;
  try {
    await call("GET", "/world");
  } catch (error) {
    if (!(error instanceof Refused)) ask(`The mock did not answer: ${error.message}`);
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  $("gate").hidden = true;
  $("main").hidden = false;
  for (const id of HEADER_BUTTONS) $(id).hidden = false;
  await refreshAll();
  follow();
  openLinked();
}

// -- the event stream ---------------------------------------------------------------------

function stop() {
  if (state.following) state.following.abort();
  state.following = null;
  setLive(false);
}

function setLive(on) {
  const live = $("live");
  live.textContent = on ? "live" : "offline";
  live.className = on ? "live on" : "live off";
}

async function follow() {
  stop();
  const controller = new AbortController();
  state.following = controller;
  let wait = 250;
  while (state.following === controller) {
    try {
      const response = await fetch(ADMIN + "/events", {
        headers: { Authorization: `Bearer ${state.token}` },
        cache: "no-store",
        credentials: "omit",
        signal: controller.signal,
      });
      if (response.status === 401 || response.status === 403) {
        ask("The mock no longer takes this token.");
        return;
      }
      if (response.ok && response.body) {
        wait = 250;
        await readEvents(response.body, controller);
      }
    } catch (error) {
      if (controller.signal.aborted) return;
    }
    if (state.following !== controller) return;
    setLive(false);
    await new Promise((resolve) => setTimeout(resolve, wait));
    wait = Math.min(wait * 2, 5000);
  }
}

async function readEvents(body, controller) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let first = true;
  while (state.following === controller) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split("\n").filter((line) => line.startsWith("data: ")).map((line) => line.slice(6)).join("\n");
      if (!data) continue; // a comment: the stream is alive
      const event = JSON.parse(data);
      if (event.type === "hello") {
        setLive(true);
        if (!first) refreshAll(); // reconnected: what happened meanwhile
      }
      first = false;
      handle(event);
    }
  }
}

function handle(event) {
  switch (event.type) {
    case "request":
      arrived(event.request);
      if (event.request.fault) later("faults", 100, () => refreshFaults().catch(failed));
      later("coverage", 500, () => state.tab === "coverage" && refreshCoverage().catch(failed));
      break;
    case "reset":
    case "journal":
    case "gap":
      refreshAll();
      break;
    case "world":
      later("world", 100, () => refreshWorld().catch(failed));
      break;
    case "faults":
      later("faults", 100, () => refreshFaults().catch(failed));
      break;
    case "reload":
      showReload(event);
      later("world", 100, () => refreshWorld().catch(failed));
      break;
    default:
      break;
  }
}

async function refreshAll() {
  try {
    await Promise.all([refreshReport(), refreshRequests(), refreshWorld(), refreshFaults()]);
  } catch (error) {
    failed(error);
  }
}

// -- requests -----------------------------------------------------------------------------

function filters() {
  return {
    operationId: $("f-operation").value,
    status: $("f-status").value,
    violation: $("f-violation").value,
    test: $("f-test").value.trim(),
    q: $("f-text").value.trim(),
  };
}

function filtered() {
  return Object.values(filters()).some((value) => value !== "");
}

async function refreshRequests() {
  const page = await call("GET", "/requests", { query: { ...filters(), limit: PAGE } });
  state.rows = page.data;
  state.next = page.next;
  renderRequests();
  journalLine(page);
}

async function olderRequests() {
  const last = state.rows[state.rows.length - 1];
  const before = state.next !== null ? state.next : last && last.order;
  if (!before) return;
  const page = await call("GET", "/requests", { query: { ...filters(), limit: PAGE, before } });
  state.rows = state.rows.concat(page.data);
  state.next = page.next;
  renderRequests();
}

function journalLine(page) {
  state.journal = page;
  const dropped = page.dropped ? `, ${page.dropped} dropped to stay within its budget` : "";
  $("journal-line").textContent = `${page.held} request(s) held, ${Math.round(page.heldBytes / 1024)} KiB of ${Math.round(page.budgetBytes / 1048576)} MiB${dropped}`;
}

function arrived(row) {
  if (filtered()) {
    // The server applies the filters (the text ones read the body, which a line has not).
    later("requests", 200, () => refreshRequests().catch(failed));
    return;
  }
  if (state.rows.some((shown) => shown.seq === row.seq)) return;
  state.rows.unshift(row);
  if (state.rows.length > MAX_ROWS) {
    state.rows.length = MAX_ROWS;
    state.next = state.rows[MAX_ROWS - 1].order;
  }
  const body = $("requests").tBodies[0];
  if (sortedByArrival()) {
    body.prepend(requestRow(row, true));
    while (body.rows.length > MAX_ROWS) body.deleteRow(-1);
  } else {
    renderRequests();
  }
  $("requests-empty").hidden = true;
  $("older").hidden = state.next === null;
  if (state.journal) journalLine({ ...state.journal, held: state.journal.held + 1 });
  later("journal-line", 1000, () => call("GET", "/requests", { query: { limit: 1 } }).then(journalLine).catch(failed));
}

function statusClass(status) {
  return status === null ? "s0" : `s${String(status)[0]}`;
}

function clock(iso) {
  return iso.slice(11, 23);
}

function requestRow(row, fresh) {
  const contract = el("td", { class: "contract" });
  if (row.violation) {
    contract.append(el("span", { class: row.expected ? "tag" : "tag bad", text: row.expected ? "broke it (expected)" : "broke it" }), row.rules.join(", "));
    contract.title = row.rules.join("\n");
  } else {
    contract.append(el("span", { class: "tag ok", text: "kept" }));
  }
  if (row.fault) contract.append(el("span", { class: "tag fault", text: `fault ${row.fault}` }));
  const status = row.status === null ? (row.dropped ? "dropped" : "unanswered") : row.status;
  const target = row.query ? `${row.path}?${row.query}` : row.path;
  const tr = el(
    "tr",
    {
      class: [row.violation && !row.expected ? "broke" : "", fresh ? "fresh" : "", row.seq === state.selected ? "selected" : ""].join(" ").trim(),
      "data-seq": row.seq,
      on: { click: () => openRequest(row.seq) },
    },
    el("td", { class: "time", text: clock(row.time), title: row.time }),
    el("td", { text: row.method }),
    el("td", { class: "path", text: target, title: target }),
    el("td", { class: `status ${statusClass(row.status)}`, text: status, title: row.code ? `code ${row.code}` : "" }),
    contract,
    el("td", { class: "op", text: row.operationId || "(no operation)", title: row.operationId || "" }),
    el("td", { text: row.durationMs.toFixed(1) }),
    el("td", { class: "test", text: row.test || "", title: row.test || "" }),
  );
  return tr;
}

function sortedByArrival() {
  return state.sort.key === "order" && state.sort.descending;
}

// The value a column sorts by: numbers as numbers (a dropped request's status last), texts
// as the page shows them.
function sortValue(row, key) {
  const value = row[key];
  if (value === null || value === undefined) return key === "status" ? Infinity : "";
  return typeof value === "boolean" ? Number(value) : value;
}

function sortedRows() {
  const { key, descending } = state.sort;
  const sign = descending ? -1 : 1;
  return [...state.rows].sort((a, b) => {
    const [x, y] = [sortValue(a, key), sortValue(b, key)];
    const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return sign * (order || a.order - b.order);
  });
}

function sortBy(key) {
  const same = state.sort.key === key;
  // A first click sorts up, but time and ms, which a person reads newest and slowest first.
  state.sort = { key, descending: same ? !state.sort.descending : key === "order" || key === "durationMs" };
  renderRequests();
}

function renderRequests() {
  for (const th of document.querySelectorAll("#requests th[data-sort]")) {
    const sorted = th.dataset.sort === state.sort.key;
    th.setAttribute("aria-sort", sorted ? (state.sort.descending ? "descending" : "ascending") : "none");
  }
  const body = clear($("requests").tBodies[0]);
  for (const row of sortedRows()) body.append(requestRow(row, false));
  $("requests-empty").hidden = state.rows.length > 0 || filtered();
  $("older").hidden = state.next === null;
  // A search looks at a bounded part of the journal per page: say there is more to look at.
  $("older").textContent = filtered() ? "Search older requests" : "Older requests";
}

async function openRequest(seq) {
  state.selected = seq;
  if (location.hash !== `#request-${seq}`) history.replaceState(null, "", `#request-${seq}`);
  for (const tr of $("requests").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.seq === String(seq));
  const panel = $("detail");
  let opened;
  try {
    opened = await call("GET", `/requests/${seq}`);
  } catch (error) {
    failed(error);
    clear(panel).append(el("p", { class: "error", text: error.message }));
    panel.hidden = false;
    return;
  }
  if (state.selected !== seq) return;
  renderDetail(panel, opened);
}

// The request a permalink names (#request-SEQ), opened once the page has its token.
function openLinked() {
  const linked = PERMALINK.exec(location.hash);
  if (linked && Number(linked[1]) !== state.selected) openRequest(Number(linked[1]));
}

function closeRequest() {
  $("detail").hidden = true;
  state.selected = null;
  history.replaceState(null, "", location.pathname + location.search);
}

async function copyCurl(button, line) {
  try {
    await navigator.clipboard.writeText(line);
    button.textContent = "Copied";
  } catch (error) {
    button.textContent = "Copy refused: select the line below";
  }
  later("copied", 2000, () => { button.textContent = "Copy as curl"; });
}

function headersTable(pairs) {
  if (!pairs.length) return el("p", { class: "muted", text: "none kept" });
  return el("table", { class: "kv" }, el("tbody", {}, ...pairs.map(([name, value]) => el("tr", {}, el("td", { text: name }), el("td", { class: "mono", text: value })))));
}

function renderDetail(panel, opened) {
  clear(panel);
  const status = opened.status === null ? (opened.dropped ? "dropped" : "unanswered") : String(opened.status);
  const target = opened.query ? `${opened.path}?${opened.query}` : opened.path;
  panel.append(
    el("button", { class: "close", type: "button", text: "Close", on: { click: closeRequest } }),
    el("h3", { text: `#${opened.seq} ${opened.method} ${target}` }),
    el(
      "p",
      { class: "actions" },
      el("a", { class: "permalink", href: `#request-${opened.seq}`, title: "this request's own address: opens it on load" }, "permalink"),
      opened.docs ? el("a", { class: "docs", href: opened.docs, target: "_blank", rel: "noopener noreferrer" }, `${opened.operationId} in the docs`) : null,
      el("button", { class: "copy-curl", type: "button", text: "Copy as curl", on: { click: (event) => copyCurl(event.currentTarget, opened.curl) } }),
    ),
    el(
      "table",
      { class: "kv" },
      el(
        "tbody",
        {},
        ...[
          ["answered", `${status}${opened.code ? ` (code ${opened.code})` : ""} in ${opened.durationMs.toFixed(1)} ms`],
          ["operation", opened.operationId || "(no operation took this path)"],
          ["caller", opened.caller || "(no token)"],
          ["test", opened.test || ""],
          ["fault", opened.fault || ""],
          ["message", opened.message || ""],
        ]
          .filter(([, value]) => value)
          .map(([name, value]) => el("tr", {}, el("td", { text: name }), el("td", { text: value }))),
      ),
    ),
  );
  if (opened.broken.length) {
    panel.append(el("h3", { class: "mark", text: opened.expected ? "Rules broken (on purpose: the test expects it)" : "Rules broken" }));
    for (const rule of opened.broken) {
      const box = el("div", { class: "rule" }, el("div", { class: "name", text: rule.rule }));
      for (const violation of rule.violations) {
        const where = [violation.location, violation.field].filter(Boolean).join(" ");
        box.append(el("div", { text: where ? `${where}: ${violation.message}` : violation.message }));
        if (violation.hint) box.append(el("div", { class: "hint", text: `→ ${violation.hint}` }));
      }
      panel.append(box);
    }
  }
  panel.append(
    el("h3", { text: "As curl ($PLATFORM_MOCK_URL and $PLATFORM_MOCK_TOKEN from your shell)" }),
    el("pre", { class: "curl", text: opened.curl }),
    el("h3", { text: "Request headers" }),
    headersTable(opened.request.headers),
    opened.request.headersDropped ? el("p", { class: "muted", text: `and ${opened.request.headersDropped} more, not kept: an entry keeps 8 KiB of headers` }) : null,
    el("h3", { text: "Request body" }),
    el("pre", { class: "request-body", text: opened.request.body || "(none)" }),
    el("h3", { text: "Response headers" }),
    headersTable(opened.response.headers),
    el("h3", { text: "Response body" }),
    el("pre", { class: "response-body", text: opened.response.body || "(none)" }),
  );
  panel.hidden = false;
}

// -- coverage -----------------------------------------------------------------------------

async function refreshReport() {
  state.report = await call("GET", "/journal/report");
  fillOperations();
  renderCoverage();
}

const refreshCoverage = refreshReport;

function operationIds() {
  return state.report ? Object.keys(state.report.operations).filter((id) => state.report.operations[id].coverage) : [];
}

function fillOperations() {
  for (const id of ["f-operation", "a-operation"]) {
    const select = $(id);
    const chosen = select.value;
    const first = id === "f-operation" ? [el("option", { value: "", text: "any" })] : [];
    clear(select).append(...first, ...operationIds().map((op) => el("option", { value: op, text: op })));
    if ([...select.options].some((option) => option.value === chosen)) select.value = chosen;
  }
  fillStatuses();
}

function renderCoverage() {
  const report = state.report;
  const summary = report.summary;
  const figures = summary.coverage;
  $("coverage-summary").textContent =
    `${summary.requests} request(s), ${summary.violations} broke the contract` +
    (summary.expectedViolations ? ` (and ${summary.expectedViolations} on purpose)` : "") +
    `; ${summary.operationsCalled} of ${summary.operationsInContract} operations called; contract coverage ${figures.percent}% (${figures.covered} of ${figures.total}: ` +
    "the documented statuses returned, query parameters sent, enum values sent). Statuses in green were returned. " +
    `Coverage follows the journal: it counts the requests since the journal was last cleared (${report.held} held` +
    (report.dropped ? `, and ${report.dropped} dropped to stay within its budget` : "") +
    "); the downloaded report counts every request since the mock started. Latency is over the requests held.";
  const body = clear($("coverage").tBodies[0]);
  for (const [op, usage] of Object.entries(report.operations)) {
    const coverage = usage.coverage;
    const meter = coverage ? el("span", { class: "meter" }, el("span")) : null;
    if (meter) meter.firstChild.style.width = `${coverage.percent}%`;
    const statuses = el("td", { class: "statuses" });
    if (coverage) {
      for (const status of coverage.statusesReturned) statuses.append(el("span", { class: "tag ok", text: status, title: "returned" }));
      for (const status of coverage.statusesNotReturned) statuses.append(el("span", { class: "tag", text: status, title: "never returned" }));
    }
    const never = [];
    if (coverage) {
      if (!usage.calls) never.push("never called");
      else {
        if (coverage.parametersNotSent.length) never.push(`parameters ${coverage.parametersNotSent.join(", ")}`);
        for (const [name, values] of Object.entries(coverage.enumValuesNotSent)) never.push(`${name}=${values.join(" | ")}`);
      }
    }
    const rules = el("td", { class: "rules" });
    for (const group of usage.violationGroups) rules.append(el("div", { text: `${group.rule} ×${group.count}` }));
    const took = report.latency[op];
    const latency = took ? `${took.p50Ms.toFixed(1)} / ${took.p90Ms.toFixed(1)} / ${took.maxMs.toFixed(1)}` : "";
    body.append(
      el(
        "tr",
        {},
        el("td", { text: op }),
        el("td", { text: usage.calls }),
        el("td", { class: usage.violations ? "mark" : "", text: usage.violations }),
        el("td", { class: "bar-cell" }, coverage ? `${coverage.percent}%` : "", meter),
        statuses,
        el("td", { class: "never", text: never.join("; ") }),
        rules,
        el("td", { class: "latency mono", text: latency, title: took ? `${took.count} request(s) held` : "" }),
      ),
    );
  }
}

async function download() {
  const report = await call("GET", "/report");
  const blob = new Blob([JSON.stringify(report, null, 2)], { type: "application/json" });
  const link = el("a", { href: URL.createObjectURL(blob), download: "contract-report.json" });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

// -- the world ----------------------------------------------------------------------------

async function refreshWorld() {
  const world = await call("GET", "/world");
  $("world-line").textContent = `tenant ${world.tenant || "(none)"}, seed ${world.seed}`;
  const kinds = clear($("kinds"));
  for (const [kind, count] of Object.entries(world.counts)) {
    kinds.append(
      el("button", {
        type: "button",
        "aria-pressed": kind === state.kind ? "true" : "false",
        text: `${kind} ${count}`,
        on: { click: () => { state.kind = kind; state.offset = 0; refreshWorld().catch(failed); } },
      }),
    );
  }
  if (world.reload) showReload(world.reload, true);
  await refreshRecords();
}

async function refreshRecords() {
  const found = await call("GET", "/records", { query: { kind: state.kind, q: state.query, offset: state.offset, limit: RECORDS } });
  state.total = found.total;
  const list = clear($("records"));
  for (const record of found.data) {
    const item = el("li", { title: record.id }, record.title, el("span", { class: "id", text: record.id }));
    item.addEventListener("click", () => {
      for (const other of list.children) other.classList.remove("selected");
      item.classList.add("selected");
      $("record").textContent = record.record;
      $("record").hidden = false;
    });
    list.append(item);
  }
  const last = Math.min(state.offset + found.data.length, found.total);
  $("records-line").textContent = found.total ? `${state.offset + 1}–${last} of ${found.total}` : "none found";
  $("w-prev").disabled = state.offset === 0;
  $("w-next").disabled = last >= found.total;
}

// -- faults -------------------------------------------------------------------------------

function documentedStatuses(op) {
  const usage = state.report && state.report.operations[op];
  if (!usage || !usage.coverage) return [];
  return [...usage.coverage.statusesReturned, ...usage.coverage.statusesNotReturned].filter((status) => status >= 400).sort((a, b) => a - b);
}

function fillStatuses() {
  const select = $("a-status");
  const chosen = select.value;
  clear(select).append(...documentedStatuses($("a-operation").value).map((status) => el("option", { value: status, text: status })));
  if ([...select.options].some((option) => option.value === chosen)) select.value = chosen;
  else if ([...select.options].some((option) => option.value === "503")) select.value = "503";
}

async function refreshFaults() {
  const faults = (await call("GET", "/faults")).data;
  $("fault-count").textContent = faults.length ? String(faults.length) : "";
  $("faults-empty").hidden = faults.length > 0;
  $("faults-clear").hidden = faults.length === 0;
  const body = clear($("faults").tBodies[0]);
  for (const fault of faults) {
    const effect = fault.drop ? "drop the connection" : [fault.status !== null ? `status ${fault.status}` : "", fault.delayMs ? `delay ${fault.delayMs} ms` : ""].filter(Boolean).join(", ");
    body.append(
      el(
        "tr",
        { "data-fault": fault.id },
        el("td", { text: fault.id }),
        el("td", { text: fault.operationId }),
        el("td", { text: effect }),
        el("td", { class: "mono", text: Object.keys(fault.match).length ? JSON.stringify(fault.match) : "any request" }),
        el("td", { text: fault.after }),
        el("td", { text: fault.times === null ? "always" : fault.times }),
        el("td", { text: fault.applied }),
        el("td", {}, el("button", { type: "button", text: "Remove", on: { click: () => removeFault(fault.id) } })),
      ),
    );
  }
}

async function armFault(event) {
  event.preventDefault();
  $("fault-error").textContent = "";
  const effect = $("a-effect").value;
  const body = { operationId: $("a-operation").value, after: Number($("a-after").value || 0) };
  const times = $("a-times").value.trim();
  body.times = times === "" ? null : Number(times);
  if (effect === "status") body.status = Number($("a-status").value);
  if (effect === "delay") body.delayMs = Number($("a-delay").value || 0);
  if (effect === "drop") body.drop = true;
  const match = $("a-match").value.trim();
  try {
    if (match) body.match = JSON.parse(match);
  } catch (error) {
    $("fault-error").textContent = `Match is not JSON: ${error.message}`;
    return;
  }
  try {
    await call("POST", "/faults", { body });
    $("a-match").value = "";
    await refreshFaults();
  } catch (error) {
    if (!(error instanceof Refused)) $("fault-error").textContent = error.message;
  }
}

async function removeFault(id) {
  await call("DELETE", `/faults/${encodeURIComponent(id)}`).catch(failed);
  await refreshFaults().catch(failed);
}

// -- the fixture watcher ------------------------------------------------------------------

function showReload(event, quiet) {
  const banner = $("reload");
  // An old success is no news: the banner stays as it is (a fresh "reloaded" included, which
  // the world's refresh right after it would otherwise empty).
  if (quiet && event.reloaded && event.watching !== false) return;
  clear(banner);
  if (event.watching === false) {
    banner.className = "banner bad";
    banner.append(`The fixture watcher stopped at ${clock(event.time)}: edits are no longer loaded.`);
    banner.append(el("ul", {}, ...event.errors.map((e) => el("li", { class: "mono", text: e.message }))));
  } else if (event.reloaded) {
    banner.className = "banner ok";
    banner.append(`Fixtures reloaded at ${clock(event.time)} (${event.files.join(", ")}): the world is new, the journal kept.`);
    later("reload-banner", 6000, () => { banner.hidden = true; });
  } else {
    banner.className = "banner bad";
    banner.append(`The edit of ${event.files.join(", ")} at ${clock(event.time)} was not loaded; the world is as it was. Every problem:`);
    banner.append(el("ul", {}, ...event.errors.map((e) => el("li", { class: "mono", text: `${e.file}:${e.line === null ? "?" : e.line}: ${e.field ? `${e.field}: ` : ""}${e.message}` }))));
  }
  banner.hidden = false;
}

// -- tabs and controls --------------------------------------------------------------------

function showTab(name) {
  state.tab = name;
  for (const button of document.querySelectorAll(".tabs button")) button.setAttribute("aria-selected", button.dataset.tab === name ? "true" : "false");
  for (const section of document.querySelectorAll(".tab")) section.hidden = section.id !== `tab-${name}`;
  if (name === "coverage") refreshCoverage().catch(failed);
}

function wire() {
  $("gate-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    if (token) open(token);
  });
  $("forget").addEventListener("click", () => {
    stop();
    sessionStorage.removeItem(TOKEN_KEY);
    state.token = "";
    ask("");
  });
  $("reset").addEventListener("click", async () => {
    if (!window.confirm("Reset the world, the journal and the faults?")) return;
    await call("POST", "/reset").catch(failed);
    await refreshAll();
  });
  $("download").addEventListener("click", () => download().catch(failed));
  $("clear-journal").addEventListener("click", async () => {
    await call("DELETE", "/journal").catch(failed);
    await refreshAll();
  });
  for (const th of document.querySelectorAll("#requests th[data-sort]")) {
    th.addEventListener("click", () => sortBy(th.dataset.sort));
    th.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sortBy(th.dataset.sort); } });
  }
  window.addEventListener("hashchange", () => state.token && openLinked());
  for (const button of document.querySelectorAll(".tabs button")) button.addEventListener("click", () => showTab(button.dataset.tab));
  for (const id of ["f-operation", "f-violation"]) $(id).addEventListener("change", () => refreshRequests().catch(failed));
  for (const id of ["f-status", "f-test", "f-text"]) $(id).addEventListener("input", () => later("requests", 250, () => refreshRequests().catch(failed)));
  $("older").addEventListener("click", () => olderRequests().catch(failed));
  $("w-query").addEventListener("input", () => later("records", 250, () => { state.query = $("w-query").value.trim(); state.offset = 0; refreshRecords().catch(failed); }));
  $("w-prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - RECORDS); refreshRecords().catch(failed); });
  $("w-next").addEventListener("click", () => { state.offset += RECORDS; refreshRecords().catch(failed); });
  $("a-operation").addEventListener("change", fillStatuses);
  $("a-effect").addEventListener("change", () => {
    const effect = $("a-effect").value;
    $("a-status-label").hidden = effect !== "status";
    $("a-delay-label").hidden = effect !== "delay";
  });
  $("fault-form").addEventListener("submit", armFault);
  $("faults-clear").addEventListener("click", async () => {
    await call("DELETE", "/faults").catch(failed);
    await refreshFaults().catch(failed);
  });
  window.addEventListener("pagehide", stop);
}

wire();
if (state.token) open(state.token);
else ask("");
