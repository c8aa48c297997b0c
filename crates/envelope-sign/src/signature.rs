//! The signature block and the signed message (docs/signing.md §2-3).
//!
//! Body (97 bytes, fixed): `algorithm || signer public key (32) || signature (64)`. The signature
//! is pure Ed25519 (RFC 8032) over the message `label (12) || digest(signed regions)`, where the
//! label is `"ald-v1-sign\0"` or `"apr-v1-sign\0"` and the signed regions are every byte of the
//! file except the signature body and the CRC32 trailer (`Envelope::signed_regions`). Writers use
//! algorithm `0x02` (SHA-256, 44-byte message: SHA-NI and ARMv8 hash it in hardware); verifiers
//! also accept `0x01` (SHA-512, 76-byte message), which earlier builds wrote. Because the body has
//! a fixed size, a file can be signed by writing a placeholder of that size, hashing, and filling
//! it in.

use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use envelope_core::{
    Envelope, Error, Flags, Format, RangedEnvelope, Result, Section, SignatureFailure,
};
use sha2::{Digest, Sha256, Sha512};

use crate::keys::{PUBLIC_KEY_LEN, SigningPublicKey, TrustedKeys};

/// Algorithm byte: Ed25519 over `label || SHA-512(signed regions)`. Verified, no longer written.
pub const ALGORITHM_ED25519_SHA512: u8 = 0x01;
/// Algorithm byte: Ed25519 over `label || SHA-256(signed regions)`, what [`sign`] writes.
pub const ALGORITHM_ED25519_SHA256: u8 = 0x02;
/// Bytes of an Ed25519 signature.
pub const SIGNATURE_LEN: usize = 64;
/// Bytes of the signature block body.
pub const SIGNATURE_BLOCK_LEN: usize = 1 + PUBLIC_KEY_LEN + SIGNATURE_LEN;
/// Bytes of the message that is signed (algorithm `0x02`: label and SHA-256).
pub const MESSAGE_LEN: usize = 12 + 32;
/// Bytes of the message of algorithm `0x01` (label and SHA-512).
pub const MESSAGE_LEN_SHA512: usize = 12 + 64;

/// The digest a signature block names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Algorithm {
    /// `0x02`: SHA-256, written by this version.
    Ed25519Sha256,
    /// `0x01`: SHA-512, written by earlier versions; still verified.
    Ed25519Sha512,
}

impl Algorithm {
    /// The algorithm byte.
    #[must_use]
    pub const fn byte(self) -> u8 {
        match self {
            Self::Ed25519Sha256 => ALGORITHM_ED25519_SHA256,
            Self::Ed25519Sha512 => ALGORITHM_ED25519_SHA512,
        }
    }

    /// The algorithm of a byte, if known.
    #[must_use]
    pub const fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            ALGORITHM_ED25519_SHA256 => Some(Self::Ed25519Sha256),
            ALGORITHM_ED25519_SHA512 => Some(Self::Ed25519Sha512),
            _ => None,
        }
    }
}

/// The domain-separation label of the signed message (12 bytes, NUL-terminated).
#[must_use]
pub const fn sign_label(format: Format) -> &'static [u8; 12] {
    match format {
        Format::Dataset => b"ald-v1-sign\0",
        Format::Model => b"apr-v1-sign\0",
    }
}

/// The signed message built from the signed regions fed in file order, piece by piece, so that a
/// file of any size can be hashed as it streams past.
#[derive(Debug, Clone)]
pub struct MessageHasher {
    label: &'static [u8; 12],
    digest: DigestState,
}

#[derive(Debug, Clone)]
enum DigestState {
    Sha256(Sha256),
    Sha512(Sha512),
}

impl MessageHasher {
    /// A hasher for a file of `format` signed with `algorithm`.
    #[must_use]
    pub fn new(format: Format, algorithm: Algorithm) -> Self {
        let digest = match algorithm {
            Algorithm::Ed25519Sha256 => DigestState::Sha256(Sha256::new()),
            Algorithm::Ed25519Sha512 => DigestState::Sha512(Sha512::new()),
        };
        Self {
            label: sign_label(format),
            digest,
        }
    }

    /// Feeds the next signed bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        match &mut self.digest {
            DigestState::Sha256(hasher) => hasher.update(bytes),
            DigestState::Sha512(hasher) => hasher.update(bytes),
        }
    }

    /// The message: the label, then the digest of every byte fed.
    #[must_use]
    pub fn finish(self) -> SignedMessage {
        let mut bytes = [0u8; MESSAGE_LEN_SHA512];
        bytes[..12].copy_from_slice(self.label);
        let len = match self.digest {
            DigestState::Sha256(hasher) => {
                bytes[12..MESSAGE_LEN].copy_from_slice(&hasher.finalize());
                MESSAGE_LEN
            }
            DigestState::Sha512(hasher) => {
                bytes[12..].copy_from_slice(&hasher.finalize());
                MESSAGE_LEN_SHA512
            }
        };
        SignedMessage { bytes, len }
    }
}

