//! Integration tests of the envelope: sample files in every shape, corruption sweeps, the
//! checked-in known-answer files, and the fuzz corpus replay.

mod fuzz_checks;
mod ranged;
mod vectors;

use std::borrow::Cow;

use vectors::{checked_in, data_dir, samples};

use envelope_core::{
    ChunkIndex, Compression, Envelope, EnvelopeParts, Error, Format, FormatError, Payload, Section,
    Signal,
};

#[test]
fn every_sample_verifies_and_decodes_to_its_payload() {
    for sample in samples() {
        let envelope = Envelope::parse_any(&sample.bytes[..])
            .unwrap_or_else(|e| panic!("{}: {e}", sample.name));
        match &sample.payload {
            Some(payload) => assert_eq!(
                &*envelope.decode_payload().unwrap(),
                &payload[..],
                "{}",
                sample.name
            ),
            None => assert_eq!(
                envelope.decode_payload().unwrap_err().signal(),
                Signal::DecryptionFailed
            ),
        }
        assert_eq!(
            envelope.to_parts().to_bytes().unwrap(),
            sample.bytes,
            "{}: rewrite",
            sample.name
        );
        fuzz_checks::envelope_reader(&sample.bytes);
    }
}

/// The specs' order: a flipped magic bit is InvalidFormat, a version flipped to an unsupported
/// value is UnsupportedVersion, and any other flipped bit is a ChecksumMismatch. No flip loads.
#[test]
fn flipping_any_single_bit_is_refused_with_the_right_signal() {
    for sample in samples() {
        let format = Format::from_magic(sample.bytes[..4].try_into().unwrap()).unwrap();
        for bit in 0..sample.bytes.len() * 8 {
            let mut bytes = sample.bytes.clone();
            bytes[bit / 8] ^= 1 << (bit % 8);
            let error = Envelope::parse(&bytes[..], format).expect_err("a flipped bit never loads");
            let expected = match bit / 8 {
                0..=3 => vec![Signal::InvalidFormat],
                4 | 5 => vec![Signal::UnsupportedVersion, Signal::ChecksumMismatch],
                _ => vec![Signal::ChecksumMismatch],
            };
            assert!(
                expected.contains(&error.signal()),
                "{} bit {bit}: {error}",
                sample.name
            );
        }
    }
}

#[test]
fn truncating_at_every_offset_is_refused() {
    for sample in samples() {
        for len in 0..sample.bytes.len() {
            let error = Envelope::parse_any(&sample.bytes[..len])
                .expect_err("a truncated file never loads");
            if len < 36 {
                assert!(
                    matches!(
                        error,
                        Error::InvalidFormat(FormatError::Truncated {
                            section: Section::Header,
                            ..
                        })
                    ),
                    "{} at {len}: {error}",
                    sample.name
                );
            } else {
                assert_eq!(
                    error.signal(),
                    Signal::ChecksumMismatch,
                    "{} at {len}",
                    sample.name
                );
            }
        }
    }
}

/// Behind a valid checksum (a buggy or hostile writer), every byte value at every offset either
/// fails with a typed error or verifies as a file that writes back to the same bytes.
#[test]
fn structural_corruption_behind_a_valid_checksum_never_panics_or_misloads() {
    for sample in samples().into_iter().take(3) {
        for offset in 0..sample.bytes.len() - 4 {
            for value in [
                0x00,
                0x01,
                0x7f,
                0x80,
                0xfe,
                0xff,
                sample.bytes[offset] ^ 0x10,
            ] {
                let mut bytes = sample.bytes.clone();
                bytes[offset] = value;
                fuzz_checks::envelope_reader(&bytes);
            }
        }
    }
}

