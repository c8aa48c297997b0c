//! A tensor model opened from the head and tail of its file, each tensor's chunk supplied by the
//! caller (who fetched its byte range from object storage, say): the reading `remote-file`
//! builds on, with no I/O of its own (this crate has no async runtime and builds for wasm32).
//!
//! The checks are the local loader's ([`AprFile::open`](crate::AprFile::open), `docs/apr.md` §2), in its order, over a
//! [`RangedEnvelope`]: the envelope walk (done by `RangedEnvelope::open`: magic, version, the
//! chunk index's prefix CRC-32C, header rules, section bounds), the signature policy, the license
//! at the caller's clock, the expected model type, the metadata map and its consistency with the
//! chunk index (and, for a TRUENO_NATIVE file, with the tensor index: `docs/zerocopy.md` §9). Under
//! `RequireSignature` every payload byte is needed: [`RangedOpening`] says which range to stream
//! through the check ([`RangedOpening::signed_payload`]) and the model exists only once the
//! signature has passed, so no tensor is decoded from a file whose signature was not checked.
//!
//! A tensor is then one chunk ([`RangedModel::chunk_range`]) and is checked before it is decoded,
//! exactly as a lazily opened local file checks it: its length against the index entry, its
//! CRC-32C (AES-GCM authenticates an encrypted file's chunks instead, through the same
//! [`envelope_crypto::ChunkDecryptor`] the local `Decryptor` uses), decompression capped at the
//! declared size within the reader's limits, a TRUENO_NATIVE tensor's zero padding, and its length
//! against its dtype and shape. A TRUENO_NATIVE `.apr` file is also STREAMING with one chunk per
//! tensor (`docs/zerocopy.md` §9), each chunk's CRC-32C covering the tensor and its padding, so it
//! is read by ranges as well: no check needs the whole payload.
//!
//! A file that is not STREAMING (a serde model) is verified only by its whole-file CRC32:
//! `RangedEnvelope::open` says so, and the reader fetches it whole and uses [`AprFile::open`](crate::AprFile::open).

use alloc::borrow::ToOwned;
use alloc::vec::Vec;
use core::ops::Range;

use envelope_core::{ChunkEntry, Flags, RangedEnvelope, Section};
use envelope_license::LicenseBlock;

use crate::card::ModelMetadata;
use crate::error::{Error, Result};
use crate::load::LoadOptions;
use crate::model_type::ModelType;
use crate::tensor::Tensor;

/// A model file opened from ranges whose signature, if the policy requires one, is still to be
/// checked over the payload.
#[derive(Debug)]
pub struct RangedOpening<'o, B> {
    envelope: RangedEnvelope<B>,
    #[cfg(feature = "format-signing")]
    verifier: Option<envelope_sign::RangedVerifier<'o>>,
    options: LoadOptions<'o>,
}

impl<'o, B: AsRef<[u8]>> RangedOpening<'o, B> {
    /// Starts opening `envelope` under `options` (the envelope walk has passed).
    ///
    /// # Errors
    /// `SignatureInvalid` (`Missing`, `Malformed`, `UntrustedKey`) under `RequireSignature`,
    /// before any payload byte is asked for.
    pub fn begin(envelope: RangedEnvelope<B>, options: &LoadOptions<'o>) -> Result<Self> {
        let envelope = envelope.with_limits(options.limits);
        #[cfg(feature = "format-signing")]
        let verifier = match options.signature {
            Some(policy) => policy.check_ranged(&envelope)?,
            None => None,
        };
        Ok(Self {
            envelope,
            #[cfg(feature = "format-signing")]
            verifier,
            options: *options,
        })
    }

    /// The file offsets of the payload to feed to [`RangedOpening::update`], in order, when the
    /// policy requires a signature; `None` when nothing more is needed.
    #[must_use]
    pub fn signed_payload(&self) -> Option<Range<u64>> {
        #[cfg(feature = "format-signing")]
        if self.verifier.is_some() {
            let payload = self.envelope.payload_span();
            return Some(payload.offset..payload.end());
        }
        None
    }

    /// Feeds the next payload bytes to the signature check (nothing when none is required).
    ///
    /// # Errors
    /// `Usage` if more bytes are fed than the payload holds.
    pub fn update(&mut self, payload: &[u8]) -> Result<()> {
        #[cfg(feature = "format-signing")]
        if let Some(verifier) = &mut self.verifier {
            verifier.update(payload)?;
        }
        let _ = payload;
        Ok(())
    }

