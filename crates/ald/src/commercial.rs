//! Commercial packaging of datasets (000 §9.4-9.5): thin wrappers over
//! [`envelope_license::commercial`] that add the dataset's own steps (encoding the table on the
//! way in; type, metadata, schema and row checks and Arrow decoding on the way out).
//!
//! Watermarking (000 §9.3) is a later issue: a license with the WATERMARKED flag is refused here
//! rather than shipped with a claim the content does not back.

use arrow_buffer::Buffer;
use arrow_schema::Schema;
use envelope_core::{Envelope, Format};
use envelope_crypto::{CryptoRngCore, DecryptionKey};
use envelope_license::LicenseFlags;
pub use envelope_license::commercial::CommercialPackage;
use envelope_sign::TrustedKeys;

use crate::dataset::{ArrowDataset, SaveOptions, check_schema};
use crate::dataset_type::DatasetType;
use crate::ipc;
use crate::load::{Loaded, check_rows};
use crate::metadata::Metadata;
use crate::{Error, Result};

/// Encodes `dataset` with `options`, then encrypts (if asked), licenses and signs it. Returns the
/// file's bytes.
///
/// # Errors
/// `Usage` for a WATERMARKED license (not implemented yet) or arguments the packaging refuses;
/// as [`ArrowDataset::to_parts`].
pub fn package_commercial(
    dataset: &ArrowDataset,
    options: &SaveOptions,
    package: &CommercialPackage<'_>,
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<u8>> {
    if package.license.flags.contains(LicenseFlags::WATERMARKED) {
        return Err(Error::InvalidArgument(
            "watermark embedding (000 §9.3) is not implemented: clear the WATERMARKED flag",
        ));
    }
    let parts = dataset.to_parts(options)?;
    Ok(envelope_license::commercial::package(&parts, package, rng)?)
}

/// Loads a commercial file: signature by one of `trusted` (else `SignatureInvalid`), a license
/// valid at `now_unix` (else `LicenseExpired`), the key for an encrypted payload (else
/// `DecryptionFailed`), the expected schema (else `SchemaMismatch`), then the table.
///
/// # Errors
/// The first failed check, in that order (envelope checks come first of all).
pub fn load_commercial(
    bytes: &[u8],
    trusted: &TrustedKeys,
    key: Option<DecryptionKey<'_>>,
    now_unix: u64,
    expected_schema: Option<&Schema>,
) -> Result<Loaded> {
    let envelope = Envelope::parse(bytes, Format::Dataset)?;
    let unlocked = envelope_license::commercial::open(&envelope, trusted, key, now_unix)?;
    let dataset_type = DatasetType::from_id(envelope.header().type_id())?;
    let metadata = Metadata::decode(envelope.checked_metadata()?)?;
    let schema = ipc::parse_schema(envelope.checked_schema()?)?;
    if let Some(expected) = expected_schema {
        check_schema(expected, &schema)?;
    }
    let payload = Buffer::from_vec(unlocked.payload()?);
    let batches = ipc::decode_batches(envelope.schema(), payload)?;
    check_rows(&batches, envelope.header().num_rows())?;
    Ok(Loaded {
        dataset: ArrowDataset::new(schema, batches)?,
        dataset_type,
        metadata,
        license: Some(unlocked.license().clone()),
        signer: Some(unlocked.signer()),
    })
}
