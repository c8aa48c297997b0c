// The Node.js side of the wasm round trip (see src/lib.rs). Node 20, no npm packages.
//
//   node tests/wasm-roundtrip/run.mjs PATH/TO/wasm_roundtrip.wasm DIR
//
// 1. native -> wasm: for every entry of DIR/manifest.json (written by `native write`), load the
//    native file into the wasm module, verify it there, and compare the record with the expected
//    one field by field (`detail` is only a message and is not compared).
// 2. wasm -> native: have the module build every sample with its own backends (ruzstd for zstd)
//    and save it as DIR/wasm-<name>, for `native check DIR`.
//
// Exits 1 on any mismatch, after reporting every file; 2 on a usage or setup error.

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [wasmPath, dir] = process.argv.slice(2);
if (!wasmPath || !dir) {
  console.error("usage: node run.mjs MODULE.wasm DIR");
  process.exit(2);
}

const module = new WebAssembly.Module(readFileSync(wasmPath));
const imports = WebAssembly.Module.imports(module);
if (imports.length > 0) {
  // The module is meant to be self-contained; an import means a dependency reached for the host.
  const names = imports.map((i) => `${i.module}.${i.name}`).join(", ");
  console.error(`run.mjs: the wasm module imports ${names}; it must import nothing`);
  process.exit(2);
}
const wasm = new WebAssembly.Instance(module, {}).exports;

// Memory may grow during any call, which detaches earlier views: take a fresh one each time.
const output = () =>
  Buffer.from(new Uint8Array(wasm.memory.buffer, wasm.output_ptr(), wasm.output_len()));

function verifyInWasm(bytes) {
  const ptr = wasm.input_alloc(bytes.length);
  if (ptr === 0 && bytes.length > 0) throw new Error("input_alloc failed");
  new Uint8Array(wasm.memory.buffer, ptr, bytes.length).set(bytes);
  const status = wasm.run_verify();
  if (status !== 0) throw new Error(`run_verify returned ${status}`);
  return JSON.parse(output().toString("utf8"));
}

function differences(got, expected) {
  const keys = new Set([...Object.keys(got), ...Object.keys(expected)]);
  keys.delete("detail");
  return [...keys]
    .filter((key) => got[key] !== expected[key])
    .map((key) => `${key}: got ${JSON.stringify(got[key])}, expected ${JSON.stringify(expected[key])}`);
}

let failures = 0;
const fail = (message) => {
  console.log(`FAIL ${message}`);
  failures += 1;
};

// 1. native -> wasm.
const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
if (manifest.samples.length !== wasm.sample_count()) {
  fail(`manifest lists ${manifest.samples.length} samples, the module has ${wasm.sample_count()}`);
}
for (const entry of manifest.samples) {
  const bytes = readFileSync(join(dir, entry.file));
  let got;
  try {
    got = verifyInWasm(bytes);
  } catch (error) {
    fail(`${entry.file}: ${error.message}`);
    continue;
  }
  const diff = differences(got, entry.expect);
  if (diff.length > 0) {
    fail(`${entry.file}: ${diff.join("; ")}${got.detail ? ` (${got.detail})` : ""}`);
  } else if (got.signal === "ok") {
    console.log(`ok   ${entry.file} (loaded in wasm, ${got.payload_len} payload bytes, crc32 ${got.payload_crc32})`);
  } else {
    console.log(`ok   ${entry.file} (refused in wasm with ${got.signal} as expected)`);
  }
}
const nativeToWasm = manifest.samples.length;

// 2. wasm -> native.
let written = 0;
for (let kind = 0; kind < wasm.sample_count(); kind += 1) {
  if (wasm.run_name(kind) !== 0) {
    fail(`sample ${kind}: run_name failed`);
    continue;
  }
  const name = output().toString("utf8");
  const status = wasm.run_write(kind);
  if (status !== 0) {
    fail(`sample ${kind} (${name}): run_write returned ${status}: ${output().toString("utf8")}`);
    continue;
  }
  writeFileSync(join(dir, `wasm-${name}`), output());
  written += 1;
}
console.log(`run.mjs: wrote ${written} wasm-* files`);

if (failures > 0) {
  console.log(`run.mjs: ${failures} failure(s)`);
  process.exit(1);
}
console.log(`run.mjs: native->wasm ok (${nativeToWasm} files)`);
