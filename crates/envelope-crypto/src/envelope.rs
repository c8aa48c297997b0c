//! Encrypting an envelope's payload and decrypting it again (docs/crypto.md §5).
//!
//! Order of work when encrypting: compute every ciphertext size from the plaintext sizes (so the
//! header and chunk index are final), build the encryption block, encode the bytes before the
//! payload with the SIGNED and LICENSED flag bits cleared, hash them once with SHA-256, and seal
//! every segment with that hash as associated data.

use std::borrow::Cow;

use aes_gcm::aead::{AeadInPlace, Nonce};
use aes_gcm::{Aes256Gcm, Tag};
use envelope_core::compression::decompress;
use envelope_core::{
    ChunkIndex, Compression, DecryptionFailure, Envelope, EnvelopeParts, Error, Format, Header,
    Limits, Payload, RangedEnvelope, Result, Section,
};
use rand_core::CryptoRngCore;
use sha2::{Digest, Sha256};

use crate::block::{EncryptionBlock, KeySource, RecipientStanza, WRAPPED_KEY_LEN, WrappedKey};
use crate::keys::{
    Argon2Params, KEY_LEN, Password, RecipientPublicKey, RecipientSecretKey, SALT_LEN,
    SymmetricKey, encrypt_label, from_sender, to_recipient, wrap_label,
};
use crate::stream::{
    DEFAULT_SEGMENT_SIZE, MAX_SEGMENT_SIZE, MIN_SEGMENT_SIZE, Stream, ciphertext_len,
};

/// The nonce of a wrapped content key: each wrapping key is used exactly once.
const WRAP_NONCE: [u8; 12] = [0; 12];