/// A message to sign or verify ([`MESSAGE_LEN`] or [`MESSAGE_LEN_SHA512`] bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignedMessage {
    bytes: [u8; MESSAGE_LEN_SHA512],
    len: usize,
}

impl SignedMessage {
    /// The message bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The message an `algorithm` signature of `envelope` covers.
#[must_use]
pub fn message_of<B: AsRef<[u8]>>(envelope: &Envelope<B>, algorithm: Algorithm) -> SignedMessage {
    let mut hasher = MessageHasher::new(envelope.header().format(), algorithm);
    for region in envelope.signed_regions() {
        hasher.update(region);
    }
    hasher.finish()
}

/// The message a signature of `envelope` written by [`sign`] covers: label and SHA-256 of the
/// signed regions.
#[must_use]
pub fn signed_message<B: AsRef<[u8]>>(envelope: &Envelope<B>) -> [u8; MESSAGE_LEN] {
    let mut message = [0u8; MESSAGE_LEN];
    message.copy_from_slice(message_of(envelope, Algorithm::Ed25519Sha256).as_bytes());
    message
}

/// A parsed signature block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignatureBlock {
    /// Which digest the message holds.
    pub algorithm: Algorithm,
    /// The key the file claims to be signed by. Only a selector: it is trusted only if the
    /// caller's trusted keys contain it.
    pub signer: SigningPublicKey,
    /// The Ed25519 signature.
    pub signature: [u8; SIGNATURE_LEN],
}

impl SignatureBlock {
    /// Parses a block body.
    ///
    /// # Errors
    /// `SignatureInvalid` (`Malformed`) for a length other than 97 bytes or an algorithm other
    /// than `0x01` and `0x02`.
    pub fn parse(body: &[u8]) -> Result<Self> {
        let malformed = Error::SignatureInvalid(SignatureFailure::Malformed);
        if body.len() != SIGNATURE_BLOCK_LEN {
            return Err(malformed);
        }
        let algorithm = Algorithm::from_byte(body[0]).ok_or(malformed)?;
        let mut signer = [0u8; PUBLIC_KEY_LEN];
        signer.copy_from_slice(&body[1..=PUBLIC_KEY_LEN]);
        let mut signature = [0u8; SIGNATURE_LEN];
        signature.copy_from_slice(&body[1 + PUBLIC_KEY_LEN..]);
        Ok(Self {
            algorithm,
            signer: SigningPublicKey::from_bytes(signer),
            signature,
        })
    }

    /// The algorithm-`0x02` block of `key`'s signature of `message` (made by
    /// [`signed_message`] or a [`MessageHasher`] for [`Algorithm::Ed25519Sha256`]).
    #[must_use]
    pub fn new(key: &SigningKey, message: &[u8]) -> Self {
        Self {
            algorithm: Algorithm::Ed25519Sha256,
            signer: SigningPublicKey::of(key),
            signature: ed25519_dalek::Signer::sign(key, message).to_bytes(),
        }
    }

    /// The trusted key the block names (docs/signing.md §3.1 step 3).
    ///
    /// # Errors
    /// `SignatureInvalid` (`UntrustedKey`) if `trusted` does not hold the embedded signer.
    pub fn trusted_key<'t>(&self, trusted: &'t TrustedKeys) -> Result<&'t VerifyingKey> {
        trusted
            .find(&self.signer)
            .ok_or(Error::SignatureInvalid(SignatureFailure::UntrustedKey))
    }

    /// Checks the signature of `message` (built for [`SignatureBlock::algorithm`]) with `key`,
    /// strictly (step 4), and returns the signer.
    ///
    /// # Errors
    /// `SignatureInvalid` (`Mismatch`).
    pub fn check(&self, key: &VerifyingKey, message: &SignedMessage) -> Result<SigningPublicKey> {
        key.verify_strict(message.as_bytes(), &Signature::from_bytes(&self.signature))
            .map_err(|_| Error::SignatureInvalid(SignatureFailure::Mismatch))?;
        Ok(self.signer)
    }

    /// The block body.
    #[must_use]
    pub fn encode(&self) -> [u8; SIGNATURE_BLOCK_LEN] {
        let mut out = [0u8; SIGNATURE_BLOCK_LEN];
        out[0] = self.algorithm.byte();
        out[1..=PUBLIC_KEY_LEN].copy_from_slice(self.signer.as_bytes());
        out[1 + PUBLIC_KEY_LEN..].copy_from_slice(&self.signature);
        out
    }
}

