//! Confidentiality for `.ald` datasets and `.apr` models (000 §5.1, 001 §5.2-5.3, 003 §4.1): the
//! payload of an envelope encrypted with AES-256-GCM under a key from a password (Argon2id), one
//! X25519 recipient, or several; plus sealed request/response messages for private queries and
//! private inference. The byte-level specification is `docs/crypto.md`.
//!
//! Key decisions:
//! - **Everything before the payload is associated data.** Each segment is authenticated with
//!   `SHA-256` of the header, metadata, schema, indexes and encryption block (the flags byte with
//!   SIGNED and LICENSED cleared, since those blocks are added after encryption and bound by the
//!   signature). Changing a flag, a size or a KDF parameter fails authentication even after the
//!   CRC is recomputed.
//! - **STREAM segments** ([`stream`]): the payload (or each chunk of a STREAMING file) is sealed in
//!   64 KiB segments with per-segment nonces and a last-segment flag, so truncation, reordering
//!   and chunk swaps are detected, one chunk decrypts without the others, and no single GCM
//!   invocation approaches its length limit.
//! - **Parameters live in the file** (mode, cipher suite, segment size, Argon2id costs), and a
//!   reader enforces upper bounds on them before doing any work.
//! - **No randomness inside**: every function that needs it takes a `CryptoRngCore`. The `os-rng`
//!   feature re-exports [`OsRng`] (the OS natively, the browser's generator on wasm32).
//! - **Opaque failures**: a wrong key and a tampered byte are the same `DecryptionFailed(Failed)`.
//!
//! ```
//! use envelope_core::{Compression, Envelope, EnvelopeParts, Format, Payload};
//! use envelope_crypto::{Argon2Params, DecryptionKey, Decryptor, EncryptOptions, EncryptTo, Password, encrypt};
//!
//! # let mut rng = rand_core::OsRng;
//! let password = Password::new("correct horse battery staple");
//! let mut parts = EnvelopeParts::new(Format::Dataset, 0x0001);
//! parts.payload = Payload::compressed(Compression::None, b"rows")?;
//! let cheap = Argon2Params { m_cost_kib: 1024, t_cost: 1, p_cost: 1 }; // doctest speed only
//! let to = EncryptTo::Password { password: &password, params: cheap };
//! let bytes = encrypt(&parts, to, EncryptOptions::default(), &mut rng)?.to_bytes()?;
//!
//! let envelope = Envelope::parse(&bytes[..], Format::Dataset)?;
//! let wrong = Password::new("guess");
//! let error = Decryptor::new(&envelope, DecryptionKey::Password(&wrong))?.payload().unwrap_err();
//! assert_eq!(error.signal(), envelope_core::Signal::DecryptionFailed);
//! let rows = Decryptor::new(&envelope, DecryptionKey::Password(&password))?.payload()?;
//! assert_eq!(rows, b"rows");
//! # Ok::<(), envelope_core::Error>(())
//! ```
//!
//! # Features
//! - `os-rng` (default): [`OsRng`] through getrandom (browser backend on wasm32).

pub mod block;
mod chunked;
mod envelope;
mod keys;
pub mod query;
pub mod stream;

pub use block::{EncryptionBlock, KeySource, MAX_RECIPIENTS};
pub use chunked::{ChunkEncryptor, ChunkSealer};
pub use envelope::{
    ChunkDecryptor, DecryptionKey, Decryptor, EncryptOptions, EncryptTo, associated_data, encrypt,
    encrypt_stream,
};
pub use keys::{
    ARGON2_DEFAULT_M_COST_KIB, ARGON2_DEFAULT_P_COST, ARGON2_DEFAULT_T_COST, ARGON2_MAX_M_COST_KIB,
    ARGON2_MAX_P_COST, ARGON2_MAX_T_COST, ARGON2_MIN_M_COST_KIB, Argon2Params,
    KEY_FILE_ARGON2_MAX_M_COST_KIB, KEY_LEN, Password, RECIPIENT_HASH_LEN, RecipientPublicKey,
    RecipientSecretKey, SALT_LEN, encrypt_label, wrap_label,
};
/// The RNG traits callers implement or pass (rand_core 0.6, as aes-gcm 0.10 and the dalek crates).
pub use rand_core;
#[cfg(feature = "os-rng")]
pub use rand_core::OsRng;
pub use rand_core::{CryptoRng, CryptoRngCore, RngCore};
/// Re-exported so callers can hold derived secrets the way this crate does.
pub use zeroize::Zeroizing;
