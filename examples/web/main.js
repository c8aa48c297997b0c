// The demo page's logic, written against envelope-wasm's JS API (docs: packages/envelope-wasm/README.md):
// loadCached / loadFromUrl for the shipped dataset (IndexedDB first, the network second), loadApr
// for the model, inspect + loadAld / loadApr for any dropped file. apache-arrow (window.Arrow)
// reads the Arrow IPC the package hands over. Plain ES module, no bundler.

import init, * as envelope from "../../packages/envelope-wasm/pkg/envelope_wasm.js";

const $ = (id) => document.getElementById(id);
const DATASET_URL = "samples/sales.ald";
const DATASET_CACHE_KEY = "samples/sales.ald";
const SHOWN_ROWS = 10;

let trustedKey = null; // hex Ed25519 key of the sample's publisher
let dataset = null; // the AldDataset on screen, freed when replaced
let model = null;

function options() {
  const password = $("password").value;
  return { trustedKeys: [trustedKey], ...(password ? { password } : {}) };
}

// An envelope error carries the spec's signal name; anything else (a bug, a network failure) shows
// its own name so it is never mistaken for a verdict on the file.
function showError(box, error) {
  box.hidden = false;
  box.replaceChildren();
  const signal = document.createElement("span");
  signal.className = "signal";
  signal.textContent = signalOf(error);
  box.append("✗ check failed: ", signal, ` — ${detailOf(error)}`);
}

const signalOf = (error) => error?.signal ?? error?.name ?? "Error";
// The package's messages start with the signal name; shown once is enough.
const detailOf = (error) => (error?.message ?? String(error)).replace(new RegExp(`^${signalOf(error)}: `), "");

// A card without its empty fields (null, [], {}), as [key, value] pairs.
const cardEntries = (card) =>
  Object.entries(card ?? {}).filter(([, v]) => v !== null && v !== "" && !(typeof v === "object" && Object.keys(v).length === 0));

function fillFacts(dl, entries) {
  dl.replaceChildren();
  for (const [key, value] of entries) {
    const dt = document.createElement("dt");
    dt.textContent = key;
    const dd = document.createElement("dd");
    dd.textContent = typeof value === "string" ? value : Array.isArray(value) ? value.join(", ") : JSON.stringify(value);
    dl.append(dt, dd);
  }
}

function cell(tag, text, cls) {
  const el = document.createElement(tag);
  el.textContent = text;
  if (cls) el.className = cls;
  return el;
}

// The first rows of the first record batch, read by apache-arrow from the package's IPC bytes.
function showRows(ds) {
  const table = window.Arrow.tableFromIPC(ds.batchIpc(0));
  const fields = table.schema.fields;
  const numeric = fields.map((f) => window.Arrow.DataType.isInt(f.type) || window.Arrow.DataType.isFloat(f.type));
  const head = document.createElement("tr");
  fields.forEach((f, i) => head.append(cell("th", `${f.name}: ${f.type}`, numeric[i] ? "" : "text")));
  $("rows").tHead.replaceChildren(head);
  const body = $("rows").tBodies[0];
  body.replaceChildren();
  for (let r = 0; r < Math.min(SHOWN_ROWS, table.numRows); r++) {
    const row = table.get(r);
    const tr = document.createElement("tr");
    fields.forEach((f, i) => tr.append(cell("td", String(row[f.name]), numeric[i] ? "" : "text")));
    body.append(tr);
  }
}

function flags(file) {
  return [file.signed ? "signed" : "unsigned", file.encrypted ? "encrypted" : "plain", `compression ${file.compression}`].join(", ");
}

async function openDataset(event) {
  event.preventDefault();
  const section = $("dataset");
  section.dataset.state = "loading";
  $("dataset-error").hidden = true;
  const started = performance.now();
  try {
    // The cached copy is verified again (checksums, signature) and decrypted like a download.
    let ds = await envelope.loadCached(DATASET_CACHE_KEY, options());
    let source = "IndexedDB cache (verified again: checksums + signature)";
    if (!ds) {
      const progress = (loaded, total) => {
        $("open-dataset").textContent = total ? `${Math.round((100 * loaded) / total)} %` : `${loaded} bytes`;
      };
      try {
        ds = await envelope.loadFromUrl(DATASET_URL, { ...options(), cacheKey: DATASET_CACHE_KEY, onProgress: progress });
      } finally {
        $("open-dataset").textContent = "Open";
      }
      source = "network (now cached in IndexedDB)";
    }
    const elapsed = performance.now() - started;
    dataset?.free();
    dataset = ds;
    $("publisher").textContent = ds.publisher ?? "(unsigned)";
    $("publisher-trust").textContent = ds.publisher === trustedKey ? "✓ trusted" : "";
    $("publisher-trust").className = "ok";
    $("source").textContent = source;
    $("source").dataset.source = source.startsWith("IndexedDB") ? "cache" : "network";
    $("flags").textContent = flags(ds);
    $("num-rows").textContent = `${ds.numRows} in ${ds.numBatches} record batches`;
    $("load-time").textContent = `${elapsed.toFixed(0)} ms (password key derivation included)`;
    fillFacts($("card"), cardEntries(ds.card));
    showRows(ds);
    $("dataset-info").hidden = false;
    section.dataset.state = "loaded";
  } catch (error) {
    $("dataset-info").hidden = true;
    showError($("dataset-error"), error);
    section.dataset.state = "failed";
  }
}

