//! Round-trip harness between the native and the wasm32 builds of the envelope loader.
//!
//! `cargo xtask wasm-gate` builds this crate twice: as a plain wasm module (the `cdylib`, driven by
//! `run.mjs` under Node.js through the C-ABI functions in [`exports`]) and natively (the `native`
//! binary). Files written by one side are verified by the other. Natively zstd is libzstd and on
//! wasm32 it is the pure-Rust ruzstd, so this is the proof that their frames interoperate.
//!
//! Key decision: the sample set is defined once, here ([`samples`]), and both sides build it from
//! the same code. What a reader must see is an [`Outcome`] taken from the sample's definition, not
//! from parsing, and both sides compare [`verify`] against it: natively directly, on the wasm side
//! through the JSON record the native writer puts in `manifest.json`.
//!
//! No wasm-bindgen: the module needs nothing beyond what rustup provides, and imports nothing from
//! JavaScript.

use std::borrow::Cow;
use std::fmt::Write as _;

// `ald::Error` holds every envelope error (`From`), with the same signal and text: the harness
// reports the dataset crate's refusals and the envelope's alike.
use ald::{Error, Result};
use envelope_core::{
    Compression, Envelope, EnvelopeParts, Flags, Format, Payload, Section, Signal,
};
use envelope_crypto::{
    Argon2Params, DecryptionKey, Decryptor, EncryptOptions, EncryptTo, EncryptionBlock, KeySource,
    Password,
};
use envelope_license::{LicenseBlock, LicenseFlags};
use envelope_sign::{Identity, Policy, TrustedKeys};
use zerocopy_trueno::{AlignedTensors, BackendHint, DType, Integrity, TensorIndex, aligned_parts};

pub mod exports;

/// `dataset_type` of the `.ald` samples (tabular).
const DATASET_TYPE: u16 = 0x0001;
/// `model_type` of the `.apr` samples.
const MODEL_TYPE: u16 = 0x0020;
/// Rows in a dataset sample.
const ROWS: u64 = 4000;
/// Bytes of a model sample's payload: several zstd blocks (128 KiB each at most).
const MODEL_PAYLOAD_LEN: usize = 300_000;
/// Rows per chunk of a STREAMING sample.
const ROWS_PER_CHUNK: u64 = 1000;

/// What loading a file must give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The file verified and its payload decoded.
    Loaded(Loaded),
    /// The file was refused with this signal.
    Refused(Signal),
}

/// The facts of a loaded file that both sides compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// Dataset or model.
    pub format: Format,
    /// `dataset_type` / `model_type`.
    pub type_id: u16,
    /// Header flags.
    pub flags: Flags,
    /// Compression id of the header.
    pub compression: Compression,
    /// Row count (0 for models).
    pub num_rows: u64,
    /// Length of the decoded payload.
    pub payload_len: u64,
    /// CRC32 ([`payload_hash`]) of the decoded payload.
    pub payload_crc32: u32,
}

impl Outcome {
    /// The outcome of loading a file whose decoded payload is `payload`.
    #[must_use]
    pub fn loaded(
        format: Format,
        type_id: u16,
        flags: Flags,
        compression: Compression,
        num_rows: u64,
        payload: &[u8],
    ) -> Self {
        Self::Loaded(Loaded {
            format,
            type_id,
            flags,
            compression,
            num_rows,
            payload_len: payload.len() as u64,
            payload_crc32: payload_hash(payload),
        })
    }

