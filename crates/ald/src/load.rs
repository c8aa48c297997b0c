//! Loading: the checks in the order 000 §5.0 requires, then decoding.
//!
//! Order: envelope walk (magic → version → CRC32 → header → section bounds), signature policy,
//! license, dataset type, metadata, schema section and the caller's expected schema, and only
//! then the payload (decrypted if needed, decompressed, decoded as Arrow IPC). The first failure
//! stops the load.
//!
//! A TRUENO_NATIVE file (000 §10, [`crate::aligned`]) goes through the same checks; right after
//! the schema, its chunk index if STREAMING (exactly one chunk of every row) and its tensor index
//! are checked against the schema and the header's row count, and its payload is later rebuilt
//! from the aligned arrays instead of decoded as Arrow IPC.

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_schema::{Schema, SchemaRef};
use envelope_core::{
    DecryptionFailure, Envelope, Error as EnvelopeError, Flags, Format, FormatError,
};
use envelope_license::LicenseBlock;

use crate::aligned::{self, ArrayBytes};
use crate::dataset::{ArrowDataset, check_schema};
use crate::dataset_type::DatasetType;
use crate::ipc;
use crate::metadata::Metadata;
use crate::{Error, Result};

/// What a loader requires of a file beyond its integrity.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions<'a> {
    /// Refuse the file with `SchemaMismatch` unless its schema has these fields.
    pub expected_schema: Option<&'a Schema>,
    /// The current time (Unix seconds), to check a license's expiry. A file whose license
    /// enforces expiry is refused with `Usage` when this is `None`.
    pub now_unix: Option<u64>,
    /// Which signatures to require (default: none).
    #[cfg(feature = "format-signing")]
    pub signature: Option<envelope_sign::Policy<'a>>,
    /// The password or recipient key of an encrypted file.
    #[cfg(feature = "format-encryption")]
    pub key: Option<envelope_crypto::DecryptionKey<'a>>,
    /// The reader's resource policy: how much a compressed payload, chunk or metadata section
    /// may decode to (default [`envelope_core::Limits::DEFAULT`]).
    pub limits: envelope_core::Limits,
}

/// A verified `.ald` file whose metadata and schema have been read; the payload has not been
/// touched.
#[derive(Debug, Clone)]
pub struct Opened<B> {
    pub(crate) envelope: Envelope<B>,
    pub(crate) dataset_type: DatasetType,
    pub(crate) metadata: Metadata,
    pub(crate) schema: SchemaRef,
    pub(crate) license: Option<LicenseBlock>,
    /// The aligned arrays of a TRUENO_NATIVE file, checked against the schema.
    pub(crate) arrays: Option<zerocopy_trueno::TensorIndex>,
    #[cfg(feature = "format-signing")]
    pub(crate) signer: Option<envelope_sign::SigningPublicKey>,
}

impl<B: AsRef<[u8]>> Opened<B> {
    /// Verifies `bytes` and reads everything but the payload.
    ///
    /// # Errors
    /// The first failed check: `InvalidFormat`, `UnsupportedVersion`, `ChecksumMismatch`,
    /// `SignatureInvalid`, `LicenseExpired`, `SchemaMismatch`.
    pub fn open(bytes: B, options: &LoadOptions<'_>) -> Result<Self> {
        Self::verify(
            Envelope::parse(bytes, Format::Dataset)?.with_limits(options.limits),
            options,
        )
    }

    /// The checks after the envelope walk.
    pub(crate) fn verify(envelope: Envelope<B>, options: &LoadOptions<'_>) -> Result<Self> {
        #[cfg(feature = "format-signing")]
        let signer = match options.signature {
            Some(policy) => policy.check(&envelope)?,
            None => None,
        };
        let license = envelope_license::check_license(&envelope, options.now_unix)?;
        let (dataset_type, metadata, schema) = describe(
            envelope.header().type_id(),
            || envelope.checked_metadata(),
            || envelope.checked_schema(),
            options,
        )?;
        let arrays = match envelope.section(envelope_core::Section::TensorIndex) {
            Some(body) => {
                if let Some(chunks) = envelope.chunk_index() {
                    // A dataset's chunk items are rows and every array holds every row: a
                    // STREAMING TRUENO_NATIVE dataset is one chunk (docs/zerocopy.md §10.1).
                    aligned::check_one_chunk(chunks, envelope.header())?;
                }
                Some(aligned::parse_index(
                    body,
                    &schema,
                    envelope.header().num_rows(),
                )?)
            }
            None => None,
        };
        Ok(Self {
            envelope,
            dataset_type,
            metadata,
            schema,
            license,
            arrays,
            #[cfg(feature = "format-signing")]
            signer,
        })
    }

