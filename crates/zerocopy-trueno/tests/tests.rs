//! Aligned files end to end: every element type and odd shapes through a memory map and through
//! an unaligned in-memory buffer, integrity modes, corruption sweeps, chunked files, trueno.

use envelope_core::{Envelope, EnvelopeParts, Error, Format, Payload, Signal};
use half::{bf16, f16};
use zerocopy_trueno::{
    ALIGNMENT, AlignedTensors, BackendHint, DType, Integrity, MappedTensors, TensorIndex,
    aligned_parts,
};

/// A tensor to store: name, type, shape and its little-endian bytes.
struct Sample {
    name: &'static str,
    dtype: DType,
    shape: Vec<u64>,
    bytes: Vec<u8>,
}

#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap
)]
fn sample(name: &'static str, dtype: DType, shape: &[u64]) -> Sample {
    let n = usize::try_from(shape.iter().product::<u64>()).unwrap();
    let value = |i: usize| (i as f32) * 0.37 - 3.0;
    let bytes = (0..n)
        .flat_map(|i| match dtype {
            DType::F32 => value(i).to_le_bytes().to_vec(),
            DType::F16 => f16::from_f32(value(i)).to_le_bytes().to_vec(),
            DType::Bf16 => bf16::from_f32(value(i)).to_le_bytes().to_vec(),
            DType::I8 => vec![(i as i8).wrapping_mul(37).cast_unsigned()],
            DType::U8 => vec![(i as u8).wrapping_mul(91)],
            DType::F64 => (f64::from(value(i)) * 1e-3).to_le_bytes().to_vec(),
            DType::I32 => ((i as i32) * -7919).to_le_bytes().to_vec(),
            DType::I64 => ((i as i64) << 33).to_le_bytes().to_vec(),
        })
        .collect();
    Sample {
        name,
        dtype,
        shape: shape.to_vec(),
        bytes,
    }
}

fn model_samples() -> Vec<Sample> {
    vec![
        sample("embed.weight", DType::F32, &[7, 13]),
        sample("norm", DType::F16, &[3]),
        sample("attn.q", DType::Bf16, &[2, 3, 5]),
        sample("quantized.i8", DType::I8, &[1, 1, 1, 17]),
        sample("mask", DType::U8, &[5, 1]),
        sample("empty", DType::F32, &[0, 4]),
        sample("scalar", DType::F32, &[1]),
    ]
}

fn dataset_samples() -> Vec<Sample> {
    vec![
        sample("price", DType::F64, &[33]),
        sample("quantity", DType::I32, &[33]),
        sample("id", DType::I64, &[33]),
        sample("score", DType::F32, &[33]),
        sample("flag", DType::U8, &[33]),
    ]
}

fn build(format: Format, samples: &[Sample], chunk_bytes: Option<u64>) -> Vec<u8> {
    let index = TensorIndex::plan(
        samples
            .iter()
            .map(|s| (s.name, s.dtype, s.shape.as_slice())),
        BackendHint::Avx2,
    )
    .unwrap();
    let mut parts = EnvelopeParts::new(format, 0x0001);
    parts.metadata = b"\x81\xa4name\xa4test".to_vec().into();
    if format == Format::Dataset {
        // Every dataset sample is one array of 33 rows.
        parts.num_rows = 33;
    }
    let tensors: Vec<&[u8]> = samples.iter().map(|s| s.bytes.as_slice()).collect();
    aligned_parts(parts, index, &tensors, chunk_bytes)
        .unwrap()
        .to_bytes()
        .unwrap()
}

/// The bytes at an address that is deliberately not 4-byte aligned: the non-aligned path.
fn misaligned(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; bytes.len() + 1];
    out[1..].copy_from_slice(bytes);
    out
}