    /// The outcome as one JSON object (the record `run.mjs` compares field by field).
    #[must_use]
    pub fn to_json(&self) -> String {
        match self {
            Self::Refused(signal) => format!(r#"{{"signal":"{}"}}"#, signal.name()),
            Self::Loaded(loaded) => format!(
                concat!(
                    r#"{{"signal":"ok","format":"{}","type_id":{},"flags":"{}","#,
                    r#""compression":"{}","num_rows":{},"payload_len":{},"#,
                    r#""payload_crc32":"{:08x}"}}"#
                ),
                loaded.format.extension(),
                loaded.type_id,
                loaded.flags.names().join("|"),
                loaded.compression.name(),
                loaded.num_rows,
                loaded.payload_len,
                loaded.payload_crc32,
            ),
        }
    }
}

/// One sample file: its name (with extension), its bytes, and what loading it must give.
#[derive(Debug, Clone)]
pub struct Sample {
    /// File name, e.g. `zstd-l19.apr`; the sides save it as `native-<name>` and `wasm-<name>`.
    pub name: &'static str,
    /// The encoded file.
    pub bytes: Vec<u8>,
    /// The expected outcome, from the sample's definition.
    pub expected: Outcome,
}

type Build = fn() -> Result<(Vec<u8>, Outcome)>;

/// The sample set: name and how to build it. Later issues add quantized files here.
const RECIPES: &[(&str, Build)] = &[
    ("none.ald", || whole(Format::Dataset, Compression::None)),
    ("zstd-l3.ald", || {
        whole(Format::Dataset, Compression::ZstdL3)
    }),
    ("zstd-l19.ald", || {
        whole(Format::Dataset, Compression::ZstdL19)
    }),
    ("lz4.ald", || whole(Format::Dataset, Compression::Lz4)),
    ("none.apr", || whole(Format::Model, Compression::None)),
    ("zstd-l3.apr", || whole(Format::Model, Compression::ZstdL3)),
    ("zstd-l19.apr", || {
        whole(Format::Model, Compression::ZstdL19)
    }),
    ("lz4.apr", || whole(Format::Model, Compression::Lz4)),
    ("streaming-zstd-l3.ald", || streaming(Compression::ZstdL3)),
    ("streaming-lz4.ald", || streaming(Compression::Lz4)),
    ("sections.apr", sections),
    ("encrypted-password-zstd.ald", encrypted_password),
    ("encrypted-recipient-signed.apr", encrypted_recipient_signed),
    (
        "encrypted-multi-streaming-signed.ald",
        encrypted_multi_streaming,
    ),
    ("trueno-native.ald", trueno_dataset),
    ("trueno-native-streaming.ald", trueno_dataset_streaming),
    (
        "fail_array_bit_flip.ChecksumMismatch.ald",
        trueno_dataset_array_flipped,
    ),
    ("fail_streaming_array_bit_flip.ChecksumMismatch.ald", || {
        array_flipped(trueno_dataset_streaming()?.0)
    }),
    ("fail_tampered_signed.SignatureInvalid.apr", tampered_signed),
    ("fail_bit_flip.ChecksumMismatch.ald", bit_flip),
];

/// The harness' fixed test keys (fine in a test harness, never elsewhere): the password of the
/// password-mode sample, the recipient identity the samples are encrypted to, and the publisher
/// identity whose signatures the reader trusts.
const TEST_PASSWORD: &str = "wasm round trip";
/// Argon2id costs of the password sample: cheap, still within the reader limits.
const TEST_KDF: Argon2Params = Argon2Params {
    m_cost_kib: 1024,
    t_cost: 1,
    p_cost: 1,
};

fn recipient() -> Identity {
    Identity::from_seed([0x2a; 32])
}

fn second_recipient() -> Identity {
    Identity::from_seed([0x2b; 32])
}

fn publisher() -> Identity {
    Identity::from_seed([0x5e; 32])
}

// A deterministic byte generator standing in for a CSPRNG, so that both sides build their
// samples without any source of randomness (the wasm module imports nothing): the tests' shared
// counting RNG.
// test-support is a native dev-dependency, so the harness includes its one file by path.
#[path = "../../../crates/test-support/src/counting_rng.rs"]
#[allow(
    unreachable_pub,
    reason = "test-support re-exports it; here it stays private"
)]
mod counting_rng;
use counting_rng::CountingRng as TestRng;

/// Number of samples.
#[must_use]
pub fn sample_count() -> usize {
    RECIPES.len()
}

/// The name of sample `kind`, without building it.
#[must_use]
pub fn sample_name(kind: usize) -> Option<&'static str> {
    RECIPES.get(kind).map(|(name, _)| *name)
}

/// Builds sample `kind` (`0..sample_count()`), or `None` past the end.
///
/// # Errors
/// Whatever the envelope writer reports (for example `Usage` without compression support).
pub fn sample(kind: usize) -> Option<Result<Sample>> {
    let (name, build) = RECIPES.get(kind)?;
    Some(build().map(|(bytes, expected)| Sample {
        name,
        bytes,
        expected,
    }))
}

