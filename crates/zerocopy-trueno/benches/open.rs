//! Opening and reading a TRUENO_NATIVE model, side by side with the `safetensors` crate over a
//! memory map of the same tensors and with a full in-memory load (read the file, verify it, copy
//! every tensor out: what a non-zero-copy loader does).
//!
//! Files: 200 f32 tensors each, of 1280 x 1024 (1 GiB) and of 128 x 1024 (100 MiB), so the two
//! differ in size only; written once to `$ZEROCOPY_BENCH_DIR` (default `/tmp/zerocopy-bench`) as
//! `.apr` (TRUENO_NATIVE) and `.safetensors`.
//!
//! Run: `cargo bench -p zerocopy-trueno --bench open`

#![allow(missing_docs, clippy::cast_precision_loss)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use envelope_core::{EnvelopeParts, Format};
use zerocopy_trueno::{BackendHint, DType, Integrity, MappedModel, TensorIndex, aligned_parts};

const COLS: u64 = 1024;
const TENSORS: usize = 200;

fn dir() -> PathBuf {
    let dir = std::env::var_os("ZEROCOPY_BENCH_DIR")
        .map_or_else(|| PathBuf::from("/tmp/zerocopy-bench"), PathBuf::from);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn tensor_bytes(rows: u64, seed: usize) -> Vec<u8> {
    let len = usize::try_from(rows * COLS).unwrap();
    (0..len)
        .flat_map(|i| (((i * 7 + seed * 13) % 1000) as f32 * 1e-3).to_le_bytes())
        .collect()
}

/// Writes [`TENSORS`] tensors of `rows` x [`COLS`] as `<stem>.apr` and `<stem>.safetensors`
/// unless they exist.
fn ensure(stem: &str, rows: u64) -> (PathBuf, PathBuf) {
    let apr = dir().join(format!("{stem}.apr"));
    let st = dir().join(format!("{stem}.safetensors"));
    if apr.exists() && st.exists() {
        return (apr, st);
    }
    let names: Vec<String> = (0..TENSORS).map(|i| format!("layers.{i}.weight")).collect();
    let data: Vec<Vec<u8>> = (0..TENSORS).map(|seed| tensor_bytes(rows, seed)).collect();
    let shape = [rows, COLS];
    let index = TensorIndex::plan(
        names
            .iter()
            .map(|name| (name.as_str(), DType::F32, &shape[..])),
        BackendHint::Avx2,
    )
    .unwrap();
    let slices: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    let parts = aligned_parts(
        EnvelopeParts::new(Format::Model, 0x0020),
        index,
        &slices,
        None,
    )
    .unwrap();
    envelope_core::fs::save(&apr, &parts).unwrap();
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = names
        .iter()
        .zip(&data)
        .map(|(name, bytes)| {
            let shape = vec![
                usize::try_from(rows).unwrap(),
                usize::try_from(COLS).unwrap(),
            ];
            (
                name.clone(),
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape, bytes)
                    .unwrap(),
            )
        })
        .collect();
    safetensors::serialize_to_file(views, None, &st).unwrap();
    (apr, st)
}

/// The sum both sides compute: 16 partial sums, so the loop vectorizes the same way for both.
fn sum(values: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let chunks = values.chunks_exact(16);
    let tail: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (a, v) in acc.iter_mut().zip(chunk) {
            *a += v;
        }
    }
    acc.iter().sum::<f32>() + tail
}

fn full_load(path: &Path) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).unwrap();
    let tensors =
        zerocopy_trueno::AlignedTensors::open(&bytes[..], Format::Model, Integrity::AtOpen)
            .unwrap();
    (0..tensors.index().len())
        .map(|i| tensors.tensor_at(i).unwrap().to_vec::<f32>().unwrap())
        .collect()
}

fn bench_open(c: &mut Criterion) {
    for (stem, rows) in [("model_100MiB", 128), ("model_1GiB", 1280)] {
        let (apr, st) = ensure(stem, rows);
        let mut g = c.benchmark_group(format!("open_{stem}"));
        g.bench_function("mapped_model_open", |b| {
            b.iter(|| black_box(MappedModel::open(&apr).unwrap()));
        });
        g.bench_function("safetensors_mmap_deserialize", |b| {
            b.iter(|| {
                let map = mapped_file::MappedFile::open(&st).unwrap();
                let tensors = safetensors::SafeTensors::deserialize(&map).unwrap();
                black_box(tensors.len());
            });
        });
        g.sample_size(10)
            .measurement_time(Duration::from_secs(if rows > 1000 { 30 } else { 8 }));
        g.bench_function("full_load_read_verify_copy", |b| {
            b.iter(|| black_box(full_load(&apr).len()));
        });
        g.finish();
    }
}

fn bench_sum(c: &mut Criterion) {
    let (apr, st) = ensure("model_1GiB", 1280);
    let mut g = c.benchmark_group("sum_every_tensor_1GiB");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.throughput(criterion::Throughput::Bytes(
        TENSORS as u64 * 1280 * COLS * 4,
    ));
    // First touch: a fresh open, every tensor checked by its CRC-32C on first access, then summed.
    for (name, integrity) in [
        ("mapped_first_touch_per_tensor_crc", Integrity::PerTensor),
        ("mapped_first_touch_trusted", Integrity::Trusted),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let model = MappedModel::open_with(&apr, integrity).unwrap();
                let total: f32 = model
                    .tensors()
                    .index()
                    .entries()
                    .iter()
                    .map(|e| sum(model.get_f32(&e.name).unwrap()))
                    .sum();
                black_box(total)
            });
        });
    }
    g.bench_function("safetensors_mmap_first_touch", |b| {
        b.iter(|| {
            let map = mapped_file::MappedFile::open(&st).unwrap();
            let tensors = safetensors::SafeTensors::deserialize(&map).unwrap();
            let total: f32 = tensors
                .tensors()
                .iter()
                .map(|(_, view)| sum(bytemuck::cast_slice(view.data())))
                .sum();
            black_box(total)
        });
    });
    // Warm: the same open model (checksums already verified), every tensor summed again.
    let model = MappedModel::open(&apr).unwrap();
    let names: Vec<String> = model
        .tensors()
        .index()
        .entries()
        .iter()
        .map(|e| e.name.clone())
        .collect();
    for name in &names {
        model.get_f32(name).unwrap();
    }
    g.bench_function("mapped_warm", |b| {
        b.iter(|| {
            black_box(
                names
                    .iter()
                    .map(|n| sum(model.get_f32(n).unwrap()))
                    .sum::<f32>(),
            )
        });
    });
    let in_memory = full_load(&apr);
    g.bench_function("vec_warm", |b| {
        b.iter(|| black_box(in_memory.iter().map(|t| sum(t)).sum::<f32>()));
    });
    g.finish();
}

criterion_group!(benches, bench_open, bench_sum);
criterion_main!(benches);
