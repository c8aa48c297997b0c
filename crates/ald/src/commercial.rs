//! Commercial packaging of datasets (000 §9.4-9.5): thin wrappers over
//! [`envelope_license::commercial`] that add the dataset's own steps (encoding the table on the
//! way in; type, metadata, schema and row checks and Arrow decoding on the way out).
//!
//! Watermarking (000 §9.3) composes with packaging: embed first ([`ArrowDataset::watermarked`]),
//! read the marked table back with the seller key, and only then set the license's WATERMARKED
//! flag, encrypt and sign. A license that claims WATERMARKED without a watermark to embed is
//! refused rather than shipped with a claim the content does not back.

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
use crate::watermark::{SellerKey, Watermark};
use crate::{Error, Result};

/// Watermarks `dataset` for one buyer (if `watermark` is given), encodes it with `options`, then
/// encrypts (if asked), licenses and signs it. Returns the file's bytes.
///
/// With a watermark, the license's WATERMARKED flag is set, and only after the marked table
/// itself was read back with the seller key and found to carry the buyer (extracted, or at least
/// verified); `package.license` need not have the flag.
///
/// # Errors
/// `Usage` for a WATERMARKED license without a watermark, or arguments the packaging refuses; as
/// [`ArrowDataset::watermarked`] (`NotTraceable`: nothing is packaged); as
/// [`ArrowDataset::to_parts`].
pub fn package_commercial(
    dataset: &ArrowDataset,
    options: &SaveOptions,
    package: &CommercialPackage<'_>,
    watermark: Option<(&Watermark, &SellerKey)>,
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<u8>> {
    let mut license = package.license.clone();
    let marked;
    let dataset = match watermark {
        None if license.flags.contains(LicenseFlags::WATERMARKED) => {
            return Err(Error::InvalidArgument(
                "a WATERMARKED license needs a watermark to embed: pass one, or clear the flag",
            ));
        }
        None => dataset,
        Some((watermark, seller_key)) => {
            let (copy, report) = dataset.watermarked(watermark, seller_key)?;
            // The claim rests on the table that will be written, read back as a seller reads a
            // leaked copy (every numeric column), not on the embedder's own bookkeeping.
            let reading = copy.watermark_reading(seller_key);
            let traced = reading
                .extract()
                .is_some_and(|found| found.buyer_hash == watermark.buyer_hash)
                || reading.verify(&watermark.buyer_hash).matched;
            if !traced {
                return Err(crate::watermark::Error::NotTraceable {
                    values: report
                        .slices
                        .iter()
                        .map(|s| u64::try_from(s.report.values).unwrap_or(u64::MAX))
                        .sum(),
                    marked: report.marked_values(),
                }
                .into());
            }
            license.flags = license.flags.with(LicenseFlags::WATERMARKED);
            marked = copy;
            &marked
        }
    };
    let package = CommercialPackage {
        license,
        signer: package.signer,
        encrypt_to: package.encrypt_to,
        options: package.options,
    };
    let parts = dataset.to_parts(options)?;
    Ok(envelope_license::commercial::package(
        &parts, &package, rng,
    )?)
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