/// Builds every sample.
///
/// # Errors
/// As [`sample`].
pub fn samples() -> Result<Vec<Sample>> {
    (0..sample_count()).filter_map(sample).collect()
}

/// Verifies `bytes` as any envelope file and decodes its payload.
#[must_use]
pub fn verify(bytes: &[u8]) -> Outcome {
    verify_detailed(bytes).0
}

/// [`verify`] as the JSON record of [`Outcome::to_json`], plus a `detail` field with the error
/// message when the file is refused (for the report; not compared).
#[must_use]
pub fn verify_record(bytes: &[u8]) -> String {
    let (outcome, error) = verify_detailed(bytes);
    let mut record = outcome.to_json();
    if let Some(error) = error {
        record.pop(); // the closing brace
        record.push_str(r#","detail":""#);
        json_escape_into(&mut record, &error.to_string());
        record.push_str(r#""}"#);
    }
    record
}

/// Loads like a careful reader: a SIGNED file must carry a valid signature by the harness'
/// publisher (checked before decryption); an ENCRYPTED file is decrypted with the harness' key
/// for its mode.
fn load_payload(envelope: &Envelope<&[u8]>) -> Result<Vec<u8>> {
    let flags = envelope.header().flags();
    if flags.contains(Flags::SIGNED) {
        let trusted = TrustedKeys::from_keys([publisher().signing_public_key()]);
        Policy::RequireSignature { trusted: &trusted }.check(envelope)?;
    }
    if let Some(license) = envelope_license::read_license(envelope)? {
        // A fixed clock: the wasm module has none, which is why the time is an argument.
        license.check(1_800_000_000)?;
    }
    if flags.contains(Flags::TRUENO_NATIVE) {
        // On wasm32 the file is a byte buffer, not a map: the aligned tensors load through the
        // in-memory path (each checked by its CRC-32C, then copied out).
        let format = envelope.header().format();
        let tensors = AlignedTensors::open(envelope.as_bytes(), format, Integrity::PerTensor)?;
        for position in 0..tensors.index().len() {
            let view = tensors.tensor_at(position)?;
            if view.to_f32_vec().len() as u64 != view.entry().len() {
                return Err(Error::InvalidArgument(
                    "a tensor decoded to the wrong length",
                ));
            }
        }
    }
    if flags.contains(Flags::TRUENO_NATIVE) && envelope.header().format() == Format::Dataset {
        check_aligned_dataset(envelope)?;
    }
    if !flags.contains(Flags::ENCRYPTED) {
        return Ok(envelope.decode_payload()?.into_owned());
    }
    let block = EncryptionBlock::parse(envelope.section(Section::Encryption).unwrap_or_default())?;
    let password = Password::new(TEST_PASSWORD);
    let secret = recipient().recipient_secret_key();
    let key = match block.source {
        KeySource::Password { .. } => DecryptionKey::Password(&password),
        _ => DecryptionKey::Recipient(&secret),
    };
    Ok(Decryptor::new(envelope, key)?.payload()?)
}

fn verify_detailed(bytes: &[u8]) -> (Outcome, Option<Error>) {
    let decoded = Envelope::parse_any(bytes)
        .map_err(Error::from)
        .and_then(|envelope| {
            let payload = load_payload(&envelope)?;
            let header = envelope.header();
            Ok(Outcome::loaded(
                header.format(),
                header.type_id(),
                header.flags(),
                header.compression(),
                header.num_rows(),
                &payload,
            ))
        });
    match decoded {
        Ok(outcome) => (outcome, None),
        Err(error) => (Outcome::Refused(error.signal()), Some(error)),
    }
}

/// A TRUENO_NATIVE dataset loads through the `.ald` crate's in-memory path (on wasm32 there is
/// nothing to map), and the table it rebuilds holds exactly the aligned arrays: one column per
/// array, in index order, of the header's row count, whose little-endian bytes are the array's.
fn check_aligned_dataset(envelope: &Envelope<&[u8]>) -> Result<()> {
    let wrong = |reason| Err(Error::InvalidArgument(reason));
    let table = ald::load_from_bytes(envelope.as_bytes())?.to_batch()?;
    if table.num_rows() as u64 != envelope.header().num_rows() {
        return wrong("the loaded table has another row count than the header");
    }
    let tensors = AlignedTensors::open(envelope.as_bytes(), Format::Dataset, Integrity::PerTensor)?;
    if tensors.index().len() != table.num_columns() {
        return wrong("the loaded table has another column count than the index");
    }
    for (position, column) in table.columns().iter().enumerate() {
        let view = tensors.tensor_at(position)?;
        let data = column.to_data();
        let values = data.buffers().first().map(|buffer| buffer.as_slice());
        let size = view.entry().dtype.size();
        let start = data.offset() * size;
        let loaded = values.and_then(|bytes| bytes.get(start..start + view.bytes().len()));
        if table.schema().field(position).name() != &view.entry().name
            || loaded != Some(view.bytes())
        {
            return wrong("a loaded column differs from its aligned array");
        }
    }
    Ok(())
}

/// The hash both sides compare decoded payloads by: CRC32 (IEEE), computed in Rust on each side.
#[must_use]
pub fn payload_hash(payload: &[u8]) -> u32 {
    crc32fast::hash(payload)
}

/// Escapes `text` as the inside of a JSON string.
pub fn json_escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
}

/// CSV-like rows: repetitive enough to compress, varied enough that a wrong byte shows.
fn dataset_rows(rows: u64) -> Vec<u8> {
    let mut out = String::new();
    for row in 0..rows {
        let _ = writeln!(
            out,
            "{row},{},{}.{:02},label-{}",
            row.wrapping_mul(2_654_435_761) % 100_000,
            row % 97,
            row % 100,
            row % 7
        );
    }
    out.into_bytes()
}

/// Little-endian f32 "weights" from a linear congruential generator, on a coarse grid so that
/// they compress.
fn model_weights(len: usize) -> Vec<u8> {
    let mut state: u32 = 0x2545_f491;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let step = f32::from(state.to_le_bytes()[3] >> 4);
        out.extend_from_slice(&(step / 16.0 - 0.5).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A file with one whole payload compressed with `compression`.
fn whole(format: Format, compression: Compression) -> Result<(Vec<u8>, Outcome)> {
    let (data, type_id, num_rows) = match format {
        Format::Dataset => (dataset_rows(ROWS), DATASET_TYPE, ROWS),
        Format::Model => (model_weights(MODEL_PAYLOAD_LEN), MODEL_TYPE, 0),
    };
    let mut parts = EnvelopeParts::new(format, type_id);
    parts.compression = compression;
    parts.metadata = Cow::Borrowed(b"\x82\xa4name\xa6sample\xa7version\xa51.0.0");
    if format == Format::Dataset {
        parts.schema = Cow::Borrowed(b"ARROW-SCHEMA-PLACEHOLDER");
        parts.num_rows = num_rows;
    }
    parts.payload = Payload::compressed(compression, &data)?;
    let expected = Outcome::loaded(
        format,
        type_id,
        Flags::empty(),
        compression,
        num_rows,
        &data,
    );
    Ok((parts.to_bytes()?, expected))
}

/// A STREAMING dataset: independently compressed chunks described by a chunk index.
fn streaming(compression: Compression) -> Result<(Vec<u8>, Outcome)> {
    let rows = dataset_rows(ROWS);
    let lines: Vec<&[u8]> = rows.split_inclusive(|&byte| byte == b'\n').collect();
    let chunks: Vec<Vec<u8>> = lines
        .chunks(usize::try_from(ROWS_PER_CHUNK).unwrap_or(usize::MAX))
        .map(<[&[u8]]>::concat)
        .collect();
    let mut parts = EnvelopeParts::new(Format::Dataset, DATASET_TYPE);
    parts.compression = compression;
    parts.num_rows = ROWS;
    parts.payload = Payload::chunked(
        compression,
        chunks
            .iter()
            .map(|chunk| (ROWS_PER_CHUNK, chunk.as_slice())),
    )?;
    let expected = Outcome::loaded(
        Format::Dataset,
        DATASET_TYPE,
        Flags::STREAMING,
        compression,
        ROWS,
        &rows,
    );
    Ok((parts.to_bytes()?, expected))
}

/// A quantized TRUENO_NATIVE model: a real aligned tensor index (read on wasm32 through the
/// in-memory path), a license block checked against a fixed clock, and a signature by the
/// harness' publisher.
fn sections() -> Result<(Vec<u8>, Outcome)> {
    let weights = model_weights(4096);
    let bias: Vec<u8> = (0u8..14).collect();
    let index = TensorIndex::plan(
        [
            ("layer.weight", DType::F32, &[32u64, 32][..]),
            ("layer.bias", DType::F16, &[7u64][..]),
        ],
        BackendHint::WasmSimd,
    )?;
    let mut parts = EnvelopeParts::new(Format::Model, MODEL_TYPE);
    parts.metadata = Cow::Borrowed(b"\x81\xa4name\xa3mlp");
    parts.quantized = true;
    let mut license = LicenseBlock::new([7; 16], "wasm round trip", 1_700_000_000, 4_000_000_000);
    license.flags = LicenseFlags::EXPIRATION_ENFORCED;
    parts.license = Some(Cow::Owned(license.encode()?));
    let parts = aligned_parts(parts, index, &[&weights, &bias], None)?;
    let flags = Flags::SIGNED
        .with(Flags::LICENSED)
        .with(Flags::TRUENO_NATIVE)
        .with(Flags::QUANTIZED);
    let expected = Outcome::loaded(
        Format::Model,
        MODEL_TYPE,
        flags,
        Compression::None,
        0,
        parts.payload.stored(),
    );
    let signed = envelope_sign::sign(&parts.to_bytes()?, &publisher().signing_key())?;
    Ok((signed, expected))
}

/// Rows of the TRUENO_NATIVE dataset sample: odd, so that no array ends on a 64-byte boundary.
const TRUENO_ROWS: usize = 777;

/// A TRUENO_NATIVE dataset written by the `.ald` crate: one column of every array type (f32, f64,
/// i32, i64, u8), each stored as one 64-byte-aligned array.
fn trueno_dataset() -> Result<(Vec<u8>, Outcome)> {
    trueno_dataset_with(false)
}

/// The TRUENO_NATIVE dataset in its STREAMING form: one chunk holding every row and the whole
/// aligned payload (docs/zerocopy.md §10.1), the form of datasets over 4 GiB.
fn trueno_dataset_streaming() -> Result<(Vec<u8>, Outcome)> {
    trueno_dataset_with(true)
}

fn trueno_dataset_with(streaming: bool) -> Result<(Vec<u8>, Outcome)> {
    use arrow_array::{ArrayRef, Float32Array, Float64Array, Int32Array, Int64Array, UInt8Array};
    use std::sync::Arc;
    let n = i32::try_from(TRUENO_ROWS).unwrap_or(i32::MAX);
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "f32",
            Arc::new(Float32Array::from_iter_values(
                (0..n).map(|i| f32::from(u16::try_from(i).unwrap_or(0)) / 8.0 - 40.0),
            )),
        ),
        (
            "f64",
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| f64::from(i).sqrt()),
            )),
        ),
        (
            "i32",
            Arc::new(Int32Array::from_iter_values(
                (0..n).map(|i| i.wrapping_mul(-2_654_435)),
            )),
        ),
        (
            "i64",
            Arc::new(Int64Array::from_iter_values(
                (0..i64::from(n)).map(|i| i.wrapping_mul(0x0123_4567_89ab_cdef)),
            )),
        ),
        (
            "u8",
            Arc::new(UInt8Array::from_iter_values(
                (0..n).map(|i| i.to_le_bytes()[0].wrapping_mul(37)),
            )),
        ),
    ];
    let batch = arrow_array::RecordBatch::try_from_iter(columns)
        .map_err(|_| Error::InvalidArgument("the sample table cannot be built"))?;
    let options = ald::aligned::TruenoOptions {
        backend: BackendHint::WasmSimd,
        streaming,
    };
    let parts = ald::aligned::trueno_parts_with(
        &ald::ArrowDataset::from_batch(batch),
        ald::DatasetType::Tabular,
        &ald::Metadata::default(),
        &options,
    )?;
    let flags = if streaming {
        Flags::TRUENO_NATIVE.with(Flags::STREAMING)
    } else {
        Flags::TRUENO_NATIVE
    };
    let expected = Outcome::loaded(
        Format::Dataset,
        ald::DatasetType::Tabular.id(),
        flags,
        Compression::None,
        TRUENO_ROWS as u64,
        parts.payload.stored(),
    );
    Ok((parts.to_bytes()?, expected))
}

