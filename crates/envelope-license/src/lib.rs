//! The license block of `.ald` datasets (000 §9.1-9.2) and `.apr` models (003 §8.1-8.2), and
//! commercial packaging on top of it (`commercial`, with the feature of that name): sign +
//! license + encrypt when a file is sold, and verify + license check + decrypt when it is loaded.
//!
//! Key decisions:
//! - **A license means nothing unless it is signed.** The block sits after the payload and is
//!   covered by the Ed25519 signature (every byte but the signature body and the CRC), so
//!   [`commercial::open`] requires a trusted signature before it even reads the license. A license
//!   on an unsigned file can be edited or stripped by anyone; [`read_license`] still parses it,
//!   for display.
//! - **The clock is an argument.** [`LicenseBlock::check`] takes the current Unix time, so the
//!   same code runs on wasm32 (where the caller asks the browser) and in tests.
//! - **Terms the library cannot enforce are reported, not faked.** Seat limits, query limits and
//!   revocation need a server; the flags and limits are parsed, validated and handed to the
//!   caller. Only expiry is enforced here.
//!
//! The byte layout is specified in `docs/license.md`.
//!
//! ```
//! use envelope_license::{LicenseBlock, LicenseFlags};
//!
//! let mut license = LicenseBlock::new([7; 16], "acme-corp", 1_700_000_000, 1_800_000_000);
//! license.flags = LicenseFlags::EXPIRATION_ENFORCED;
//! let body = license.encode()?;
//! let parsed = LicenseBlock::parse(&body)?;
//! assert_eq!(parsed, license);
//! assert!(parsed.check(1_750_000_000).is_ok());
//! assert_eq!(
//!     parsed.check(1_800_000_000).unwrap_err().signal(),
//!     envelope_core::Signal::LicenseExpired
//! );
//! # Ok::<(), envelope_core::Error>(())
//! ```

#[cfg(feature = "commercial")]
pub mod commercial;

use envelope_core::codec::{Reader, Writer};
use envelope_core::{Envelope, Error, FormatError, Result, Section};
use sha2::{Digest as _, Sha256};
use uuid::Uuid;

/// Bytes of the fixed part of the block, before the custom terms.
pub const FIXED_LEN: usize = 16 + 32 + 8 + 8 + 1 + 2 + 4 + 4;
/// Largest custom-terms field a reader accepts (1 MiB): terms are text, and a hostile block must
/// not make a reader hold more than that.
pub const MAX_CUSTOM_TERMS: usize = 1 << 20;

/// The license flags of 000 §9.2 / 003 §8.2. Bits 6-7 are reserved and must be zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LicenseFlags(u8);

impl LicenseFlags {
    /// No flags.
    pub const NONE: Self = Self(0);
    /// Bit 0: limit concurrent installations to `seat_limit`.
    pub const SEATS_ENFORCED: Self = Self(1 << 0);
    /// Bit 1: refuse to load at or after `expires_at`.
    pub const EXPIRATION_ENFORCED: Self = Self(1 << 1);
    /// Bit 2: a count-based usage cap of `query_limit` (queries for datasets, inferences for
    /// models).
    pub const QUERY_LIMITED: Self = Self(1 << 2);
    /// Bit 2 under its model name (003 §8.2).
    pub const INFERENCE_LIMITED: Self = Self::QUERY_LIMITED;
    /// Bit 3: the content carries a buyer-specific fingerprint.
    pub const WATERMARKED: Self = Self(1 << 3);
    /// Bit 4: the license can be revoked remotely.
    pub const REVOCABLE: Self = Self(1 << 4);
    /// Bit 5: the license can be resold.
    pub const TRANSFERABLE: Self = Self(1 << 5);
    const DEFINED: u8 = 0b0011_1111;
    /// Every flag with its name, in bit order.
    pub const ALL: [(Self, &'static str); 6] = [
        (Self::SEATS_ENFORCED, "SEATS_ENFORCED"),
        (Self::EXPIRATION_ENFORCED, "EXPIRATION_ENFORCED"),
        (Self::QUERY_LIMITED, "QUERY_LIMITED"),
        (Self::WATERMARKED, "WATERMARKED"),
        (Self::REVOCABLE, "REVOCABLE"),
        (Self::TRANSFERABLE, "TRANSFERABLE"),
    ];

    /// The flags of `bits`.
    ///
    /// # Errors
    /// `InvalidFormat` if a reserved bit (6 or 7) is set.
    pub fn from_bits(bits: u8) -> Result<Self> {
        if bits & !Self::DEFINED != 0 {
            return Err(malformed("reserved license flag bits 6-7 are set"));
        }
        Ok(Self(bits))
    }

    /// The names of the set flags, in bit order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Self::ALL
            .into_iter()
            .filter(move |(flag, _)| self.contains(*flag))
            .map(|(_, name)| name)
    }
}

