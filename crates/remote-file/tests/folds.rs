//! `.fold` containers read remotely (`RemoteFold`, `BlockingFold`): local paths through
//! `object_store`'s local store in every run, and `moto` on loopback (`#[ignore]`d, as in
//! `s3.rs`) behind the counting proxy. Every chunk read remotely equals the local reader's; the
//! open costs two requests (three when the index is past the last bytes read), one chunk one;
//! damaged, truncated and replaced objects are refused with typed errors, and a damaged chunk
//! with Reed-Solomon bytes is corrected as locally.

use envelope_core::Signal;
use fold::{Compression, Ecc, FoldReader, FoldWriter, WriteOptions};
use remote_file::{BlockingFold, ReadOptions, Retry};

use super::proxy::Proxy;
use super::s3::{Moto, location};

/// Chunk names of [`sample`], in order.
const NAMES: [&str; 4] = ["weights", "protected", "config", "empty"];

/// A container with a zstd chunk, a raw chunk with `rs(16)`, a small JSON chunk and an empty one.
fn sample() -> Vec<u8> {
    let mut writer = FoldWriter::new(
        std::io::Cursor::new(Vec::new()),
        WriteOptions::new(Compression::None, Ecc::None),
    )
    .unwrap();
    let weights: Vec<u8> = (0..20_000_u32)
        .flat_map(|i| (i % 251).to_le_bytes())
        .collect();
    writer
        .add_chunk_with("weights", "TSAV", &weights, Compression::Zstd, Ecc::None)
        .unwrap();
    writer
        .add_chunk_with(
            "protected",
            "TSAV",
            &weights[..3000],
            Compression::None,
            Ecc::Rs(16),
        )
        .unwrap();
    writer
        .add_chunk_with(
            "config",
            "JSON",
            br#"{"layers":2}"#,
            Compression::None,
            Ecc::None,
        )
        .unwrap();
    writer
        .add_chunk_with("empty", "JSON", b"", Compression::None, Ecc::Rs(4))
        .unwrap();
    writer
        .finish(fold::json::Map::new(), 1_700_000_000.25)
        .unwrap()
        .into_inner()
}

fn local_chunks(bytes: &[u8]) -> Vec<Vec<u8>> {
    let reader = FoldReader::open(bytes).unwrap();
    NAMES
        .iter()
        .map(|name| reader.read_chunk(name).unwrap())
        .collect()
}

fn quick() -> ReadOptions {
    ReadOptions {
        retry: Retry {
            attempts: 2,
            base_delay: std::time::Duration::from_millis(1),
            max_delay: std::time::Duration::from_millis(2),
        },
        ..ReadOptions::default()
    }
}

/// The stored-payload offset of chunk `name` in `bytes`.
fn payload_offset(bytes: &[u8], name: &str) -> usize {
    let reader = FoldReader::open(bytes).unwrap();
    let entry = reader
        .index()
        .chunks
        .iter()
        .find(|c| c.name == name)
        .unwrap()
        .clone();
    usize::try_from(entry.offset).unwrap() + fold::CHUNK_HEADER_LEN as usize
}

#[test]
fn local_fold_paths_read_as_the_local_reader_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = sample();
    let path = dir.path().join("model.fold");
    std::fs::write(&path, &bytes).unwrap();
    let path = path.to_str().unwrap();
    let fold =
        BlockingFold::open(path, fold::ReadOptions::default(), ReadOptions::default()).unwrap();
    assert_eq!(
        fold.fold().file().requests(),
        2,
        "header and index from the two ends"
    );
    assert_eq!(
        fold.fold().reader().index().metadata,
        FoldReader::open(&bytes[..]).unwrap().index().metadata
    );
    let expected = local_chunks(&bytes);
    assert_eq!(fold.chunk("config").unwrap(), expected[2]);
    assert_eq!(fold.fold().file().requests(), 3, "one chunk, one request");
    assert_eq!(fold.chunks(&NAMES).unwrap(), expected);
    // The index past the last bytes read: one more request to open.
    let small = ReadOptions {
        first_read: 64,
        ..ReadOptions::default()
    };
    let fold = BlockingFold::open(path, fold::ReadOptions::default(), small).unwrap();
    assert_eq!(fold.fold().file().requests(), 3);
    assert_eq!(fold.chunks(&NAMES).unwrap(), expected);
    let error = fold.chunk("missing").unwrap_err();
    assert_eq!(error.signal(), Signal::Usage, "{error}");
    assert!(error.to_string().starts_with("Usage: "), "{error}");
}

