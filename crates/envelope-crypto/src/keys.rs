//! Key material: passwords, X25519 recipient keys, Argon2id parameters and the derivations that
//! turn them into AES-256 keys (docs/crypto.md §3).
//!
//! Every secret lives in a type that is wiped on drop (`zeroize`) and prints nothing in `Debug`.

use core::fmt;

use aes_gcm::{Aes256Gcm, KeyInit};
use base64ct::{Base64, Encoding};
use envelope_core::{DecryptionFailure, Error, Format, Result};
use hkdf::Hkdf;
use rand_core::CryptoRngCore;
use sha2::{Digest, Sha256};
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

/// Bytes of an AES-256 key, an X25519 key and an Ed25519 seed.
pub const KEY_LEN: usize = 32;
/// Bytes of an Argon2id salt (000 §5.1.1).
pub const SALT_LEN: usize = 16;
/// Bytes of a recipient public key hash (000 §5.1.3: `recipient_pub_hash`).
pub const RECIPIENT_HASH_LEN: usize = 8;

/// Argon2id memory cost a writer uses by default, in KiB (001 §5.2, OWASP: 19 MiB).
pub const ARGON2_DEFAULT_M_COST_KIB: u32 = 19_456;
/// Argon2id passes a writer uses by default (001 §5.2).
pub const ARGON2_DEFAULT_T_COST: u32 = 2;
/// Argon2id lanes a writer uses by default (001 §5.2).
pub const ARGON2_DEFAULT_P_COST: u32 = 1;
/// Smallest memory cost a reader accepts, in KiB (1 MiB): below it a password file is not worth
/// the name, and Argon2 itself needs at least 8 KiB per lane.
pub const ARGON2_MIN_M_COST_KIB: u32 = 1024;
/// Largest memory cost a reader accepts, in KiB (1 GiB): a hostile file cannot demand more.
pub const ARGON2_MAX_M_COST_KIB: u32 = 1 << 20;
/// Largest memory cost accepted in a private key file, in KiB (256 MiB): a key file is opened on
/// every machine that signs or decrypts, often small ones, and `keygen` writes 19 MiB by default.
pub const KEY_FILE_ARGON2_MAX_M_COST_KIB: u32 = 1 << 18;
/// Largest number of passes a reader accepts (bounds the time a hostile file can demand).
pub const ARGON2_MAX_T_COST: u32 = 10;
/// Largest number of lanes a reader accepts.
pub const ARGON2_MAX_P_COST: u32 = 16;

/// The HKDF `info` of the payload key in recipient mode, and the prefix of every other label:
/// `ald-v1-encrypt` for datasets (000 §5.1.3), `apr-v1-encrypt` for models (001 §5.3).
#[must_use]
pub const fn encrypt_label(format: Format) -> &'static [u8] {
    match format {
        Format::Dataset => b"ald-v1-encrypt",
        Format::Model => b"apr-v1-encrypt",
    }
}

/// The HKDF `info` of a per-recipient key-wrapping key in multi-recipient mode.
#[must_use]
pub const fn wrap_label(format: Format) -> &'static [u8] {
    match format {
        Format::Dataset => b"ald-v1-encrypt-wrap",
        Format::Model => b"apr-v1-encrypt-wrap",
    }
}

/// A password (any bytes; the CLI passes UTF-8). Wiped on drop, never printed.
#[derive(Clone)]
pub struct Password(Zeroizing<Vec<u8>>);

impl Password {
    /// Wraps `bytes`.
    #[must_use]
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(Zeroizing::new(bytes.into()))
    }

    /// The password's bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(..)")
    }
}

/// A 256-bit symmetric key. Wiped on drop, never printed.
pub(crate) struct SymmetricKey(Zeroizing<[u8; KEY_LEN]>);