#[test]
fn sections_are_located_in_file_order_and_cover_the_file() {
    let sample = &samples()[1];
    let envelope = Envelope::parse_any(&sample.bytes[..]).unwrap();
    let mut at = 0;
    for (section, span, framed) in envelope.layout().sections() {
        let start = if framed { span.offset - 4 } else { span.offset };
        assert_eq!(
            start, at,
            "{section} starts where the previous section ended"
        );
        at = span.end();
    }
    assert_eq!(at, sample.bytes.len() as u64);
    // The tensor index body is opaque here except its last 4 bytes, the prefix CRC-32C the writer
    // fills in; the sample's is an empty index padded so the payload is 64-byte aligned.
    let tensor_index = envelope.section(Section::TensorIndex).unwrap();
    assert_eq!(
        &tensor_index[..tensor_index.len() - 4],
        &vec![0u8; tensor_index.len() - 4][..]
    );
    assert_eq!(
        envelope.layout().span(Section::Payload).unwrap().offset % 64,
        0
    );
    assert_eq!(envelope.section(Section::Encryption), None);
}

#[test]
fn signed_regions_skip_only_the_signature_body_and_the_trailer() {
    let sample = &samples()[1];
    let envelope = Envelope::parse_any(&sample.bytes[..]).unwrap();
    let [before, after] = envelope.signed_regions();
    let signature = envelope.section(Section::Signature).unwrap();
    assert_eq!(
        before.len() + signature.len() + after.len() + 4,
        sample.bytes.len()
    );
    assert!(after.ends_with(envelope.section(Section::License).unwrap()));
}

#[test]
fn the_other_formats_magic_is_refused_as_wrong_format() {
    let sample = &samples()[0];
    let error = Envelope::parse(&sample.bytes[..], Format::Model).unwrap_err();
    assert!(matches!(
        error,
        Error::InvalidFormat(FormatError::WrongFormat {
            expected: Format::Model,
            found: Format::Dataset
        })
    ));
}

#[test]
fn oversized_sections_are_refused_when_writing_never_truncated() {
    let big_schema = vec![0u8; 70_000];
    let mut parts = EnvelopeParts::new(Format::Dataset, 1);
    parts.schema = Cow::Borrowed(&big_schema);
    assert!(matches!(
        parts.to_bytes(),
        Err(Error::SectionTooLarge {
            section: Section::Schema,
            size: 70_000,
            max: 65_535
        })
    ));
    let mut parts = EnvelopeParts::new(Format::Model, 1);
    parts.payload = Payload::Whole {
        stored: Cow::Borrowed(&[]),
        uncompressed_size: 5 << 30,
    };
    parts.compression = Compression::ZstdL3;
    assert!(matches!(
        parts.to_bytes(),
        Err(Error::SectionTooLarge {
            section: Section::Payload,
            ..
        })
    ));
}

/// The large-file path: a payload whose decoded size exceeds u32 goes through the chunk index, and
/// the header holds the sentinel. (Decoded sizes are declared, not materialised, so the test is
/// cheap; the stored bytes are a few zstd frames.)
#[test]
fn payloads_beyond_four_gib_use_the_chunk_index_totals() {
    let frame = envelope_core::compression::compress(Compression::ZstdL3, &[0u8; 16])
        .unwrap()
        .into_owned();
    let sizes = (0..3).map(|_| (frame.len() as u64, 2 << 30, 1));
    let index = ChunkIndex::from_sizes(sizes).unwrap();
    let mut parts = EnvelopeParts::new(Format::Dataset, 1);
    parts.compression = Compression::ZstdL3;
    parts.num_rows = 3;
    parts.payload = Payload::Chunked {
        index,
        stored: Cow::Owned(frame.repeat(3)),
    };
    let bytes = parts.to_bytes().unwrap();
    assert_eq!(
        &bytes[16..20],
        &u32::MAX.to_le_bytes(),
        "uncompressed_size holds the sentinel"
    );
    let envelope = Envelope::parse(&bytes[..], Format::Dataset).unwrap();
    assert_eq!(envelope.uncompressed_size(), 6 << 30);
    // Each chunk declares 2 GiB from a few bytes: over the reader's expansion limit, refused
    // before decoding; with the limits lifted, decoded and found to hold 16 bytes. Neither path
    // allocates 2 GiB.
    assert!(matches!(
        envelope.decode_chunk(0).unwrap_err(),
        Error::LimitExceeded(_)
    ));
    let envelope = envelope.with_limits(envelope_core::Limits::UNLIMITED);
    assert_eq!(
        envelope.decode_chunk(0).unwrap_err().signal(),
        Signal::InvalidFormat
    );
}

