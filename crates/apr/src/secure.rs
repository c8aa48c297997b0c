//! Loading protected models: the signature policy before anything else, then decryption of the
//! payload (001 §5.2-§5.4). Signature checks happen on the verified envelope before the metadata
//! is decoded, so an untrusted file is refused before any of its contents are parsed.

#[cfg(feature = "format-encryption")]
use envelope_crypto::{DecryptionKey, Decryptor};
#[cfg(feature = "format-encryption")]
use serde::de::DeserializeOwned;

#[cfg(any(feature = "format-encryption", feature = "format-signing"))]
use crate::codec::AprFile;
#[cfg(any(feature = "format-encryption", feature = "format-signing"))]
use crate::error::Result;
#[cfg(feature = "format-encryption")]
use crate::model::TensorModel;

/// Verifies `bytes` as an `.apr` file, applies the signature `policy`, then decodes the metadata.
///
/// # Errors
/// The envelope's signals, then `SignatureInvalid` (001 §5.4), then those of [`AprFile::parse`].
#[cfg(feature = "format-signing")]
pub fn load_verified<B: AsRef<[u8]>>(
    bytes: B,
    policy: &envelope_sign::Policy<'_>,
) -> Result<AprFile<B>> {
    let envelope = envelope_core::Envelope::parse(bytes, envelope_core::Format::Model)?;
    policy.check(&envelope)?;
    AprFile::from_envelope(envelope)
}

#[cfg(feature = "format-encryption")]
impl<B: AsRef<[u8]>> AprFile<B> {
    /// Decrypts and decodes a serde model.
    ///
    /// # Errors
    /// `DecryptionFailed` for a wrong key or altered ciphertext, `Usage` if the file is not
    /// encrypted; `WrongPayload` if it holds tensors; `InvalidFormat` if the payload is not a value of `M`.
    pub fn decrypt_model<M: DeserializeOwned>(&self, key: DecryptionKey<'_>) -> Result<M> {
        let payload = Decryptor::new(self.envelope(), key)?.payload()?;
        crate::codec::decode_serde(self.metadata().payload, &payload)
    }

    /// Decrypts every tensor, one chunk at a time.
    ///
    /// # Errors
    /// As [`AprFile::decrypt_model`].
    pub fn decrypt_tensors(&self, key: DecryptionKey<'_>) -> Result<TensorModel> {
        let decryptor = Decryptor::new(self.envelope(), key)?;
        self.tensors_from(|i| self.unpadded(i, decryptor.chunk(i)?))
    }
}