impl SymmetricKey {
    pub(crate) fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        Self(Zeroizing::new(bytes))
    }

    pub(crate) fn random(rng: &mut impl CryptoRngCore) -> Self {
        let mut key = Zeroizing::new([0u8; KEY_LEN]);
        rng.fill_bytes(key.as_mut());
        Self(key)
    }

    pub(crate) fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    pub(crate) fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(self.0.as_ref().into())
    }
}

/// Argon2id parameters as stored in a password-mode encryption block and in a private key file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Argon2Params {
    /// Memory cost in KiB (`m`).
    pub m_cost_kib: u32,
    /// Number of passes (`t`).
    pub t_cost: u32,
    /// Degree of parallelism (`p`).
    pub p_cost: u32,
}

impl Default for Argon2Params {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl Argon2Params {
    /// What writers use: m = 19456 KiB, t = 2, p = 1 (001 §5.2).
    pub const DEFAULT: Self = Self {
        m_cost_kib: ARGON2_DEFAULT_M_COST_KIB,
        t_cost: ARGON2_DEFAULT_T_COST,
        p_cost: ARGON2_DEFAULT_P_COST,
    };

    /// Whether the parameters are within the tighter limits of private key files
    /// ([`KEY_FILE_ARGON2_MAX_M_COST_KIB`], docs/signing.md §4).
    #[must_use]
    pub const fn is_within_key_file_limits(&self) -> bool {
        self.is_within_limits() && self.m_cost_kib <= KEY_FILE_ARGON2_MAX_M_COST_KIB
    }

    /// Whether every parameter is within the limits a reader enforces (docs/crypto.md §3.1).
    #[must_use]
    pub const fn is_within_limits(&self) -> bool {
        self.m_cost_kib >= ARGON2_MIN_M_COST_KIB
            && self.m_cost_kib <= ARGON2_MAX_M_COST_KIB
            && self.t_cost >= 1
            && self.t_cost <= ARGON2_MAX_T_COST
            && self.p_cost >= 1
            && self.p_cost <= ARGON2_MAX_P_COST
            && self.m_cost_kib >= 8 * self.p_cost
    }

    /// Argon2id (version 0x13) of `password` and `salt`, 32 bytes of output.
    ///
    /// # Errors
    /// `DecryptionFailed` (`Malformed`) if the parameters are outside the reader's limits.
    pub(crate) fn derive(&self, password: &[u8], salt: &[u8; SALT_LEN]) -> Result<SymmetricKey> {
        if !self.is_within_limits() {
            return Err(Error::DecryptionFailed(DecryptionFailure::Malformed));
        }
        let params = argon2::Params::new(self.m_cost_kib, self.t_cost, self.p_cost, Some(KEY_LEN))
            .map_err(|_| Error::DecryptionFailed(DecryptionFailure::Malformed))?;
        let blocks = params.block_count();
        let argon =
            argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        // The memory cost comes from the file: allocate it fallibly, so that a cost the machine
        // cannot give (a memory limit, a small device) is a typed error, never an abort.
        let mut memory: Vec<argon2::Block> = Vec::new();
        memory.try_reserve_exact(blocks).map_err(|_| {
            Error::Io(std::io::Error::new(
                std::io::ErrorKind::OutOfMemory,
                format!(
                    "could not allocate the {} MiB of memory the file's Argon2id parameters ask for",
                    self.m_cost_kib / 1024
                ),
            ))
        })?;
        memory.resize(blocks, argon2::Block::default());
        let mut key = Zeroizing::new([0u8; KEY_LEN]);
        argon
            .hash_password_into_with_memory(password, salt, key.as_mut(), &mut memory)
            .map_err(|_| Error::DecryptionFailed(DecryptionFailure::Malformed))?;
        Ok(SymmetricKey(key))
    }