fn check_values<B: AsRef<[u8]>>(tensors: &AlignedTensors<B>, samples: &[Sample], zero_copy: bool) {
    for s in samples {
        let view = tensors.tensor(s.name).unwrap();
        assert_eq!(view.bytes(), &s.bytes[..], "{}", s.name);
        assert_eq!(view.entry().shape, s.shape);
        assert!(view.entry().is_contiguous());
        assert!(view.entry().offset.is_multiple_of(ALIGNMENT));
        let range = tensors.file_range(view.entry());
        assert_eq!(
            range.start % 64,
            0,
            "{} starts on a 64-byte boundary of the file",
            s.name
        );
        if zero_copy {
            assert_eq!(
                view.bytes().as_ptr() as usize % 64,
                0,
                "{} is 64-byte aligned in memory",
                s.name
            );
        }
        // Typed views agree with the owned copy, and with element access through the strides.
        let floats = view.to_f32_vec();
        match s.dtype {
            DType::F32 => {
                if !s.bytes.is_empty() {
                    assert_eq!(view.as_f32().is_ok(), zero_copy, "{}", s.name);
                }
                assert_eq!(view.to_vec::<f32>().unwrap(), floats);
            }
            DType::F16 => {
                assert_eq!(
                    view.as_slice::<f16>().is_ok(),
                    zero_copy || s.bytes.is_empty()
                );
                let halves = view.to_vec::<f16>().unwrap();
                assert_eq!(
                    halves.iter().map(|h| h.to_f32()).collect::<Vec<_>>(),
                    floats
                );
            }
            DType::Bf16 => {
                let halves = view.to_vec::<bf16>().unwrap();
                assert_eq!(
                    halves.iter().map(|h| h.to_f32()).collect::<Vec<_>>(),
                    floats
                );
            }
            DType::I8 => assert_eq!(view.as_slice::<i8>().unwrap().len(), floats.len()),
            DType::U8 => assert_eq!(view.as_slice::<u8>().unwrap(), &s.bytes[..]),
            DType::F64 => assert_eq!(view.to_vec::<f64>().unwrap().len(), floats.len()),
            DType::I32 => assert_eq!(view.to_vec::<i32>().unwrap().len(), floats.len()),
            DType::I64 => assert_eq!(view.to_vec::<i64>().unwrap().len(), floats.len()),
        }
        if !floats.is_empty() {
            let last: Vec<u64> = s.shape.iter().map(|d| d - 1).collect();
            assert_eq!(view.get_f32(&last).unwrap(), *floats.last().unwrap());
        }
        // Asking for the wrong type is a typed error naming the tensor.
        if s.dtype != DType::U8 {
            let error = view.as_slice::<u8>().unwrap_err();
            assert_eq!(error.signal(), Signal::Usage);
            assert!(error.to_string().contains(s.name), "{error}");
        }
    }
}

#[test]
fn every_type_and_odd_shape_reads_the_same_mapped_and_unaligned() {
    let dir = tempfile::tempdir().unwrap();
    for (format, samples) in [
        (Format::Model, model_samples()),
        (Format::Dataset, dataset_samples()),
    ] {
        let bytes = build(format, &samples, None);
        let path = dir.path().join(format!("{format:?}.bin"));
        std::fs::write(&path, &bytes).unwrap();
        for integrity in [Integrity::PerTensor, Integrity::AtOpen, Integrity::Trusted] {
            let mapped = MappedTensors::open_path(&path, format, integrity).unwrap();
            assert!(mapped.is_zero_copy());
            check_values(&mapped, &samples, true);
            mapped.prefetch("price");
            mapped.prefetch("no such tensor");
        }
        let shifted = misaligned(&bytes);
        let unaligned = AlignedTensors::open(&shifted[1..], format, Integrity::PerTensor).unwrap();
        assert!(!unaligned.is_zero_copy());
        check_values(&unaligned, &samples, false);
        // The whole file also verifies the ordinary way.
        Envelope::parse(&bytes[..], format).unwrap();
    }
}