/// The TRUENO_NATIVE dataset with one bit of an array flipped and the CRC32 trailer recomputed:
/// only the array's own CRC-32C in the tensor index can tell, and the reader must refuse it.
fn trueno_dataset_array_flipped() -> Result<(Vec<u8>, Outcome)> {
    array_flipped(trueno_dataset()?.0)
}

/// `bytes` (a TRUENO_NATIVE dataset sample) with one bit of its i64 array flipped and the CRC32
/// trailer recomputed.
fn array_flipped(mut bytes: Vec<u8>) -> Result<(Vec<u8>, Outcome)> {
    let envelope = Envelope::parse(&bytes[..], Format::Dataset)?;
    let payload = envelope
        .layout()
        .span(Section::Payload)
        .ok_or(Error::InvalidArgument("a sample has no payload span"))?;
    let index = TensorIndex::parse(
        Format::Dataset,
        envelope.section(Section::TensorIndex).unwrap_or_default(),
    )?;
    let array = index
        .get("i64")
        .ok_or(Error::InvalidArgument("the sample has no i64 array"))?;
    let at = usize::try_from(payload.offset + array.offset + array.size_bytes / 2)
        .map_err(|_| Error::InvalidArgument("sample larger than memory"))?;
    let byte = bytes
        .get_mut(at)
        .ok_or(Error::InvalidArgument("array past the end"))?;
    *byte ^= 0x08;
    let end = bytes.len() - envelope_core::CHECKSUM_LEN;
    let crc = crc32fast::hash(&bytes[..end]);
    bytes[end..].copy_from_slice(&crc.to_le_bytes());
    Ok((bytes, Outcome::Refused(Signal::ChecksumMismatch)))
}

