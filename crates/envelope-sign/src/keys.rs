//! Keys: an [`Identity`] (one 32-byte seed giving an Ed25519 signing key and an X25519 encryption
//! key), its password-protected private key file, the public key file, and the caller's
//! [`TrustedKeys`] (docs/signing.md §4-5).

use core::fmt;

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes256Gcm, KeyInit, Nonce, Tag};
use base64ct::{Base64, Encoding};
use ed25519_dalek::{SigningKey, VerifyingKey};
use envelope_core::codec::{Reader, Writer};
use envelope_core::{DecryptionFailure, Error, Result};
use envelope_crypto::{
    Argon2Params, CryptoRngCore, Password, RecipientPublicKey, RecipientSecretKey, SALT_LEN,
    Zeroizing,
};
use hkdf::Hkdf;
use sha2::Sha256;

/// Bytes of an Ed25519 public key.
pub const PUBLIC_KEY_LEN: usize = 32;
/// Bytes of an identity seed.
pub const SEED_LEN: usize = 32;
/// Magic of the private key file.
pub const KEY_FILE_MAGIC: [u8; 8] = *b"ENVLPKEY";
/// Version of the private key file layout.
pub const KEY_FILE_VERSION: u8 = 0x01;
/// KDF byte of the private key file: Argon2id v0x13.
pub const KEY_FILE_KDF_ARGON2ID: u8 = 0x01;
/// Bytes of the private key file.
pub const KEY_FILE_LEN: usize = 162;
/// Bytes of the key file covered as associated data (everything before the sealed seed).
const KEY_FILE_AAD_LEN: usize = 114;
/// The HKDF `info` that derives the X25519 secret from the seed.
pub const X25519_FROM_SEED_INFO: &[u8] = b"envelope-x25519-from-seed-v1";
/// The HKDF `info` that derives the seller's 32-byte watermark secret from the seed
/// (docs/watermark.md §2: the key `K` of the buyer hash, tag and cell keys).
pub const WATERMARK_FROM_SEED_INFO: &[u8] = b"ml-envelope/watermark/v1/seller-key";
/// First line of a public key file.
pub const PUBLIC_KEY_FILE_HEADER: &str = "# envelope public key v1";

fn malformed() -> Error {
    Error::DecryptionFailed(DecryptionFailure::Malformed)
}

/// An Ed25519 public key as found in signature blocks and public key files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SigningPublicKey([u8; PUBLIC_KEY_LEN]);

impl SigningPublicKey {
    /// The key with these bytes (not checked to be a valid point; that happens when it is used).
    #[must_use]
    pub const fn from_bytes(bytes: [u8; PUBLIC_KEY_LEN]) -> Self {
        Self(bytes)
    }

    /// The public key of `key`.
    #[must_use]
    pub fn of(key: &SigningKey) -> Self {
        Self(key.verifying_key().to_bytes())
    }

    /// The 32 bytes.
    #[must_use]
    pub const fn as_bytes(&self) -> &[u8; PUBLIC_KEY_LEN] {
        &self.0
    }

    /// Standard base64 with padding.
    #[must_use]
    pub fn to_base64(&self) -> String {
        Base64::encode_string(&self.0)
    }
}

impl fmt::Display for SigningPublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_base64())
    }
}

/// The caller's trusted publisher keys. A file's embedded key selects which of these to try; it
/// is never trusted by itself.
#[derive(Debug, Clone, Default)]
pub struct TrustedKeys(Vec<VerifyingKey>);

impl TrustedKeys {
    /// No trusted keys (every signed file is then `UntrustedKey`).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The given keys; keys that are not valid Ed25519 points are skipped.
    #[must_use]
    pub fn from_keys(keys: impl IntoIterator<Item = SigningPublicKey>) -> Self {
        let mut trusted = Self::new();
        for key in keys {
            let _ = trusted.add(key);
        }
        trusted
    }

    /// Adds `key`.
    ///
    /// # Errors
    /// `Usage` if the bytes are not a valid Ed25519 public key.
    pub fn add(&mut self, key: SigningPublicKey) -> Result<()> {
        let key = VerifyingKey::from_bytes(&key.0)
            .map_err(|_| Error::InvalidArgument("not a valid Ed25519 public key"))?;
        if !self.0.contains(&key) {
            self.0.push(key);
        }
        Ok(())
    }

    /// How many keys are trusted.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no key is trusted.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The trusted keys, for checking signatures of other formats with the same trust list
    /// (`fold verify --trusted-keys` checks pyfolds' metadata signature against each).
    pub fn keys(&self) -> impl Iterator<Item = &VerifyingKey> {
        self.0.iter()
    }

    pub(crate) fn find(&self, key: &SigningPublicKey) -> Option<&VerifyingKey> {
        self.0.iter().find(|trusted| trusted.as_bytes() == &key.0)
    }
}