    /// The verified envelope.
    #[must_use]
    pub fn envelope(&self) -> &Envelope<B> {
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

    /// The schema section.
    #[must_use]
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The license block, if any (checked against `now_unix` when one was given).
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

    /// Decrypts (if needed), decompresses and decodes the whole payload.
    ///
    /// # Errors
    /// `DecryptionFailed` (`KeyRequired` if the file is encrypted and `options` has no key, or
    /// without the `format-encryption` feature); `InvalidFormat` for a corrupt payload or a row
    /// count other than the header's; `ChecksumMismatch` for a TRUENO_NATIVE array whose CRC-32C
    /// fails (a lazily opened file, whose whole-file CRC32 was not computed).
    pub fn read_dataset(&self, options: &LoadOptions<'_>) -> Result<ArrowDataset> {
        if self.arrays.is_some() {
            let batch = self.read_arrays(options, None)?;
            return ArrowDataset::new(self.schema.clone(), vec![batch]);
        }
        let batches = if self.is_encrypted() {
            ipc::decode_batches(self.envelope.schema(), self.decrypted_payload(options)?)?
        } else {
            ipc::decode_from_reader(self.envelope.schema(), self.envelope.payload_reader()?)?
        };
        check_rows(&batches, self.num_rows())?;
        ArrowDataset::new(self.schema.clone(), batches)
    }

    /// Whether the file is TRUENO_NATIVE: its columns are stored as aligned arrays (000 §10).
    #[must_use]
    pub fn is_trueno_native(&self) -> bool {
        self.arrays.is_some()
    }

    /// The aligned arrays' index of a TRUENO_NATIVE file (checked against the schema).
    #[must_use]
    pub fn arrays(&self) -> Option<&zerocopy_trueno::TensorIndex> {
        self.arrays.as_ref()
    }

    /// The table of a TRUENO_NATIVE file as one record batch, each column copied once out of the
    /// payload (decrypted first if the file is encrypted). Arrays are verified by the whole-file
    /// CRC32 if the envelope computed it, by AES-GCM if encrypted, and otherwise (a lazily opened
    /// file) each by its CRC-32C here. With a (checked) `projection`, only its arrays are
    /// checked and rebuilt.
    pub(crate) fn read_arrays(
        &self,
        options: &LoadOptions<'_>,
        projection: Option<&[usize]>,
    ) -> Result<RecordBatch> {
        let Some(index) = &self.arrays else {
            return Err(Error::NotTruenoNative);
        };
        let (payload, verified) = if self.is_encrypted() {
            (ArrayBytes::Owned(self.decrypted_payload(options)?), true)
        } else {
            (
                ArrayBytes::Borrowed(self.envelope.payload()),
                self.envelope.is_fully_verified(),
            )
        };
        aligned::decode_arrays(
            index,
            &self.schema,
            self.num_rows(),
            &payload,
            verified,
            projection,
        )
    }

    /// The decrypted, decompressed payload of an encrypted file (callers read unencrypted
    /// payloads through `Envelope::payload_reader`, or the aligned arrays in place).
    fn decrypted_payload(&self, options: &LoadOptions<'_>) -> Result<Buffer> {
        #[cfg(feature = "format-encryption")]
        if let Some(key) = options.key {
            let payload = envelope_crypto::Decryptor::new(&self.envelope, key)?.payload()?;
            return Ok(Buffer::from_vec(payload));
        }
        let _ = options;
        Err(EnvelopeError::DecryptionFailed(DecryptionFailure::KeyRequired).into())
    }
}

/// `InvalidFormat` unless `batches` hold `declared` rows in total.
pub(crate) fn check_rows(batches: &[RecordBatch], declared: u64) -> Result<()> {
    let found: u64 = batches.iter().map(|batch| batch.num_rows() as u64).sum();
    if found != declared {
        return Err(FormatError::SizeMismatch {
            what: "rows in the payload against the header's num_rows",
            declared,
            found,
        }
        .into());
    }
    Ok(())
}

/// A loaded dataset with everything the file said about it.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The table.
    pub dataset: ArrowDataset,
    /// The header's dataset type.
    pub dataset_type: DatasetType,
    /// The metadata section.
    pub metadata: Metadata,
    /// The license block, if any.
    pub license: Option<LicenseBlock>,
    /// The verified signer, if a signature was required.
    #[cfg(feature = "format-signing")]
    pub signer: Option<envelope_sign::SigningPublicKey>,
}