/// A zstd dataset (compressed, then encrypted) in password mode.
fn encrypted_password() -> Result<(Vec<u8>, Outcome)> {
    let data = dataset_rows(ROWS);
    let mut parts = EnvelopeParts::new(Format::Dataset, DATASET_TYPE);
    parts.compression = Compression::ZstdL3;
    parts.num_rows = ROWS;
    parts.schema = Cow::Borrowed(b"ARROW-SCHEMA-PLACEHOLDER");
    parts.payload = Payload::compressed(Compression::ZstdL3, &data)?;
    let password = Password::new(TEST_PASSWORD);
    let to = EncryptTo::Password {
        password: &password,
        params: TEST_KDF,
    };
    let sealed = envelope_crypto::encrypt(&parts, to, EncryptOptions::default(), &mut TestRng(1))?;
    let expected = Outcome::loaded(
        Format::Dataset,
        DATASET_TYPE,
        Flags::ENCRYPTED,
        Compression::ZstdL3,
        ROWS,
        &data,
    );
    Ok((sealed.to_bytes()?, expected))
}

/// An LZ4 model encrypted for one recipient, then signed.
fn encrypted_recipient_signed() -> Result<(Vec<u8>, Outcome)> {
    let data = model_weights(MODEL_PAYLOAD_LEN);
    let mut parts = EnvelopeParts::new(Format::Model, MODEL_TYPE);
    parts.compression = Compression::Lz4;
    parts.metadata = Cow::Borrowed(b"\x81\xa4name\xa3mlp");
    parts.payload = Payload::compressed(Compression::Lz4, &data)?;
    let to = recipient().recipient_public_key();
    let sealed = envelope_crypto::encrypt(
        &parts,
        EncryptTo::Recipient(&to),
        EncryptOptions::default(),
        &mut TestRng(2),
    )?;
    let signed = envelope_sign::sign(&sealed.to_bytes()?, &publisher().signing_key())?;
    let expected = Outcome::loaded(
        Format::Model,
        MODEL_TYPE,
        Flags::ENCRYPTED.with(Flags::SIGNED),
        Compression::Lz4,
        0,
        &data,
    );
    Ok((signed, expected))
}