    /// Argon2id of `password` and `salt` as raw bytes, for other key files built on the same
    /// construction (the private key file of `envelope-sign`).
    ///
    /// # Errors
    /// `DecryptionFailed` (`Malformed`) if the parameters are outside the reader's limits.
    pub fn derive_key(
        &self,
        password: &Password,
        salt: &[u8; SALT_LEN],
    ) -> Result<Zeroizing<[u8; KEY_LEN]>> {
        let key = self.derive(password.as_bytes(), salt)?;
        Ok(Zeroizing::new(*key.as_bytes()))
    }
}

/// An X25519 public key of a recipient (the key files encrypt to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecipientPublicKey([u8; KEY_LEN]);

impl RecipientPublicKey {
    /// The key with these 32 bytes (RFC 7748 u-coordinate, little-endian).
    #[must_use]
    pub const fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        Self(bytes)
    }

    /// The 32 bytes.
    #[must_use]
    pub const fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// `recipient_pub_hash`: the first 8 bytes of SHA-256 of the 32 key bytes.
    #[must_use]
    pub fn hash(&self) -> [u8; RECIPIENT_HASH_LEN] {
        let digest = Sha256::digest(self.0);
        let mut out = [0u8; RECIPIENT_HASH_LEN];
        out.copy_from_slice(&digest[..RECIPIENT_HASH_LEN]);
        out
    }

    /// Standard base64 with padding (RFC 4648 §4), as published in metadata.
    #[must_use]
    pub fn to_base64(&self) -> String {
        Base64::encode_string(&self.0)
    }

    /// Parses [`RecipientPublicKey::to_base64`]'s form.
    ///
    /// # Errors
    /// `Usage` if the text is not base64 of exactly 32 bytes.
    pub fn from_base64(text: &str) -> Result<Self> {
        let mut out = [0u8; KEY_LEN];
        // A public key is not a secret: the decoder's reason is kept for the caller.
        let decoded = Base64::decode(text.trim(), &mut out).map_err(|source| Error::Decoding {
            what: "an X25519 public key (base64 of 32 bytes)",
            source: source.into(),
        })?;
        if decoded.len() != KEY_LEN {
            return Err(Error::ArgumentMismatch {
                what: "bytes of a base64 X25519 public key",
                expected: KEY_LEN as u64,
                found: decoded.len() as u64,
            });
        }
        Ok(Self(out))
    }
}

/// An X25519 secret key of a recipient. Wiped on drop, never printed.
#[derive(Clone)]
pub struct RecipientSecretKey(StaticSecret);

impl RecipientSecretKey {
    /// The key with these 32 bytes (clamped by X25519 when used, RFC 7748 §5).
    #[must_use]
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        Self(StaticSecret::from(bytes))
    }

    /// A fresh key: 32 bytes from `rng`.
    #[must_use]
    pub fn generate(rng: &mut impl CryptoRngCore) -> Self {
        let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
        rng.fill_bytes(bytes.as_mut());
        Self::from_bytes(*bytes)
    }

    /// The 32 secret bytes (for key files).
    #[must_use]
    pub fn to_bytes(&self) -> Zeroizing<[u8; KEY_LEN]> {
        Zeroizing::new(self.0.to_bytes())
    }

    /// The matching public key.
    #[must_use]
    pub fn public_key(&self) -> RecipientPublicKey {
        RecipientPublicKey(PublicKey::from(&self.0).to_bytes())
    }

    pub(crate) fn secret(&self) -> &StaticSecret {
        &self.0
    }
}

impl fmt::Debug for RecipientSecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RecipientSecretKey(..)")
    }
}

/// X25519 of `secret` and `peer`, refusing an all-zero (non-contributory) result, which a
/// low-order `peer` forces whatever the secret (RFC 7748 §6.1).
pub(crate) fn agree(
    secret: &StaticSecret,
    peer: &[u8; KEY_LEN],
) -> Option<Zeroizing<[u8; KEY_LEN]>> {
    let shared = secret.diffie_hellman(&PublicKey::from(*peer));
    shared
        .was_contributory()
        .then(|| Zeroizing::new(shared.to_bytes()))
}