#[test]
fn unknown_names_wrong_files_and_encrypted_files_are_refused_clearly() {
    let bytes = build(Format::Model, &model_samples(), None);
    let tensors = AlignedTensors::open(&bytes[..], Format::Model, Integrity::PerTensor).unwrap();
    let error = tensors.tensor("missing").unwrap_err();
    assert_eq!(
        error.to_string(),
        "Usage: no tensor named \"missing\" in this file"
    );
    let error =
        AlignedTensors::open(&bytes[..], Format::Dataset, Integrity::PerTensor).unwrap_err();
    assert_eq!(error.signal(), Signal::InvalidFormat);

    let plain = EnvelopeParts::new(Format::Model, 1).to_bytes().unwrap();
    let error = AlignedTensors::open(&plain[..], Format::Model, Integrity::PerTensor).unwrap_err();
    assert!(error.to_string().contains("not TRUENO_NATIVE"), "{error}");

    let envelope = Envelope::parse(&bytes[..], Format::Model).unwrap();
    let mut parts = envelope.to_parts();
    parts.encryption = Some(vec![0u8; 8].into());
    let encrypted = parts.to_bytes().unwrap();
    let error =
        AlignedTensors::open(&encrypted[..], Format::Model, Integrity::Trusted).unwrap_err();
    assert!(error.to_string().contains("in-memory path"), "{error}");
}

/// `bytes` (a verified file of `format`) with `bits` flipped in byte `at` of tensor `name`'s
/// stored bytes.
fn damage_tensor(bytes: &[u8], format: Format, name: &str, at: usize, bits: u8) -> Vec<u8> {
    let clean = AlignedTensors::open(bytes, format, Integrity::PerTensor).unwrap();
    let target = clean.file_range(clean.index().get(name).unwrap());
    let mut damaged = bytes.to_vec();
    damaged[target.start + at] ^= bits;
    damaged
}

/// `damaged` (tensor `name` damaged, `original` its bytes before) fails to open under `AtOpen`
/// (the trailer), and under `Trusted`, which means the caller verified the bytes, opens and hands
/// the damage out, as documented.
#[track_caller]
fn assert_caught_at_open_and_handed_out_when_trusted(
    damaged: &[u8],
    format: Format,
    name: &str,
    original: &[u8],
) {
    let error = AlignedTensors::open(damaged, format, Integrity::AtOpen).unwrap_err();
    assert_eq!(error.signal(), Signal::ChecksumMismatch);
    let trusted = AlignedTensors::open(damaged, format, Integrity::Trusted).unwrap();
    assert_ne!(trusted.tensor(name).unwrap().bytes(), original);
}

/// A position past the last tensor is a typed `OutOfRange` that says how many there are.
#[test]
fn a_tensor_position_past_the_end_names_the_count() {
    let samples = model_samples();
    let bytes = build(Format::Model, &samples, None);
    let tensors = AlignedTensors::open(&bytes[..], Format::Model, Integrity::PerTensor).unwrap();
    let count = samples.len() as u64;
    let error = tensors.tensor_at(samples.len()).unwrap_err();
    assert!(
        matches!(error, Error::OutOfRange { what: "tensor", index, len } if index == count && len == count),
        "{error}"
    );
    assert_eq!(error.signal(), Signal::Usage);
}

/// Under the default integrity, a damaged tensor fails when read while the others still read;
/// opening fails only for damage before the payload.
#[test]
fn per_tensor_integrity_catches_a_damaged_tensor_and_spares_the_rest() {
    let samples = model_samples();
    let bytes = build(Format::Model, &samples, None);
    let damaged = damage_tensor(&bytes, Format::Model, "attn.q", 3, 0x10);

    let lazy = AlignedTensors::open(&damaged[..], Format::Model, Integrity::PerTensor).unwrap();
    assert_eq!(
        lazy.tensor("attn.q").unwrap_err().signal(),
        Signal::ChecksumMismatch
    );
    assert_eq!(
        lazy.tensor("attn.q").unwrap_err().signal(),
        Signal::ChecksumMismatch,
        "remembered"
    );
    assert!(lazy.tensor("embed.weight").is_ok());
    assert_eq!(
        lazy.verify_all().unwrap_err().signal(),
        Signal::ChecksumMismatch
    );

    assert_caught_at_open_and_handed_out_when_trusted(
        &damaged,
        Format::Model,
        "attn.q",
        &samples[2].bytes,
    );
}

