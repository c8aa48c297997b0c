//! Commercial models (003 §8.3-§8.5): thin wrappers over `envelope_license::commercial` that add
//! the model's own steps, the watermark before packaging and the typed decode after opening.
//!
//! Packaging: watermark the weights (if a [`Watermark`] and the seller's key are given; the mark
//! must read back before the license may say WATERMARKED) → build the file → encrypt → attach the
//! license → sign. Loading: signature → license (expiry) → decryption → model type → metadata →
//! payload, stopping at the first failure.

use envelope_core::{Envelope, Format};
use envelope_crypto::{CryptoRngCore, DecryptionKey};
use envelope_license::commercial::{self, CommercialPackage};
use envelope_license::{LicenseBlock, LicenseFlags};
use envelope_sign::TrustedKeys;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::card::ModelMetadata;
use crate::codec::{
    SaveOptions, checked_metadata, decode_serde, model_parts, tensor_parts, tensors_from,
};
use crate::error::{Error, Result};
use crate::model::TensorModel;
use crate::model_type::ModelType;
use crate::watermark::{SellerKey, Watermark};

/// Packages a tensor model for one buyer: with `watermark`, embeds the buyer's mark under the
/// seller key ([`TensorModel::watermarked`], which reads the whole model back) and only then sets
/// the license's WATERMARKED flag; then `envelope_license::commercial::package` (encrypt →
/// license → sign). `watermark.buyer_hash` should be the seller key's hash of the licensee
/// (`SellerKey::buyer_hash`), so that the license and the mark name the same buyer.
///
/// # Errors
/// `WatermarkClaimWithoutMark` for a license that already says WATERMARKED without a watermark to
/// embed; as [`TensorModel::watermarked`], [`tensor_parts`] and
/// `envelope_license::commercial::package`.
pub fn package_commercial(
    model: &TensorModel,
    model_type: ModelType,
    options: &SaveOptions,
    package: &CommercialPackage<'_>,
    watermark: Option<(&Watermark, &SellerKey)>,
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<u8>> {
    let mut license = package.license.clone();
    let marked;
    let model = match watermark {
        Some((watermark, seller_key)) => {
            marked = model.watermarked(watermark, seller_key)?.0;
            license.flags = license.flags.with(LicenseFlags::WATERMARKED);
            &marked
        }
        None if license.flags.contains(LicenseFlags::WATERMARKED) => {
            return Err(Error::WatermarkClaimWithoutMark);
        }
        None => model,
    };
    let package = CommercialPackage {
        license,
        signer: package.signer,
        encrypt_to: package.encrypt_to,
        options: package.options,
    };
    Ok(commercial::package(
        &tensor_parts(model, model_type, options)?,
        &package,
        rng,
    )?)
}

/// Packages a serde model for one buyer (003 §8.5 `package_commercial`; serde models have no
/// weights a generic engine could mark, so there is no watermark step).
///
/// # Errors
/// `WatermarkClaimWithoutMark` for a license that says WATERMARKED (nothing here can back it); as
/// [`model_parts`] and `envelope_license::commercial::package`.
pub fn package_commercial_serde<M: Serialize + ?Sized>(
    model: &M,
    model_type: ModelType,
    options: &SaveOptions,
    package: &CommercialPackage<'_>,
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<u8>> {
    if package.license.flags.contains(LicenseFlags::WATERMARKED) {
        return Err(Error::WatermarkClaimWithoutMark);
    }
    Ok(commercial::package(
        &model_parts(model, model_type, options)?,
        package,
        rng,
    )?)
}

/// The load order of both loaders (003 §8.5): the envelope, then signature, license and
/// decryption (`commercial::open`), then the model type, then the metadata; `decode` reads the
/// payload of the unlocked file.
fn load_with<T>(
    bytes: &[u8],
    expected_type: ModelType,
    trusted: &TrustedKeys,
    key: Option<DecryptionKey<'_>>,
    now_unix: u64,
    decode: impl FnOnce(&Envelope<&[u8]>, &commercial::Unlocked<'_, &[u8]>, &ModelMetadata) -> Result<T>,
) -> Result<(T, LicenseBlock)> {
    let envelope = Envelope::parse(bytes, Format::Model)?;
    let unlocked = commercial::open(&envelope, trusted, key, now_unix)?;
    expected_type.expect(envelope.header().type_id())?;
    let metadata = checked_metadata(&envelope)?;
    let model = decode(&envelope, &unlocked, &metadata)?;
    Ok((model, unlocked.license().clone()))
}

/// Verifies and loads a commercial serde model (003 §8.5 `load_commercial`): the signature by one
/// of `trusted`, the license at `now_unix`, decryption with `key`, the model type, then the
/// payload.
///
/// # Errors
/// `SignatureInvalid`, `LicenseExpired`, `DecryptionFailed`, `ModelTypeMismatch`, in that order,
/// after the envelope's own checks; `InvalidFormat` for a file without a license block.
pub fn load_commercial<M: DeserializeOwned>(
    bytes: &[u8],
    expected_type: ModelType,
    trusted: &TrustedKeys,
    key: Option<DecryptionKey<'_>>,
    now_unix: u64,
) -> Result<(M, LicenseBlock)> {
    load_with(
        bytes,
        expected_type,
        trusted,
        key,
        now_unix,
        |_, unlocked, metadata| decode_serde(metadata.payload, &unlocked.payload()?),
    )
}

/// Verifies and loads a commercial tensor model, as [`load_commercial`], decrypting one tensor at
/// a time.
///
/// # Errors
/// As [`load_commercial`].
pub fn load_commercial_tensors(
    bytes: &[u8],
    expected_type: ModelType,
    trusted: &TrustedKeys,
    key: Option<DecryptionKey<'_>>,
    now_unix: u64,
) -> Result<(TensorModel, LicenseBlock)> {
    load_with(
        bytes,
        expected_type,
        trusted,
        key,
        now_unix,
        |envelope, unlocked, metadata| {
            let aligned = crate::trueno::aligned_sizes(envelope, metadata)?;
            tensors_from(metadata, |i| {
                let data = unlocked.chunk(i)?;
                match aligned.as_ref().and_then(|sizes| sizes.get(i)) {
                    Some(&size) => crate::trueno::unpadded(&metadata.tensors[i].name, data, size),
                    None => Ok(data),
                }
            })
        },
    )
}
