//! A STREAMING dataset opened from the head and tail of its file, its chunks supplied by the
//! caller (who fetched their byte ranges from object storage, say): the reading `remote-file`
//! builds on, with no I/O of its own.
//!
//! The checks are the local loader's ([`crate::load`], 000 §5.0), in its order, over a
//! [`RangedEnvelope`]: the envelope walk (done by `RangedEnvelope::open`), the signature policy,
//! the license, the dataset type, the metadata, the schema; and only then chunks. Under
//! `RequireSignature` every payload byte is needed: [`RangedOpening`] says which range to stream
//! through the check ([`RangedOpening::signed_payload`]) and the dataset exists only once the
//! signature has passed, so nothing is decoded from a file whose signature was not checked.
//!
//! Each chunk's bytes are checked before use (length and CRC-32C by the envelope, or AES-GCM
//! through the same [`envelope_crypto::ChunkDecryptor`] the local reader's decryptor uses).

use core::ops::Range;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_schema::SchemaRef;
use envelope_core::{
    ChunkEntry, DecryptionFailure, Error as EnvelopeError, Flags, FormatError, RangedEnvelope,
};
use envelope_license::LicenseBlock;

use crate::dataset_type::DatasetType;
use crate::ipc;
use crate::load::{LoadOptions, check_rows};
use crate::metadata::Metadata;
use crate::streaming::{concat, projected_schema};
use crate::{Error, Result};

/// A dataset file opened from ranges whose signature, if the policy requires one, is still to be
/// checked over the payload.
#[derive(Debug)]
pub struct RangedOpening<'o, B> {
    envelope: RangedEnvelope<B>,
    #[cfg(feature = "format-signing")]
    verifier: Option<envelope_sign::RangedVerifier<'o>>,
    options: LoadOptions<'o>,
}

impl<'o, B: AsRef<[u8]>> RangedOpening<'o, B> {
    /// Starts opening `envelope` under `options`. A TRUENO_NATIVE dataset (aligned arrays, one
    /// chunk of every row) is refused here: it is read whole.
    ///
    /// # Errors
    /// `InvalidFormat` for a TRUENO_NATIVE file; `SignatureInvalid` (`Missing`, `Malformed`,
    /// `UntrustedKey`) under `RequireSignature`, before any payload byte is asked for.
    pub fn begin(envelope: RangedEnvelope<B>, options: &LoadOptions<'o>) -> Result<Self> {
        if envelope.header().flags().contains(Flags::TRUENO_NATIVE) {
            return Err(FormatError::Inconsistent {
                reason: "a TRUENO_NATIVE dataset is read whole, not by chunk ranges",
            }
            .into());
        }
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

    /// Checks the signature (if required), then the license, dataset type, metadata and schema,
    /// and derives the key of an encrypted file if `options` has one.
    ///
    /// # Errors
    /// `SignatureInvalid` (`Mismatch`), or `Usage` if the payload was not fed whole;
    /// `LicenseExpired`; `InvalidFormat`; `SchemaMismatch`; `DecryptionFailed` for a key that
    /// does not open the file.
    pub fn finish(self) -> Result<RangedDataset<B>> {
        let envelope = self.envelope;
        #[cfg(feature = "format-signing")]
        let signer = match self.verifier {
            Some(verifier) => Some(verifier.finish(&envelope)?),
            None => None,
        };
        let options = self.options;
        let license = envelope_license::check_license_block(
            envelope.section(envelope_core::Section::License),
            options.now_unix,
        )?;
        let (dataset_type, metadata, schema) = crate::load::describe(
            envelope.header().type_id(),
            || envelope.checked_metadata(),
            || envelope.checked_schema(),
            &options,
        )?;
        #[cfg(feature = "format-encryption")]
        let decryptor = match options.key {
            Some(key) if envelope.header().flags().contains(Flags::ENCRYPTED) => {
                Some(envelope_crypto::ChunkDecryptor::for_ranged(&envelope, key)?)
            }
            _ => None,
        };
        Ok(RangedDataset {
            envelope,
            dataset_type,
            metadata,
            schema,
            license,
            #[cfg(feature = "format-signing")]
            signer,
            #[cfg(feature = "format-encryption")]
            decryptor,
        })
    }
}

/// A verified STREAMING dataset opened from ranges: header, metadata, schema, license and index
/// in hand; chunks decoded from bytes the caller fetched ([`RangedDataset::chunk_range`]).
#[derive(Debug)]
pub struct RangedDataset<B> {
    envelope: RangedEnvelope<B>,
    dataset_type: DatasetType,
    metadata: Metadata,
    schema: SchemaRef,
    license: Option<LicenseBlock>,
    #[cfg(feature = "format-signing")]
    signer: Option<envelope_sign::SigningPublicKey>,
    #[cfg(feature = "format-encryption")]
    decryptor: Option<envelope_crypto::ChunkDecryptor>,
}

impl<B: AsRef<[u8]>> RangedDataset<B> {
    /// The verified envelope (head and tail).
    #[must_use]
    pub fn envelope(&self) -> &RangedEnvelope<B> {
        &self.envelope
    }

    /// The header's dataset type.
    #[must_use]
    pub fn dataset_type(&self) -> DatasetType {
        self.dataset_type
    }

    /// The metadata section.
    #[must_use]
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The schema.
    #[must_use]
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The license block, if any.
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

