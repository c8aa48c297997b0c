//! Saving and loading a tensor model as `.apr` against SafeTensors serialize/deserialize of the
//! same tensors (the `safetensors` crate, the reference implementation), in memory, one core.
//!
//! ```bash
//! cargo bench -p apr --bench save_load
//! ```
//!
//! The model: 24 f32 tensors of 1024 × 1024 (96 MiB), uncompressed, as a weights file usually is.
//! `.apr` load verifies the whole-file CRC32 and each tensor's size before handing out data;
//! SafeTensors deserialize checks the header and offsets and copies nothing, so the fair pair is
//! "load + copy every tensor out" on both sides.

#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented functions"
)]

use std::borrow::Cow;
use std::hint::black_box;

use apr::{ModelType, SaveOptions, Tensor, TensorModel};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use safetensors::tensor::{Dtype, SafeTensors, View};

const TENSORS: usize = 24;
const SIDE: usize = 1024;

fn model() -> TensorModel {
    let values: Vec<f32> = (0..SIDE * SIDE).map(|i| (i % 977) as f32 * 1e-3).collect();
    TensorModel::new(
        (0..TENSORS)
            .map(|i| {
                Tensor::from_f32(
                    format!("blk.{i}.weight"),
                    vec![SIDE as u64, SIDE as u64],
                    &values,
                )
            })
            .collect::<Result<Vec<_>, _>>()
            .expect("tensors"),
    )
    .expect("model")
}

struct Raw<'a>(&'a Tensor, Vec<usize>);

impl View for &Raw<'_> {
    fn dtype(&self) -> Dtype {
        Dtype::F32
    }
    fn shape(&self) -> &[usize] {
        &self.1
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.0.data())
    }
    fn data_len(&self) -> usize {
        self.0.data().len()
    }
}

fn bench(c: &mut Criterion) {
    let model = model();
    let bytes = (TENSORS * SIDE * SIDE * 4) as u64;
    let options = SaveOptions::default();
    let raw: Vec<Raw<'_>> = model
        .tensors
        .iter()
        .map(|t| Raw(t, vec![SIDE, SIDE]))
        .collect();
    let apr_file =
        apr::save_tensors_to_bytes(&model, ModelType::NeuralSequential, &options).expect("save");
    // The same tensors through the `safetensors` writer (the baseline of `apr/save`).
    let serialize = || {
        safetensors::serialize(
            model
                .tensors
                .iter()
                .zip(&raw)
                .map(|(t, r)| (t.name.as_str(), r)),
            None,
        )
    };
    let st_file = serialize().expect("serialize");

    let mut group = c.benchmark_group("save_load_96MiB");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("apr/save", |b| {
        b.iter(|| {
            apr::save_tensors_to_bytes(black_box(&model), ModelType::NeuralSequential, &options)
        })
    });
    group.bench_function("safetensors/serialize", |b| b.iter(serialize));
    group.bench_function("apr/load", |b| {
        b.iter(|| apr::load_tensors_from_bytes(black_box(&apr_file), ModelType::NeuralSequential))
    });
    // What `load_tensors_from_bytes` did before it checked the CRC32 while copying: the whole-file
    // CRC32 in a pass of its own (`AprFile::parse`), then every tensor copied out.
    group.bench_function("apr/parse+tensors (two passes)", |b| {
        b.iter(|| {
            let file = apr::AprFile::parse(black_box(&apr_file[..])).expect("parse");
            file.tensors()
        })
    });
    group.bench_function("safetensors/deserialize+copy", |b| {
        b.iter(|| {
            let file = SafeTensors::deserialize(black_box(&st_file)).expect("deserialize");
            file.tensors()
                .into_iter()
                .map(|(name, view)| (name, view.data().to_vec()))
                .collect::<Vec<_>>()
        })
    });
    group.finish();
}

/// The model the `embedded` example compiles in, loaded the way it loads it: the in-process part
/// of that binary's cold start.
fn embedded(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    #[allow(dead_code, reason = "decoded to measure, not used")]
    struct LogisticRegression {
        classes: Vec<String>,
        weights: Vec<[f32; 4]>,
        intercepts: Vec<f32>,
    }
    const MODEL: &[u8] = include_bytes!("../examples/data/iris_logistic.apr");
    c.bench_function("embedded/load_from_bytes", |b| {
        b.iter(|| {
            apr::load_from_bytes::<LogisticRegression>(
                black_box(MODEL),
                ModelType::LogisticRegression,
            )
        })
    });
}

criterion_group!(benches, bench, embedded);
criterion_main!(benches);
