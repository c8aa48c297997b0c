//! `RangedEnvelope` (a file opened from its head and tail, chunks supplied by the caller) against
//! `Envelope::parse_lazy` over the whole bytes: same layout, index and chunks for random valid
//! files; the same verdict for corrupted ones; and a changed chunk range is always refused.

use std::borrow::Cow;
use std::ops::Range;

use envelope_core::{
    ChunkIndex, Compression, Envelope, EnvelopeParts, Error, Format, Opening, Payload,
    RangedEnvelope, Section,
};
use proptest::prelude::*;

/// A random valid STREAMING file: its bytes and its chunks' plaintexts.
#[derive(Debug, Clone)]
struct Sample {
    bytes: Vec<u8>,
    chunks: Vec<Vec<u8>>,
}

fn sample() -> impl Strategy<Value = Sample> {
    (
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..3000), 1..6),
        prop_oneof![
            Just(Compression::None),
            Just(Compression::Lz4),
            Just(Compression::ZstdL3)
        ],
        0usize..90_000,
        0usize..3000,
        prop::option::of(0usize..80_000),
        prop::option::of(0usize..3000),
        any::<u8>(),
    )
        .prop_map(
            |(chunks, compression, metadata_len, schema_len, signature, license, fill)| {
                let mut parts = EnvelopeParts::new(Format::Dataset, 1);
                parts.metadata = vec![fill; metadata_len].into();
                parts.schema = vec![fill ^ 0x55; schema_len].into();
                parts.compression = compression;
                parts.num_rows = chunks.len() as u64;
                parts.payload =
                    Payload::chunked(compression, chunks.iter().map(|c| (1, &c[..]))).unwrap();
                parts.signature = signature.map(|len| Cow::Owned(vec![0x5a; len]));
                parts.license = license.map(|len| Cow::Owned(vec![0xa5; len]));
                Sample {
                    bytes: parts.to_bytes().unwrap(),
                    chunks,
                }
            },
        )
}

/// A file opened from ranges, or the refusal.
type Opened = Result<RangedEnvelope<Vec<u8>>, Error>;

/// Opens `bytes` as a remote reader would: the first and last `first` bytes, then each range
/// the open asks for. Returns the envelope (or the refusal) and the ranges fetched.
fn open_remotely(bytes: &[u8], first: usize) -> (Opened, Vec<Range<u64>>) {
    let len = bytes.len();
    let first = first.min(len);
    let mut fetched = vec![0..first as u64, (len - first) as u64..len as u64];
    let (mut head, mut tail) = (bytes[..first].to_vec(), bytes[len - first..].to_vec());
    for _ in 0..16 {
        match RangedEnvelope::open(head, tail, len as u64, Format::Dataset) {
            Err(error) => return (Err(error), fetched),
            Ok(Opening::Ready(envelope)) => return (Ok(*envelope), fetched),
            Ok(Opening::NeedWholeFile { .. }) => panic!("a STREAMING file is read by ranges"),
            Ok(Opening::NeedBytes {
                head: h,
                tail: t,
                missing,
            }) => {
                let range =
                    usize::try_from(missing.start).unwrap()..usize::try_from(missing.end).unwrap();
                assert!(!range.is_empty(), "an empty range was asked for");
                fetched.push(missing.clone());
                (head, tail) = (h, t);
                if range.start == head.len() {
                    head.extend_from_slice(&bytes[range]);
                } else {
                    assert_eq!(range.end, len - tail.len());
                    let mut grown = bytes[range].to_vec();
                    grown.extend_from_slice(&tail);
                    tail = grown;
                }
            }
        }
    }
    panic!("the open did not converge in 16 rounds")
}