/// A STREAMING zstd dataset encrypted chunk by chunk for two recipients, then signed.
fn encrypted_multi_streaming() -> Result<(Vec<u8>, Outcome)> {
    let (plain, _) = streaming(Compression::ZstdL3)?;
    let envelope = Envelope::parse(&plain[..], Format::Dataset)?;
    let keys = [
        second_recipient().recipient_public_key(),
        recipient().recipient_public_key(),
    ];
    let sealed = envelope_crypto::encrypt(
        &envelope.to_parts(),
        EncryptTo::Recipients(&keys),
        EncryptOptions::default(),
        &mut TestRng(3),
    )?;
    let signed = envelope_sign::sign(&sealed.to_bytes()?, &publisher().signing_key())?;
    let expected = Outcome::loaded(
        Format::Dataset,
        DATASET_TYPE,
        Flags::ENCRYPTED.with(Flags::SIGNED).with(Flags::STREAMING),
        Compression::ZstdL3,
        ROWS,
        &dataset_rows(ROWS),
    );
    Ok((signed, expected))
}

/// The signed and encrypted model with one payload byte changed and the CRC32 recomputed, as an
/// attacker would: the signature check refuses it before decryption.
fn tampered_signed() -> Result<(Vec<u8>, Outcome)> {
    let (mut bytes, _) = encrypted_recipient_signed()?;
    let payload = Envelope::parse_any(&bytes[..])?
        .layout()
        .span(Section::Payload)
        .ok_or(Error::InvalidArgument("a sample has no payload span"))?;
    let middle = usize::try_from(payload.offset + payload.len / 2)
        .map_err(|_| Error::InvalidArgument("sample larger than memory"))?;
    if let Some(byte) = bytes.get_mut(middle) {
        *byte ^= 0x01;
    }
    let end = bytes.len() - envelope_core::CHECKSUM_LEN;
    let crc = crc32fast::hash(&bytes[..end]);
    bytes[end..].copy_from_slice(&crc.to_le_bytes());
    Ok((bytes, Outcome::Refused(Signal::SignatureInvalid)))
}

