// "The Arrow batches handed to JavaScript are the table pyarrow reads": the IPC streams of
// `toIpc()` and of every `batchIpc(i)`, for each layout (plain, zstd STREAMING, signed and
// encrypted), are read by pyarrow and compared with `pyarrow.csv.read_csv` of the source
// (samples/sales.csv); apache-arrow's rows are compared with pyarrow's `to_pylist()`.
// Needs $INTEROP_PYTHON (a Python with pyarrow; CI's .ci/setup-python sets it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tableFromIPC } from 'apache-arrow';
import envelope, { data, expected } from './wasm.mjs';

const python = process.env.INTEROP_PYTHON;
const csv = fileURLToPath(new URL('../../../samples/sales.csv', import.meta.url));

const SCRIPT = `
import json, sys
import pyarrow as pa, pyarrow.csv, pyarrow.ipc
reference = pyarrow.csv.read_csv(sys.argv[1])
report = {"rows": reference.to_pylist(), "files": {}}
for group in sys.argv[2:]:
    tables = [pyarrow.ipc.open_stream(path).read_all() for path in group.split(",")]
    table = pa.concat_tables(tables)
    report["files"][group] = {
        "equal": table.equals(reference),
        "schema": str(table.schema),
        "batches": sum(len(t.to_batches()) for t in tables),
    }
print(json.dumps(report))
`;

test('Arrow IPC from the wasm build equals what pyarrow reads from the source CSV', {
  skip: !python && 'INTEROP_PYTHON is not set (CI sets it to .venv/bin/python with pyarrow): skipped',
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'envelope-wasm-pyarrow-'));
  try {
    const groups = [];
    const jsRows = {};
    const cases = {
      'sales.ald': undefined,
      'sales-zstd-streaming.ald': undefined,
      'sales-signed-encrypted.ald': { password: expected.password, trustedKeys: [expected.publisher] },
    };
    for (const [name, options] of Object.entries(cases)) {
      const ds = envelope.loadAld(data(name), options);
      const whole = join(dir, `${name}.arrows`);
      writeFileSync(whole, ds.toIpc());
      groups.push(whole);
      const parts = [];
      for (let i = 0; i < ds.numBatches; i++) {
        const part = join(dir, `${name}.${i}.arrows`);
        writeFileSync(part, ds.batchIpc(i));
        parts.push(part);
      }
      groups.push(parts.join(','));
      jsRows[name] = tableFromIPC(ds.toIpc()).toArray().map((row) => row.toJSON());
      ds.free();
    }
    const report = JSON.parse(execFileSync(python, ['-c', SCRIPT, csv, ...groups], { maxBuffer: 64 << 20 }));
    for (const group of groups) {
      const file = report.files[group];
      assert.ok(file.equal, `${group}: pyarrow's table differs from the CSV's:\n${file.schema}`);
    }
    for (const [name, rows] of Object.entries(jsRows)) {
      assert.equal(rows.length, report.rows.length, name);
      rows.forEach((row, i) => {
        const reference = report.rows[i];
        for (const column of Object.keys(reference)) {
          // apache-arrow gives int64 as BigInt; pyarrow's JSON has plain numbers.
          const value = typeof row[column] === 'bigint' ? Number(row[column]) : row[column];
          assert.equal(value, reference[column], `${name} row ${i} column ${column}`);
        }
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
