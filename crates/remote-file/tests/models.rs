//! `.apr` models read remotely (`RemoteModel`, `BlockingModel`): local paths through
//! `object_store`'s local store in every run, and `moto` on loopback (`#[ignore]`d, as in
//! `s3.rs`) behind the counting, cutting proxy. Every tensor read remotely must equal the local
//! reader's; one tensor costs one request; damaged, truncated and replaced objects are refused
//! with typed errors.

use apr::{AprFile, ModelType, QuantType, SaveOptions, Tensor, TensorModel};
use envelope_core::{Compression, Signal};
use envelope_crypto::{DecryptionKey, EncryptOptions, EncryptTo, OsRng};
use envelope_sign::Policy;
use remote_file::{BlockingModel, ReadOptions, Retry};

use super::proxy::Proxy;
use super::s3::{Moto, location};
use super::{cheap_password, publisher};

/// Five tensors of a few KiB each: f32 matrices, a Q4_0 one, an odd-shaped vector.
fn model() -> TensorModel {
    let values: Vec<f32> = (0..4096).map(|i| (i as f32 * 0.013).sin()).collect();
    let quantized = TensorModel::new(vec![
        Tensor::from_f32("blk.0.ffn_up.weight", vec![32, 64], &values[..2048]).unwrap(),
    ])
    .unwrap()
    .quantize(QuantType::Q4_0)
    .unwrap();
    let mut tensors = vec![
        Tensor::from_f32("token_embd.weight", vec![32, 32], &values[..1024]).unwrap(),
        Tensor::from_f32("blk.0.attn_q.weight", vec![32, 32], &values[1024..2048]).unwrap(),
    ];
    tensors.extend(quantized.tensors);
    tensors.push(Tensor::from_f32("blk.0.attn_norm.weight", vec![32], &values[..32]).unwrap());
    tensors.push(Tensor::from_f32("output.weight", vec![16, 64], &values[3072..]).unwrap());
    TensorModel::new(tensors).unwrap()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ModelKind {
    Plain,
    Encrypted,
    Signed,
    Serde,
}

struct ModelSample {
    name: &'static str,
    bytes: Vec<u8>,
    kind: ModelKind,
}

fn model_samples() -> Vec<ModelSample> {
    let model = model();
    let save = |compression| {
        apr::save_tensors_to_bytes(
            &model,
            ModelType::NeuralSequential,
            &SaveOptions {
                compression,
                ..SaveOptions::default()
            },
        )
        .unwrap()
    };
    let streaming_plain = save(Compression::None);
    let streaming_zstd = save(Compression::ZstdL3);
    let trueno = apr::trueno::save_trueno_to_bytes(
        &model,
        ModelType::NeuralSequential,
        &apr::ModelCard::default(),
        zerocopy_trueno::BackendHint::Auto,
    )
    .unwrap();
    let (password, params) = cheap_password();
    let parts = apr::tensor_parts(
        &model,
        ModelType::NeuralSequential,
        &SaveOptions {
            compression: Compression::Lz4,
            ..SaveOptions::default()
        },
    )
    .unwrap();
    let encrypted = envelope_crypto::encrypt(
        &parts,
        EncryptTo::Password {
            password: &password,
            params,
        },
        EncryptOptions::default(),
        &mut OsRng,
    )
    .unwrap()
    .to_bytes()
    .unwrap();
    let (key, _) = publisher();
    let signed = envelope_sign::sign(&trueno, &key).unwrap();
    let serde = apr::save_to_bytes(
        &vec![3u32, 1, 4, 1, 5],
        ModelType::Custom,
        &SaveOptions::default(),
    )
    .unwrap();
    let sample = |name, bytes, kind| ModelSample { name, bytes, kind };
    vec![
        sample("streaming_plain.apr", streaming_plain, ModelKind::Plain),
        sample("streaming_zstd.apr", streaming_zstd, ModelKind::Plain),
        sample("trueno.apr", trueno, ModelKind::Plain),
        sample("encrypted.apr", encrypted, ModelKind::Encrypted),
        sample("signed_trueno.apr", signed, ModelKind::Signed),
        sample("serde.apr", serde, ModelKind::Serde),
    ]
}

/// Opens `open`'s location as `sample` needs (signature policy, key) and returns it.
fn open_sample(
    sample: &ModelSample,
    open: impl FnOnce(&apr::LoadOptions<'_>) -> remote_file::Result<BlockingModel>,
) -> BlockingModel {
    let (password, _) = cheap_password();
    let (_, trusted) = publisher();
    let load = match sample.kind {
        ModelKind::Signed => apr::LoadOptions {
            signature: Some(Policy::RequireSignature { trusted: &trusted }),
            ..apr::LoadOptions::default()
        },
        _ => apr::LoadOptions::default(),
    };
    let model = open(&load).unwrap_or_else(|error| panic!("{}: {error}", sample.name));
    match sample.kind {
        ModelKind::Encrypted => model.with_key(DecryptionKey::Password(&password)).unwrap(),
        _ => model,
    }
}

/// Requests an open of `sample` costs: the two ends, plus the payload streamed through the
/// signature check, or the whole object for a serde model.
fn open_requests(sample: &ModelSample) -> u64 {
    match sample.kind {
        ModelKind::Signed | ModelKind::Serde => 3,
        _ => 2,
    }
}

/// Every tensor read remotely (one by one, by name, and all in parallel) equals the local
/// reader's; a serde model decodes as the local file does.
fn check_against_local(model: &BlockingModel, sample: &ModelSample) {
    let local = AprFile::parse_lazy(&sample.bytes[..]).unwrap();
    assert_eq!(
        model.model().metadata(),
        local.metadata(),
        "{}",
        sample.name
    );
    assert_eq!(
        serde_json::to_value(model.model().summary()).unwrap(),
        serde_json::to_value(apr::summarize(&local)).unwrap()
    );
    if sample.kind == ModelKind::Serde {
        let whole = model.model().whole().unwrap();
        assert_eq!(
            whole.model::<Vec<u32>>().unwrap(),
            local.model::<Vec<u32>>().unwrap()
        );
        return;
    }
    let expected = match sample.kind {
        ModelKind::Encrypted => {
            let (password, _) = cheap_password();
            local
                .decrypt_tensors(DecryptionKey::Password(&password))
                .unwrap()
                .tensors
        }
        _ => local.tensors().unwrap().tensors,
    };
    assert_eq!(expected, self::model().tensors);
    for (position, tensor) in expected.iter().enumerate() {
        assert_eq!(
            &model.tensor_at(position).unwrap(),
            tensor,
            "{}",
            sample.name
        );
    }
    assert_eq!(model.tensor("blk.0.ffn_up.weight").unwrap(), expected[2]);
    assert_eq!(model.tensors(0..expected.len()).unwrap(), expected);
}

#[test]
fn local_model_paths_read_as_the_local_reader_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    for sample in model_samples() {
        let path = dir.path().join(sample.name);
        std::fs::write(&path, &sample.bytes).unwrap();
        let model = open_sample(&sample, |load| {
            BlockingModel::open(path.to_str().unwrap(), load, ReadOptions::default())
        });
        let file = model.model().file();
        assert_eq!(file.requests(), open_requests(&sample), "{}", sample.name);
        if sample.kind != ModelKind::Serde {
            let before = file.requests();
            model.tensor_at(3).unwrap();
            assert_eq!(file.requests() - before, 1, "{}: one tensor", sample.name);
        }
        check_against_local(&model, &sample);
    }
}

#[test]
fn tensors_larger_than_the_bound_in_flight_are_read_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let sample = model_samples().remove(0);
    let path = dir.path().join(sample.name);
    std::fs::write(&path, &sample.bytes).unwrap();
    let tight = ReadOptions {
        max_in_flight: 100,
        max_requests: 3,
        ..ReadOptions::default()
    };
    let model =
        BlockingModel::open(path.to_str().unwrap(), &apr::LoadOptions::default(), tight).unwrap();
    assert_eq!(model.tensors(0..5).unwrap(), self::model().tensors);
    assert_eq!(model.model().file().requests(), 2 + 5);
}