envelope_core::flag_byte_ops!(LicenseFlags);

/// A license block (000 §9.1 / 003 §8.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LicenseBlock {
    /// The license's id, a UUID (version 4 when made by [`LicenseBlock::new`]).
    pub license_id: Uuid,
    /// SHA-256 of the licensee's name ([`licensee_hash`]): identifies the buyer without naming
    /// them in the file.
    pub licensee_hash: [u8; 32],
    /// When the license was issued (Unix seconds).
    pub issued_at: u64,
    /// When it expires (Unix seconds); enforced only with [`LicenseFlags::EXPIRATION_ENFORCED`].
    pub expires_at: u64,
    /// What is enforced and allowed.
    pub flags: LicenseFlags,
    /// Concurrent installations allowed (meaningful with SEATS_ENFORCED).
    pub seat_limit: u16,
    /// Queries or inferences allowed (meaningful with QUERY_LIMITED).
    pub query_limit: u32,
    /// Free-form terms, usually UTF-8 text or a URL (at most [`MAX_CUSTOM_TERMS`] bytes).
    pub custom_terms: Vec<u8>,
}

/// SHA-256 of a licensee's name as UTF-8: what a license block stores instead of the name.
#[must_use]
pub fn licensee_hash(name: &str) -> [u8; 32] {
    Sha256::digest(name.as_bytes()).into()
}

fn malformed(reason: &'static str) -> Error {
    Error::InvalidFormat(FormatError::MalformedBlock {
        section: Section::License,
        reason,
    })
}

impl LicenseBlock {
    /// A license for `licensee`, valid from `issued_at` to `expires_at`, with no flags, limits or
    /// terms. `random` becomes a version-4 UUID (draw it from a CSPRNG: no randomness is drawn
    /// here).
    #[must_use]
    pub fn new(random: [u8; 16], licensee: &str, issued_at: u64, expires_at: u64) -> Self {
        Self {
            license_id: uuid::Builder::from_random_bytes(random).into_uuid(),
            licensee_hash: licensee_hash(licensee),
            issued_at,
            expires_at,
            flags: LicenseFlags::NONE,
            seat_limit: 0,
            query_limit: 0,
            custom_terms: Vec::new(),
        }
    }

    /// Parses a license block body.
    ///
    /// # Errors
    /// `InvalidFormat` (`MalformedBlock`, naming the rule): shorter than the fixed part, a
    /// custom-terms length that disagrees with the body or exceeds [`MAX_CUSTOM_TERMS`],
    /// reserved flag bits set, or `expires_at < issued_at` under EXPIRATION_ENFORCED.
    pub fn parse(body: &[u8]) -> Result<Self> {
        let short = || malformed("shorter than the 75-byte fixed part");
        let mut fields = Reader::new(body);
        let license_id = Uuid::from_bytes(fields.array().ok_or_else(short)?);
        let licensee_hash = fields.array().ok_or_else(short)?;
        let issued_at = fields.u64().ok_or_else(short)?;
        let expires_at = fields.u64().ok_or_else(short)?;
        let flags = fields.u8().ok_or_else(short)?;
        let seat_limit = fields.u16().ok_or_else(short)?;
        let query_limit = fields.u32().ok_or_else(short)?;
        let terms_len = fields.u32().ok_or_else(short)?;
        let terms = fields.rest();
        if usize::try_from(terms_len).ok() != Some(terms.len()) {
            return Err(malformed(
                "custom_terms_len disagrees with the bytes that follow",
            ));
        }
        if terms.len() > MAX_CUSTOM_TERMS {
            return Err(malformed("custom terms longer than 1 MiB"));
        }
        let block = Self {
            license_id,
            licensee_hash,
            issued_at,
            expires_at,
            flags: LicenseFlags::from_bits(flags)?,
            seat_limit,
            query_limit,
            custom_terms: terms.to_vec(),
        };
        block.validate()?;
        Ok(block)
    }

