//! The encryption block: the framed section before the payload that says how the payload key is
//! obtained (docs/crypto.md §2). `envelope-core` treats it as opaque bytes; this module gives it a
//! validated type.
//!
//! Every field is fixed-size and the body length must be exactly what the mode and count imply,
//! so there is one encoding per block and no byte of it goes unchecked.

use envelope_core::codec::{Reader, Writer};
use envelope_core::{DecryptionFailure, Error, Result};

use crate::keys::{Argon2Params, KEY_LEN, RECIPIENT_HASH_LEN, SALT_LEN};
use crate::stream::{MAX_SEGMENT_SIZE, MIN_SEGMENT_SIZE, TAG_LEN};

/// Mode byte: key from a password through Argon2id (000 §5.1.1).
pub const MODE_PASSWORD: u8 = 0x00;
/// Mode byte: key agreed with one recipient through X25519 + HKDF-SHA256 (000 §5.1.3).
pub const MODE_RECIPIENT: u8 = 0x01;
/// Mode byte: a random content key wrapped for each of several recipients (003 §4.1.1).
pub const MODE_MULTI_RECIPIENT: u8 = 0x02;
/// Cipher-suite byte: AES-256-GCM in STREAM segments, HKDF-SHA256, X25519, Argon2id v0x13.
pub const SUITE_AES256GCM_STREAM_V1: u8 = 0x01;
/// Most recipients a multi-recipient block may list.
pub const MAX_RECIPIENTS: u16 = 1024;
/// Bytes of a wrapped content key: 32-byte key and 16-byte tag.
pub const WRAPPED_KEY_LEN: usize = KEY_LEN + TAG_LEN;
/// Bytes common to every block: mode, suite, segment size.
pub const BLOCK_PREFIX_LEN: usize = 6;
/// Bytes of one multi-recipient entry: ephemeral key, recipient hash, wrapped key.
pub const MULTI_ENTRY_LEN: usize = KEY_LEN + RECIPIENT_HASH_LEN + WRAPPED_KEY_LEN;

/// One recipient's entry: whom it is for and the sender's ephemeral public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecipientStanza {
    /// The sender's ephemeral X25519 public key.
    pub ephemeral_pub: [u8; KEY_LEN],
    /// First 8 bytes of SHA-256 of the recipient's public key.
    pub recipient_hash: [u8; RECIPIENT_HASH_LEN],
}

/// One entry of a multi-recipient block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrappedKey {
    /// Whom it is for.
    pub stanza: RecipientStanza,
    /// The content key under AES-256-GCM with this recipient's wrapping key.
    pub wrapped: [u8; WRAPPED_KEY_LEN],
}

/// How the payload key is obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeySource {
    /// Mode 0x00.
    Password {
        /// Argon2id parameters.
        params: Argon2Params,
        /// Argon2id salt.
        salt: [u8; SALT_LEN],
    },
    /// Mode 0x01.
    Recipient(RecipientStanza),
    /// Mode 0x02.
    MultiRecipient(Vec<WrappedKey>),
}

/// A parsed, validated encryption block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncryptionBlock {
    /// Plaintext bytes per STREAM segment.
    pub segment_size: u32,
    /// Mode and its parameters.
    pub source: KeySource,
}

fn malformed() -> Error {
    Error::DecryptionFailed(DecryptionFailure::Malformed)
}

/// The block's fields, read through the envelope's codec; any short read is `Malformed`.
struct Cursor<'a>(Reader<'a>);

impl Cursor<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        self.0.array().ok_or_else(malformed)
    }

    fn u16(&mut self) -> Result<u16> {
        self.0.u16().ok_or_else(malformed)
    }

    fn u32(&mut self) -> Result<u32> {
        self.0.u32().ok_or_else(malformed)
    }

    fn stanza(&mut self) -> Result<RecipientStanza> {
        Ok(RecipientStanza {
            ephemeral_pub: self.take()?,
            recipient_hash: self.take()?,
        })
    }
}

impl EncryptionBlock {
    /// The mode byte.
    #[must_use]
    pub fn mode(&self) -> u8 {
        match self.source {
            KeySource::Password { .. } => MODE_PASSWORD,
            KeySource::Recipient(_) => MODE_RECIPIENT,
            KeySource::MultiRecipient(_) => MODE_MULTI_RECIPIENT,
        }
    }