/// Every single-bit flip: opening fails, reading the tensors fails, or every tensor reads back
/// exactly (the flip hit padding or the trailer, which hold no tensor bytes).
#[test]
fn no_bit_flip_yields_wrong_tensor_data() {
    let samples = vec![
        sample("a", DType::F32, &[5]),
        sample("b", DType::I8, &[3, 3]),
    ];
    let bytes = build(Format::Model, &samples, None);
    for bit in 0..bytes.len() * 8 {
        let mut flipped = bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let Ok(tensors) = AlignedTensors::open(&flipped[..], Format::Model, Integrity::PerTensor)
        else {
            continue;
        };
        for s in &samples {
            if let Ok(view) = tensors.tensor(s.name) {
                assert_eq!(view.bytes(), &s.bytes[..], "bit {bit}");
            }
        }
    }
    for len in 0..bytes.len() {
        assert!(AlignedTensors::open(&bytes[..len], Format::Model, Integrity::PerTensor).is_err());
    }
}

/// Every payload byte is a tensor's (covered by its CRC-32C) or padding between tensors, which
/// must be zero, and the payload ends with the last tensor. The files here are written with every
/// checksum valid (as an attacker would recompute them), so only these rules can refuse them.
#[test]
fn fail_non_zero_padding_and_bytes_after_the_last_tensor_are_refused() {
    let samples = [sample("a", DType::F32, &[3]), sample("b", DType::U8, &[5])];
    let tensors: Vec<&[u8]> = samples.iter().map(|s| s.bytes.as_slice()).collect();
    let index = || {
        TensorIndex::plan(
            samples
                .iter()
                .map(|s| (s.name, s.dtype, s.shape.as_slice())),
            BackendHint::Auto,
        )
        .unwrap()
    };
    let stored = |parts: &mut EnvelopeParts<'_>| match &mut parts.payload {
        Payload::Whole { stored, .. } | Payload::Chunked { stored, .. } => stored.to_mut().clone(),
    };
    let refused = |bytes: &[u8], what: &str| {
        Envelope::parse(bytes, Format::Model).expect("every checksum holds");
        for integrity in [Integrity::PerTensor, Integrity::AtOpen, Integrity::Trusted] {
            let error = AlignedTensors::open(bytes, Format::Model, integrity).unwrap_err();
            assert_eq!(error.signal(), Signal::InvalidFormat, "{error}");
            assert!(error.to_string().contains(what), "{error}");
        }
    };
    for chunk_bytes in [None, Some(1)] {
        let parts = aligned_parts(
            EnvelopeParts::new(Format::Model, 1),
            index(),
            &tensors,
            chunk_bytes,
        )
        .unwrap();
        let mut padded = parts.clone();
        let mut payload = stored(&mut padded);
        assert_eq!(payload[12..64], [0; 52]);
        payload[40] = 1;
        match &mut padded.payload {
            Payload::Whole { stored, .. } | Payload::Chunked { stored, .. } => {
                *stored = payload.into();
            }
        }
        refused(
            &padded.to_bytes().unwrap(),
            "non-zero padding between tensors",
        );
        assert!(
            AlignedTensors::open(
                &parts.to_bytes().unwrap()[..],
                Format::Model,
                Integrity::AtOpen
            )
            .is_ok()
        );
    }
    // Bytes past the last tensor, even zeros, are not part of the layout.
    let mut longer = aligned_parts(
        EnvelopeParts::new(Format::Model, 1),
        index(),
        &tensors,
        None,
    )
    .unwrap();
    let mut payload = stored(&mut longer);
    payload.extend_from_slice(&[0; 64]);
    longer.payload = Payload::Whole {
        uncompressed_size: payload.len() as u64,
        stored: payload.into(),
    };
    refused(&longer.to_bytes().unwrap(), "end of the last tensor");
    // Tensors are packed: each at the first 64-byte boundary after the previous one, so padding
    // stays under 64 bytes per tensor and checking it costs nothing that grows with the payload.
    let mut loose = index().entries().to_vec();
    loose[1].offset += ALIGNMENT;
    let error = TensorIndex::new(loose).unwrap_err();
    assert!(
        error.to_string().contains("first 64-byte boundary"),
        "{error}"
    );
}

