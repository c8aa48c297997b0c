// Drives bench/index.html in headless Chromium (Debian's, via playwright-core) and prints a
// Markdown table of median load times. scripts/bench-web.sh makes the files and calls this:
//   node examples/web/bench/bench.mjs DIR RUNS
// DIR (under the repository, served by serve.mjs) holds table.arrow, plain.ald, signed.ald,
// encrypted.ald and publisher.json (the signer's hex key); the password is "bench password".

import { relative } from "node:path";
import { resolve } from "node:path";
import { readFileSync } from "node:fs";
import { chromium } from "playwright-core";
import { repoRoot, startServer } from "../serve.mjs";

const dir = resolve(process.argv[2]);
const runs = Number(process.argv[3] ?? 5);
const publisher = JSON.parse(readFileSync(`${dir}/publisher.json`, "utf8")).publisher;
const server = await startServer();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox"],
});
const page = await browser.newPage();
page.on("pageerror", (e) => console.error(`[pageerror] ${e.message}`));
await page.goto(`${server.origin}/examples/web/bench/`);
await page.waitForFunction(() => window.benchReady === true);
const base = `${server.origin}/${relative(repoRoot, dir)}`;

const cases = [
  ["Arrow IPC file, apache-arrow `tableFromIPC`", "arrow", "table.arrow", null],
  [".ald zstd-l3, unsigned", "ald", "plain.ald", {}],
  [".ald zstd-l3, signed (Ed25519 checked)", "ald", "signed.ald", { trustedKeys: [publisher] }],
  [".ald zstd-l3, password-encrypted + signed", "ald", "encrypted.ald", { trustedKeys: [publisher], password: "bench password" }],
];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ms) => (ms === undefined ? "–" : `${Math.round(ms)}`);
const rows = [];
for (const [label, kind, file, options] of cases) {
  const results = [];
  // One untimed warm-up: the first call pays for compiling the code paths.
  for (let i = 0; i <= runs; i++) {
    const r = kind === "arrow"
      ? await page.evaluate((url) => window.benchArrow(url), `${base}/${file}`)
      : await page.evaluate(([url, o]) => window.benchAld(url, o), [`${base}/${file}`, options]);
    if (i > 0) results.push(r);
  }
  const pick = (k) => (results[0][k] === undefined ? undefined : median(results.map((r) => r[k])));
  rows.push(`| ${label} | ${(results[0].bytes / 1e6).toFixed(1)} MB | ${results[0].rows} | ${fmt(pick("fetchMs"))} | ${fmt(pick("loadMs"))} | ${fmt(pick("ipcMs"))} | ${fmt(pick("arrowMs"))} | **${fmt(pick("totalMs"))}** |`);
  console.error(`${label}: ${JSON.stringify(results.map((r) => Math.round(r.totalMs)))}`);
}
console.log(`Chromium ${browser.version()}, median of ${runs} runs after one warm-up; times in ms.\n`);
console.log("| file | size | rows | fetch | `loadAld` | `toIpc` | `tableFromIPC` | total |");
console.log("|---|---|---|---|---|---|---|---|");
console.log(rows.join("\n"));
await browser.close();
await server.close();