    /// Parses and validates a block body.
    ///
    /// # Errors
    /// `DecryptionFailed` (`Malformed`): unknown mode or suite, segment size or Argon2id
    /// parameters outside the limits, a recipient count of 0 or above [`MAX_RECIPIENTS`], or a
    /// body length other than the one the mode implies.
    pub fn parse(body: &[u8]) -> Result<Self> {
        let mut cursor = Cursor(Reader::new(body));
        let [mode, suite] = cursor.take::<2>()?;
        if suite != SUITE_AES256GCM_STREAM_V1 {
            return Err(malformed());
        }
        let segment_size = cursor.u32()?;
        if !(MIN_SEGMENT_SIZE..=MAX_SEGMENT_SIZE).contains(&segment_size) {
            return Err(malformed());
        }
        let source = match mode {
            MODE_PASSWORD => {
                let params = Argon2Params {
                    m_cost_kib: cursor.u32()?,
                    t_cost: cursor.u32()?,
                    p_cost: cursor.u32()?,
                };
                if !params.is_within_limits() {
                    return Err(malformed());
                }
                KeySource::Password {
                    params,
                    salt: cursor.take()?,
                }
            }
            MODE_RECIPIENT => KeySource::Recipient(cursor.stanza()?),
            MODE_MULTI_RECIPIENT => {
                let count = cursor.u16()?;
                if count == 0 || count > MAX_RECIPIENTS {
                    return Err(malformed());
                }
                // The length check comes before any allocation sized by `count`.
                if cursor.0.rest().len() != usize::from(count) * MULTI_ENTRY_LEN {
                    return Err(malformed());
                }
                let mut entries = Vec::with_capacity(usize::from(count));
                for _ in 0..count {
                    entries.push(WrappedKey {
                        stanza: cursor.stanza()?,
                        wrapped: cursor.take()?,
                    });
                }
                KeySource::MultiRecipient(entries)
            }
            _ => return Err(malformed()),
        };
        if !cursor.0.is_empty() {
            return Err(malformed());
        }
        Ok(Self {
            segment_size,
            source,
        })
    }

    /// The block body.
    ///
    /// # Errors
    /// `Usage` if a multi-recipient block has no entries or more than [`MAX_RECIPIENTS`].
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(BLOCK_PREFIX_LEN + 40);
        let mut writer = Writer::new(&mut out);
        writer
            .u8(self.mode())
            .u8(SUITE_AES256GCM_STREAM_V1)
            .u32(self.segment_size);
        match &self.source {
            KeySource::Password { params, salt } => {
                writer
                    .u32(params.m_cost_kib)
                    .u32(params.t_cost)
                    .u32(params.p_cost)
                    .bytes(salt);
            }
            KeySource::Recipient(stanza) => {
                writer
                    .bytes(&stanza.ephemeral_pub)
                    .bytes(&stanza.recipient_hash);
            }
            KeySource::MultiRecipient(entries) => {
                let count = u16::try_from(entries.len())
                    .ok()
                    .filter(|count| (1..=MAX_RECIPIENTS).contains(count))
                    .ok_or(Error::NotInRange {
                        what: "recipients of multi-recipient encryption",
                        value: entries.len() as u64,
                        min: 1,
                        max: MAX_RECIPIENTS.into(),
                    })?;
                writer.u16(count);
                for entry in entries {
                    writer
                        .bytes(&entry.stanza.ephemeral_pub)
                        .bytes(&entry.stanza.recipient_hash)
                        .bytes(&entry.wrapped);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn blocks() -> impl Strategy<Value = EncryptionBlock> {
        let stanza =
            (any::<[u8; 32]>(), any::<[u8; 8]>()).prop_map(|(ephemeral_pub, recipient_hash)| {
                RecipientStanza {
                    ephemeral_pub,
                    recipient_hash,
                }
            });
        let source = prop_oneof![
            (1024u32..4096, 1u32..=3, 1u32..=4, any::<[u8; 16]>()).prop_map(|(m, t, p, salt)| {
                KeySource::Password {
                    params: Argon2Params {
                        m_cost_kib: m,
                        t_cost: t,
                        p_cost: p,
                    },
                    salt,
                }
            }),
            stanza.clone().prop_map(KeySource::Recipient),
            proptest::collection::vec(
                (stanza, proptest::collection::vec(any::<u8>(), 48)).prop_map(|(stanza, w)| {
                    WrappedKey {
                        stanza,
                        wrapped: w.try_into().unwrap(),
                    }
                }),
                1..5
            )
            .prop_map(KeySource::MultiRecipient),
        ];
        (MIN_SEGMENT_SIZE..=MAX_SEGMENT_SIZE, source).prop_map(|(segment_size, source)| {
            EncryptionBlock {
                segment_size,
                source,
            }
        })
    }

    proptest! {
        #[test]
        fn encode_then_parse_is_identity(block in blocks()) {
            let body = block.encode().unwrap();
            prop_assert_eq!(EncryptionBlock::parse(&body).unwrap(), block);
        }

        #[test]
        fn any_body_parses_or_is_malformed_without_panic(body in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Err(error) = EncryptionBlock::parse(&body) {
                prop_assert!(matches!(error, Error::DecryptionFailed(DecryptionFailure::Malformed)));
            }
        }
    }

    #[test]
    fn hostile_argon2_parameters_are_refused_before_any_work() {
        let block = EncryptionBlock {
            segment_size: 65536,
            source: KeySource::Password {
                params: Argon2Params::DEFAULT,
                salt: [0; 16],
            },
        };
        let mut body = block.encode().unwrap();
        body[6..10].copy_from_slice(&(8u32 << 20).to_le_bytes()); // 8 GiB
        assert!(matches!(
            EncryptionBlock::parse(&body),
            Err(Error::DecryptionFailed(DecryptionFailure::Malformed))
        ));
    }
}