    fn validate(&self) -> Result<()> {
        if self.flags.contains(LicenseFlags::EXPIRATION_ENFORCED)
            && self.expires_at < self.issued_at
        {
            return Err(malformed("expires_at is before issued_at"));
        }
        if self.custom_terms.len() > MAX_CUSTOM_TERMS {
            return Err(malformed("custom terms longer than 1 MiB"));
        }
        Ok(())
    }

    /// The block body: the fixed fields little-endian, then the custom terms.
    ///
    /// # Errors
    /// As [`LicenseBlock::parse`] would report for the result (so a writer cannot produce a
    /// block readers refuse).
    pub fn encode(&self) -> Result<Vec<u8>> {
        self.validate()?;
        let terms_len = u32::try_from(self.custom_terms.len())
            .map_err(|_| malformed("custom terms longer than 1 MiB"))?;
        let mut out = Vec::with_capacity(FIXED_LEN + self.custom_terms.len());
        Writer::new(&mut out)
            .bytes(self.license_id.as_bytes())
            .bytes(&self.licensee_hash)
            .u64(self.issued_at)
            .u64(self.expires_at)
            .u8(self.flags.bits())
            .u16(self.seat_limit)
            .u32(self.query_limit)
            .u32(terms_len)
            .bytes(&self.custom_terms);
        Ok(out)
    }

    /// Whether the license allows loading at `now_unix` (seconds).
    ///
    /// # Errors
    /// `LicenseExpired` if EXPIRATION_ENFORCED is set and `now_unix >= expires_at`.
    pub fn check(&self, now_unix: u64) -> Result<()> {
        if self.flags.contains(LicenseFlags::EXPIRATION_ENFORCED) && now_unix >= self.expires_at {
            return Err(Error::LicenseExpired {
                expires_at: self.expires_at,
                now: now_unix,
            });
        }
        Ok(())
    }

    /// Whether the license was issued to `licensee`.
    #[must_use]
    pub fn is_for(&self, licensee: &str) -> bool {
        self.licensee_hash == licensee_hash(licensee)
    }
}

/// The license block of a verified envelope, if it has one. This does not check a signature: a
/// caller that acts on the license must verify the file's signature first (as
/// [`commercial::open`] does).
///
/// # Errors
/// As [`LicenseBlock::parse`].
pub fn read_license<B: AsRef<[u8]>>(envelope: &Envelope<B>) -> Result<Option<LicenseBlock>> {
    envelope
        .section(Section::License)
        .map(LicenseBlock::parse)
        .transpose()
}

/// The license policy every loader applies (ald, apr and the CLIs alike): the license block of a
/// verified envelope, if any, checked at `now_unix`. Without a time, a license that enforces
/// expiry is refused (`Usage`): a loader cannot say "valid" without knowing when it is. Call it
/// after the signature policy, so that the license acted on is one the signer wrote.
///
/// # Errors
/// As [`LicenseBlock::parse`], then `LicenseExpired`, or `Usage` for an expiring license and no
/// time.
pub fn check_license<B: AsRef<[u8]>>(
    envelope: &Envelope<B>,
    now_unix: Option<u64>,
) -> Result<Option<LicenseBlock>> {
    check_license_block(envelope.section(Section::License), now_unix)
}

