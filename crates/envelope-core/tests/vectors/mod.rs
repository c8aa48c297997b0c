//! The sample files of every shape, shared by the tests and by the generator that rewrites the
//! byte-stable ones as known-answer files in `tests/data` (`cargo xtask regenerate
//! envelope-core`, examples/regenerate_*_vectors.rs).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use envelope_core::{ChunkIndex, Compression, EnvelopeParts, Format, Payload};

/// `tests/data` of this crate.
pub(crate) fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// How many of the first [`samples`] are uncompressed, hence byte-stable known-answer files.
pub(crate) const KNOWN_ANSWER_SAMPLES: usize = 3;

/// The known-answer files: the first [`KNOWN_ANSWER_SAMPLES`] samples, by name.
pub(crate) fn checked_in() -> Vec<(&'static str, Vec<u8>)> {
    samples()
        .into_iter()
        .take(KNOWN_ANSWER_SAMPLES)
        .map(|sample| (sample.name, sample.bytes))
        .collect()
}

/// A named sample file and the payload it decodes to (`None` when encrypted).
pub(crate) struct Sample {
    pub(crate) name: &'static str,
    pub(crate) bytes: Vec<u8>,
    pub(crate) payload: Option<Vec<u8>>,
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "test data wraps on purpose"
)]
pub(crate) fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 7) as u8)
        .collect()
}

/// Samples covering every section and flag. Uncompressed ones are byte-stable and double as
/// known-answer files (tests/data); compressed ones depend on the compressor's version.
pub(crate) fn samples() -> Vec<Sample> {
    let mut out = Vec::new();

    // 1. A plain dataset: metadata, schema, uncompressed payload.
    let payload = pattern(200, 1);
    let mut parts = EnvelopeParts::new(Format::Dataset, 0x0001);
    parts.metadata = Cow::Borrowed(b"\x82\xa4name\xa4iris\xa7version\xa51.0.0");
    parts.schema = Cow::Borrowed(b"ARROW-SCHEMA-PLACEHOLDER");
    parts.num_rows = 10;
    parts.payload = Payload::Whole {
        stored: Cow::Borrowed(&payload),
        uncompressed_size: 200,
    };
    out.push(Sample {
        name: "dataset_plain.ald",
        bytes: parts.to_bytes().unwrap(),
        payload: Some(payload.clone()),
    });

    // 2. A model with every optional section but encryption: tensor index, signature, license.
    let payload = pattern(256, 2);
    let mut parts = EnvelopeParts::new(Format::Model, 0x0020);
    parts.metadata = Cow::Borrowed(b"\x81\xa4name\xa3mlp");
    parts.quantized = true;
    parts.payload = Payload::Whole {
        stored: Cow::Borrowed(&payload),
        uncompressed_size: 256,
    };
    // Opaque here, but shaped as docs/zerocopy.md says so the tools that parse it accept the
    // sample: no tensors (`tensor_count` 0), zero padding that puts the payload on a 64-byte
    // boundary, then the 4 bytes of prefix_crc32c the writer fills in.
    parts.tensor_index = Some(Cow::Owned(vec![0; 8]));
    let padding = 64 - parts.bytes_before_payload().unwrap().len() % 64;
    parts.tensor_index = Some(Cow::Owned(vec![0; 8 + padding % 64]));
    parts.signature = Some(Cow::Owned(vec![0x5a; 97]));
    // Opaque to this crate, but shaped as a valid license block (docs/license.md) so the tools
    // that do parse it accept the sample: flags 0x25 (no expiry enforced), no custom terms.
    let mut license = vec![0xa5; 75];
    license[64] = 0x25;
    license[71..].fill(0);
    parts.license = Some(Cow::Owned(license));
    out.push(Sample {
        name: "model_signed_licensed.apr",
        bytes: parts.to_bytes().unwrap(),
        payload: Some(payload),
    });

    // 3. An encrypted streaming dataset: the encryption block and chunks are opaque here.
    let mut parts = EnvelopeParts::new(Format::Dataset, 0x0010);
    parts.num_rows = 6;
    parts.encryption = Some(Cow::Owned(pattern(45, 3)));
    let chunks = [pattern(40, 4), pattern(0, 0), pattern(33, 5)];
    let index = ChunkIndex::from_sizes([(40, 24, 3), (0, 0, 0), (33, 17, 3)]).unwrap();
    parts.payload = Payload::Chunked {
        index,
        stored: Cow::Owned(chunks.concat()),
    };
    parts.compression = Compression::ZstdL3;
    out.push(Sample {
        name: "dataset_encrypted_streaming.ald",
        bytes: parts.to_bytes().unwrap(),
        payload: None,
    });

    // 4. Compressed samples (not byte-stable across compressor versions, so generated here only).
    for compression in [Compression::ZstdL3, Compression::ZstdL19, Compression::Lz4] {
        let data = pattern(5000, 6);
        let mut parts = EnvelopeParts::new(Format::Model, 0x0001);
        parts.compression = compression;
        parts.payload = Payload::compressed(compression, &data).unwrap();
        let bytes = parts.to_bytes().unwrap();
        out.push(Sample {
            name: "model_compressed",
            bytes,
            payload: Some(data.clone()),
        });

        let rows: Vec<Vec<u8>> = (0u8..4)
            .map(|chunk| pattern(700 + usize::from(chunk) * 10, chunk))
            .collect();
        let mut parts = EnvelopeParts::new(Format::Dataset, 0x0001);
        parts.compression = compression;
        parts.num_rows = 40;
        parts.payload =
            Payload::chunked(compression, rows.iter().map(|data| (10, data.as_slice()))).unwrap();
        out.push(Sample {
            name: "dataset_streaming",
            bytes: parts.to_bytes().unwrap(),
            payload: Some(rows.concat()),
        });
    }
    out
}