    /// Checks the signature (if required), then the license, the model type and the metadata
    /// with its agreement with the chunk index (and tensor index), as [`AprFile::open`](crate::AprFile::open).
    ///
    /// # Errors
    /// `SignatureInvalid` (`Mismatch`), or `Usage` if the payload was not fed whole;
    /// `LicenseExpired` (`Usage` for an expiring license and no clock); `ModelTypeMismatch`;
    /// then as [`AprFile::parse`](crate::AprFile::parse): `InvalidFormat`, `UnsupportedQuantization`,
    /// `QuantizationCorrupt`.
    pub fn finish(self) -> Result<RangedModel<B>> {
        let envelope = self.envelope;
        #[cfg(feature = "format-signing")]
        let signer = match self.verifier {
            Some(verifier) => Some(verifier.finish(&envelope)?),
            None => None,
        };
        let options = self.options;
        let license = envelope_license::check_license_block(
            envelope.section(Section::License),
            options.now_unix,
        )?;
        if let Some(expected) = options.expected_type {
            expected.expect(envelope.header().type_id())?;
        }
        let model = RangedModel::described(envelope, license)?;
        #[cfg(feature = "format-signing")]
        let model = RangedModel { signer, ..model };
        Ok(model)
    }
}

/// A verified tensor model opened from ranges: header, metadata, tensor directory, license and
/// indexes in hand; tensors decoded from the bytes of their chunks, which the caller fetched
/// ([`RangedModel::chunk_range`]).
#[derive(Debug)]
pub struct RangedModel<B> {
    envelope: RangedEnvelope<B>,
    metadata: ModelMetadata,
    /// For a TRUENO_NATIVE file, each tensor's exact byte size (its chunk also holds the padding).
    aligned_sizes: Option<Vec<u64>>,
    license: Option<LicenseBlock>,
    #[cfg(feature = "format-signing")]
    signer: Option<envelope_sign::SigningPublicKey>,
    #[cfg(feature = "format-encryption")]
    decryptor: Option<envelope_crypto::ChunkDecryptor>,
}

impl<B: AsRef<[u8]>> RangedModel<B> {
    /// The model of a verified envelope, with no policy applied (no signature, license or model
    /// type check): the metadata and its agreement with the indexes only, as
    /// [`AprFile::from_envelope`](crate::AprFile::from_envelope) (`apr inspect`'s reading).
    ///
    /// # Errors
    /// As [`RangedOpening::finish`] after the policy.
    pub fn from_envelope(envelope: RangedEnvelope<B>) -> Result<Self> {
        Self::described(envelope, None)
    }

    /// The metadata checks of every opener, in order, after the policy.
    fn described(envelope: RangedEnvelope<B>, license: Option<LicenseBlock>) -> Result<Self> {
        let metadata = ModelMetadata::decode(envelope.checked_metadata()?)?;
        let tensor_index = envelope.section(Section::TensorIndex);
        crate::codec::check_structure_of(
            envelope.chunk_index(),
            tensor_index.is_some(),
            envelope.header().flags(),
            &metadata,
        )?;
        let aligned_sizes = crate::trueno::aligned_sizes_of(
            tensor_index,
            envelope
                .chunk_index()
                .map(envelope_core::ChunkIndex::entries)
                .unwrap_or_default(),
            &metadata,
        )?;
        Ok(Self {
            envelope,
            metadata,
            aligned_sizes,
            license,
            #[cfg(feature = "format-signing")]
            signer: None,
            #[cfg(feature = "format-encryption")]
            decryptor: None,
        })
    }

    /// This model able to read the tensors of its encrypted payload with `key` (the key is
    /// derived once, here), as [`AprFile::decrypt_tensors`](crate::AprFile::decrypt_tensors) reads a local file's.
    ///
    /// # Errors
    /// `Usage` if the file is not encrypted; `DecryptionFailed` for a key that is not the file's.
    #[cfg(feature = "format-encryption")]
    pub fn with_key(mut self, key: envelope_crypto::DecryptionKey<'_>) -> Result<Self> {
        self.decryptor = Some(envelope_crypto::ChunkDecryptor::for_ranged(
            &self.envelope,
            key,
        )?);
        Ok(self)
    }

    /// The verified envelope (head and tail).
    #[must_use]
    pub fn envelope(&self) -> &RangedEnvelope<B> {
        &self.envelope
    }