/// Signs the envelope file `bytes` (replacing any signature it has) and returns the signed file.
///
/// Every other byte is kept: an encrypted file stays decryptable (its associated data leaves the
/// SIGNED flag out), a license block stays and is covered.
///
/// # Errors
/// The envelope's own verification errors for `bytes`; `Usage` if the file cannot be re-encoded.
///
/// # Example
/// ```
/// use envelope_core::{Envelope, EnvelopeParts, Format};
/// use envelope_sign::{Policy, SigningKey, TrustedKeys, sign};
///
/// let key = SigningKey::from_bytes(&[7; 32]);
/// let file = EnvelopeParts::new(Format::Model, 1).to_bytes()?;
/// let signed = sign(&file, &key)?;
///
/// let trusted = TrustedKeys::from_keys([envelope_sign::SigningPublicKey::of(&key)]);
/// let envelope = Envelope::parse(&signed[..], Format::Model)?;
/// Policy::RequireSignature { trusted: &trusted }.check(&envelope)?;
/// # Ok::<(), envelope_core::Error>(())
/// ```
pub fn sign(bytes: &[u8], key: &SigningKey) -> Result<Vec<u8>> {
    let envelope = Envelope::parse_any(bytes)?;
    let mut parts = envelope.to_parts();
    parts.signature = Some([0u8; SIGNATURE_BLOCK_LEN].as_slice().into());
    let mut out = parts.to_bytes()?;
    let (message, offset) = {
        let placeholder = Envelope::parse_any(&out[..])?;
        let span = placeholder
            .layout()
            .span(Section::Signature)
            .ok_or(Error::InvalidArgument(
                "the re-encoded file has no signature block",
            ))?;
        (
            signed_message(&placeholder),
            Error::fit_in_memory("the signature block's offset", span.offset)?,
        )
    };
    let block = SignatureBlock::new(key, &message);
    out[offset..offset + SIGNATURE_BLOCK_LEN].copy_from_slice(&block.encode());
    envelope_core::codec::rewrite_trailer(&mut out);
    Ok(out)
}

/// Verifies the signature of `envelope` against the caller's `trusted` keys and returns the key
/// that made it.
///
/// # Errors
/// `SignatureInvalid`: `Missing` if the file is not signed; `Malformed` for a bad block;
/// `UntrustedKey` if the embedded signer is not among `trusted` (the embedded key is never
/// trusted by itself); `Mismatch` if `verify_strict` refuses the signature (any covered byte
/// changed, or a non-canonical or small-order signature or key).
pub fn verify<B: AsRef<[u8]>>(
    envelope: &Envelope<B>,
    trusted: &TrustedKeys,
) -> Result<SigningPublicKey> {
    if !envelope.header().flags().contains(Flags::SIGNED) {
        return Err(Error::SignatureInvalid(SignatureFailure::Missing));
    }
    let body = envelope
        .section(Section::Signature)
        .ok_or(Error::SignatureInvalid(SignatureFailure::Missing))?;
    let block = SignatureBlock::parse(body)?;
    let key = block.trusted_key(trusted)?;
    block.check(key, &message_of(envelope, block.algorithm))
}

/// The signature check of a file opened from its head and tail ([`RangedEnvelope`]): the block
/// is parsed and its key looked up among the trusted ones at once (so an unsigned file or an
/// unknown key is refused before any payload byte is fetched), then the payload is fed as it
/// streams past, in order, and [`RangedVerifier::finish`] adds the bytes after it and checks the
/// signature: the same message [`verify`] builds over the whole file, in bounded memory.
#[derive(Debug)]
pub struct RangedVerifier<'t> {
    block: SignatureBlock,
    key: &'t VerifyingKey,
    hasher: MessageHasher,
    /// Payload bytes still to be fed.
    payload_left: u64,
}

impl<'t> RangedVerifier<'t> {
    /// Starts the check of `envelope`'s signature against `trusted`.
    ///
    /// # Errors
    /// `SignatureInvalid`: `Missing`, `Malformed` or `UntrustedKey`, as [`verify`].
    pub fn new<B: AsRef<[u8]>>(
        envelope: &RangedEnvelope<B>,
        trusted: &'t TrustedKeys,
    ) -> Result<Self> {
        if !envelope.header().flags().contains(Flags::SIGNED) {
            return Err(Error::SignatureInvalid(SignatureFailure::Missing));
        }
        let body = envelope
            .section(Section::Signature)
            .ok_or(Error::SignatureInvalid(SignatureFailure::Missing))?;
        let block = SignatureBlock::parse(body)?;
        let key = block.trusted_key(trusted)?;
        let mut hasher = MessageHasher::new(envelope.header().format(), block.algorithm);
        // Every byte before the payload is signed (the signature block follows the payload).
        hasher.update(envelope.bytes_before_payload());
        Ok(Self {
            block,
            key,
            hasher,
            payload_left: envelope.payload_span().len,
        })
    }

