//! Quantize and dequantize throughput per type on 64 M f32 values (256 MiB), one core, side by
//! side with `gguf.quants` (numpy) on the same data in the same run.
//!
//! ```bash
//! INTEROP_PYTHON=$(bash .ci/setup-python) cargo bench -p apr --bench quantize
//! ```
//!
//! Throughput is reported in bytes of f32 (input for quantize, output for dequantize), so the two
//! directions compare on the same scale. The Python figures are printed before criterion's: the
//! script times `gguf.quants.quantize` / `dequantize` on the same values (best of 3).

#![allow(
    clippy::print_stderr,
    reason = "the benchmark reports the Python side on stderr"
)]
#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented functions"
)]

use std::hint::black_box;
use std::process::Command;

use apr::quant::kernels;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const VALUES: usize = 64 << 20;

fn values() -> Vec<f32> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..VALUES)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            #[allow(clippy::cast_precision_loss, reason = "test data")]
            let unit = (state >> 40) as f32 / (1u64 << 24) as f32;
            unit * 2.0 - 1.0
        })
        .collect()
}

type Quantize = fn(&[f32], &mut [u8]) -> Result<(), kernels::KernelError>;
type Dequantize = fn(&[u8], &mut [f32]) -> Result<(), kernels::KernelError>;

fn python_side(values: &[f32]) {
    let Ok(python) = std::env::var("INTEROP_PYTHON") else {
        eprintln!("gguf.quants: skipped (set INTEROP_PYTHON to compare)");
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("values.f32");
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&path, bytes).expect("write values");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/python/apr/bench_quants.py"
    );
    match Command::new(python).arg(script).arg(&path).output() {
        Ok(out) => eprintln!("{}", String::from_utf8_lossy(&out.stdout)),
        Err(error) => eprintln!("gguf.quants: {error}"),
    }
}

fn bench(c: &mut Criterion) {
    let values = values();
    python_side(&values);
    let types: [(&str, usize, Quantize, Dequantize); 3] = [
        (
            "q8_0",
            kernels::Q8_0_BLOCK_BYTES,
            kernels::quantize_q8_0,
            kernels::dequantize_q8_0,
        ),
        (
            "q4_0",
            kernels::Q4_0_BLOCK_BYTES,
            kernels::quantize_q4_0,
            kernels::dequantize_q4_0,
        ),
        (
            "q4_1",
            kernels::Q4_1_BLOCK_BYTES,
            kernels::quantize_q4_1,
            kernels::dequantize_q4_1,
        ),
    ];
    let mut group = c.benchmark_group("quantize_64M_f32");
    group.sample_size(10);
    group.throughput(Throughput::Bytes((VALUES * 4) as u64));
    for (name, block_bytes, quantize, dequantize) in types {
        let mut blocks = vec![0u8; VALUES / 32 * block_bytes];
        group.bench_function(format!("{name}/quantize"), |b| {
            b.iter(|| quantize(black_box(&values), &mut blocks).expect("quantize"));
        });
        let mut out = vec![0f32; VALUES];
        group.bench_function(format!("{name}/dequantize"), |b| {
            b.iter(|| dequantize(black_box(&blocks), &mut out).expect("dequantize"));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