/// docs/envelope.md §6 shows these 42 bytes; the writer must produce exactly them.
#[test]
fn documented_worked_example_is_what_the_writer_produces() {
    let mut parts = EnvelopeParts::new(Format::Model, 0x0001);
    parts.metadata = Cow::Borrowed(b"\x80");
    parts.payload = Payload::Whole {
        stored: Cow::Borrowed(b"hello"),
        uncompressed_size: 5,
    };
    let documented = [
        0x41, 0x50, 0x52, 0x4e, 0x01, 0x07, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00,
        0x00, //
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, //
        0x80, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x77, 0xca, 0xce, 0x5f,
    ];
    assert_eq!(parts.to_bytes().unwrap(), documented);
}

/// The checked-in files pin the byte format: the writer must keep producing them exactly.
/// Regenerate (after a deliberate format change) with `cargo xtask regenerate envelope-core`.
#[test]
fn writer_output_matches_the_checked_in_known_answer_files() {
    test_support::check_vectors(&data_dir(), checked_in());
}

/// Every file under `tests/data` whose name starts with `fail_` is refused with the signal its
/// name ends with (`fail_<what>.<Signal>.<ext>`).
#[test]
fn failing_vectors_are_refused_with_their_named_signal() {
    // As many as tests/data/make_failing_vectors.py writes.
    test_support::check_fail_vectors(&data_dir(), 13, |vector| {
        Envelope::parse_any(&vector.bytes[..]).expect_err(&vector.name)
    });
}

/// The fuzz corpora of the header parser and the whole reader replay without a panic.
#[test]
fn fuzz_corpora_replay_clean() {
    test_support::replay_corpus("parse_header", fuzz_checks::parse_header);
    test_support::replay_corpus("envelope_reader", fuzz_checks::envelope_reader);
}

/// `parse_lazy` agrees with `parse` on every sample: same layout, same decoded payload.
#[test]
fn lazy_open_agrees_with_full_open() {
    for sample in samples() {
        let format = envelope_core::identify(&sample.bytes).unwrap().0;
        let full = Envelope::parse(&sample.bytes[..], format).unwrap();
        let lazy = Envelope::parse_lazy(&sample.bytes[..], format).unwrap();
        assert_eq!(full.layout(), lazy.layout(), "{}", sample.name);
        let flags = full.header().flags();
        assert_eq!(
            lazy.is_fully_verified(),
            !flags.contains(envelope_core::Flags::STREAMING)
                && !flags.contains(envelope_core::Flags::TRUENO_NATIVE),
            "{}",
            sample.name
        );
        lazy.verify_checksum().unwrap();
        if let Some(payload) = &sample.payload {
            assert_eq!(
                &*lazy.decode_payload().unwrap(),
                &payload[..],
                "{}",
                sample.name
            );
        }
    }
}

