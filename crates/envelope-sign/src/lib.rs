//! Provenance for `.ald` datasets and `.apr` models (000 §5.2, 001 §5.4): an Ed25519 signature
//! block covering every byte of the file except the signature body and the CRC32 trailer, checked
//! against keys the caller trusts, and the key files behind it. The byte-level specification is
//! `docs/signing.md`.
//!
//! Key decisions:
//! - **The signature covers everything else**, encryption parameters and license block included
//!   (`Envelope::signed_regions`), through a fixed 44-byte message `label || SHA-256(regions)`
//!   (algorithm `0x02`; files of earlier builds, `0x01` with SHA-512, still verify), so
//!   verification streams over any file size and the label separates datasets from models.
//!   SHA-256 runs on the SHA extensions of x86 and ARMv8 and is in every standard library.
//! - **One read of the file** ([`fs::sign_file`], [`fs::verify_file`]): the whole-file CRC32
//!   and the digest come from the same read, on two threads, in bounded memory; signing writes
//!   the output as it reads the input.
//! - **Only the caller's keys are trusted.** The public key in the block only selects which
//!   trusted key to try; verification uses `verify_strict` (no small-order keys, canonical
//!   signatures). Under [`Policy::RequireSignature`], an unsigned file, a file signed by another
//!   key, or any changed covered byte is `SignatureInvalid`, checked before the payload is parsed
//!   or decrypted; clearing the SIGNED flag gives `Missing`.
//! - **One seed, two keys**: an [`Identity`] derives the Ed25519 signing key and the X25519 key
//!   files are encrypted to, so `keygen` makes one private key file (Argon2id + AES-256-GCM) and
//!   one public key file.
//!
//! # Features
//! - `fs` (default, native only): key files and trusted-key directories by path, and signing and
//!   verifying files by path in one read ([`fs`]).
//! - `os-rng` (default): [`envelope_crypto::OsRng`] for key generation.

mod keys;
mod signature;

#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
pub mod fs;

pub use ed25519_dalek::{SigningKey, VerifyingKey};
pub use keys::{
    Identity, KEY_FILE_KDF_ARGON2ID, KEY_FILE_LEN, KEY_FILE_MAGIC, KEY_FILE_VERSION,
    PUBLIC_KEY_FILE_HEADER, PUBLIC_KEY_LEN, PublicKeyFile, SEED_LEN, SigningPublicKey, TrustedKeys,
    WATERMARK_FROM_SEED_INFO, X25519_FROM_SEED_INFO,
};
pub use signature::{
    ALGORITHM_ED25519_SHA256, ALGORITHM_ED25519_SHA512, Algorithm, MESSAGE_LEN, MESSAGE_LEN_SHA512,
    MessageHasher, Policy, RangedVerifier, SIGNATURE_BLOCK_LEN, SIGNATURE_LEN, SignatureBlock,
    SignedMessage, message_of, sign, sign_label, signed_message, verify,
};