/// A key pair for both signing (Ed25519) and receiving encrypted files (X25519), from one seed.
/// Wiped on drop, never printed.
pub struct Identity {
    seed: Zeroizing<[u8; SEED_LEN]>,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("signing_public_key", &self.signing_public_key())
            .finish_non_exhaustive()
    }
}

impl Identity {
    /// The identity with this seed.
    #[must_use]
    pub fn from_seed(seed: [u8; SEED_LEN]) -> Self {
        Self {
            seed: Zeroizing::new(seed),
        }
    }

    /// A fresh identity: 32 bytes from `rng`.
    #[must_use]
    pub fn generate(rng: &mut impl CryptoRngCore) -> Self {
        let mut seed = Zeroizing::new([0u8; SEED_LEN]);
        rng.fill_bytes(seed.as_mut());
        Self { seed }
    }

    /// The Ed25519 signing key: the seed is the RFC 8032 secret key.
    #[must_use]
    pub fn signing_key(&self) -> SigningKey {
        SigningKey::from_bytes(&self.seed)
    }

    /// The Ed25519 public key.
    #[must_use]
    pub fn signing_public_key(&self) -> SigningPublicKey {
        SigningPublicKey::of(&self.signing_key())
    }

    /// The X25519 secret: `HKDF-SHA256(ikm = seed, salt = none, info =
    /// "envelope-x25519-from-seed-v1")`, 32 bytes.
    #[must_use]
    pub fn recipient_secret_key(&self) -> RecipientSecretKey {
        let hkdf = Hkdf::<Sha256>::new(None, self.seed.as_ref());
        let mut bytes = Zeroizing::new([0u8; 32]);
        // 32 bytes is within HKDF's output limit.
        let _ = hkdf.expand(X25519_FROM_SEED_INFO, bytes.as_mut());
        RecipientSecretKey::from_bytes(*bytes)
    }

    /// The seller's watermark secret (docs/watermark.md §2): `HKDF-SHA256(ikm = seed, salt =
    /// none, info = "ml-envelope/watermark/v1/seller-key")`, 32 bytes. One key file then signs,
    /// receives and traces leaks; the secret can be handed to a forensic examiner without the
    /// power to sign, since the seed cannot be computed from it.
    #[must_use]
    pub fn watermark_secret(&self) -> Zeroizing<[u8; 32]> {
        let hkdf = Hkdf::<Sha256>::new(None, self.seed.as_ref());
        let mut bytes = Zeroizing::new([0u8; 32]);
        // 32 bytes is within HKDF's output limit.
        let _ = hkdf.expand(WATERMARK_FROM_SEED_INFO, bytes.as_mut());
        bytes
    }

    /// The X25519 public key others encrypt to.
    #[must_use]
    pub fn recipient_public_key(&self) -> RecipientPublicKey {
        self.recipient_secret_key().public_key()
    }

    /// The public key file (text, docs/signing.md §5).
    #[must_use]
    pub fn public_key_file(&self) -> String {
        format!(
            "{PUBLIC_KEY_FILE_HEADER}\ned25519 {}\nx25519 {}\n",
            self.signing_public_key().to_base64(),
            self.recipient_public_key().to_base64()
        )
    }

    /// The private key file: the seed sealed with AES-256-GCM under an Argon2id key of
    /// `password` (docs/signing.md §4). Draws the 16-byte salt, then the 12-byte nonce, from
    /// `rng`.
    ///
    /// # Errors
    /// `Usage` if `params` are outside the limits readers enforce.
    pub fn seal(
        &self,
        password: &Password,
        params: Argon2Params,
        rng: &mut impl CryptoRngCore,
    ) -> Result<Vec<u8>> {
        if !params.is_within_key_file_limits() {
            return Err(Error::InvalidArgument(
                "Argon2id parameters outside the limits key-file readers enforce (memory at most \
                 256 MiB)",
            ));
        }
        let mut salt = [0u8; SALT_LEN];
        rng.fill_bytes(&mut salt);
        let mut nonce = [0u8; 12];
        rng.fill_bytes(&mut nonce);
        let mut out = Vec::with_capacity(KEY_FILE_LEN);
        Writer::new(&mut out)
            .bytes(&KEY_FILE_MAGIC)
            .u8(KEY_FILE_VERSION)
            .u8(KEY_FILE_KDF_ARGON2ID)
            .u32(params.m_cost_kib)
            .u32(params.t_cost)
            .u32(params.p_cost)
            .bytes(&salt)
            .bytes(&nonce)
            .bytes(self.signing_public_key().as_bytes())
            .bytes(self.recipient_public_key().as_bytes())
            .bytes(self.seed.as_ref());
        let key = params.derive_key(password, &salt)?;
        let cipher = Aes256Gcm::new(key.as_ref().into());
        let (aad, seed) = out.split_at_mut(KEY_FILE_AAD_LEN);
        let tag = cipher
            .encrypt_in_place_detached(Nonce::from_slice(&nonce), aad, seed)
            .map_err(|_| Error::InvalidArgument("AES-GCM refused the seed"))?;
        out.extend_from_slice(&tag);
        Ok(out)
    }

