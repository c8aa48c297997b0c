// The demo page in real Chromium (Debian's /usr/bin/chromium, driven by playwright-core; no browser
// download): served from localhost by serve.mjs, it must open the shipped signed + encrypted
// dataset once the password is typed (rows and verified publisher on screen), open it again from
// IndexedDB without a download, list the quantized model's tensors, and name the failed check of a
// tampered file. The screenshot lands in test/artifacts/demo.png (kept by CI as an artifact).
//
//   node --test examples/web/test/      (after building packages/envelope-wasm/pkg and `npm ci`)
// CHROMIUM=/path/to/chrome overrides the browser.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { repoRoot, startServer } from "../serve.mjs";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const publisher = JSON.parse(readFileSync(here("../samples/publisher.json"), "utf8")).publisher;
const PASSWORD = "demo password";
// samples/sales.csv's first data row, as the page prints it.
const FIRST_ROW = ["1000", "47.927261", "12", "0.067182"];

let server;
let browser;
let page;
const consoleLines = [];

before(async () => {
  const pkg = `${repoRoot}/packages/envelope-wasm/pkg/envelope_wasm.js`;
  assert.ok(existsSync(pkg), `${pkg} is missing: build the package first (.ci/build-wasm-package)`);
  assert.ok(existsSync(executablePath), `${executablePath} is missing: apt-get install -y chromium`);
  server = await startServer();
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] });
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  page = await context.newPage();
  page.on("console", (m) => consoleLines.push(`[${m.type()}] ${m.text()}`));
  page.on("pageerror", (e) => consoleLines.push(`[pageerror] ${e.message}`));
  await page.goto(server.url);
  await page.waitForSelector('#status[data-state="ready"], #status[data-state="failed"]');
  assert.equal(await page.getAttribute("#status", "data-state"), "ready", await page.textContent("#status"));
});

after(async () => {
  if (consoleLines.length) console.log(consoleLines.join("\n"));
  await browser?.close();
  await server?.close();
});

async function openDataset(password) {
  await page.fill("#password", password);
  await page.click("#open-dataset");
  await page.waitForSelector('#dataset[data-state="loaded"], #dataset[data-state="failed"]');
  return page.getAttribute("#dataset", "data-state");
}

const datasetRequests = () => server.requests.filter((p) => p.endsWith("/samples/sales.ald")).length;

test("the password opens the signed dataset: verified publisher, card and first rows", async () => {
  assert.equal(await openDataset(PASSWORD), "loaded", await page.textContent("#dataset-error"));
  assert.equal(await page.textContent("#publisher"), publisher);
  assert.equal(await page.getAttribute("#source", "data-source"), "network");
  assert.match(await page.textContent("#flags"), /signed, encrypted/);
  assert.match(await page.textContent("#num-rows"), /^4000 /);
  assert.match(await page.textContent("#card"), /sales/);
  assert.equal(await page.locator("#rows tbody tr").count(), 10);
  const first = await page.locator("#rows tbody tr").first().locator("td").allTextContents();
  assert.deepEqual(first, FIRST_ROW);
  assert.equal(datasetRequests(), 1);
});

test("a second load comes from IndexedDB (loadCached), revalidated, without a download", async () => {
  await page.reload();
  await page.waitForSelector('#status[data-state="ready"]');
  assert.equal(await openDataset(PASSWORD), "loaded", await page.textContent("#dataset-error"));
  assert.equal(await page.getAttribute("#source", "data-source"), "cache");
  assert.equal(await page.textContent("#publisher"), publisher);
  assert.deepEqual(await page.locator("#rows tbody tr").first().locator("td").allTextContents(), FIRST_ROW);
  assert.equal(datasetRequests(), 1, "the cached load downloaded the file again");
});

test("a wrong password names the failed check", async () => {
  assert.equal(await openDataset("not the password"), "failed");
  assert.equal(await page.textContent("#dataset-error .signal"), "DecryptionFailed");
});

test("the quantized model lists its tensors", async () => {
  await page.click("#open-model");
  await page.waitForSelector('#model[data-state="loaded"], #model[data-state="failed"]');
  assert.equal(await page.getAttribute("#model", "data-state"), "loaded", await page.textContent("#model-error"));
  assert.equal(await page.textContent("#model-publisher"), publisher);
  const rows = await page.locator("#tensors tbody tr").evaluateAll((trs) =>
    trs.map((tr) => Array.from(tr.cells, (td) => td.textContent).slice(0, 3)));
  assert.deepEqual(rows.map((r) => r[0]).sort(), ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]);
  assert.deepEqual(rows.find((r) => r[0] === "fc1.weight"), ["fc1.weight", "q8_0", "[64, 32]"]);
});

test("the tampered sample shows the failed check: SignatureInvalid", async () => {
  await page.fill("#password", PASSWORD);
  await page.click("#open-tampered");
  await page.waitForSelector('#inspect[data-state="failed"], #inspect[data-state="passed"]');
  assert.equal(await page.getAttribute("#inspect", "data-state"), "failed", await page.textContent("#verdict"));
  assert.equal(await page.textContent("#verdict .signal"), "SignatureInvalid");
});

test("a file given to the page is inspected: a bit flip without a new CRC is a ChecksumMismatch", async () => {
  const bytes = Buffer.from(readFileSync(here("../samples/model-q8.apr")));
  await page.setInputFiles("#file", { name: "model-q8.apr", mimeType: "application/octet-stream", buffer: bytes });
  await page.waitForSelector('#inspect[data-state="passed"], #inspect[data-state="failed"]');
  assert.equal(await page.getAttribute("#inspect", "data-state"), "passed", await page.textContent("#verdict"));
  bytes[bytes.length - 10] ^= 0x01;
  await page.setInputFiles("#file", { name: "flipped.apr", mimeType: "application/octet-stream", buffer: bytes });
  await page.waitForSelector('#inspect[data-state="failed"]');
  assert.equal(await page.textContent("#verdict .signal"), "ChecksumMismatch");
});

test("screenshot", async () => {
  // The page as a reader sees it: the dataset open (from the cache), the model's tensors, the
  // tampered file's verdict.
  assert.equal(await openDataset(PASSWORD), "loaded");
  await page.click("#open-tampered");
  await page.waitForSelector('#inspect[data-state="failed"]');
  mkdirSync(here("artifacts"), { recursive: true });
  await page.screenshot({ path: here("artifacts/demo.png"), fullPage: true });
});
