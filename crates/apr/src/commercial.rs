//! Commercial models (003 §8.3-§8.5): thin wrappers over `envelope_license::commercial` that add
//! the model's own steps, the watermark before packaging and the typed decode after opening.
//!
//! Packaging: watermark the weights (if a [`Watermark`] engine is given) → build the file →
//! encrypt → attach the license → sign. Loading: signature → license (expiry) → decryption →
//! model type → metadata → payload, stopping at the first failure.

use envelope_core::{Envelope, Format};
use envelope_crypto::{CryptoRngCore, DecryptionKey};
use envelope_license::LicenseBlock;
use envelope_license::commercial::{self, CommercialPackage};
use envelope_sign::TrustedKeys;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::card::ModelMetadata;
use crate::codec::{
    SaveOptions, checked_metadata, decode_serde, model_parts, tensor_parts, tensors_from,
};
use crate::error::Result;
use crate::model::TensorModel;
use crate::model_type::ModelType;

/// A watermark engine (003 §8.3): embeds a buyer-specific fingerprint in the weights before a
/// model is packaged. The engine itself comes with a later issue; this is its place in the
/// pipeline.
pub trait Watermark {
    /// The engine's name (recorded nowhere in the file; for messages).
    fn name(&self) -> &str;

    /// Embeds the fingerprint of `licensee_hash` into `model`'s weights.
    ///
    /// # Errors
    /// Whatever the engine reports (for example a model with no weights to mark).
    fn embed(&self, model: &mut TensorModel, licensee_hash: &[u8; 32]) -> Result<()>;
}

/// Packages a tensor model for one buyer: watermark (optional; sets the license's WATERMARKED
/// flag), then `envelope_license::commercial::package` (encrypt → license → sign).
///
/// # Errors
/// The watermark engine's errors; as [`tensor_parts`] and `envelope_license::commercial::package`.
pub fn package_commercial(
    model: &TensorModel,
    model_type: ModelType,
    options: &SaveOptions,
    package: &CommercialPackage<'_>,
    watermark: Option<&dyn Watermark>,
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<u8>> {
    let mut license = package.license.clone();
    let marked;
    let model = match watermark {
        Some(engine) => {
            let mut copy = model.clone();
            engine.embed(&mut copy, &license.licensee_hash)?;
            license.flags = license
                .flags
                .with(envelope_license::LicenseFlags::WATERMARKED);
            marked = copy;
            &marked
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
/// As [`model_parts`] and `envelope_license::commercial::package`.
pub fn package_commercial_serde<M: Serialize + ?Sized>(
    model: &M,
    model_type: ModelType,
    options: &SaveOptions,
    package: &CommercialPackage<'_>,
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<u8>> {
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