/// Whom a file is encrypted for.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum EncryptTo<'a> {
    /// Mode 0x00: a password, stretched with Argon2id.
    Password {
        /// The password.
        password: &'a Password,
        /// Argon2id parameters ([`Argon2Params::DEFAULT`] unless there is a reason).
        params: Argon2Params,
    },
    /// Mode 0x01: one X25519 recipient.
    Recipient(&'a RecipientPublicKey),
    /// Mode 0x02: any of these recipients (1 to 1024).
    Recipients(&'a [RecipientPublicKey]),
}

/// What decrypts a file.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum DecryptionKey<'a> {
    /// The password of a mode 0x00 file.
    Password(&'a Password),
    /// A recipient's secret key, for mode 0x01 and 0x02 files.
    Recipient(&'a RecipientSecretKey),
}

/// Encryption settings beyond the recipient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncryptOptions {
    /// Plaintext bytes per STREAM segment ([`DEFAULT_SEGMENT_SIZE`]).
    pub segment_size: u32,
}

impl Default for EncryptOptions {
    fn default() -> Self {
        Self {
            segment_size: DEFAULT_SEGMENT_SIZE,
        }
    }
}

/// `SHA-256` of the bytes before the payload with the SIGNED and LICENSED bits of the flags byte
/// cleared: the associated data of every segment.
#[must_use]
pub fn associated_data(bytes_before_payload: &[u8]) -> [u8; 32] {
    // SIGNED and LICENSED are left out: their blocks follow the payload and are added after
    // encryption; the signature binds them instead.
    let mut hasher = Sha256::new();
    envelope_core::feed_with_appended_flags_cleared(bytes_before_payload, |piece| {
        hasher.update(piece);
    });
    hasher.finalize().into()
}

/// Every part owned, so the result outlives the input.
fn into_owned(parts: EnvelopeParts<'_>) -> EnvelopeParts<'static> {
    let owned = |cow: Cow<'_, [u8]>| Cow::Owned(cow.into_owned());
    EnvelopeParts {
        format: parts.format,
        version: parts.version,
        type_id: parts.type_id,
        compression: parts.compression,
        quantized: parts.quantized,
        num_rows: parts.num_rows,
        metadata: owned(parts.metadata),
        schema: owned(parts.schema),
        tensor_index: parts.tensor_index.map(owned),
        encryption: parts.encryption.map(owned),
        payload: match parts.payload {
            Payload::Whole {
                stored,
                uncompressed_size,
            } => Payload::Whole {
                stored: owned(stored),
                uncompressed_size,
            },
            Payload::Chunked { index, stored } => Payload::Chunked {
                index,
                stored: owned(stored),
            },
        },
        signature: parts.signature.map(owned),
        license: parts.license.map(owned),
    }
}

/// A ciphertext length that overflows a `u64` (unreachable for a plaintext in memory).
fn too_large() -> Error {
    Error::InvalidArgument("the encrypted payload's length would overflow a u64")
}

fn to_usize(value: u64) -> Result<usize> {
    Error::fit_in_memory("the encrypted payload's bytes", value)
}

/// Encrypts the payload of `parts` (which must not be encrypted yet) for `to`.
///
/// The payload is taken as stored: compressed, not yet encrypted. The result has the encryption
/// block set, the payload replaced by its ciphertext (a STREAMING payload chunk by chunk, its
/// index holding ciphertext sizes), the same uncompressed sizes, and no signature (a signature over
/// the plaintext file would no longer verify; sign the result instead). A license block is kept.
///
/// Randomness drawn from `rng`, in this order: password mode, the 16-byte salt; recipient mode,
/// the 32-byte ephemeral secret; multi-recipient mode, the 32-byte content key, then one 32-byte
/// ephemeral secret per recipient in the given order.
///
/// # Errors
/// `Usage` if `parts` is already encrypted, the segment size is out of range, a recipient key is a
/// low-order point, the recipient list is empty or too long, or the parts break an envelope rule.
///
/// # Example
/// ```
/// use envelope_core::{Envelope, EnvelopeParts, Format, Payload, Compression};
/// use envelope_crypto::{
///     Argon2Params, DecryptionKey, EncryptOptions, EncryptTo, Decryptor, RecipientSecretKey,
///     encrypt,
/// };
///
/// # fn rng() -> impl rand_core::CryptoRngCore { rand_core::OsRng }
/// let alice = RecipientSecretKey::generate(&mut rng());
/// let mut parts = EnvelopeParts::new(Format::Model, 0x0001);
/// parts.payload = Payload::compressed(Compression::None, b"weights")?;
/// let sealed = encrypt(&parts, EncryptTo::Recipient(&alice.public_key()), EncryptOptions::default(), &mut rng())?;
/// let bytes = sealed.to_bytes()?;
///
/// let envelope = Envelope::parse(&bytes[..], Format::Model)?;
/// let payload = Decryptor::new(&envelope, DecryptionKey::Recipient(&alice))?.payload()?;
/// assert_eq!(payload, b"weights");
/// # Ok::<(), envelope_core::Error>(())
/// ```
pub fn encrypt(
    parts: &EnvelopeParts<'_>,
    to: EncryptTo<'_>,
    options: EncryptOptions,
    rng: &mut impl CryptoRngCore,
) -> Result<EnvelopeParts<'static>> {
    if parts.encryption.is_some() {
        return Err(Error::InvalidArgument("the file is already encrypted"));
    }
    let segment_size = checked_segment_size(options)?;
    let (source, key) = key_source(parts.format, to, rng)?;
    let block = EncryptionBlock {
        segment_size,
        source,
    };

    // Final sizes first: the header and chunk index are part of the associated data.
    let plaintext = parts.payload.stored();
    let (ciphertext_payload, pieces) = match &parts.payload {
        Payload::Whole {
            stored,
            uncompressed_size,
        } => {
            let len = ciphertext_len(stored.len() as u64, segment_size).ok_or_else(too_large)?;
            (
                Payload::Whole {
                    stored: Cow::Owned(vec![0u8; to_usize(len)?]),
                    uncompressed_size: *uncompressed_size,
                },
                vec![(0..stored.len(), 0..to_usize(len)?)],
            )
        }
        Payload::Chunked { index, .. } => {
            let mut sizes = Vec::with_capacity(index.len());
            let mut pieces = Vec::with_capacity(index.len());
            let mut at = 0usize;
            for entry in index.entries() {
                let sealed =
                    ciphertext_len(entry.stored_size, segment_size).ok_or_else(too_large)?;
                sizes.push((sealed, entry.uncompressed_size, entry.item_count));
                let start = to_usize(entry.stored_offset)?;
                let sealed = to_usize(sealed)?;
                pieces.push((start..start + to_usize(entry.stored_size)?, at..at + sealed));
                at += sealed;
            }
            (
                Payload::Chunked {
                    index: ChunkIndex::from_sizes(sizes)?,
                    stored: Cow::Owned(vec![0u8; at]),
                },
                pieces,
            )
        }
    };
    let mut sealed = EnvelopeParts {
        metadata: Cow::Borrowed(&parts.metadata),
        schema: Cow::Borrowed(&parts.schema),
        tensor_index: parts.tensor_index.as_deref().map(Cow::Borrowed),
        encryption: Some(Cow::Owned(block.encode()?)),
        payload: ciphertext_payload,
        signature: None,
        license: parts.license.as_deref().map(Cow::Borrowed),
        ..*parts
    };
    let aad = associated_data(&sealed.bytes_before_payload()?);
    let cipher = key.cipher();
    let mut output = match &mut sealed.payload {
        Payload::Whole { stored, .. } | Payload::Chunked { stored, .. } => {
            core::mem::take(stored).into_owned()
        }
    };
    for ((plain, out), chunk) in pieces.into_iter().zip(0u32..) {
        let source = plaintext.get(plain.clone()).ok_or(Error::TooLarge {
            what: "the end of a chunk of the index against the payload's length",
            size: plain.end as u64,
            max: plaintext.len() as u64,
        })?;
        Stream {
            cipher: &cipher,
            aad: &aad,
            segment_size,
            chunk,
        }
        .seal_into(source, &mut output[out])?;
    }
    match &mut sealed.payload {
        Payload::Whole { stored, .. } | Payload::Chunked { stored, .. } => {
            *stored = Cow::Owned(output);
        }
    }
    Ok(into_owned(sealed))
}

/// Writes an encrypted, non-STREAMING file to `out` while reading its payload from `plaintext`:
/// memory use is one segment, whatever the payload size. The result is byte for byte what
/// [`encrypt`] followed by `to_bytes` gives for the same parts, payload and `rng`.
///
/// `parts` gives everything but the payload (its `payload` field is ignored and no signature is
/// written); `plaintext` yields exactly `plaintext_len` bytes of the stored (compressed) payload,
/// which decodes to `uncompressed_size` bytes.
///
/// # Errors
/// As [`encrypt`]; `SectionTooLarge` (`Usage`) if the ciphertext does not fit the header's u32
/// (write such payloads as STREAMING); `Io` from `plaintext` (including fewer bytes than
/// declared) or `out`.
#[allow(
    clippy::too_many_arguments,
    reason = "the arguments of `encrypt` plus a source and a sink"
)]
pub fn encrypt_stream(
    parts: &EnvelopeParts<'_>,
    plaintext_len: u64,
    uncompressed_size: u64,
    mut plaintext: impl std::io::Read,
    to: EncryptTo<'_>,
    options: EncryptOptions,
    rng: &mut impl CryptoRngCore,
    mut out: impl std::io::Write,
) -> Result<()> {
    if parts.encryption.is_some() {
        return Err(Error::InvalidArgument("the file is already encrypted"));
    }
    let segment_size = checked_segment_size(options)?;
    let sealed_len = ciphertext_len(plaintext_len, segment_size).ok_or_else(too_large)?;
    if sealed_len >= u64::from(u32::MAX) {
        return Err(Error::SectionTooLarge {
            section: Section::Payload,
            size: sealed_len,
            max: u64::from(u32::MAX) - 1,
        });
    }
    let (source, key) = key_source(parts.format, to, rng)?;
    let block = EncryptionBlock {
        segment_size,
        source,
    };
    // The header needs a payload of the final size to describe it. A zeroed vector is never
    // written or read here: the allocator hands out untouched zero pages, so it costs address
    // space, not memory.
    let placeholder = EnvelopeParts {
        metadata: Cow::Borrowed(&parts.metadata),
        schema: Cow::Borrowed(&parts.schema),
        tensor_index: parts.tensor_index.as_deref().map(Cow::Borrowed),
        encryption: Some(Cow::Owned(block.encode()?)),
        payload: Payload::Whole {
            stored: Cow::Owned(vec![0u8; to_usize(sealed_len)?]),
            uncompressed_size,
        },
        signature: None,
        license: parts.license.as_deref().map(Cow::Borrowed),
        ..*parts
    };
    let prefix = placeholder.bytes_before_payload()?;
    let aad = associated_data(&prefix);
    let cipher = key.cipher();
    let mut crc = crc32fast::Hasher::new();
    let mut emit = |bytes: &[u8], crc: &mut crc32fast::Hasher| -> Result<()> {
        crc.update(bytes);
        out.write_all(bytes)?;
        Ok(())
    };
    emit(&prefix, &mut crc)?;
    let segment = to_usize(segment_size.into())?;
    let count = plaintext_len.div_ceil(u64::from(segment_size)).max(1);
    let mut buffer = zeroize::Zeroizing::new(vec![0u8; segment]);
    let mut remaining = plaintext_len;
    for counter in 0..count {
        let take = to_usize(remaining.min(u64::from(segment_size)))?;
        remaining -= take as u64;
        let body = &mut buffer[..take];
        plaintext.read_exact(body)?;
        let nonce = crate::stream::nonce(0, counter, counter + 1 == count);
        let tag = cipher
            .encrypt_in_place_detached(Nonce::<Aes256Gcm>::from_slice(&nonce), &aad, body)
            .map_err(|_| Error::InvalidArgument("AES-GCM refused a segment"))?;
        emit(body, &mut crc)?;
        emit(&tag, &mut crc)?;
    }
    if let Some(license) = &parts.license {
        let len = u32::try_from(license.len()).map_err(|_| Error::SectionTooLarge {
            section: Section::License,
            size: license.len() as u64,
            max: u64::from(u32::MAX),
        })?;
        emit(&len.to_le_bytes(), &mut crc)?;
        emit(license, &mut crc)?;
    }
    out.write_all(&crc.finalize().to_le_bytes())?;
    Ok(())
}