/// A flipped byte in one tensor's chunk: that tensor is refused (on every try, with the
/// checksum's signal), the others still read.
#[test]
fn a_damaged_tensor_is_refused_and_the_others_read() {
    let dir = tempfile::tempdir().unwrap();
    for sample in model_samples().into_iter().take(3) {
        let local = AprFile::parse_lazy(&sample.bytes[..]).unwrap();
        let payload = local
            .envelope()
            .layout()
            .span(envelope_core::Section::Payload)
            .unwrap();
        let entry = local.envelope().chunk_index().unwrap().entries()[1];
        let at = usize::try_from(payload.offset + entry.stored_offset + 5).unwrap();
        let mut damaged = sample.bytes.clone();
        damaged[at] ^= 0x08;
        let path = dir.path().join(sample.name);
        std::fs::write(&path, &damaged).unwrap();
        let options = ReadOptions {
            retry: quick_retry(),
            ..ReadOptions::default()
        };
        let model = BlockingModel::open(
            path.to_str().unwrap(),
            &apr::LoadOptions::default(),
            options,
        )
        .unwrap();
        let error = model.tensor_at(1).unwrap_err();
        assert_eq!(error.signal(), Signal::ChecksumMismatch, "{error}");
        assert!(
            matches!(
                error,
                remote_file::Error::RetriesExhausted { attempts: 2, .. }
            ),
            "{error}"
        );
        assert_eq!(model.tensor_at(0).unwrap(), self::model().tensors[0]);
        assert_eq!(model.tensor_at(4).unwrap(), self::model().tensors[4]);
    }
}