    /// The payload bytes still to be fed.
    #[must_use]
    pub fn payload_left(&self) -> u64 {
        self.payload_left
    }

    /// Feeds the next payload bytes, in file order.
    ///
    /// # Errors
    /// `InvalidArgument` (`Usage`) if more bytes are fed than the payload holds.
    pub fn update(&mut self, payload: &[u8]) -> Result<()> {
        self.payload_left =
            self.payload_left
                .checked_sub(payload.len() as u64)
                .ok_or(Error::InvalidArgument(
                    "more bytes were fed than the payload holds",
                ))?;
        self.hasher.update(payload);
        Ok(())
    }

    /// Adds the signed bytes after the payload and checks the signature: the verified signer.
    ///
    /// # Errors
    /// `InvalidArgument` (`Usage`) if fewer payload bytes were fed than it holds;
    /// `SignatureInvalid` (`Mismatch`) as [`verify`].
    pub fn finish<B: AsRef<[u8]>>(
        mut self,
        envelope: &RangedEnvelope<B>,
    ) -> Result<SigningPublicKey> {
        if self.payload_left != 0 {
            return Err(Error::InvalidArgument(
                "the payload was not fed whole to the signature check",
            ));
        }
        let after = envelope.bytes_after_payload();
        let base = envelope.payload_span().end();
        for range in envelope.layout().signed_ranges() {
            let start = range.start.max(base) - base;
            let end = range.end.max(base) - base;
            let piece = usize::try_from(start)
                .ok()
                .zip(usize::try_from(end).ok())
                .and_then(|(start, end)| after.get(start..end))
                .ok_or(Error::InvalidArgument(
                    "the bytes after the payload are not those of this file",
                ))?;
            self.hasher.update(piece);
        }
        self.block.check(self.key, &self.hasher.finish())
    }
}

/// What a loader requires of a file's signature, checked before any payload byte is parsed or
/// decrypted.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Policy<'a> {
    /// No signature is required and none is checked. A signature block present is ignored: it
    /// proves nothing without a trusted key.
    AcceptUnsigned,
    /// A valid signature by one of `trusted` is required. Unsigned files (including a file whose
    /// SIGNED flag was cleared) are refused with `SignatureInvalid` (`Missing`).
    RequireSignature {
        /// The caller's trusted publisher keys.
        trusted: &'a TrustedKeys,
    },
}

impl Policy<'_> {
    /// Applies the policy to `envelope`: the verified signer, or `None` under
    /// [`Policy::AcceptUnsigned`].
    ///
    /// # Errors
    /// As [`verify`] under [`Policy::RequireSignature`].
    pub fn check<B: AsRef<[u8]>>(
        &self,
        envelope: &Envelope<B>,
    ) -> Result<Option<SigningPublicKey>> {
        match self {
            Self::AcceptUnsigned => Ok(None),
            Self::RequireSignature { trusted } => verify(envelope, trusted).map(Some),
        }
    }

    /// Applies the policy to a file opened from its head and tail: under
    /// [`Policy::RequireSignature`], the check to feed the payload to; `None` under
    /// [`Policy::AcceptUnsigned`].
    ///
    /// # Errors
    /// As [`RangedVerifier::new`].
    pub fn check_ranged<'t, B: AsRef<[u8]>>(
        &self,
        envelope: &RangedEnvelope<B>,
    ) -> Result<Option<RangedVerifier<'t>>>
    where
        Self: 't,
    {
        match *self {
            Self::AcceptUnsigned => Ok(None),
            Self::RequireSignature { trusted } => RangedVerifier::new(envelope, trusted).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn block_encode_then_parse_is_identity(signer: [u8; 32], a: [u8; 32], b: [u8; 32]) {
            let mut signature = [0u8; 64];
            signature[..32].copy_from_slice(&a);
            signature[32..].copy_from_slice(&b);
            let algorithm = if a[0] & 1 == 0 { Algorithm::Ed25519Sha256 } else { Algorithm::Ed25519Sha512 };
            let block = SignatureBlock { algorithm, signer: SigningPublicKey::from_bytes(signer), signature };
            prop_assert_eq!(SignatureBlock::parse(&block.encode()).unwrap(), block);
        }

        #[test]
        fn untrusted_bytes_never_panic_the_parsers(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = SignatureBlock::parse(&bytes);
            let _ = crate::PublicKeyFile::parse(&String::from_utf8_lossy(&bytes));
            let _ = crate::Identity::open(&bytes, &envelope_crypto::Password::new("x"));
        }
    }

    #[test]
    fn labels_are_twelve_bytes_with_a_nul() {
        assert_eq!(sign_label(Format::Dataset), b"ald-v1-sign\0");
        assert_eq!(sign_label(Format::Model), b"apr-v1-sign\0");
    }
}