/// TRUENO_NATIVE + STREAMING: whole tensors grouped into chunks, still aligned and zero-copy.
#[test]
fn chunked_aligned_files_keep_tensors_whole() {
    let samples = model_samples();
    let bytes = build(Format::Model, &samples, Some(300));
    let envelope = Envelope::parse(&bytes[..], Format::Model).unwrap();
    let index = envelope.chunk_index().unwrap();
    assert!(index.len() > 1);
    assert_eq!(index.item_count(), samples.len() as u64);
    let tensors = AlignedTensors::open(&bytes[..], Format::Model, Integrity::PerTensor).unwrap();
    for (entry, s) in tensors.index().entries().iter().zip(&samples) {
        assert_eq!(tensors.tensor(&entry.name).unwrap().bytes(), &s.bytes[..]);
    }
}

/// TRUENO_NATIVE + STREAMING datasets: exactly one chunk holding every row and the whole payload,
/// whatever the chunk size asked for, read lazily (through the chunk index's prefix CRC-32C) or
/// whole in every integrity mode, mapped or not, with the same values as the unchunked file.
#[test]
fn a_chunked_aligned_dataset_is_one_chunk_of_every_row() {
    let samples = dataset_samples();
    let whole = build(Format::Dataset, &samples, None);
    let dir = tempfile::tempdir().unwrap();
    for target in [1, 64, 1 << 40] {
        let bytes = build(Format::Dataset, &samples, Some(target));
        let envelope = Envelope::parse(&bytes[..], Format::Dataset).unwrap();
        assert!(
            envelope
                .header()
                .flags()
                .contains(envelope_core::Flags::STREAMING)
        );
        let index = envelope.chunk_index().unwrap();
        let payload_len = envelope.payload().len() as u64;
        assert_eq!(index.len(), 1);
        let chunk = index.entries()[0];
        assert_eq!((chunk.first_item, chunk.item_count), (0, 33));
        assert_eq!((chunk.stored_offset, chunk.stored_size), (0, payload_len));
        assert_eq!(chunk.uncompressed_size, payload_len);
        assert_eq!(chunk.stored_crc32c, crc32c::crc32c(envelope.payload()));
        // The same payload as the unchunked form, at a 64-byte boundary of the file.
        assert_eq!(
            envelope.payload(),
            Envelope::parse(&whole[..], Format::Dataset)
                .unwrap()
                .payload()
        );
        let path = dir.path().join(format!("chunked-{target}.ald"));
        std::fs::write(&path, &bytes).unwrap();
        for integrity in [Integrity::PerTensor, Integrity::AtOpen, Integrity::Trusted] {
            let mapped = MappedTensors::open_path(&path, Format::Dataset, integrity).unwrap();
            assert!(mapped.is_zero_copy());
            assert!(mapped.envelope().chunk_index().is_some());
            check_values(&mapped, &samples, true);
            let shifted = misaligned(&bytes);
            let unaligned =
                AlignedTensors::open(&shifted[1..], Format::Dataset, integrity).unwrap();
            check_values(&unaligned, &samples, false);
        }
        let dataset = zerocopy_trueno::MappedDataset::open(&path).unwrap();
        assert_eq!(dataset.num_rows(), 33);
        assert_eq!(
            dataset.get("id").unwrap().bytes(),
            &samples[2].bytes[..],
            "{target}"
        );
        assert_eq!(dataset.get_f32("score").unwrap().as_ptr() as usize % 64, 0);
    }
}