    /// The decoded metadata (model card, tensor directory, quantization record).
    #[must_use]
    pub fn metadata(&self) -> &ModelMetadata {
        &self.metadata
    }

    /// The header's model type id.
    #[must_use]
    pub fn model_type_id(&self) -> u16 {
        self.envelope.header().type_id()
    }

    /// The model type, if the catalog has the header's id.
    #[must_use]
    pub fn model_type(&self) -> Option<ModelType> {
        ModelType::from_id(self.model_type_id())
    }

    /// What `apr inspect` shows of the model (no payload byte is read), as
    /// [`summarize`](crate::summarize) of the local file.
    #[must_use]
    pub fn summary(&self) -> crate::ModelSummary {
        crate::summary::summary_of(self.model_type_id(), &self.metadata)
    }

    /// The license block the policy checked (`None` without one, or for a model made by
    /// [`RangedModel::from_envelope`], which checks no policy).
    #[must_use]
    pub fn license(&self) -> Option<&LicenseBlock> {
        self.license.as_ref()
    }

    /// The signer the policy verified, if a signature was required.
    #[cfg(feature = "format-signing")]
    #[must_use]
    pub fn signer(&self) -> Option<&envelope_sign::SigningPublicKey> {
        self.signer.as_ref()
    }

    /// Whether the payload is encrypted.
    #[must_use]
    pub fn is_encrypted(&self) -> bool {
        self.envelope.header().flags().contains(Flags::ENCRYPTED)
    }

    /// Whether the tensors are stored aligned for zero-copy reading (TRUENO_NATIVE).
    #[must_use]
    pub fn is_aligned(&self) -> bool {
        self.aligned_sizes.is_some()
    }

    /// Number of tensors.
    #[must_use]
    pub fn num_tensors(&self) -> usize {
        self.metadata.tensors.len()
    }

    /// The position (payload order) of the tensor named `name`.
    ///
    /// # Errors
    /// `NoTensorNamed`.
    pub fn position(&self, name: &str) -> Result<usize> {
        self.metadata
            .tensors
            .iter()
            .position(|t| t.name == name)
            .ok_or_else(|| Error::NoTensorNamed {
                name: name.to_owned(),
            })
    }

    /// The index entry of tensor `position`'s chunk.
    ///
    /// # Errors
    /// `NoTensorAt`.
    pub fn chunk_entry(&self, position: usize) -> Result<&ChunkEntry> {
        if position >= self.num_tensors() {
            return Err(Error::NoTensorAt {
                position,
                count: self.num_tensors(),
            });
        }
        Ok(self.envelope.chunk_entry(position)?)
    }

    /// The file offsets of tensor `position`'s stored bytes (its chunk), to fetch.
    ///
    /// # Errors
    /// `NoTensorAt`.
    pub fn chunk_range(&self, position: usize) -> Result<Range<u64>> {
        self.chunk_entry(position)?;
        Ok(self.envelope.chunk_range(position)?)
    }

    /// Checks fetched bytes of tensor `position`'s chunk without decoding them: their length and
    /// CRC-32C (an encrypted chunk's length only; AES-GCM authenticates it when decoded). What a
    /// reader retries on: a body changed in transit fails here.
    ///
    /// # Errors
    /// `ChecksumMismatch`; `InvalidFormat` for another length; `NoTensorAt`.
    pub fn check_chunk(&self, position: usize, stored: &[u8]) -> Result<()> {
        self.chunk_entry(position)?;
        Ok(self.envelope.check_chunk(position, stored)?)
    }

    /// Tensor `position` from the fetched bytes of its chunk, checked as a lazily opened local
    /// file checks it ([`AprFile::tensor_at`](crate::AprFile::tensor_at), [`AprFile::decrypt_tensors`](crate::AprFile::decrypt_tensors)) before a tensor
    /// exists.
    ///
    /// # Errors
    /// `ChecksumMismatch` or `DecryptionFailed` for bytes that are not the chunk's;
    /// `DecryptionFailed` (`KeyRequired`) for an encrypted file without
    /// [`RangedModel::with_key`]; `LimitExceeded`; `InvalidFormat` for a corrupt chunk, non-zero
    /// padding or a length other than the dtype and shape give; `NoTensorAt`.
    pub fn decode_tensor(&self, position: usize, stored: &[u8]) -> Result<Tensor> {
        let entry = *self.chunk_entry(position)?;
        let data = self.decoded(position, &entry, stored)?;
        let data = match self.aligned_sizes.as_ref().and_then(|s| s.get(position)) {
            Some(&size) => {
                crate::trueno::unpadded(&self.metadata.tensors[position].name, data, size)?
            }
            None => data,
        };
        crate::codec::build(&self.metadata, position, data)
    }

