// Breakdown of a wasm module's code by Rust crate, from its `name` custom section (which
// wasm-bindgen keeps): each function body's bytes are charged to the crate its name starts with
// (`ald::load::...`, `<arrow_ipc::... as ...>` → `ald`, `arrow_ipc`). Also the data section.
// Usage: node scripts/wasm-size.mjs FILE.wasm [TOP]
import { readFileSync } from 'node:fs';

const bytes = readFileSync(process.argv[2]);
const top = Number(process.argv[3] ?? 15);
let at = 8;

function leb() {
  let result = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[at++];
    result += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) return result;
  }
}
function name() {
  const length = leb();
  const text = bytes.subarray(at, at + length).toString('utf8');
  at += length;
  return text;
}

let imports = 0;
const bodies = [];
const names = new Map();
let dataBytes = 0;
const sections = {};
while (at < bytes.length) {
  const id = bytes[at++];
  const size = leb();
  const end = at + size;
  if (id === 2) {
    for (let n = leb(); n > 0; n--) {
      name();
      name();
      const kind = bytes[at++];
      if (kind === 0) imports++, leb();
      else if (kind === 1) at++, limits();
      else if (kind === 2) limits();
      else if (kind === 3) at += 2;
      else if (kind === 4) at++, leb();
    }
  } else if (id === 10) {
    for (let n = leb(); n > 0; n--) {
      const length = leb();
      bodies.push(length);
      at += length;
    }
  } else if (id === 11) {
    dataBytes = size;
  } else if (id === 0) {
    const custom = name();
    sections[`custom:${custom}`] = size;
    if (custom === 'name') {
      while (at < end) {
        const sub = bytes[at++];
        const subSize = leb();
        const subEnd = at + subSize;
        if (sub === 1) {
          for (let n = leb(); n > 0; n--) {
            const index = leb();
            names.set(index, name());
          }
        }
        at = subEnd;
      }
    }
  }
  sections[id] = (sections[id] ?? 0) + size;
  at = end;
}

function limits() {
  const flags = bytes[at++];
  leb();
  if (flags & 1) leb();
}

function crateOf(fn) {
  // `<A as B>::f` is charged to A's crate.
  let text = fn.replace(/^[<&*\s]+|^(dyn|mut|impl|const) /g, '').trim();
  const colon = text.indexOf('::');
  if (colon > 0) text = text.slice(0, colon);
  if (/^\w+ as /.test(text)) return '(generic trait impls)';
  const std = /^(core|alloc|std)\b/.exec(text);
  if (std) return `${std[1]} (Rust std)`;
  if (text.startsWith('__wbg') || text.startsWith('__wbindgen')) return 'wasm-bindgen glue';
  return text.replace(/\[.*$/, '').replace(/<.*$/, '') || '(unnamed)';
}

const perCrate = new Map();
let code = 0;
bodies.forEach((length, i) => {
  code += length;
  const fn = names.get(imports + i) ?? '(unnamed)';
  const crate = crateOf(fn);
  perCrate.set(crate, (perCrate.get(crate) ?? 0) + length);
});
const rows = [...perCrate].sort((a, b) => b[1] - a[1]);
const kib = (n) => (n / 1024).toFixed(1);
console.log(`| crate | code KiB | share |`);
console.log(`|---|---:|---:|`);
for (const [crate, length] of rows.slice(0, top)) {
  console.log(`| ${crate} | ${kib(length)} | ${((100 * length) / code).toFixed(1)}% |`);
}
const rest = rows.slice(top).reduce((sum, [, length]) => sum + length, 0);
console.log(`| (${rows.length - top} more) | ${kib(rest)} | ${((100 * rest) / code).toFixed(1)}% |`);
console.log(`| **code section** | **${kib(code)}** | ${bodies.length} functions |`);
console.log(`| data section (constants, tables) | ${kib(dataBytes)} | |`);