/// Flipping any bit of a lazily opened STREAMING or TRUENO_NATIVE file never yields wrong data:
/// the open fails, a chunk read fails, or the flip is outside what a lazy read interprets (the
/// trailer, which `verify_checksum` catches). A TRUENO_NATIVE payload without chunks is checked
/// against the trailer when decoded, so there every flip fails.
#[test]
fn lazy_open_never_returns_flipped_data() {
    for sample in samples().into_iter().filter(|sample| {
        sample.name.starts_with("dataset_streaming") || sample.name == "model_signed_licensed.apr"
    }) {
        let format = envelope_core::identify(&sample.bytes).unwrap().0;
        let expected = sample.payload.clone().unwrap();
        let mut checked = 0;
        for bit in 0..sample.bytes.len() * 8 {
            let mut bytes = sample.bytes.clone();
            bytes[bit / 8] ^= 1 << (bit % 8);
            let Ok(envelope) = Envelope::parse_lazy(&bytes[..], format) else {
                continue;
            };
            match envelope.decode_payload() {
                Err(error) => assert!(
                    matches!(
                        error.signal(),
                        Signal::ChecksumMismatch | Signal::InvalidFormat
                    ),
                    "{error}"
                ),
                Ok(payload) => {
                    assert_eq!(&*payload, &expected[..], "bit {bit} of {}", sample.name);
                    assert_eq!(
                        envelope.verify_checksum().unwrap_err().signal(),
                        Signal::ChecksumMismatch
                    );
                    checked += 1;
                }
            }
        }
        // Only the 32 trailer bits of a chunked file can be flipped without a lazy read noticing.
        let unnoticed = if sample.name.ends_with(".apr") { 0 } else { 32 };
        assert_eq!(checked, unnoticed, "{}", sample.name);
    }
}

#[test]
fn lazy_open_refuses_every_truncation() {
    for sample in samples()
        .into_iter()
        .filter(|sample| sample.name.starts_with("dataset_streaming"))
    {
        for len in 0..sample.bytes.len() {
            assert!(
                Envelope::parse_lazy(&sample.bytes[..len], Format::Dataset).is_err(),
                "{} at {len}",
                sample.name
            );
        }
    }
}

/// `begin_chunked` writes exactly what `to_bytes` writes for the same parts, chunk by chunk.
#[test]
fn chunked_writer_matches_the_in_memory_writer() {
    for sample in samples() {
        let format = envelope_core::identify(&sample.bytes).unwrap().0;
        let envelope = Envelope::parse(&sample.bytes[..], format).unwrap();
        let Some(index) = envelope.chunk_index() else {
            continue;
        };
        let parts = envelope.to_parts();
        let mut writer = parts.begin_chunked(index.clone(), Vec::new()).unwrap();
        assert_eq!(
            writer.bytes_before_payload(),
            envelope.bytes_before_payload()
        );
        for chunk in 0..index.len() {
            writer.write_chunk(envelope.chunk(chunk).unwrap()).unwrap();
        }
        assert_eq!(writer.finish().unwrap(), sample.bytes, "{}", sample.name);
    }
}

#[test]
fn chunked_writer_refuses_chunks_that_disagree_with_the_index() {
    let parts = EnvelopeParts {
        num_rows: 2,
        ..EnvelopeParts::new(Format::Dataset, 1)
    };
    let mut index = ChunkIndex::from_sizes([(3, 3, 1), (2, 2, 1)]).unwrap();
    index.set_stored_crc32c(0, crc32c::crc32c(b"abc")).unwrap();
    index.set_stored_crc32c(1, crc32c::crc32c(b"de")).unwrap();
    let usage = |result: Result<(), Error>| assert_eq!(result.unwrap_err().signal(), Signal::Usage);

    let mut writer = parts.begin_chunked(index.clone(), Vec::new()).unwrap();
    usage(writer.write_chunk(b"abcd"));
    usage(writer.write_chunk(b"abd"));
    writer.write_chunk(b"abc").unwrap();
    usage(writer.finish().map(drop));

    let mut writer = parts.begin_chunked(index, Vec::new()).unwrap();
    writer.write_chunk(b"abc").unwrap();
    writer.write_chunk(b"de").unwrap();
    usage(writer.write_chunk(b""));
    let bytes = writer.finish().unwrap();
    let envelope = Envelope::parse(&bytes[..], Format::Dataset).unwrap();
    assert_eq!(&*envelope.decode_payload().unwrap(), b"abcde");
}