/// Loads a dataset from bytes in memory (`include_bytes!`, a wasm32 `ArrayBuffer`, a download),
/// with no signature, key or expected schema. A STREAMING file loads whole.
///
/// # Errors
/// As [`load_from_bytes_with`].
pub fn load_from_bytes(bytes: &[u8]) -> Result<ArrowDataset> {
    Ok(load_from_bytes_with(bytes, &LoadOptions::default())?.dataset)
}

/// Loads a dataset from bytes in memory under `options`.
///
/// A STREAMING file (unencrypted, not TRUENO_NATIVE) is verified in one pass, each chunk by its
/// CRC-32C just before it is decoded (docs/envelope.md §4.1; the frames after the payload, if
/// any, by the whole-file CRC32 first). Any other file has its whole-file CRC32 checked before
/// the payload is touched.
///
/// # Errors
/// The first failed check, in the order of this module's documentation.
pub fn load_from_bytes_with(bytes: &[u8], options: &LoadOptions<'_>) -> Result<Loaded> {
    if crate::one_pass::is_plain_streaming(bytes) {
        return crate::one_pass::load_streaming(bytes, options, 1);
    }
    Opened::open(bytes, options)?.into_loaded(options)
}

impl<B: AsRef<[u8]>> Opened<B> {
    /// Reads the table and returns it with everything else the file said.
    pub(crate) fn into_loaded(self, options: &LoadOptions<'_>) -> Result<Loaded> {
        let dataset = self.read_dataset(options)?;
        Ok(self.into_loaded_with(dataset))
    }

    /// `dataset`, read from this file, with everything else the file said.
    pub(crate) fn into_loaded_with(self, dataset: ArrowDataset) -> Loaded {
        Loaded {
            dataset,
            dataset_type: self.dataset_type,
            metadata: self.metadata,
            license: self.license,
            #[cfg(feature = "format-signing")]
            signer: self.signer,
        }
    }
}

/// Reads only the schema section of a verified file (no payload byte is decoded).
///
/// # Errors
/// As [`Opened::open`].
pub fn read_schema(bytes: &[u8]) -> Result<SchemaRef> {
    Ok(Opened::open(bytes, &LoadOptions::default())?.schema)
}

/// The steps of 000 §5.0 after the signature and the license, shared by every opener of a
/// dataset (whole bytes, [`crate::ranged`]): the header's dataset type, then the metadata, then
/// the schema (each section within the reader's limits before it is decoded), then the schema the
/// caller expects.
pub(crate) fn describe<'a>(
    type_id: u16,
    metadata: impl FnOnce() -> envelope_core::Result<&'a [u8]>,
    schema: impl FnOnce() -> envelope_core::Result<&'a [u8]>,
    options: &LoadOptions<'_>,
) -> Result<(DatasetType, Metadata, SchemaRef)> {
    let dataset_type = DatasetType::from_id(type_id)?;
    let metadata = Metadata::decode(metadata()?)?;
    let schema = ipc::parse_schema(schema()?)?;
    if let Some(expected) = options.expected_schema {
        check_schema(expected, &schema)?;
    }
    Ok((dataset_type, metadata, schema))
}
