//! Test modules and shared helpers.

mod complexity;
mod corpus;
mod corruption;
mod extract;
pub(crate) mod fuzz_check;
mod interop;
mod props;
mod roundtrip;
mod rules;
mod vectors;

use std::io::Cursor;

use fold::json::{Map, Value};
use fold::{FoldReader, FoldWriter, WriteOptions};

/// A chunk to write: name, ctype, payload.
pub(crate) type Spec<'a> = (&'a str, &'a str, &'a [u8]);

/// Writes a container to memory.
pub(crate) fn build(
    opts: WriteOptions,
    chunks: &[Spec<'_>],
    metadata: Map,
    created_at: f64,
) -> Vec<u8> {
    let mut w = FoldWriter::new(Cursor::new(Vec::new()), opts).unwrap();
    for (name, ctype, payload) in chunks {
        w.add_chunk(name, ctype, payload).unwrap();
    }
    w.finish(metadata, created_at).unwrap().into_inner()
}

/// [`build`] for owned chunks (name, ctype, payload), as the vector files describe them.
pub(crate) fn build_owned(
    opts: WriteOptions,
    chunks: &[(String, String, Vec<u8>)],
    metadata: Map,
    created_at: f64,
) -> Vec<u8> {
    let specs: Vec<Spec<'_>> = chunks
        .iter()
        .map(|(name, ctype, payload)| (name.as_str(), ctype.as_str(), payload.as_slice()))
        .collect();
    build(opts, &specs, metadata, created_at)
}

/// Some metadata with non-ASCII text and floats in every repr style.
pub(crate) fn metadata() -> Map {
    match fold::json::parse(
        r#"{"model_type":"Tiny","tags":{"owner":"Zoë","e":"🧠"},"x":0.1,"y":1e-07,"z":1e+16}"#,
    )
    .unwrap()
    {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

/// Path of a file under tests/data.
pub(crate) fn data_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Reads every chunk; returns the payloads or the first error.
pub(crate) fn read_all(bytes: &[u8]) -> fold::Result<Vec<(String, Vec<u8>)>> {
    let r = FoldReader::open(bytes)?;
    r.index()
        .chunks
        .iter()
        .map(|c| Ok((c.name.clone(), r.read_chunk(&c.name)?)))
        .collect()
}

/// Replaces the index with `edit(index)` re-serialized (placed where the old one was), fixing the
/// header's index_len.
pub(crate) fn rewrite_index(bytes: &[u8], edit: impl FnOnce(&mut fold::Index)) -> Vec<u8> {
    let r = FoldReader::open(bytes).unwrap();
    let mut idx = r.index().clone();
    let h = r.header();
    edit(&mut idx);
    let new_index = idx.to_bytes();
    let off = usize::try_from(h.index_off).unwrap();
    let mut out = bytes[..off].to_vec();
    out.extend_from_slice(&new_index);
    let header = fold::GlobalHeader {
        index_off: h.index_off,
        index_len: new_index.len() as u64,
    };
    out[..28].copy_from_slice(&header.to_bytes());
    out
}

/// Replaces the raw index text (no validation), fixing the header's index_len.
pub(crate) fn replace_index_text(bytes: &[u8], text: &[u8]) -> Vec<u8> {
    let r = FoldReader::open(bytes).unwrap();
    let off = usize::try_from(r.header().index_off).unwrap();
    let mut out = bytes[..off].to_vec();
    out.extend_from_slice(text);
    out[20..28].copy_from_slice(&(text.len() as u64).to_be_bytes());
    out
}