/// [`check_license`] over the license block's body `body` (`None` for a file without one), for
/// readers that hold the block but not the whole file (a file opened from ranges).
///
/// # Errors
/// As [`check_license`].
pub fn check_license_block(
    body: Option<&[u8]>,
    now_unix: Option<u64>,
) -> Result<Option<LicenseBlock>> {
    let license = body.map(LicenseBlock::parse).transpose()?;
    if let Some(license) = &license {
        match now_unix {
            Some(now) => license.check(now)?,
            None if license.flags.contains(LicenseFlags::EXPIRATION_ENFORCED) => {
                return Err(Error::InvalidArgument(
                    "the file's license enforces expiry: pass the current time (now_unix)",
                ));
            }
            None => {}
        }
    }
    Ok(license)
}

#[cfg(test)]
mod tests {
    use super::*;
    use envelope_core::Signal;
    use proptest::prelude::*;

    fn sample() -> LicenseBlock {
        let mut block = LicenseBlock::new([0x42; 16], "acme", 1_000, 2_000);
        block.flags = LicenseFlags::EXPIRATION_ENFORCED.with(LicenseFlags::WATERMARKED);
        block.seat_limit = 5;
        block.query_limit = 100_000;
        block.custom_terms = b"non-commercial research only".to_vec();
        block
    }

    /// Known answer: the layout of docs/license.md, byte by byte.
    #[test]
    fn encodes_the_documented_layout() {
        let body = sample().encode().unwrap();
        let expected = [
            "42424242424242428242424242424242", // license_id (v4 bits set)
            "822b33ad87c148a0a20a5ba7cd5ebcaa68d36a18e7aad165554903f52ca82757", // SHA-256("acme")
            "e803000000000000",                 // issued_at 1000
            "d007000000000000",                 // expires_at 2000
            "0a",                               // flags: bits 1 and 3
            "0500",                             // seat_limit 5
            "a0860100",                         // query_limit 100000
            "1c000000",                         // custom_terms_len 28
        ]
        .concat();
        assert_eq!(hex::encode(&body[..FIXED_LEN]), expected);
        assert_eq!(&body[FIXED_LEN..], b"non-commercial research only");
        assert_eq!(hex::encode(licensee_hash("acme")), &expected[32..96]);
    }

    #[test]
    fn expiry_is_enforced_only_with_the_flag() {
        let mut block = sample();
        assert!(block.check(1_999).is_ok());
        assert_eq!(
            block.check(2_000).unwrap_err().signal(),
            Signal::LicenseExpired
        );
        block.flags = LicenseFlags::NONE;
        assert!(block.check(u64::MAX).is_ok());
    }

    #[test]
    fn malformed_blocks_are_refused_with_the_rule() {
        let body = sample().encode().unwrap();
        for cut in 0..body.len() {
            let error = LicenseBlock::parse(&body[..cut]).unwrap_err();
            assert_eq!(error.signal(), Signal::InvalidFormat, "cut at {cut}");
        }
        let mut reserved = body.clone();
        reserved[64] |= 0x80;
        assert!(
            LicenseBlock::parse(&reserved)
                .unwrap_err()
                .to_string()
                .contains("reserved")
        );
        let mut longer = body.clone();
        longer.push(0);
        assert!(LicenseBlock::parse(&longer).is_err());
        let mut backwards = sample();
        backwards.expires_at = 10;
        assert!(backwards.encode().is_err());
    }

    #[test]
    fn flag_names_in_bit_order() {
        let names: Vec<_> = sample().flags.names().collect();
        assert_eq!(names, ["EXPIRATION_ENFORCED", "WATERMARKED"]);
        assert!(sample().is_for("acme"));
        assert!(!sample().is_for("Acme"));
    }

    proptest! {
        #[test]
        fn encode_then_parse_is_identity(
            id: [u8; 16], name in ".{0,20}", issued: u64, span: u32, flags in 0u8..64,
            seats: u16, queries: u32, terms in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut block = LicenseBlock::new(id, &name, issued, issued.saturating_add(u64::from(span)));
            block.flags = LicenseFlags::from_bits(flags).unwrap();
            block.seat_limit = seats;
            block.query_limit = queries;
            block.custom_terms = terms;
            prop_assert_eq!(LicenseBlock::parse(&block.encode().unwrap()).unwrap(), block);
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = LicenseBlock::parse(&bytes);
        }
    }
}