/// A damaged array of a chunked aligned dataset fails on read (per-tensor CRC-32C), at open
/// (`AtOpen`: the trailer), and not at all under `Trusted`; damage before the payload fails the
/// lazy open through the chunk index's prefix CRC-32C.
#[test]
fn a_chunked_aligned_dataset_catches_damage_in_every_integrity_mode() {
    let samples = dataset_samples();
    let bytes = build(Format::Dataset, &samples, Some(1));
    let damaged = damage_tensor(&bytes, Format::Dataset, "quantity", 5, 0x04);
    let lazy = AlignedTensors::open(&damaged[..], Format::Dataset, Integrity::PerTensor).unwrap();
    assert_eq!(
        lazy.tensor("quantity").unwrap_err().signal(),
        Signal::ChecksumMismatch
    );
    assert!(lazy.tensor("price").is_ok());
    assert_caught_at_open_and_handed_out_when_trusted(
        &damaged,
        Format::Dataset,
        "quantity",
        &samples[1].bytes,
    );
    // The metadata precedes the chunk index: its damage fails the lazy open.
    let metadata_at = envelope_core::HEADER_LEN;
    let mut damaged = bytes.clone();
    damaged[metadata_at + 2] ^= 0x01;
    for integrity in [Integrity::PerTensor, Integrity::Trusted] {
        let error = AlignedTensors::open(&damaged[..], Format::Dataset, integrity).unwrap_err();
        assert_eq!(error.signal(), Signal::ChecksumMismatch, "{integrity:?}");
    }
}

/// A trueno computation on mapped data: a dot product and a matrix-vector product.
#[cfg(feature = "trueno")]
#[test]
fn trueno_computes_on_mapped_tensors() {
    let w: Vec<f32> = (0..6u8).map(f32::from).collect(); // [[0 1 2] [3 4 5]]
    let x = [1.0f32, 2.0, 3.0];
    let samples = vec![
        Sample {
            name: "w",
            dtype: DType::F32,
            shape: vec![2, 3],
            bytes: w.iter().flat_map(|v| v.to_le_bytes()).collect(),
        },
        Sample {
            name: "x",
            dtype: DType::F32,
            shape: vec![3],
            bytes: x.iter().flat_map(|v| v.to_le_bytes()).collect(),
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.apr");
    std::fs::write(&path, build(Format::Model, &samples, None)).unwrap();
    let tensors = MappedTensors::open_path(&path, Format::Model, Integrity::PerTensor).unwrap();
    let x = tensors.tensor("x").unwrap().to_trueno_vector();
    assert!((x.dot(&x).unwrap() - 14.0).abs() < 1e-6);
    let w = tensors.tensor("w").unwrap().to_trueno_matrix().unwrap();
    assert_eq!(w.matvec(&x).unwrap().as_slice(), &[8.0, 26.0]);
}

#[test]
fn mapped_model_and_dataset_hand_out_borrowed_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let model_path = dir.path().join("m.apr");
    let samples = model_samples();
    std::fs::write(&model_path, build(Format::Model, &samples, None)).unwrap();
    let model = zerocopy_trueno::MappedModel::open(&model_path).unwrap();
    assert_eq!(model.model_type(), 0x0001);
    assert_eq!(model.metadata(), b"\x81\xa4name\xa4test");
    let weights = model.get_f32("embed.weight").unwrap();
    assert_eq!(weights.len(), 7 * 13);
    assert_eq!(weights.as_ptr() as usize % 64, 0);
    assert_eq!(
        weights,
        &samples[0]
            .bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect::<Vec<_>>()[..]
    );
    model.prefetch("embed.weight");
    assert_eq!(model.get_f32("norm").unwrap_err().signal(), Signal::Usage);
    #[cfg(feature = "trueno")]
    {
        assert_eq!(model.get_vector("scalar").unwrap().as_slice(), &[-3.0]);
        assert_eq!(model.get_matrix("embed.weight").unwrap().rows(), 7);
    }
    // A model is not a dataset.
    let error = zerocopy_trueno::MappedDataset::open(&model_path).unwrap_err();
    assert_eq!(error.signal(), Signal::InvalidFormat);

    let data_path = dir.path().join("d.ald");
    std::fs::write(&data_path, build(Format::Dataset, &dataset_samples(), None)).unwrap();
    let dataset = zerocopy_trueno::MappedDataset::open(&data_path).unwrap();
    assert_eq!(
        dataset.get("price").unwrap().to_vec::<f64>().unwrap().len(),
        33
    );
    assert_eq!(dataset.get_f32("score").unwrap().len(), 33);
}