/// The failing vector's row count is caught by the row rule, not by a checksum: the generator
/// recomputed both the trailer and the chunk index's prefix CRC-32C.
#[test]
fn rows_vector_fails_on_the_row_rule() {
    let bytes = std::fs::read(data_dir().join("fail_rows_disagree.InvalidFormat.ald")).unwrap();
    for error in [
        Envelope::parse(&bytes[..], Format::Dataset).unwrap_err(),
        Envelope::parse_lazy(&bytes[..], Format::Dataset).unwrap_err(),
    ] {
        assert!(error.to_string().contains("num_rows"), "{error}");
    }
}

/// A compressed payload or chunk of a few hundred bytes that declares hundreds of mebibytes (or
/// 64 GiB) once decoded: refused by every decoding method with `LimitExceeded` before anything is
/// decompressed, whole or STREAMING (issue 14 §1). The caller's limits decide: raised, decoding
/// goes on and stops at the stream's real end.
#[test]
fn declared_sizes_beyond_the_limits_are_refused_before_decoding() {
    use envelope_core::{LimitKind, Limits};
    let zeros = vec![0u8; 4096];
    let frame = envelope_core::compression::compress(Compression::ZstdL3, &zeros)
        .unwrap()
        .into_owned();
    let claimed = 300u64 << 20;
    let mut whole = EnvelopeParts::new(Format::Dataset, 0x0001);
    whole.compression = Compression::ZstdL3;
    whole.payload = Payload::Whole {
        stored: Cow::Borrowed(&frame),
        uncompressed_size: claimed,
    };
    let whole = whole.to_bytes().unwrap();
    let mut streaming = EnvelopeParts::new(Format::Dataset, 0x0001);
    streaming.compression = Compression::ZstdL3;
    streaming.num_rows = 1;
    let index = ChunkIndex::from_sizes([(frame.len() as u64, 64u64 << 30, 1)]).unwrap();
    streaming.payload = Payload::Chunked {
        index,
        stored: Cow::Borrowed(&frame),
    };
    let streaming = streaming.to_bytes().unwrap();
    let limit_kind = |error: Error| match error {
        Error::LimitExceeded(exceeded) => exceeded.what,
        other => panic!("expected LimitExceeded, got {other}"),
    };
    let envelope = Envelope::parse(&whole[..], Format::Dataset).unwrap();
    assert_eq!(envelope.limits(), &Limits::DEFAULT);
    assert!(matches!(
        limit_kind(envelope.decode_payload().unwrap_err()),
        LimitKind::Expansion { .. }
    ));
    assert!(matches!(
        limit_kind(envelope.payload_reader().unwrap_err()),
        LimitKind::Expansion { .. }
    ));
    let error = envelope.decode_payload().unwrap_err();
    assert_eq!(error.signal(), Signal::Usage);
    assert!(error.to_string().contains("--max-expansion"), "{error}");
    for envelope in [
        Envelope::parse(&streaming[..], Format::Dataset).unwrap(),
        Envelope::parse_lazy(&streaming[..], Format::Dataset).unwrap(),
    ] {
        assert_eq!(
            limit_kind(envelope.decode_chunk(0).unwrap_err()),
            LimitKind::ChunkSize
        );
        assert!(envelope.chunk_reader(0).is_err());
        assert!(envelope.payload_reader().is_err());
        assert!(envelope.decode_payload().is_err());
    }
    // With the limits lifted, the stream is decoded, and found to hold only 4096 bytes.
    let lifted = Envelope::parse(&whole[..], Format::Dataset)
        .unwrap()
        .with_limits(Limits::UNLIMITED);
    let error = lifted.decode_payload().unwrap_err();
    assert_eq!(error.signal(), Signal::InvalidFormat, "{error}");
}