    /// Opens a private key file with `password`.
    ///
    /// # Errors
    /// `DecryptionFailed`: `Malformed` for a wrong magic, version, KDF, length or parameters
    /// outside the limits; `Failed` for a wrong password or an altered byte (including the public
    /// keys, which are associated data and are checked against the seed).
    pub fn open(file: &[u8], password: &Password) -> Result<Self> {
        if file.len() != KEY_FILE_LEN {
            return Err(malformed());
        }
        // The layout of docs/signing.md §4; the length check above makes every read succeed.
        let mut fields = Reader::new(file);
        let (magic, version, kdf) = (fields.array::<8>(), fields.u8(), fields.u8());
        if magic != Some(KEY_FILE_MAGIC)
            || version != Some(KEY_FILE_VERSION)
            || kdf != Some(KEY_FILE_KDF_ARGON2ID)
        {
            return Err(malformed());
        }
        let params = Argon2Params {
            m_cost_kib: fields.u32().ok_or_else(malformed)?,
            t_cost: fields.u32().ok_or_else(malformed)?,
            p_cost: fields.u32().ok_or_else(malformed)?,
        };
        // Key files get the tighter ceiling: opening one must not need more memory than a small
        // machine has (docs/signing.md §4).
        if !params.is_within_key_file_limits() {
            return Err(malformed());
        }
        let salt: [u8; SALT_LEN] = fields.array().ok_or_else(malformed)?;
        let nonce: [u8; 12] = fields.array().ok_or_else(malformed)?;
        let signing_public: [u8; 32] = fields.array().ok_or_else(malformed)?;
        let recipient_public: [u8; 32] = fields.array().ok_or_else(malformed)?;
        debug_assert_eq!(fields.position(), KEY_FILE_AAD_LEN);
        let mut seed = Zeroizing::new(fields.array::<SEED_LEN>().ok_or_else(malformed)?);
        let tag = fields.take(fields.rest().len()).ok_or_else(malformed)?;
        let key = params.derive_key(password, &salt)?;
        let cipher = Aes256Gcm::new(key.as_ref().into());
        cipher
            .decrypt_in_place_detached(
                Nonce::from_slice(&nonce),
                &file[..KEY_FILE_AAD_LEN],
                seed.as_mut(),
                Tag::from_slice(tag),
            )
            .map_err(|_| Error::DecryptionFailed(DecryptionFailure::Failed))?;
        let identity = Self { seed };
        if *identity.signing_public_key().as_bytes() != signing_public
            || *identity.recipient_public_key().as_bytes() != recipient_public
        {
            return Err(Error::DecryptionFailed(DecryptionFailure::Failed));
        }
        Ok(identity)
    }
}

/// The keys listed in a public key file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublicKeyFile {
    /// `ed25519` lines: signing keys.
    pub signing: Vec<SigningPublicKey>,
    /// `x25519` lines: encryption keys.
    pub recipients: Vec<RecipientPublicKey>,
}

impl PublicKeyFile {
    /// Parses a public key file: lines `ed25519 BASE64` and `x25519 BASE64`; empty lines and lines
    /// starting with `#` are ignored.
    ///
    /// # Errors
    /// `Usage` for any other line, or base64 that is not 32 bytes.
    pub fn parse(text: &str) -> Result<Self> {
        let mut out = Self::default();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (kind, value) = line.split_once(' ').ok_or(Error::InvalidArgument(
                "public key file: expected `KIND BASE64`",
            ))?;
            let mut bytes = [0u8; 32];
            // Public keys are not secrets: the decoder's reason is kept for the caller.
            let decoded =
                Base64::decode(value.trim(), &mut bytes).map_err(|source| Error::Decoding {
                    what: "a public key file's base64",
                    source: source.into(),
                })?;
            if decoded.len() != 32 {
                return Err(Error::ArgumentMismatch {
                    what: "bytes of a key in a public key file",
                    expected: 32,
                    found: decoded.len() as u64,
                });
            }
            match kind {
                "ed25519" => out.signing.push(SigningPublicKey::from_bytes(bytes)),
                "x25519" => out.recipients.push(RecipientPublicKey::from_bytes(bytes)),
                _ => {
                    return Err(Error::InvalidArgument(
                        "public key file: unknown key kind (ed25519 or x25519)",
                    ));
                }
            }
        }
        Ok(out)
    }
}