fn stored<'a>(bytes: &'a [u8], range: &Range<u64>) -> &'a [u8] {
    &bytes[usize::try_from(range.start).unwrap()..usize::try_from(range.end).unwrap()]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The head/tail path and `parse_lazy` over the whole bytes agree: layout, index, sections
    /// and every decoded chunk; a large enough first read opens the file in one round.
    #[test]
    fn ranged_open_agrees_with_parse_lazy(sample in sample(), first in 16usize..70_000) {
        let local = Envelope::parse_lazy(&sample.bytes[..], Format::Dataset).unwrap();
        let (ranged, fetched) = open_remotely(&sample.bytes, first);
        let ranged = ranged.unwrap();
        prop_assert_eq!(ranged.layout(), local.layout());
        prop_assert_eq!(ranged.chunk_index(), local.chunk_index());
        for section in [Section::Metadata, Section::Schema, Section::ChunkIndex, Section::Signature,
                        Section::License, Section::Checksum] {
            prop_assert_eq!(ranged.section(section), local.section(section));
        }
        prop_assert_eq!(ranged.bytes_before_payload(), local.bytes_before_payload());
        let payload_end = usize::try_from(local.layout().span(Section::Payload).unwrap().end()).unwrap();
        prop_assert_eq!(ranged.bytes_after_payload(), &sample.bytes[payload_end..]);
        let head_len = usize::try_from(ranged.payload_span().offset).unwrap();
        let tail_len = sample.bytes.len() - payload_end;
        if head_len <= first && tail_len <= first {
            prop_assert_eq!(fetched.len(), 2);
        }
        for (number, plain) in sample.chunks.iter().enumerate() {
            let range = ranged.chunk_range(number).unwrap();
            let bytes = stored(&sample.bytes, &range);
            prop_assert_eq!(&*ranged.decode_chunk(number, bytes).unwrap(), &plain[..]);
            prop_assert_eq!(&*local.decode_chunk(number).unwrap(), &plain[..]);
        }
    }

    /// A flipped bit anywhere gives the head/tail path the verdict `parse_lazy` gives the whole
    /// bytes (the same error, or the same layout); a flip in the bytes up to the chunk index's
    /// end is always refused, and a flip in a chunk is refused when that chunk is checked.
    #[test]
    fn corruption_is_refused_as_parse_lazy_refuses_it(sample in sample(), first in 16usize..70_000, at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let mut bytes = sample.bytes.clone();
        let at = at.index(bytes.len());
        bytes[at] ^= 1 << bit;
        let local = Envelope::parse_lazy(&bytes[..], Format::Dataset);
        let (ranged, _) = open_remotely(&bytes, first);
        match (&local, &ranged) {
            (Err(local), Err(ranged)) => prop_assert_eq!(local.to_string(), ranged.to_string()),
            (Ok(local), Ok(ranged)) => {
                prop_assert_eq!(local.layout(), ranged.layout());
                let index_end = local.layout().span(Section::ChunkIndex).unwrap().end();
                prop_assert!(at as u64 >= index_end, "a flip at {} before the index end {} was accepted", at, index_end);
                let chunks = ranged.chunk_index().map_or(0, ChunkIndex::len);
                for number in 0..chunks {
                    let range = ranged.chunk_range(number).unwrap();
                    let verdict = ranged.check_chunk(number, stored(&bytes, &range));
                    if range.contains(&(at as u64)) {
                        let refused = matches!(verdict, Err(Error::ChecksumMismatch { .. }));
                        prop_assert!(refused);
                    } else {
                        prop_assert!(verdict.is_ok());
                    }
                    prop_assert_eq!(verdict.is_ok(), local.chunk(number).is_ok());
                }
            }
            (local, ranged) => {
                let (local, ranged) = (local.as_ref().err(), ranged.as_ref().err());
                prop_assert!(false, "verdicts differ: local {:?}, ranged {:?}", local, ranged);
            }
        }
    }

    /// A chunk range that comes back changed (a flipped bit, cut short, one byte too many) is
    /// refused, never decoded.
    #[test]
    fn a_changed_chunk_range_is_refused(sample in sample(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let (ranged, _) = open_remotely(&sample.bytes, 65536);
        let ranged = ranged.unwrap();
        let number = at.index(sample.chunks.len());
        let range = ranged.chunk_range(number).unwrap();
        let good = stored(&sample.bytes, &range).to_vec();
        if !good.is_empty() {
            let mut flipped = good.clone();
            let i = at.index(flipped.len());
            flipped[i] ^= 1 << bit;
            let refused = matches!(ranged.decode_chunk(number, &flipped), Err(Error::ChecksumMismatch { .. }));
            prop_assert!(refused);
            prop_assert!(ranged.decode_chunk(number, &good[..good.len() - 1]).is_err());
        }
        let mut longer = good.clone();
        longer.push(0);
        prop_assert!(ranged.decode_chunk(number, &longer).is_err());
        prop_assert!(ranged.decode_chunk(number, &good).is_ok());
    }
}

#[test]
fn a_file_read_whole_says_so_after_magic_and_version() {
    let mut parts = EnvelopeParts::new(Format::Dataset, 1);
    parts.payload = Payload::compressed(Compression::None, b"rows").unwrap();
    let bytes = parts.to_bytes().unwrap();
    let len = bytes.len() as u64;
    assert!(matches!(
        RangedEnvelope::open(&bytes[..], &bytes[..], len, Format::Dataset),
        Ok(Opening::NeedWholeFile { .. })
    ));
    let mut wrong_magic = bytes.clone();
    wrong_magic[0] ^= 1;
    assert!(
        RangedEnvelope::open(&wrong_magic[..], &wrong_magic[..], len, Format::Dataset).is_err()
    );
}