/// The segment size of `options`, if within the limits readers enforce.
pub(crate) fn checked_segment_size(options: EncryptOptions) -> Result<u32> {
    if !(MIN_SEGMENT_SIZE..=MAX_SEGMENT_SIZE).contains(&options.segment_size) {
        return Err(Error::NotInRange {
            what: "segment size",
            value: options.segment_size.into(),
            min: MIN_SEGMENT_SIZE.into(),
            max: MAX_SEGMENT_SIZE.into(),
        });
    }
    Ok(options.segment_size)
}

/// The block's key source and the payload key, drawing randomness as [`encrypt`] documents.
pub(crate) fn key_source(
    format: Format,
    to: EncryptTo<'_>,
    rng: &mut impl CryptoRngCore,
) -> Result<(KeySource, SymmetricKey)> {
    match to {
        EncryptTo::Password { password, params } => {
            if !params.is_within_limits() {
                return Err(Error::InvalidArgument(
                    "Argon2id parameters outside the limits readers enforce",
                ));
            }
            let mut salt = [0u8; SALT_LEN];
            rng.fill_bytes(&mut salt);
            let key = params.derive(password.as_bytes(), &salt)?;
            Ok((KeySource::Password { params, salt }, key))
        }
        EncryptTo::Recipient(recipient) => {
            let (ephemeral_pub, key) = to_recipient(recipient, encrypt_label(format), rng)?;
            let stanza = RecipientStanza {
                ephemeral_pub,
                recipient_hash: recipient.hash(),
            };
            Ok((KeySource::Recipient(stanza), key))
        }
        EncryptTo::Recipients(recipients) => {
            if recipients.is_empty() || recipients.len() > usize::from(crate::MAX_RECIPIENTS) {
                return Err(Error::NotInRange {
                    what: "recipients of multi-recipient encryption",
                    value: recipients.len() as u64,
                    min: 1,
                    max: crate::MAX_RECIPIENTS.into(),
                });
            }
            let content = SymmetricKey::random(rng);
            let mut entries = Vec::with_capacity(recipients.len());
            for recipient in recipients {
                let (ephemeral_pub, wrapping) = to_recipient(recipient, wrap_label(format), rng)?;
                let mut wrapped = [0u8; WRAPPED_KEY_LEN];
                wrapped[..KEY_LEN].copy_from_slice(content.as_bytes());
                let tag = wrapping
                    .cipher()
                    .encrypt_in_place_detached(
                        Nonce::<Aes256Gcm>::from_slice(&WRAP_NONCE),
                        &[],
                        &mut wrapped[..KEY_LEN],
                    )
                    .map_err(|_| Error::InvalidArgument("AES-GCM refused a key"))?;
                wrapped[KEY_LEN..].copy_from_slice(&tag);
                entries.push(WrappedKey {
                    stanza: RecipientStanza {
                        ephemeral_pub,
                        recipient_hash: recipient.hash(),
                    },
                    wrapped,
                });
            }
            Ok((KeySource::MultiRecipient(entries), content))
        }
    }
}

