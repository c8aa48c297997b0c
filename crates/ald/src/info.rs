//! [`DatasetInfo`]: what `alimentar info` shows about a dataset beyond the envelope (dataset type,
//! card, schema, license, claimed signer, chunk count), read without touching the payload.

use envelope_core::{Envelope, Flags, Header, RangedEnvelope, Section};
use serde::Serialize;

use crate::Result;
use crate::dataset::render_schema;
use crate::dataset_type::DatasetType;
use crate::ipc;
use crate::metadata::Metadata;

/// A description of an `.ald` file, serializable to JSON.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetInfo {
    /// `major.minor`.
    pub version: String,
    /// The spec's name of the dataset type.
    pub dataset_type: &'static str,
    /// Its header id, as hex.
    pub dataset_type_id: String,
    /// Names of the set flags.
    pub flags: Vec<&'static str>,
    /// Compression name.
    pub compression: &'static str,
    /// Rows.
    pub num_rows: u64,
    /// Chunks (1 unless STREAMING).
    pub num_chunks: usize,
    /// Total file size.
    pub file_size: u64,
    /// Stored payload bytes.
    pub payload_size: u64,
    /// Decoded payload bytes (Arrow IPC messages).
    pub uncompressed_size: u64,
    /// Each column as `name: Type [not null]`.
    pub columns: Vec<String>,
    /// The metadata section (card, column docs, compliance, query key).
    pub metadata: Metadata,
    /// The license block, if present (not verified unless the file's signature was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<LicenseInfo>,
    /// Base64 of the Ed25519 key the signature block names. Only a claim: `verify` with trusted
    /// keys checks it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_signer: Option<String>,
}

/// The license block, for display.
#[derive(Debug, Clone, Serialize)]
pub struct LicenseInfo {
    /// The license UUID.
    pub license_id: String,
    /// SHA-256 of the licensee's name, hex.
    pub licensee_hash: String,
    /// Issue time (Unix seconds).
    pub issued_at: u64,
    /// Expiry (Unix seconds).
    pub expires_at: u64,
    /// Names of the set license flags.
    pub flags: Vec<&'static str>,
    /// Seat limit.
    pub seat_limit: u16,
    /// Query limit.
    pub query_limit: u32,
    /// Custom terms (lossy UTF-8).
    pub custom_terms: String,
}

impl DatasetInfo {
    /// Describes a verified envelope.
    ///
    /// # Errors
    /// `InvalidFormat` if the dataset type, metadata, schema or license block is invalid.
    pub fn of<B: AsRef<[u8]>>(envelope: &Envelope<B>) -> Result<Self> {
        Self::of_parts(&Parts {
            header: envelope.header(),
            section: &|section| envelope.section(section),
            schema: &|| envelope.checked_schema(),
            metadata: &|| envelope.checked_metadata(),
            num_chunks: envelope.chunk_index().map(envelope_core::ChunkIndex::len),
            file_size: envelope.as_bytes().len() as u64,
            payload_size: envelope.payload().len() as u64,
            uncompressed_size: envelope.uncompressed_size(),
        })
    }

    /// Describes an envelope opened from its head and tail (`remote-file`, docs/remote.md):
    /// what [`DatasetInfo::of`] says of the same file, from the same verified sections.
    ///
    /// # Errors
    /// As [`DatasetInfo::of`].
    pub fn of_ranged<B: AsRef<[u8]>>(envelope: &RangedEnvelope<B>) -> Result<Self> {
        Self::of_parts(&Parts {
            header: envelope.header(),
            section: &|section| envelope.section(section),
            schema: &|| envelope.checked_schema(),
            metadata: &|| envelope.checked_metadata(),
            num_chunks: envelope.chunk_index().map(envelope_core::ChunkIndex::len),
            file_size: envelope.file_len(),
            payload_size: envelope.payload_span().len,
            uncompressed_size: envelope.uncompressed_size(),
        })
    }

    fn of_parts(parts: &Parts<'_>) -> Result<Self> {
        let header = parts.header;
        let dataset_type = DatasetType::from_id(header.type_id())?;
        let schema = ipc::parse_schema((parts.schema)()?)?;
        let license = (parts.section)(Section::License)
            .map(envelope_license::LicenseBlock::parse)
            .transpose()?
            .map(|block| LicenseInfo {
                license_id: block.license_id.to_string(),
                licensee_hash: hex::encode(block.licensee_hash),
                issued_at: block.issued_at,
                expires_at: block.expires_at,
                flags: block.flags.names().collect(),
                seat_limit: block.seat_limit,
                query_limit: block.query_limit,
                custom_terms: String::from_utf8_lossy(&block.custom_terms).into_owned(),
            });
        Ok(Self {
            version: header.version().to_string(),
            dataset_type: dataset_type.name(),
            dataset_type_id: format!("{:#06x}", dataset_type.id()),
            flags: header.flags().names(),
            compression: header.compression().name(),
            num_rows: header.num_rows(),
            num_chunks: parts.num_chunks.unwrap_or(1),
            file_size: parts.file_size,
            payload_size: parts.payload_size,
            uncompressed_size: parts.uncompressed_size,
            columns: schema
                .fields()
                .iter()
                .map(|field| {
                    let one = arrow_schema::Schema::new(vec![field.clone()]);
                    let rendered = render_schema(&one);
                    rendered[1..rendered.len() - 1].to_owned()
                })
                .collect(),
            metadata: Metadata::decode((parts.metadata)()?)?,
            license,
            claimed_signer: claimed_signer(header, (parts.section)(Section::Signature)),
        })
    }
}

/// What [`DatasetInfo`] reads of a file, from whichever opener verified it.
struct Parts<'a> {
    header: &'a Header,
    section: &'a dyn Fn(Section) -> Option<&'a [u8]>,
    schema: &'a dyn Fn() -> envelope_core::Result<&'a [u8]>,
    metadata: &'a dyn Fn() -> envelope_core::Result<&'a [u8]>,
    num_chunks: Option<usize>,
    file_size: u64,
    payload_size: u64,
    uncompressed_size: u64,
}

#[cfg(feature = "format-signing")]
fn claimed_signer(header: &Header, signature: Option<&[u8]>) -> Option<String> {
    if !header.flags().contains(Flags::SIGNED) {
        return None;
    }
    let body = signature?;
    envelope_sign::SignatureBlock::parse(body)
        .ok()
        .map(|block| block.signer.to_base64())
}

#[cfg(not(feature = "format-signing"))]
fn claimed_signer(header: &Header, signature: Option<&[u8]>) -> Option<String> {
    let _ = (header, signature, Flags::SIGNED);
    None
}
