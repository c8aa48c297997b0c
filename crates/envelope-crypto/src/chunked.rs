//! Encrypting a STREAMING file one chunk at a time (docs/crypto.md §5), for payloads that do not
//! fit in memory, including those over 4 GiB, which must be STREAMING.
//!
//! Every ciphertext size follows from its plaintext size and the segment size, so the chunk index
//! and encryption block are final before the first chunk is sealed: the writer emits the bytes
//! before the payload (the associated data), then seals and writes each chunk as it comes. The
//! result is byte for byte what [`crate::encrypt`] gives for the same parts and randomness.

use aes_gcm::Aes256Gcm;
use envelope_core::{ChunkIndex, Error, Format, Result};
use rand_core::CryptoRngCore;

use crate::block::EncryptionBlock;
use crate::envelope::{
    EncryptOptions, EncryptTo, associated_data, checked_segment_size, key_source,
};
use crate::keys::SymmetricKey;
use crate::stream::{Stream, ciphertext_len};

/// The key and encryption block of a STREAMING file being written chunk by chunk.
///
/// ```
/// use envelope_core::{ChunkIndex, Envelope, EnvelopeParts, Format};
/// use envelope_crypto::{ChunkEncryptor, DecryptionKey, Decryptor, EncryptOptions, EncryptTo, RecipientSecretKey};
///
/// # let mut rng = rand_core::OsRng;
/// let buyer = RecipientSecretKey::generate(&mut rng);
/// let chunks: [&[u8]; 2] = [b"first row group", b"second row group"];
/// let plain = ChunkIndex::from_sizes(chunks.iter().map(|c| (c.len() as u64, c.len() as u64, 1)))?;
///
/// let encryptor = ChunkEncryptor::new(Format::Dataset, EncryptTo::Recipient(&buyer.public_key()), EncryptOptions::default(), &mut rng)?;
/// let mut parts = EnvelopeParts::new(Format::Dataset, 0x0001);
/// parts.num_rows = 2;
/// parts.encryption = Some(encryptor.encryption_block().into());
/// let mut writer = parts.begin_chunked(encryptor.sealed_index(&plain)?, Vec::new())?;
/// let sealer = encryptor.sealer(writer.bytes_before_payload());
/// for (number, chunk) in (0u32..).zip(chunks) {
///     writer.write_chunk(&sealer.seal(number, chunk)?)?;
/// }
/// let bytes = writer.finish()?;
///
/// let envelope = Envelope::parse_lazy(&bytes[..], Format::Dataset)?;
/// let decryptor = Decryptor::new(&envelope, DecryptionKey::Recipient(&buyer))?;
/// assert_eq!(decryptor.chunk(1)?, b"second row group");
/// # Ok::<(), envelope_core::Error>(())
/// ```
pub struct ChunkEncryptor {
    block: Vec<u8>,
    key: SymmetricKey,
    segment_size: u32,
}

impl core::fmt::Debug for ChunkEncryptor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        debug_without_key(f, "ChunkEncryptor", self.segment_size)
    }
}

impl ChunkEncryptor {
    /// Derives the payload key for `to` and builds the encryption block, drawing randomness
    /// exactly as [`crate::encrypt`] does.
    ///
    /// # Errors
    /// As [`crate::encrypt`].
    pub fn new(
        format: Format,
        to: EncryptTo<'_>,
        options: EncryptOptions,
        rng: &mut impl CryptoRngCore,
    ) -> Result<Self> {
        let segment_size = checked_segment_size(options)?;
        let (source, key) = key_source(format, to, rng)?;
        let block = EncryptionBlock {
            segment_size,
            source,
        }
        .encode()?;
        Ok(Self {
            block,
            key,
            segment_size,
        })
    }

    /// The encryption block body, for `EnvelopeParts::encryption`.
    #[must_use]
    pub fn encryption_block(&self) -> Vec<u8> {
        self.block.clone()
    }

    /// The chunk index of the encrypted file: `plain`'s chunks (sizes as stored before
    /// encryption) with their ciphertext sizes and zero checksums.
    ///
    /// # Errors
    /// `Usage` if a ciphertext size overflows a u64.
    pub fn sealed_index(&self, plain: &ChunkIndex) -> Result<ChunkIndex> {
        let mut sizes = Vec::with_capacity(plain.len());
        for entry in plain.entries() {
            let sealed = ciphertext_len(entry.stored_size, self.segment_size).ok_or(
                Error::InvalidArgument("the encrypted chunk would overflow a u64"),
            )?;
            sizes.push((sealed, entry.uncompressed_size, entry.item_count));
        }
        ChunkIndex::from_sizes(sizes)
    }

    /// The sealer of a file whose bytes before the payload are `bytes_before_payload` (from
    /// `ChunkedWriter::bytes_before_payload`): they become every segment's associated data.
    #[must_use]
    pub fn sealer(&self, bytes_before_payload: &[u8]) -> ChunkSealer {
        ChunkSealer {
            cipher: self.key.cipher(),
            aad: associated_data(bytes_before_payload),
            segment_size: self.segment_size,
        }
    }
}

/// Seals chunks of one file (see [`ChunkEncryptor::sealer`]).
pub struct ChunkSealer {
    cipher: Aes256Gcm,
    aad: [u8; 32],
    segment_size: u32,
}

impl core::fmt::Debug for ChunkSealer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        debug_without_key(f, "ChunkSealer", self.segment_size)
    }
}

impl ChunkSealer {
    /// Seals chunk number `chunk` (its stored, compressed bytes) into its ciphertext. Chunk
    /// numbers are part of every nonce, so a chunk sealed under one number fails to open under
    /// another.
    ///
    /// # Errors
    /// `Usage` if the ciphertext does not fit this platform's memory.
    pub fn seal(&self, chunk: u32, stored: &[u8]) -> Result<Vec<u8>> {
        let len = ciphertext_len(stored.len() as u64, self.segment_size).ok_or(
            Error::InvalidArgument("the encrypted chunk would overflow a u64"),
        )?;
        let len = Error::fit_in_memory("an encrypted chunk's length", len)?;
        let mut out = vec![0u8; len];
        Stream {
            cipher: &self.cipher,
            aad: &self.aad,
            segment_size: self.segment_size,
            chunk,
        }
        .seal_into(stored, &mut out)?;
        Ok(out)
    }
}

/// The `Debug` of both chunk-sealing types: the segment size only, never the key (or the cipher
/// holding it).
fn debug_without_key(
    f: &mut core::fmt::Formatter<'_>,
    name: &str,
    segment_size: u32,
) -> core::fmt::Result {
    f.debug_struct(name)
        .field("segment_size", &segment_size)
        .finish_non_exhaustive()
}