/// The payload key of a block, for `key`.
fn payload_key(
    format: Format,
    block: &EncryptionBlock,
    key: DecryptionKey<'_>,
) -> Result<SymmetricKey> {
    let not_for_us = Error::DecryptionFailed(DecryptionFailure::NotARecipient);
    match (&block.source, key) {
        (KeySource::Password { params, salt }, DecryptionKey::Password(password)) => {
            params.derive(password.as_bytes(), salt)
        }
        (KeySource::Recipient(stanza), DecryptionKey::Recipient(secret)) => {
            if stanza.recipient_hash != secret.public_key().hash() {
                return Err(not_for_us);
            }
            from_sender(secret, &stanza.ephemeral_pub, encrypt_label(format))
        }
        (KeySource::MultiRecipient(entries), DecryptionKey::Recipient(secret)) => {
            let hash = secret.public_key().hash();
            let mut candidates = entries
                .iter()
                .filter(|entry| entry.stanza.recipient_hash == hash)
                .peekable();
            if candidates.peek().is_none() {
                return Err(not_for_us);
            }
            // Several entries may share a hash prefix; any that unwraps is ours.
            for entry in candidates {
                let wrapping =
                    from_sender(secret, &entry.stanza.ephemeral_pub, wrap_label(format))?;
                let mut content = zeroize::Zeroizing::new([0u8; KEY_LEN]);
                content.copy_from_slice(&entry.wrapped[..KEY_LEN]);
                let unwrapped = wrapping.cipher().decrypt_in_place_detached(
                    Nonce::<Aes256Gcm>::from_slice(&WRAP_NONCE),
                    &[],
                    content.as_mut(),
                    Tag::from_slice(&entry.wrapped[KEY_LEN..]),
                );
                if unwrapped.is_ok() {
                    return Ok(SymmetricKey::from_bytes(*content));
                }
            }
            Err(Error::DecryptionFailed(DecryptionFailure::Failed))
        }
        _ => Err(not_for_us),
    }
}