#[test]
fn damaged_fold_chunks_are_corrected_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = sample();
    let expected = local_chunks(&bytes);
    let mut damaged = bytes.clone();
    damaged[payload_offset(&bytes, "weights") + 10] ^= 0x20;
    damaged[payload_offset(&bytes, "protected") + 100] ^= 0x20;
    let path = dir.path().join("damaged.fold");
    std::fs::write(&path, &damaged).unwrap();
    let fold = BlockingFold::open(
        path.to_str().unwrap(),
        fold::ReadOptions::default(),
        quick(),
    )
    .unwrap();
    let error = fold.chunk("weights").unwrap_err();
    assert_eq!(error.signal(), Signal::ChecksumMismatch, "{error}");
    assert!(
        matches!(
            error,
            remote_file::Error::RetriesExhausted { attempts: 2, .. }
        ),
        "{error}"
    );
    assert!(
        error.to_string().starts_with("ChecksumMismatch: "),
        "{error}"
    );
    // Reed-Solomon corrects the protected chunk, as the local reader does.
    assert_eq!(fold.chunk("protected").unwrap(), expected[1]);
    assert_eq!(
        FoldReader::open(&damaged[..])
            .unwrap()
            .read_chunk("protected")
            .unwrap(),
        expected[1]
    );
    assert_eq!(fold.chunk("config").unwrap(), expected[2]);
    // A file cut short: the header names an index past its end.
    let path = dir.path().join("cut.fold");
    std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
    let error = BlockingFold::open(
        path.to_str().unwrap(),
        fold::ReadOptions::default(),
        quick(),
    )
    .unwrap_err();
    assert!(
        matches!(
            error,
            remote_file::Error::Fold(fold::Error::Truncated { .. })
        ),
        "{error}"
    );
    assert_eq!(error.signal(), Signal::InvalidFormat);
}

#[test]
#[ignore = "needs $INTEROP_PYTHON with moto[server] (.ci/run)"]
fn fold_files_on_s3_read_as_the_local_reader_reads_them() {
    let moto = Moto::start();
    let proxy = Proxy::start(moto.port());
    let bytes = sample();
    let expected = local_chunks(&bytes);
    moto.put("model.fold", &bytes);
    let open = |key: &str, options: ReadOptions| {
        BlockingFold::open_location(
            location(&proxy.endpoint(), key),
            fold::ReadOptions::default(),
            options,
        )
    };
    let before = proxy.gets();
    let fold = open("model.fold", ReadOptions::default()).unwrap();
    assert_eq!(
        proxy.gets() - before,
        2,
        "header and index from the two ends"
    );
    let before = proxy.gets();
    assert_eq!(fold.chunk("weights").unwrap(), expected[0]);
    assert_eq!(proxy.gets() - before, 1, "one chunk, one request");
    assert_eq!(fold.chunks(&NAMES).unwrap(), expected);
    // A response cut in the middle of a chunk's body is requested again.
    proxy.cut_after(1024 + 1500);
    assert_eq!(fold.chunk("protected").unwrap(), expected[1]);
    assert_eq!(proxy.cuts(), 1);

    // Truncated, replaced and damaged objects.
    moto.put("cut.fold", &bytes[..bytes.len() - 10]);
    let error = open("cut.fold", quick()).unwrap_err();
    assert!(
        matches!(
            error,
            remote_file::Error::Fold(fold::Error::Truncated { .. })
        ),
        "{error}"
    );
    moto.put("replaced.fold", &bytes);
    let fold = open("replaced.fold", quick()).unwrap();
    fold.chunk("config").unwrap();
    let mut other = bytes.clone();
    let at = payload_offset(&bytes, "config");
    other[at] ^= 1;
    moto.put("replaced.fold", &other);
    let error = fold.chunk("weights").unwrap_err();
    assert!(
        matches!(error, remote_file::Error::ObjectChanged { .. }),
        "{error}"
    );
    moto.put("damaged.fold", &other);
    let fold = open("damaged.fold", quick()).unwrap();
    let error = fold.chunk("config").unwrap_err();
    assert_eq!(error.signal(), Signal::ChecksumMismatch, "{error}");
    assert_eq!(fold.chunk("weights").unwrap(), expected[0]);
}
