//! Commercial packaging (000 §9.4-9.5, 003 §8.5): what a seller does to a finished file before it
//! ships, and what a buyer's loader does before it touches the payload.
//!
//! Packaging order: **encrypt → license → sign.** The encryption binds everything before the
//! payload as associated data; the license block is appended after the payload; the signature
//! covers every byte but its own body and the CRC, so it binds the ciphertext, the encryption
//! parameters and the license together. Watermarking is the format's job and happens before
//! packaging, on the content.
//!
//! Loading order: **signature → license → decryption → decoding**, stopping at the first failure.
//! A file without a license block is refused: the caller asked for a licensed load.

use envelope_core::{Envelope, EnvelopeParts, Error, Result, Section};
use envelope_crypto::{CryptoRngCore, DecryptionKey, Decryptor, EncryptOptions, EncryptTo};
use envelope_sign::{Policy, SigningKey, SigningPublicKey, TrustedKeys};

use crate::{LicenseBlock, read_license};

/// What a seller applies to a file.
#[derive(Debug)]
pub struct CommercialPackage<'a> {
    /// The buyer's license, appended as the license block.
    pub license: LicenseBlock,
    /// The seller's signing key.
    pub signer: &'a SigningKey,
    /// Whom to encrypt for (`None`: the payload stays in the clear, signed and licensed).
    pub encrypt_to: Option<EncryptTo<'a>>,
    /// Encryption settings (segment size).
    pub options: EncryptOptions,
}

/// Packages `parts` (a finished, unencrypted, unsigned file) for sale: encrypts the payload when
/// asked, appends the license, signs. Returns the file's bytes.
///
/// # Errors
/// `Usage` if `parts` is already encrypted or signed, or for arguments [`envelope_crypto::encrypt`]
/// refuses; `InvalidFormat` if the license block is invalid.
pub fn package(
    parts: &EnvelopeParts<'_>,
    package: &CommercialPackage<'_>,
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<u8>> {
    if parts.signature.is_some() {
        return Err(Error::InvalidArgument(
            "package an unsigned file: the package is signed last",
        ));
    }
    let license = package.license.encode()?;
    let mut sealed: EnvelopeParts<'_> = match package.encrypt_to {
        Some(to) => envelope_crypto::encrypt(parts, to, package.options, rng)?,
        None => parts.clone(),
    };
    sealed.license = Some(license.into());
    envelope_sign::sign(&sealed.to_bytes()?, package.signer)
}

/// A commercial file whose signature and license have been checked, ready to be decrypted.
pub struct Unlocked<'e, B> {
    envelope: &'e Envelope<B>,
    license: LicenseBlock,
    signer: SigningPublicKey,
    decryptor: Option<Decryptor<'e, B>>,
}

impl<B> std::fmt::Debug for Unlocked<'_, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unlocked")
            .field("license", &self.license)
            .field("encrypted", &self.decryptor.is_some())
            .finish_non_exhaustive()
    }
}

/// Checks a commercial file in the loading order: a signature by one of `trusted` (else
/// `SignatureInvalid`), a license block (else `InvalidFormat`) that allows `now_unix` (else
/// `LicenseExpired`), and, for an encrypted file, the key (else `DecryptionFailed`). No payload
/// byte is read before all of these pass, except that deriving the key authenticates nothing yet:
/// each payload access is authenticated as it is decrypted.
///
/// # Errors
/// As above, in that order.
pub fn open<'e, B: AsRef<[u8]>>(
    envelope: &'e Envelope<B>,
    trusted: &TrustedKeys,
    key: Option<DecryptionKey<'_>>,
    now_unix: u64,
) -> Result<Unlocked<'e, B>> {
    let signer = Policy::RequireSignature { trusted }
        .check(envelope)?
        .ok_or(Error::InvalidArgument(
            "a required signature was not checked",
        ))?;
    let license = read_license(envelope)?.ok_or(Error::InvalidFormat(
        envelope_core::FormatError::MalformedBlock {
            section: Section::License,
            reason: "a commercial file must carry a license block",
        },
    ))?;
    license.check(now_unix)?;
    let decryptor = match (envelope.section(Section::Encryption), key) {
        (None, _) => None,
        (Some(_), Some(key)) => Some(Decryptor::new(envelope, key)?),
        (Some(_), None) => {
            return Err(Error::DecryptionFailed(
                envelope_core::DecryptionFailure::KeyRequired,
            ));
        }
    };
    Ok(Unlocked {
        envelope,
        license,
        signer,
        decryptor,
    })
}

impl<B: AsRef<[u8]>> Unlocked<'_, B> {
    /// The checked license.
    #[must_use]
    pub fn license(&self) -> &LicenseBlock {
        &self.license
    }

    /// The trusted key that signed the file.
    #[must_use]
    pub fn signer(&self) -> SigningPublicKey {
        self.signer
    }

    /// The envelope.
    #[must_use]
    pub fn envelope(&self) -> &Envelope<B> {
        self.envelope
    }

    /// The whole payload, decrypted and decompressed.
    ///
    /// # Errors
    /// `DecryptionFailed` on authentication failure; `InvalidFormat` for a corrupt compressed
    /// stream.
    pub fn payload(&self) -> Result<Vec<u8>> {
        match &self.decryptor {
            Some(decryptor) => decryptor.payload(),
            None => Ok(self.envelope.decode_payload()?.into_owned()),
        }
    }

    /// Chunk `chunk` of a STREAMING file, decrypted and decompressed.
    ///
    /// # Errors
    /// As [`Unlocked::payload`], plus `InvalidFormat` for a missing chunk.
    pub fn chunk(&self, chunk: usize) -> Result<Vec<u8>> {
        match &self.decryptor {
            Some(decryptor) => decryptor.chunk(chunk),
            None => Ok(self.envelope.decode_chunk(chunk)?.into_owned()),
        }
    }
}