/// The key of one file's payload with what decrypting a chunk needs besides the chunk's bytes:
/// the associated data, the segment size, the compression and the reader's limits. [`Decryptor`]
/// reads the chunks of an [`Envelope`] through it; a reader that fetches chunks itself (ranges
/// of a [`RangedEnvelope`] from object storage) uses it directly, so both decrypt the same way.
pub struct ChunkDecryptor {
    cipher: Aes256Gcm,
    aad: [u8; 32],
    segment_size: u32,
    compression: Compression,
    limits: Limits,
}

impl core::fmt::Debug for ChunkDecryptor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ChunkDecryptor")
            .field("segment_size", &self.segment_size)
            .finish_non_exhaustive()
    }
}

impl ChunkDecryptor {
    /// Parses the encryption block `block` of a file with this `header` and these
    /// `bytes_before_payload`, and derives the payload key from `key`.
    fn new(
        header: &Header,
        block: Option<&[u8]>,
        bytes_before_payload: &[u8],
        limits: Limits,
        key: DecryptionKey<'_>,
    ) -> Result<Self> {
        let body = block.ok_or(Error::InvalidArgument("the file is not encrypted"))?;
        let block = EncryptionBlock::parse(body)?;
        let key = payload_key(header.format(), &block, key)?;
        Ok(Self {
            cipher: key.cipher(),
            aad: associated_data(bytes_before_payload),
            segment_size: block.segment_size,
            compression: header.compression(),
            limits,
        })
    }

    /// The decryptor of a file opened from its head and tail ([`RangedEnvelope`]).
    ///
    /// # Errors
    /// As [`Decryptor::new`].
    pub fn for_ranged<B: AsRef<[u8]>>(
        envelope: &RangedEnvelope<B>,
        key: DecryptionKey<'_>,
    ) -> Result<Self> {
        Self::new(
            envelope.header(),
            envelope.section(Section::Encryption),
            envelope.bytes_before_payload(),
            *envelope.limits(),
            key,
        )
    }