    fn decoded(&self, position: usize, entry: &ChunkEntry, stored: &[u8]) -> Result<Vec<u8>> {
        if self.is_encrypted() {
            #[cfg(feature = "format-encryption")]
            if let Some(decryptor) = &self.decryptor {
                self.envelope.check_chunk(position, stored)?;
                return Ok(decryptor.chunk(position, stored, entry.uncompressed_size)?);
            }
            let _ = entry;
            return Err(envelope_core::Error::DecryptionFailed(
                envelope_core::DecryptionFailure::KeyRequired,
            )
            .into());
        }
        Ok(self.envelope.decode_chunk(position, stored)?.into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{AprFile, SaveOptions, save_tensors_to_bytes};
    use crate::model::TensorModel;
    use crate::quant::QuantType;
    use envelope_core::{Compression, Format, Opening, Signal};

    /// Three tensors (f32, a Q8_0 matrix, an odd-shaped f32) of a few hundred bytes each.
    fn model() -> TensorModel {
        let values: Vec<f32> = (0..256).map(|i| (i as f32 * 0.37).sin()).collect();
        let quantized = TensorModel::new(vec![
            Tensor::from_f32("blk.0.weight", vec![2, 64], &values[..128]).unwrap(),
        ])
        .unwrap()
        .quantize(QuantType::Q8_0)
        .unwrap();
        let mut tensors = vec![Tensor::from_f32("embed", vec![4, 32], &values[..128]).unwrap()];
        tensors.extend(quantized.tensors);
        tensors.push(Tensor::from_f32("odd", vec![3, 5], &values[..15]).unwrap());
        TensorModel::new(tensors).unwrap()
    }

    fn streaming(compression: Compression) -> Vec<u8> {
        let options = SaveOptions {
            compression,
            ..SaveOptions::default()
        };
        save_tensors_to_bytes(&model(), ModelType::Custom, &options).unwrap()
    }

    fn trueno() -> Vec<u8> {
        crate::trueno::save_trueno_to_bytes(
            &model(),
            ModelType::Custom,
            &crate::ModelCard::default(),
            zerocopy_trueno::BackendHint::Auto,
        )
        .unwrap()
    }

    fn at(offset: u64) -> usize {
        usize::try_from(offset).unwrap()
    }

    /// Bytes `range` of `bytes`.
    fn part<'a>(bytes: &'a [u8], range: &Range<u64>) -> &'a [u8] {
        &bytes[at(range.start)..at(range.end)]
    }

    /// What opening `bytes` from ranges gave: a model, or the word that the file is read whole.
    enum Opened {
        Ranged(Box<RangedModel<Vec<u8>>>, usize),
        Whole,
    }

    /// Opens `bytes` as a reader of ranges does: `first` bytes from each end, extended as the
    /// open asks; the signature (if required) fed the payload in pieces of 7 bytes. Returns the
    /// model and the number of ranges fetched.
    fn open_ranged(bytes: &[u8], first: usize, options: &LoadOptions<'_>) -> Result<Opened> {
        let len = bytes.len();
        let mut head = bytes[..first.min(len)].to_vec();
        let mut tail = bytes[len - first.min(len)..].to_vec();
        let mut fetched = 2;
        let envelope = loop {
            match RangedEnvelope::open(head, tail, len as u64, Format::Model)? {
                Opening::Ready(envelope) => break *envelope,
                Opening::NeedWholeFile { .. } => return Ok(Opened::Whole),
                Opening::NeedBytes {
                    head: h,
                    tail: t,
                    missing,
                } => {
                    fetched += 1;
                    assert!(fetched < 20, "the open did not converge");
                    let (start, end) = (at(missing.start), at(missing.end));
                    (head, tail) = (h, t);
                    if start == head.len() {
                        head.extend_from_slice(&bytes[start..end]);
                    } else {
                        let mut grown = bytes[start..end].to_vec();
                        grown.extend_from_slice(&tail);
                        tail = grown;
                    }
                }
            }
        };
        let mut opening = RangedOpening::begin(envelope, options)?;
        if let Some(range) = opening.signed_payload() {
            fetched += 1;
            for piece in part(bytes, &range).chunks(7) {
                opening.update(piece)?;
            }
        }
        Ok(Opened::Ranged(Box::new(opening.finish()?), fetched))
    }