fn quick_retry() -> Retry {
    Retry {
        attempts: 2,
        base_delay: std::time::Duration::from_millis(1),
        max_delay: std::time::Duration::from_millis(2),
    }
}

#[test]
#[ignore = "needs $INTEROP_PYTHON with moto[server] (.ci/run)"]
fn models_on_s3_read_as_the_local_reader_reads_them() {
    let moto = Moto::start();
    let proxy = Proxy::start(moto.port());
    for sample in model_samples() {
        moto.put(sample.name, &sample.bytes);
        let before = proxy.gets();
        let model = open_sample(&sample, |load| {
            BlockingModel::open_location(
                location(&proxy.endpoint(), sample.name),
                load,
                ReadOptions::default(),
            )
        });
        assert_eq!(
            (proxy.gets() - before) as u64,
            open_requests(&sample),
            "{}",
            sample.name
        );
        assert_eq!(model.model().file().requests(), open_requests(&sample));
        if sample.kind != ModelKind::Serde {
            let before = proxy.gets();
            model.tensor_at(2).unwrap();
            assert_eq!(
                proxy.gets() - before,
                1,
                "{}: one tensor, one request",
                sample.name
            );
        }
        check_against_local(&model, &sample);
    }
    // A response cut in the middle of a tensor's body is requested again.
    let sample = model_samples().remove(0);
    let model = BlockingModel::open_location(
        location(&proxy.endpoint(), sample.name),
        &apr::LoadOptions::default(),
        ReadOptions::default(),
    )
    .unwrap();
    proxy.cut_after(1024 + 1500);
    assert_eq!(model.tensor_at(1).unwrap(), self::model().tensors[1]);
    assert_eq!(proxy.cuts(), 1);
}

#[test]
#[ignore = "needs $INTEROP_PYTHON with moto[server] (.ci/run)"]
fn truncated_replaced_and_damaged_models_on_s3_are_refused() {
    let moto = Moto::start();
    let sample = model_samples().remove(2); // trueno.apr
    let open = |key: &str| {
        BlockingModel::open_location(
            location(&moto.endpoint(), key),
            &apr::LoadOptions::default(),
            ReadOptions {
                retry: quick_retry(),
                ..ReadOptions::default()
            },
        )
    };
    moto.put("cut.apr", &sample.bytes[..sample.bytes.len() - 100]);
    let error = open("cut.apr").unwrap_err();
    assert!(
        matches!(
            error.signal(),
            Signal::InvalidFormat | Signal::ChecksumMismatch
        ),
        "{error}"
    );

    moto.put("replaced.apr", &sample.bytes);
    let model = open("replaced.apr").unwrap();
    model.tensor_at(0).unwrap();
    let other = model_samples().remove(0).bytes;
    moto.put("replaced.apr", &other);
    let error = model.tensor_at(1).unwrap_err();
    assert!(
        matches!(error, remote_file::Error::ObjectChanged { .. }),
        "{error}"
    );
    assert_eq!(error.signal(), Signal::ChecksumMismatch);

    let local = AprFile::parse_lazy(&sample.bytes[..]).unwrap();
    let payload = local
        .envelope()
        .layout()
        .span(envelope_core::Section::Payload)
        .unwrap();
    let entry = local.envelope().chunk_index().unwrap().entries()[3];
    let mut damaged = sample.bytes.clone();
    damaged[usize::try_from(payload.offset + entry.stored_offset).unwrap()] ^= 1;
    moto.put("damaged.apr", &damaged);
    let model = open("damaged.apr").unwrap();
    let error = model.tensor_at(3).unwrap_err();
    assert_eq!(error.signal(), Signal::ChecksumMismatch, "{error}");
    assert_eq!(model.tensor_at(2).unwrap(), self::model().tensors[2]);
}