    fn stream(&self, chunk: u32) -> Stream<'_> {
        Stream {
            cipher: &self.cipher,
            aad: &self.aad,
            segment_size: self.segment_size,
            chunk,
        }
    }

    /// Authenticates and decrypts `sealed`, the stored bytes of chunk `chunk` (0 for a payload
    /// without chunks): the chunk still compressed.
    ///
    /// # Errors
    /// `DecryptionFailed` (`Failed`) on authentication failure (a changed byte, or the bytes of
    /// another chunk); `TooLarge` for a chunk ordinal past `u32::MAX`.
    pub fn open(&self, chunk: usize, sealed: &[u8]) -> Result<Vec<u8>> {
        let ordinal = u32::try_from(chunk).map_err(|_| Error::TooLarge {
            what: "a chunk's ordinal",
            size: chunk as u64,
            max: u32::MAX.into(),
        })?;
        self.stream(ordinal).open(sealed)
    }

    /// Decrypts and decompresses chunk `chunk` from its stored bytes `sealed`, to exactly
    /// `declared` bytes (the index entry's `uncompressed_size`).
    ///
    /// # Errors
    /// As [`ChunkDecryptor::open`]; `LimitExceeded`; `InvalidFormat` for a corrupt compressed
    /// stream or another size.
    pub fn chunk(&self, chunk: usize, sealed: &[u8], declared: u64) -> Result<Vec<u8>> {
        let plain = self.open(chunk, sealed)?;
        self.decode(plain, declared, Some(chunk as u64))
    }

    /// Decompresses `plain` to exactly `declared` bytes (within the limits); an uncompressed
    /// payload is handed back without a copy.
    fn decode(&self, plain: Vec<u8>, declared: u64, chunk: Option<u64>) -> Result<Vec<u8>> {
        if self.compression == Compression::None {
            // The same size rule decompress() applies, without copying the bytes.
            decompress(self.compression, &plain, declared, Section::Payload)?;
            return Ok(plain);
        }
        // The reader's resource policy, on the declared size, before anything is decompressed.
        self.limits
            .check_chunk(chunk, plain.len() as u64, declared)?;
        Ok(decompress(self.compression, &plain, declared, Section::Payload)?.into_owned())
    }
}

/// Decrypts the payload of one verified envelope. Deriving the key (Argon2id, X25519) happens once
/// in [`Decryptor::new`]; chunks of a STREAMING file can then be decrypted one at a time, each
/// without the others.
pub struct Decryptor<'e, B> {
    envelope: &'e Envelope<B>,
    key: ChunkDecryptor,
}