    /// Every tensor of `bytes` read from ranges (each from its chunk's bytes only), or through
    /// the local loader for a file that is read whole.
    fn read_ranged(bytes: &[u8], first: usize, options: &LoadOptions<'_>) -> Result<Vec<Tensor>> {
        match open_ranged(bytes, first, options)? {
            Opened::Whole => read_local(bytes, options),
            Opened::Ranged(model, _) => (0..model.num_tensors())
                .map(|position| {
                    let range = model.chunk_range(position)?;
                    model.decode_tensor(position, part(bytes, &range))
                })
                .collect(),
        }
    }

    fn read_local(bytes: &[u8], options: &LoadOptions<'_>) -> Result<Vec<Tensor>> {
        let file = AprFile::open(bytes, options)?;
        (0..file.metadata().tensors.len())
            .map(|position| file.tensor_at(position))
            .collect()
    }

    /// The ranged read and the local one agree: the same tensors, or errors of the same signal.
    fn agree(bytes: &[u8], first: usize, options: &LoadOptions<'_>, what: &str) {
        let ranged = read_ranged(bytes, first, options);
        let local = read_local(bytes, options);
        match (&ranged, &local) {
            (Ok(ranged), Ok(local)) => assert_eq!(ranged, local, "{what}"),
            (Err(ranged), Err(local)) => {
                assert_eq!(
                    ranged.signal(),
                    local.signal(),
                    "{what}: {ranged} / {local}"
                );
            }
            _ => panic!("{what}: ranged {ranged:?}, local {local:?}"),
        }
    }

    #[test]
    fn every_tensor_read_from_its_chunk_equals_the_local_read() {
        let expected = model().tensors;
        for (what, bytes) in [
            ("plain", streaming(Compression::None)),
            ("zstd", streaming(Compression::ZstdL3)),
            ("trueno", trueno()),
        ] {
            for first in [16, 100, 65536] {
                let tensors = read_ranged(&bytes, first, &LoadOptions::default()).unwrap();
                assert_eq!(tensors, expected, "{what} from {first} bytes");
            }
            let Opened::Ranged(model, fetched) =
                open_ranged(&bytes, 65536, &LoadOptions::default()).unwrap()
            else {
                panic!("{what} is read by ranges");
            };
            assert_eq!(fetched, 2, "{what} opens from its two ends");
            assert_eq!(model.is_aligned(), what == "trueno");
            let local = AprFile::parse_lazy(&bytes[..]).unwrap();
            assert_eq!(model.metadata(), local.metadata());
            assert_eq!(
                serde_json::to_value(model.summary()).unwrap(),
                serde_json::to_value(crate::summarize(&local)).unwrap()
            );
            assert_eq!(model.position("odd").unwrap(), 2);
            assert!(matches!(
                model.position("missing"),
                Err(Error::NoTensorNamed { .. })
            ));
            assert!(matches!(
                model.chunk_range(3),
                Err(Error::NoTensorAt { .. })
            ));
        }
    }

    #[test]
    fn a_changed_chunk_is_refused_before_it_is_decoded() {
        for bytes in [
            streaming(Compression::None),
            streaming(Compression::Lz4),
            trueno(),
        ] {
            let Opened::Ranged(model, _) =
                open_ranged(&bytes, 65536, &LoadOptions::default()).unwrap()
            else {
                panic!("read by ranges");
            };
            let range = model.chunk_range(1).unwrap();
            let mut stored = part(&bytes, &range).to_vec();
            stored[3] ^= 0x40;
            let error = model.decode_tensor(1, &stored).unwrap_err();
            assert_eq!(error.signal(), Signal::ChecksumMismatch, "{error}");
            assert_eq!(
                model.check_chunk(1, &stored).unwrap_err().signal(),
                Signal::ChecksumMismatch
            );
            // Another chunk's bytes, and bytes cut short.
            let other = model.chunk_range(0).unwrap();
            assert!(model.decode_tensor(1, part(&bytes, &other)).is_err());
            assert!(model.decode_tensor(1, &stored[1..]).is_err());
        }
    }