    /// The header's row count.
    #[must_use]
    pub fn num_rows(&self) -> u64 {
        self.envelope.header().num_rows()
    }

    /// Whether the payload is encrypted.
    #[must_use]
    pub fn is_encrypted(&self) -> bool {
        self.envelope.header().flags().contains(Flags::ENCRYPTED)
    }

    /// Number of chunks.
    #[must_use]
    pub fn num_chunks(&self) -> usize {
        self.envelope
            .chunk_index()
            .map_or(0, envelope_core::ChunkIndex::len)
    }

    /// The index entry of chunk `chunk` (`first_item`/`item_count` are rows).
    #[must_use]
    pub fn chunk_entry(&self, chunk: usize) -> Option<ChunkEntry> {
        self.envelope.chunk_entry(chunk).ok().copied()
    }

    /// The chunks holding rows `start..start + count`, in order (empty when `count` is 0).
    ///
    /// # Errors
    /// `Usage` if the range goes past the last row.
    pub fn chunks_of_rows(&self, start: u64, count: u64) -> Result<Range<usize>> {
        let end = start
            .checked_add(count)
            .filter(|end| *end <= self.num_rows())
            .ok_or(Error::RowsOutOfRange {
                start,
                count,
                num_rows: self.num_rows(),
            })?;
        let entries = self
            .envelope
            .chunk_index()
            .map_or(&[][..], envelope_core::ChunkIndex::entries);
        if count == 0 {
            return Ok(0..0);
        }
        let first = crate::streaming::first_chunk_of(entries, start);
        let last = crate::streaming::first_chunk_of(entries, end - 1);
        Ok(first..last + 1)
    }

    /// The file offsets of chunk `chunk`'s stored bytes, to fetch.
    ///
    /// # Errors
    /// `InvalidFormat` for a chunk the index does not have.
    pub fn chunk_range(&self, chunk: usize) -> Result<Range<u64>> {
        Ok(self.envelope.chunk_range(chunk)?)
    }

    /// Checks fetched bytes of chunk `chunk` without decoding them (length and CRC-32C; an
    /// encrypted chunk's length only, AES-GCM authenticates it when decoded).
    ///
    /// # Errors
    /// `ChecksumMismatch`; `InvalidFormat` for another length or no such chunk.
    pub fn check_chunk(&self, chunk: usize, stored: &[u8]) -> Result<()> {
        Ok(self.envelope.check_chunk(chunk, stored)?)
    }

    /// Chunk `chunk` as one record batch, from its fetched bytes `stored`.
    ///
    /// # Errors
    /// `ChecksumMismatch` or `DecryptionFailed` for bytes that are not the chunk's;
    /// `DecryptionFailed` (`KeyRequired`) for an encrypted file opened without a key;
    /// `InvalidFormat` for a corrupt chunk or a row count other than its index entry's.
    pub fn decode_chunk(&self, chunk: usize, stored: &[u8]) -> Result<RecordBatch> {
        let entry = *self.envelope.chunk_entry(chunk)?;
        let payload = self.decoded(chunk, &entry, stored)?;
        let batches = ipc::decode_batches(self.envelope.schema(), payload)?;
        check_rows(&batches, entry.item_count)?;
        concat(&self.schema, &batches)
    }

    /// Chunk `chunk` with only the columns of `projection` (indices into the schema, in the
    /// order wanted, each at most once), from its fetched bytes `stored`: checked (CRC-32C or
    /// AES-GCM), decrypted and decompressed whole as by [`RangedDataset::decode_chunk`], then
    /// decoded without the other columns' buffers (docs/ald.md §6.2). The whole chunk must still
    /// be fetched: its checksum and compression frame cover all its columns.
    ///
    /// # Errors
    /// `Usage` ([`Error::NoSuchColumn`], [`Error::DuplicateColumn`]) for a projection the schema
    /// does not allow, before `stored` is looked at; otherwise as [`RangedDataset::decode_chunk`].
    pub fn decode_chunk_projected(
        &self,
        chunk: usize,
        stored: &[u8],
        projection: &[usize],
    ) -> Result<RecordBatch> {
        let schema = projected_schema(&self.schema, projection)?;
        let entry = *self.envelope.chunk_entry(chunk)?;
        let payload = self.decoded(chunk, &entry, stored)?;
        let batches = ipc::decode_batches_projected(self.envelope.schema(), payload, projection)?;
        check_rows(&batches, entry.item_count)?;
        concat(&schema, &batches)
    }

    fn decoded(&self, chunk: usize, entry: &ChunkEntry, stored: &[u8]) -> Result<Buffer> {
        if self.is_encrypted() {
            #[cfg(feature = "format-encryption")]
            if let Some(decryptor) = &self.decryptor {
                self.envelope.check_chunk(chunk, stored)?;
                let plain = decryptor.chunk(chunk, stored, entry.uncompressed_size)?;
                return Ok(Buffer::from_vec(plain));
            }
            let _ = entry;
            return Err(EnvelopeError::DecryptionFailed(DecryptionFailure::KeyRequired).into());
        }
        Ok(match self.envelope.decode_chunk(chunk, stored)? {
            std::borrow::Cow::Owned(bytes) => Buffer::from_vec(bytes),
            std::borrow::Cow::Borrowed(bytes) => Buffer::from(bytes),
        })
    }
}