/// A zstd dataset with one bit flipped in the middle of its payload: the CRC32 trailer no longer
/// matches, so every reader must refuse it with `ChecksumMismatch` (000 §5.0).
fn bit_flip() -> Result<(Vec<u8>, Outcome)> {
    let (mut bytes, _) = whole(Format::Dataset, Compression::ZstdL3)?;
    let payload = Envelope::parse_any(&bytes[..])?
        .layout()
        .span(Section::Payload)
        .ok_or(Error::InvalidArgument("a sample has no payload span"))?;
    let middle = usize::try_from(payload.offset + payload.len / 2)
        .map_err(|_| Error::InvalidArgument("sample larger than memory"))?;
    let byte = bytes
        .get_mut(middle)
        .ok_or(Error::InvalidArgument("payload span past the end"))?;
    *byte ^= 0x10;
    Ok((bytes, Outcome::Refused(Signal::ChecksumMismatch)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_verifies_natively_as_defined() {
        for sample in samples().unwrap() {
            assert_eq!(verify(&sample.bytes), sample.expected, "{}", sample.name);
        }
    }

    #[test]
    fn sample_names_are_unique_and_carry_their_format() {
        let mut names: Vec<_> = (0..sample_count()).filter_map(sample_name).collect();
        for sample in samples().unwrap() {
            let extension = sample.name.rsplit('.').next().unwrap();
            assert!(
                Format::from_magic(sample.bytes[..4].try_into().unwrap())
                    .is_some_and(|format| format.extension() == extension),
                "{}",
                sample.name
            );
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), sample_count());
    }

    #[test]
    fn refused_record_carries_the_signal_and_a_detail() {
        let corrupt = samples().unwrap().pop().unwrap();
        assert_eq!(corrupt.expected, Outcome::Refused(Signal::ChecksumMismatch));
        let record = verify_record(&corrupt.bytes);
        assert!(
            record.starts_with(r#"{"signal":"ChecksumMismatch","detail":""#),
            "{record}"
        );
        assert!(record.ends_with("\"}"), "{record}");
    }

    #[test]
    fn json_strings_are_escaped() {
        let mut out = String::new();
        json_escape_into(&mut out, "a\"b\\c\n");
        assert_eq!(out, r#"a\"b\\c\u000a"#);
    }
}