    #[test]
    fn encrypted_and_signed_models_are_checked_in_the_local_order() {
        use envelope_crypto::{DecryptionKey, EncryptOptions, EncryptTo, OsRng};
        use envelope_sign::{Identity, Policy, TrustedKeys};
        let me = Identity::from_seed([3; 32]);
        let parts = crate::tensor_parts(
            &model(),
            ModelType::Custom,
            &SaveOptions {
                compression: Compression::Lz4,
                ..SaveOptions::default()
            },
        )
        .unwrap();
        let recipient = me.recipient_public_key();
        let sealed = envelope_crypto::encrypt(
            &parts,
            EncryptTo::Recipient(&recipient),
            EncryptOptions::default(),
            &mut OsRng,
        )
        .unwrap();
        let signed = envelope_sign::sign(&sealed.to_bytes().unwrap(), &me.signing_key()).unwrap();
        let trusted = TrustedKeys::from_keys([me.signing_public_key()]);
        let options = LoadOptions {
            signature: Some(Policy::RequireSignature { trusted: &trusted }),
            expected_type: Some(ModelType::Custom),
            ..LoadOptions::default()
        };
        let Opened::Ranged(model, fetched) = open_ranged(&signed, 65536, &options).unwrap() else {
            panic!("read by ranges");
        };
        assert_eq!(
            fetched, 3,
            "the payload is streamed through the signature check"
        );
        assert_eq!(model.signer(), Some(&me.signing_public_key()));
        let range = model.chunk_range(2).unwrap();
        let stored = part(&signed, &range);
        assert_eq!(
            model.decode_tensor(2, stored).unwrap_err().signal(),
            Signal::DecryptionFailed
        );
        let secret = me.recipient_secret_key();
        let model = model.with_key(DecryptionKey::Recipient(&secret)).unwrap();
        assert_eq!(
            model.decode_tensor(2, stored).unwrap(),
            self::model().tensors[2]
        );
        let mut changed = stored.to_vec();
        changed[5] ^= 1;
        assert_eq!(
            model.decode_tensor(2, &changed).unwrap_err().signal(),
            Signal::DecryptionFailed
        );
        // A stranger's key, and a signature over a changed payload byte.
        let stranger = TrustedKeys::from_keys([Identity::from_seed([4; 32]).signing_public_key()]);
        let refused = LoadOptions {
            signature: Some(Policy::RequireSignature { trusted: &stranger }),
            ..LoadOptions::default()
        };
        assert!(matches!(
            open_ranged(&signed, 65536, &refused),
            Err(error) if error.signal() == Signal::SignatureInvalid
        ));
        let mut damaged = signed.clone();
        damaged[at(range.start)] ^= 1;
        assert!(matches!(
            open_ranged(&damaged, 65536, &options),
            Err(error) if error.signal() == Signal::SignatureInvalid
        ));
        // The wrong model type, after the signature.
        let wrong = LoadOptions {
            expected_type: Some(ModelType::LinearRegression),
            ..options
        };
        assert!(matches!(
            open_ranged(&signed, 65536, &wrong),
            Err(Error::ModelTypeMismatch { .. })
        ));
        agree(&signed, 100, &options, "signed");
    }

    #[test]
    fn a_serde_model_is_read_whole() {
        let bytes = crate::save_to_bytes(
            &vec![1u32, 2, 3],
            ModelType::Custom,
            &SaveOptions::default(),
        )
        .unwrap();
        assert!(matches!(
            open_ranged(&bytes, 65536, &LoadOptions::default()),
            Ok(Opened::Whole)
        ));
    }

    /// Every truncation of each sample file, and a flip of every bit of every byte: the ranged
    /// reader never panics and never hands out other tensors than the local reader; where the
    /// local reader refuses the file, it refuses it with the same signal.
    #[test]
    fn truncations_and_bit_flips_are_refused_as_the_local_reader_refuses_them() {
        for (what, bytes) in [
            ("plain", streaming(Compression::None)),
            ("lz4", streaming(Compression::Lz4)),
            ("trueno", trueno()),
        ] {
            for len in 0..bytes.len() {
                agree(&bytes[..len], 64, &LoadOptions::default(), what);
            }
            for at in 0..bytes.len() {
                for bit in [0x01, 0x80] {
                    let mut damaged = bytes.clone();
                    damaged[at] ^= bit;
                    agree(&damaged, 64, &LoadOptions::default(), what);
                }
            }
        }
    }
}