impl<B> core::fmt::Debug for Decryptor<'_, B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Decryptor")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl<'e, B: AsRef<[u8]>> Decryptor<'e, B> {
    /// Parses the encryption block of `envelope` and derives the payload key from `key`.
    ///
    /// # Errors
    /// `DecryptionFailed`: `KeyRequired` is never returned here (a key is given); `Malformed` for
    /// a block that does not parse or whose limits are exceeded; `NotARecipient` for a key of the
    /// wrong kind or a recipient not listed; `Failed` if a multi-recipient entry for this key does
    /// not unwrap. `InvalidArgument` (`Usage`) if the file is not encrypted.
    pub fn new(envelope: &'e Envelope<B>, key: DecryptionKey<'_>) -> Result<Self> {
        Ok(Self {
            envelope,
            key: ChunkDecryptor::new(
                envelope.header(),
                envelope.section(Section::Encryption),
                envelope.bytes_before_payload(),
                *envelope.limits(),
                key,
            )?,
        })
    }

    fn stream(&self, chunk: u32) -> Stream<'_> {
        self.key.stream(chunk)
    }

    /// The payload as stored before encryption (compressed), every chunk authenticated: the input
    /// [`encrypt`] took. For STREAMING files, the index holds the plaintext chunk sizes.
    ///
    /// # Errors
    /// `DecryptionFailed` (`Failed`) if any segment fails authentication.
    pub fn stored_payload(&self) -> Result<Payload<'static>> {
        match self.envelope.chunk_index() {
            None => Ok(Payload::Whole {
                stored: Cow::Owned(self.stream(0).open(self.envelope.payload())?),
                uncompressed_size: self.envelope.uncompressed_size(),
            }),
            Some(index) => {
                let mut stored = Vec::new();
                let mut sizes = Vec::with_capacity(index.len());
                for (number, entry) in index.entries().iter().enumerate() {
                    let plain = self.stored_chunk(number)?;
                    sizes.push((
                        plain.len() as u64,
                        entry.uncompressed_size,
                        entry.item_count,
                    ));
                    stored.extend_from_slice(&plain);
                }
                Ok(Payload::Chunked {
                    index: ChunkIndex::from_sizes(sizes)?,
                    stored: Cow::Owned(stored),
                })
            }
        }
    }

    /// Chunk `chunk` of a STREAMING file, decrypted but still compressed.
    ///
    /// # Errors
    /// `InvalidFormat` for a missing chunk; `DecryptionFailed` (`Failed`) on authentication
    /// failure.
    pub fn stored_chunk(&self, chunk: usize) -> Result<Vec<u8>> {
        self.key.open(chunk, self.envelope.chunk(chunk)?)
    }

    /// Chunk `chunk` of a STREAMING file, decrypted and decompressed, without touching any other
    /// chunk.
    ///
    /// # Errors
    /// As [`Decryptor::stored_chunk`], plus `InvalidFormat` for a corrupt compressed stream.
    pub fn chunk(&self, chunk: usize) -> Result<Vec<u8>> {
        let declared = self
            .envelope
            .chunk_index()
            .and_then(|index| index.entries().get(chunk))
            .map_or(0, |entry| entry.uncompressed_size);
        let plain = self.stored_chunk(chunk)?;
        self.decode(plain, declared, Some(chunk as u64))
    }

    fn decode(&self, plain: Vec<u8>, declared: u64, chunk: Option<u64>) -> Result<Vec<u8>> {
        self.key.decode(plain, declared, chunk)
    }

    /// The whole payload, decrypted and decompressed (all chunks in order for STREAMING files).
    ///
    /// # Errors
    /// `DecryptionFailed` (`Failed`) on authentication failure; `InvalidFormat` for a corrupt
    /// compressed stream or a size other than declared.
    pub fn payload(&self) -> Result<Vec<u8>> {
        match self.envelope.chunk_index() {
            None => {
                let plain = self.stream(0).open(self.envelope.payload())?;
                self.decode(plain, self.envelope.uncompressed_size(), None)
            }
            Some(index) => {
                if self.envelope.header().compression() != envelope_core::Compression::None {
                    self.envelope
                        .limits()
                        .check_payload(index.payload_size(), index.uncompressed_size())?;
                }
                let mut out = Vec::new();
                for chunk in 0..index.len() {
                    out.extend_from_slice(&self.chunk(chunk)?);
                }
                Ok(out)
            }
        }
    }

    /// Writes the plaintext of an uncompressed, non-STREAMING payload segment by segment: memory
    /// use is one segment whatever the payload size. Every byte handed to `sink` is authenticated,
    /// but a failure in a later segment means the earlier ones were already delivered: discard
    /// the output on error.
    ///
    /// # Errors
    /// `Usage` for compressed or STREAMING payloads (use [`Decryptor::payload`] or
    /// [`Decryptor::chunk`]); `DecryptionFailed` (`Failed`) on authentication failure; whatever
    /// `sink` returns.
    pub fn payload_segments(&self, sink: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if self.envelope.chunk_index().is_some()
            || self.envelope.header().compression() != envelope_core::Compression::None
        {
            return Err(Error::InvalidArgument(
                "segment-wise output is for uncompressed, non-STREAMING payloads",
            ));
        }
        self.stream(0).open_each(self.envelope.payload(), sink)
    }

    /// The parts of the decrypted file: no encryption block, the plaintext (compressed) payload,
    /// and no signature (it covered the encrypted bytes); a license block is kept.
    ///
    /// # Errors
    /// As [`Decryptor::stored_payload`].
    pub fn decrypted_parts(&self) -> Result<EnvelopeParts<'static>> {
        let mut parts = self.envelope.to_parts();
        parts.encryption = None;
        parts.signature = None;
        parts.payload = self.stored_payload()?;
        Ok(into_owned(parts))
    }
}