async function forgetCache() {
  // The package keeps its cache in IndexedDB; dropping the databases is the page's way to start over.
  for (const db of (await indexedDB.databases?.()) ?? []) {
    if (db.name) await new Promise((done) => { const r = indexedDB.deleteDatabase(db.name); r.onsuccess = r.onerror = r.onblocked = done; });
  }
  $("source").textContent = "(cache cleared)";
}

function tensorRows(m, tbody) {
  tbody.replaceChildren();
  for (const t of m.tensors) {
    const values = m.tensorF32(t.name);
    const first = Array.from(values.subarray(0, 4), (v) => v.toFixed(4)).join(", ");
    const tr = document.createElement("tr");
    tr.append(cell("td", t.name, "text"), cell("td", t.dtype, "text"), cell("td", `[${t.shape.join(", ")}]`, "text"), cell("td", `${first}, …`, "text"));
    tbody.append(tr);
  }
}

async function openModel() {
  const section = $("model");
  section.dataset.state = "loading";
  $("model-error").hidden = true;
  try {
    const bytes = new Uint8Array(await (await fetch("samples/model-q8.apr")).arrayBuffer());
    const m = envelope.loadApr(bytes, { trustedKeys: [trustedKey] });
    model?.free();
    model = m;
    $("model-publisher").textContent = m.publisher ?? "(unsigned)";
    $("model-type").textContent = m.modelType;
    $("model-card").textContent = cardEntries(m.card).map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join(" · ") || "(none)";
    tensorRows(m, $("tensors").tBodies[0]);
    $("model-info").hidden = false;
    section.dataset.state = "loaded";
  } catch (error) {
    showError($("model-error"), error);
    section.dataset.state = "failed";
  }
}

// Any file: the header first (inspect never needs a key), then the full load of its kind, whose
// failure names the check. Datasets and models use the trusted key only when they are signed, so an
// unsigned file of one's own still opens.
async function inspectBytes(name, bytes) {
  const section = $("inspect");
  section.dataset.state = "loading";
  $("inspect-result").hidden = false;
  const verdict = $("verdict");
  let header = null;
  try {
    header = envelope.inspect(bytes);
    $("inspect-json").textContent = JSON.stringify(header, null, 2);
    const signed = Boolean(header.signed ?? header.flags?.signed ?? (Array.isArray(header.flags) && header.flags.includes("SIGNED")));
    const opts = { ...options(), ...(signed ? {} : { trustedKeys: [] }) };
    let summary;
    if (header.kind === "ald") {
      const ds = envelope.loadAld(bytes, opts);
      summary = `a dataset of ${ds.numRows} rows, ${flags(ds)}, publisher ${ds.publisher ?? "none"}`;
      ds.free();
    } else if (header.kind === "apr") {
      const m = envelope.loadApr(bytes, opts);
      summary = `a ${m.modelType} model of ${m.tensors.length} tensors, publisher ${m.publisher ?? "none"}`;
      m.free();
    } else {
      summary = `a ${header.kind} file (header read; no full load for this kind on this page)`;
    }
    verdict.className = "ok";
    verdict.textContent = `✓ ${name}: every check passed — ${summary}`;
    section.dataset.state = "passed";
  } catch (error) {
    if (!header) $("inspect-json").textContent = "";
    verdict.className = "error";
    verdict.replaceChildren();
    verdict.append(`✗ ${name}: check failed: `, cell("span", signalOf(error), "signal"), ` — ${detailOf(error)}`);
    section.dataset.state = "failed";
  }
}

async function inspectFile(file) {
  await inspectBytes(file.name, new Uint8Array(await file.arrayBuffer()));
}

function wireDropZone() {
  const zone = $("drop-zone");
  for (const type of ["dragenter", "dragover"]) zone.addEventListener(type, (e) => { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    const file = e.dataTransfer?.files?.[0];
    if (file) inspectFile(file);
  });
  // A file dropped anywhere else would make the browser navigate away from the page.
  window.addEventListener("dragover", (e) => e.preventDefault());
  window.addEventListener("drop", (e) => e.preventDefault());
  $("file").addEventListener("change", (e) => { const f = e.target.files?.[0]; if (f) inspectFile(f); });
  $("open-tampered").addEventListener("click", async () => {
    const bytes = new Uint8Array(await (await fetch("samples/sales-tampered.ald")).arrayBuffer());
    await inspectBytes("samples/sales-tampered.ald", bytes);
  });
}

async function main() {
  const status = $("status");
  try {
    await init();
    trustedKey = (await (await fetch("samples/publisher.json")).json()).publisher;
    $("trusted-key").textContent = trustedKey;
    $("dataset-form").addEventListener("submit", openDataset);
    $("forget-cache").addEventListener("click", forgetCache);
    $("open-model").addEventListener("click", openModel);
    wireDropZone();
    status.textContent = "wasm module ready.";
    status.dataset.state = "ready";
  } catch (error) {
    status.textContent = `the wasm module did not load: ${error?.message ?? error} (build it: see examples/web/README.md)`;
    status.dataset.state = "failed";
  }
}

main();