/// `HKDF-SHA256(ikm = shared, salt = ephemeral_pub || recipient_pub, info = info)`, 32 bytes.
pub(crate) fn hkdf_key(
    shared: &[u8; KEY_LEN],
    ephemeral_pub: &[u8; KEY_LEN],
    recipient_pub: &[u8; KEY_LEN],
    info: &[u8],
) -> SymmetricKey {
    let mut salt = [0u8; 2 * KEY_LEN];
    salt[..KEY_LEN].copy_from_slice(ephemeral_pub);
    salt[KEY_LEN..].copy_from_slice(recipient_pub);
    let hkdf = Hkdf::<Sha256>::new(Some(&salt), shared);
    let mut key = Zeroizing::new([0u8; KEY_LEN]);
    // 32 bytes is far below HKDF-SHA256's 255 * 32 limit, so expand cannot fail.
    let _ = hkdf.expand(info, key.as_mut());
    SymmetricKey(key)
}

/// The sender's side of one recipient: a fresh ephemeral key from `rng`, its public half, and the
/// key derived for `recipient` with `info`.
///
/// # Errors
/// `Usage` if `recipient` is a low-order point (every shared secret would be zero).
pub(crate) fn to_recipient(
    recipient: &RecipientPublicKey,
    info: &[u8],
    rng: &mut impl CryptoRngCore,
) -> Result<([u8; KEY_LEN], SymmetricKey)> {
    let ephemeral = RecipientSecretKey::generate(rng);
    let ephemeral_pub = ephemeral.public_key().0;
    let shared = agree(ephemeral.secret(), &recipient.0).ok_or(Error::InvalidArgument(
        "the recipient public key is a low-order point (X25519 would give an all-zero secret)",
    ))?;
    Ok((
        ephemeral_pub,
        hkdf_key(&shared, &ephemeral_pub, &recipient.0, info),
    ))
}

/// The recipient's side: the key derived from `secret` and the sender's `ephemeral_pub`.
///
/// # Errors
/// `DecryptionFailed` (`Failed`) for a non-contributory exchange.
pub(crate) fn from_sender(
    secret: &RecipientSecretKey,
    ephemeral_pub: &[u8; KEY_LEN],
    info: &[u8],
) -> Result<SymmetricKey> {
    let shared = agree(secret.secret(), ephemeral_pub)
        .ok_or(Error::DecryptionFailed(DecryptionFailure::Failed))?;
    Ok(hkdf_key(
        &shared,
        ephemeral_pub,
        secret.public_key().as_bytes(),
        info,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_shows_no_secret() {
        let password = Password::new("hunter2");
        assert_eq!(format!("{password:?}"), "Password(..)");
        let key = RecipientSecretKey::from_bytes([7; 32]);
        assert_eq!(format!("{key:?}"), "RecipientSecretKey(..)");
    }

    #[test]
    fn low_order_points_give_no_shared_secret() {
        let secret = StaticSecret::from([9u8; 32]);
        assert!(agree(&secret, &[0u8; 32]).is_none());
        let mut one = [0u8; 32];
        one[0] = 1;
        assert!(agree(&secret, &one).is_none());
    }

    #[test]
    fn default_parameters_are_within_the_reader_limits() {
        assert!(Argon2Params::DEFAULT.is_within_limits());
        let hostile = Argon2Params {
            m_cost_kib: 4 << 20,
            ..Argon2Params::DEFAULT
        };
        assert!(!hostile.is_within_limits());
    }

    #[test]
    fn public_key_base64_round_trips() {
        let public = RecipientSecretKey::from_bytes([3; 32]).public_key();
        assert_eq!(
            RecipientPublicKey::from_base64(&public.to_base64()).unwrap(),
            public
        );
        assert!(RecipientPublicKey::from_base64("AAAA").is_err());
    }
}
