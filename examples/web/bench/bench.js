// One timed load per call, exposed as window.benchAld / window.benchArrow for bench.mjs. Each ends
// with an apache-arrow Table in hand, so both paths deliver the same thing to the page's code:
//   ald:   fetch -> envelope-wasm (CRC, signature, decryption, zstd, Arrow IPC out) -> tableFromIPC
//   arrow: fetch -> tableFromIPC of the Arrow IPC file
// Each phase is timed separately; the fetch is from localhost, so it mostly measures the copy.

import init, * as envelope from "../../../packages/envelope-wasm/pkg/envelope_wasm.js";

async function fetchBytes(url) {
  const started = performance.now();
  const bytes = new Uint8Array(await (await fetch(url, { cache: "no-store" })).arrayBuffer());
  return { bytes, fetchMs: performance.now() - started };
}

window.benchAld = async (url, options = {}) => {
  const { bytes, fetchMs } = await fetchBytes(url);
  let t = performance.now();
  const ds = envelope.loadAld(bytes, options);
  const loadMs = performance.now() - t;
  t = performance.now();
  const ipc = ds.toIpc();
  const ipcMs = performance.now() - t;
  t = performance.now();
  const table = window.Arrow.tableFromIPC(ipc);
  const arrowMs = performance.now() - t;
  const rows = table.numRows;
  ds.free();
  return { bytes: bytes.length, rows, fetchMs, loadMs, ipcMs, arrowMs, totalMs: fetchMs + loadMs + ipcMs + arrowMs };
};

window.benchArrow = async (url) => {
  const { bytes, fetchMs } = await fetchBytes(url);
  const t = performance.now();
  const table = window.Arrow.tableFromIPC(bytes);
  const arrowMs = performance.now() - t;
  return { bytes: bytes.length, rows: table.numRows, fetchMs, arrowMs, totalMs: fetchMs + arrowMs };
};

await init();
document.getElementById("log").textContent = "ready";
window.benchReady = true;
