//! The fixed 32-byte header shared by `.ald` and `.apr` (000 §3, 001 §3).
//!
//! All multi-byte integers are little-endian. A [`Header`] can only be built through
//! [`Header::new`] or [`Header::parse`], both of which enforce every rule that concerns the header
//! alone: known magic, supported version, no reserved flag bits, zero reserved bytes, a known
//! compression id, and the cross-field rules listed in `docs/envelope.md`.

use alloc::vec::Vec;
use core::fmt;

use crate::codec::{Reader, Writer};
use crate::error::{Error, FormatError, Result, Section};
use crate::macros::named_enum;

/// Size of the fixed header in bytes.
pub const HEADER_LEN: usize = 32;

/// Size of the CRC32 trailer in bytes.
pub const CHECKSUM_LEN: usize = 4;

/// Value of `payload_size` / `uncompressed_size` meaning "larger than a u32 can say: read the u64
/// total from the chunk index". Only valid when the STREAMING flag is set (the large-file path).
pub const SIZE_IN_CHUNK_INDEX: u32 = u32::MAX;

/// Which member of the envelope family a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// An `.ald` dataset (magic `ALDF`).
    Dataset,
    /// An `.apr` model (magic `APRN`).
    Model,
}

impl Format {
    /// The four magic bytes at offset 0.
    #[must_use]
    pub const fn magic(self) -> [u8; 4] {
        match self {
            Self::Dataset => *b"ALDF",
            Self::Model => *b"APRN",
        }
    }

    /// The format whose magic these bytes are, if any.
    #[must_use]
    pub fn from_magic(magic: [u8; 4]) -> Option<Self> {
        [Self::Dataset, Self::Model]
            .into_iter()
            .find(|format| format.magic() == magic)
    }

    /// The version this implementation writes, and the newest it reads.
    #[must_use]
    pub const fn current_version(self) -> Version {
        match self {
            // 000 is the .ald specification v1.2.0; 001 is the .apr specification v1.7.0.
            Self::Dataset => Version { major: 1, minor: 2 },
            Self::Model => Version { major: 1, minor: 7 },
        }
    }

    /// The oldest version this implementation reads.
    #[must_use]
    pub const fn oldest_version(self) -> Version {
        Version { major: 1, minor: 0 }
    }

    /// The file extension without the dot.
    #[must_use]
    pub const fn extension(self) -> &'static str {
        match self {
            Self::Dataset => "ald",
            Self::Model => "apr",
        }
    }

    /// Flag bits that are defined for this format; all others are reserved and must be zero.
    #[must_use]
    pub const fn defined_flags(self) -> u8 {
        match self {
            // 000 §3.2: bits 0-4; bits 5-7 reserved.
            Self::Dataset => 0b0001_1111,
            // 001 §3.2: bits 0-5; bits 6-7 reserved.
            Self::Model => 0b0011_1111,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ".{}", self.extension())
    }
}

/// A format version, `major.minor`, stored as two bytes at offsets 4 and 5.
///
/// The rule: a reader accepts exactly the versions from [`Format::oldest_version`] to
/// [`Format::current_version`] of its format. A newer minor version may use fields this reader
/// does not know, so it is refused with `UnsupportedVersion` rather than half-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Incompatible changes.
    pub major: u8,
    /// Compatible additions.
    pub minor: u8,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

named_enum! {
    /// Payload compression (000 §3.3, 001 §6.1).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[repr(u8)]
    pub enum Compression {
        /// Stored as is.
        None = 0x00 => "none",
        /// One zstd frame, written at level 3.
        ZstdL3 = 0x01 => "zstd-l3",
        /// One zstd frame, written at level 19.
        ZstdL19 = 0x02 => "zstd-l19",
        /// LZ4 frame format.
        Lz4 = 0x03 => "lz4",
    }
    /// The name used by the CLIs (`none`, `zstd-l3`, `zstd-l19`, `lz4`).
    fn name;
}

impl Compression {
    /// Every compression id, in id order.
    pub const ALL: [Self; 4] = [Self::None, Self::ZstdL3, Self::ZstdL19, Self::Lz4];

    /// Parses a compression id.
    ///
    /// # Errors
    /// [`FormatError::UnknownCompression`] for ids above 0x03.
    pub fn from_id(id: u8) -> Result<Self, FormatError> {
        Self::ALL
            .into_iter()
            .find(|compression| *compression as u8 == id)
            .ok_or(FormatError::UnknownCompression { id })
    }

    /// The id stored at header offset 20.
    #[must_use]
    pub const fn id(self) -> u8 {
        self as u8
    }
}

/// Offset of the flags byte in the header (000 §3.2, 001 §3.2).
pub const FLAGS_OFFSET: usize = 21;

/// Hands `feed` the file prefix `prefix` (bytes from offset 0) in order, with the
/// [`Flags::APPENDED_BLOCKS`] bits of its flags byte cleared: the bytes the chunk index's
/// `prefix_crc32c` and the encryption's associated data cover, since a file is signed or licensed
/// after it is indexed and encrypted. A prefix too short to hold the flags byte is fed as it is.
pub fn feed_with_appended_flags_cleared(prefix: &[u8], mut feed: impl FnMut(&[u8])) {
    match prefix.split_at_checked(FLAGS_OFFSET) {
        Some((head, [flags, tail @ ..])) => {
            feed(head);
            feed(&[flags & !Flags::APPENDED_BLOCKS.bits()]);
            feed(tail);
        }
        _ => feed(prefix),
    }
}

/// The flag byte at offset [`FLAGS_OFFSET`] (000 §3.2, 001 §3.2).
///
/// The structural flags (ENCRYPTED, SIGNED, STREAMING, LICENSED, TRUENO_NATIVE) say which optional
/// sections the file has; QUANTIZED (models only) says the payload holds integer weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(u8);

impl Flags {
    /// Bit 0: the payload is encrypted; an encryption block precedes it.
    pub const ENCRYPTED: Self = Self(1 << 0);
    /// Bit 1: a signature block follows the payload.
    pub const SIGNED: Self = Self(1 << 1);
    /// Bit 2: a chunk index precedes the payload, which is a sequence of independent chunks.
    pub const STREAMING: Self = Self(1 << 2);
    /// Bit 3: a license block follows the payload (and the signature block, if any).
    pub const LICENSED: Self = Self(1 << 3);
    /// Bit 4: an aligned array / tensor index follows the schema; the payload is aligned raw data.
    pub const TRUENO_NATIVE: Self = Self(1 << 4);
    /// Bit 5 (models only): integer-quantized weights.
    pub const QUANTIZED: Self = Self(1 << 5);
    /// The blocks added after the payload is written (SIGNED, LICENSED): a file is signed or
    /// licensed after it is encrypted and indexed, so the encryption's associated data and the
    /// index's `prefix_crc32c` cover the flags byte with these bits cleared.
    pub const APPENDED_BLOCKS: Self = Self(Self::SIGNED.0 | Self::LICENSED.0);

    /// No flag set.
    #[must_use]
    pub const fn empty() -> Self {
        Self(0)
    }

    /// Validates a flag byte for `format`.
    ///
    /// # Errors
    /// [`FormatError::ReservedFlags`] if any bit the format reserves is set.
    pub const fn from_bits(format: Format, bits: u8) -> Result<Self, FormatError> {
        let reserved = bits & !format.defined_flags();
        if reserved != 0 {
            return Err(FormatError::ReservedFlags { bits: reserved });
        }
        Ok(Self(bits))
    }

    /// The names of the set flags, in bit order, as the specs spell them.
    #[must_use]
    pub fn names(self) -> Vec<&'static str> {
        const NAMES: [&str; 8] = [
            "ENCRYPTED",
            "SIGNED",
            "STREAMING",
            "LICENSED",
            "TRUENO_NATIVE",
            "QUANTIZED",
            "RESERVED_6",
            "RESERVED_7",
        ];
        (0..8)
            .filter(|bit| self.0 & (1 << bit) != 0)
            .map(|bit| NAMES[bit])
            .collect()
    }
}

crate::flag_byte_ops!(Flags);

/// A size field of the header: an exact value, or the large-file sentinel that defers to the
/// chunk index's u64 totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeclaredSize {
    /// The size in bytes; always below [`SIZE_IN_CHUNK_INDEX`].
    Exact(u32),
    /// At least 2^32 - 1 bytes: the chunk index holds the size.
    InChunkIndex,
}

impl DeclaredSize {
    /// The field that describes `size` bytes: exact when it fits, the sentinel otherwise.
    #[must_use]
    pub fn for_size(size: u64) -> Self {
        match u32::try_from(size) {
            Ok(exact) if exact != SIZE_IN_CHUNK_INDEX => Self::Exact(exact),
            _ => Self::InChunkIndex,
        }
    }

    fn from_raw(raw: u32) -> Self {
        if raw == SIZE_IN_CHUNK_INDEX {
            Self::InChunkIndex
        } else {
            Self::Exact(raw)
        }
    }

    fn raw(self) -> u32 {
        match self {
            Self::Exact(size) => size,
            Self::InChunkIndex => SIZE_IN_CHUNK_INDEX,
        }
    }

    /// The exact size, if the header holds it.
    #[must_use]
    pub fn exact(self) -> Option<u64> {
        match self {
            Self::Exact(size) => Some(u64::from(size)),
            Self::InChunkIndex => None,
        }
    }
}

/// The caller-chosen fields of a header. [`Header::new`] checks them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderFields {
    /// Dataset or model.
    pub format: Format,
    /// Format version (normally [`Format::current_version`]).
    pub version: Version,
    /// `dataset_type` (000 §3.1) or `model_type` (001 §3.1); interpreted by the format crates.
    pub type_id: u16,
    /// Bytes of MessagePack metadata.
    pub metadata_size: u32,
    /// Bytes of the payload section as stored.
    pub payload_size: DeclaredSize,
    /// Bytes of the payload after decryption and decompression.
    pub uncompressed_size: DeclaredSize,
    /// Payload compression.
    pub compression: Compression,
    /// Flags.
    pub flags: Flags,
    /// Bytes of Arrow IPC schema (`.ald` only; zero for `.apr`).
    pub schema_size: u16,
    /// Total row count (`.ald` only; zero for `.apr`).
    pub num_rows: u64,
}

/// A validated 32-byte header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    fields: HeaderFields,
}

impl Header {
    /// Checks `fields` against every header rule.
    ///
    /// # Errors
    /// `UnsupportedVersion` for a version outside the supported range; `InvalidFormat` for reserved
    /// flags, a QUANTIZED dataset, non-zero dataset fields in a model header, a large-file sentinel
    /// without STREAMING, TRUENO_NATIVE with compression, or a stored size that differs from the
    /// decoded size of an uncompressed, unencrypted payload.
    pub fn new(fields: HeaderFields) -> Result<Self> {
        check_version(fields.format, fields.version)?;
        Flags::from_bits(fields.format, fields.flags.bits())?;
        let flags = fields.flags;
        if fields.format == Format::Model && (fields.schema_size != 0 || fields.num_rows != 0) {
            return Err(inconsistent(
                "an .apr header has no schema_size or num_rows",
            ));
        }
        let large = fields.payload_size == DeclaredSize::InChunkIndex
            || fields.uncompressed_size == DeclaredSize::InChunkIndex;
        if large && !flags.contains(Flags::STREAMING) {
            return Err(inconsistent(
                "a size of 0xFFFFFFFF requires the STREAMING chunk index",
            ));
        }
        if flags.contains(Flags::TRUENO_NATIVE) && fields.compression != Compression::None {
            // 000 §10.8: compression and zero-copy are mutually exclusive.
            return Err(inconsistent("TRUENO_NATIVE requires compression none"));
        }
        if fields.compression == Compression::None
            && !flags.contains(Flags::ENCRYPTED)
            && fields.payload_size != fields.uncompressed_size
        {
            return Err(FormatError::SizeMismatch {
                what: "uncompressed_size of an uncompressed, unencrypted payload",
                declared: u64::from(fields.uncompressed_size.raw()),
                found: u64::from(fields.payload_size.raw()),
            }
            .into());
        }
        Ok(Self { fields })
    }

    /// Parses and validates the first 32 bytes of a file. Checks run in the specs' order: magic,
    /// then version, then every other header rule.
    ///
    /// # Errors
    /// `InvalidFormat` (bad magic, too short, or a broken rule) or `UnsupportedVersion`.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let (format, version) = identify(bytes)?;
        let Some(header) = bytes.get(..HEADER_LEN) else {
            return Err(Error::truncated(
                Section::Header,
                0,
                HEADER_LEN as u64,
                bytes.len() as u64,
            ));
        };
        // Bytes 0-5 (magic, version) were checked by `identify`.
        let mut fields = Reader::new(&header[6..]);
        let (type_id, metadata_size, payload_size, uncompressed_size, compression, flags) = (
            fields.u16(),
            fields.u32(),
            fields.u32(),
            fields.u32(),
            fields.u8(),
            fields.u8(),
        );
        let (schema_size, rows) = (fields.u16(), fields.u64());
        // `header` is HEADER_LEN bytes: every field is present.
        fn read<T>(field: Option<T>) -> Result<T> {
            field.ok_or_else(|| Error::truncated(Section::Header, 0, HEADER_LEN as u64, 0))
        }
        let compression = Compression::from_id(read(compression)?)?;
        let flags = Flags::from_bits(format, read(flags)?)?;
        let (schema_size, num_rows) = match format {
            Format::Dataset => (read(schema_size)?, read(rows)?),
            Format::Model => {
                // 001 §3: bytes 22-31 are reserved and zero-filled.
                if let Some(at) = (22..32).find(|&at| header[at] != 0) {
                    return Err(FormatError::ReservedByte {
                        offset: u8::try_from(at).unwrap_or(u8::MAX),
                        value: header[at],
                    }
                    .into());
                }
                (0, 0)
            }
        };
        Self::new(HeaderFields {
            format,
            version,
            type_id: read(type_id)?,
            metadata_size: read(metadata_size)?,
            payload_size: DeclaredSize::from_raw(read(payload_size)?),
            uncompressed_size: DeclaredSize::from_raw(read(uncompressed_size)?),
            compression,
            flags,
            schema_size,
            num_rows,
        })
    }

    /// The 32 bytes of this header.
    #[must_use]
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let f = &self.fields;
        let mut out = Vec::with_capacity(HEADER_LEN);
        let mut writer = Writer::new(&mut out);
        writer
            .bytes(&f.format.magic())
            .u8(f.version.major)
            .u8(f.version.minor)
            .u16(f.type_id)
            .u32(f.metadata_size)
            .u32(f.payload_size.raw())
            .u32(f.uncompressed_size.raw())
            .u8(f.compression.id())
            .u8(f.flags.bits());
        if f.format == Format::Dataset {
            writer.u16(f.schema_size).u64(f.num_rows);
        }
        // Models: bytes 22-31 are reserved and zero (001 §3).
        out.resize(HEADER_LEN, 0);
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&out);
        header
    }

    /// The validated fields.
    #[must_use]
    pub fn fields(&self) -> &HeaderFields {
        &self.fields
    }

    /// Dataset or model.
    #[must_use]
    pub fn format(&self) -> Format {
        self.fields.format
    }

    /// The format version.
    #[must_use]
    pub fn version(&self) -> Version {
        self.fields.version
    }

    /// `dataset_type` or `model_type`.
    #[must_use]
    pub fn type_id(&self) -> u16 {
        self.fields.type_id
    }

    /// Flags.
    #[must_use]
    pub fn flags(&self) -> Flags {
        self.fields.flags
    }

    /// Payload compression.
    #[must_use]
    pub fn compression(&self) -> Compression {
        self.fields.compression
    }

    /// Bytes of metadata.
    #[must_use]
    pub fn metadata_size(&self) -> u32 {
        self.fields.metadata_size
    }

    /// Bytes of schema (zero for models).
    #[must_use]
    pub fn schema_size(&self) -> u16 {
        self.fields.schema_size
    }

    /// Row count (zero for models).
    #[must_use]
    pub fn num_rows(&self) -> u64 {
        self.fields.num_rows
    }

    /// The stored payload size field.
    #[must_use]
    pub fn payload_size(&self) -> DeclaredSize {
        self.fields.payload_size
    }

    /// The decoded payload size field.
    #[must_use]
    pub fn uncompressed_size(&self) -> DeclaredSize {
        self.fields.uncompressed_size
    }
}

/// Reads magic and version, the two checks that come before the checksum.
///
/// # Errors
/// `InvalidFormat` if fewer than 6 bytes are present or the magic is unknown;
/// `UnsupportedVersion` if the version is outside the supported range.
pub fn identify(bytes: &[u8]) -> Result<(Format, Version)> {
    let Some(&[m0, m1, m2, m3]) = bytes.get(..4) else {
        return Err(Error::truncated(
            Section::Header,
            0,
            HEADER_LEN as u64,
            bytes.len() as u64,
        ));
    };
    let magic = [m0, m1, m2, m3];
    let format = Format::from_magic(magic).ok_or(FormatError::BadMagic { found: magic })?;
    let Some(&[major, minor]) = bytes.get(4..6) else {
        return Err(Error::truncated(
            Section::Header,
            0,
            HEADER_LEN as u64,
            bytes.len() as u64,
        ));
    };
    let version = Version { major, minor };
    check_version(format, version)?;
    Ok((format, version))
}

fn check_version(format: Format, version: Version) -> Result<()> {
    let (min, max) = (format.oldest_version(), format.current_version());
    if version < min || version > max {
        return Err(Error::UnsupportedVersion {
            format,
            found: version,
            min,
            max,
        });
    }
    Ok(())
}

fn inconsistent(reason: &'static str) -> Error {
    FormatError::Inconsistent { reason }.into()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::error::Signal;

    fn version_strategy() -> impl Strategy<Value = Version> {
        (any::<u8>(), any::<u8>()).prop_map(|(major, minor)| Version { major, minor })
    }

    fn size_strategy() -> impl Strategy<Value = DeclaredSize> {
        prop_oneof![
            9 => any::<u32>().prop_map(DeclaredSize::from_raw),
            1 => Just(DeclaredSize::InChunkIndex),
        ]
    }

    prop_compose! {
        fn fields_strategy()(
            format in prop_oneof![Just(Format::Dataset), Just(Format::Model)],
            version in version_strategy(),
            type_id in any::<u16>(),
            metadata_size in any::<u32>(),
            payload_size in size_strategy(),
            uncompressed_size in size_strategy(),
            compression in prop::sample::select(Compression::ALL.to_vec()),
            flags in any::<u8>(),
            schema_size in any::<u16>(),
            num_rows in any::<u64>(),
        ) -> HeaderFields {
            HeaderFields {
                format, version, type_id, metadata_size, payload_size, uncompressed_size,
                compression, flags: Flags(flags), schema_size, num_rows,
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Every header `Header::new` accepts survives encode -> parse unchanged; every header it
        /// refuses gets a typed error, and the raw bytes of that header are refused by `parse` too.
        #[test]
        fn header_encode_parse_is_identity_and_invalid_fields_are_refused(fields in fields_strategy()) {
            match Header::new(fields.clone()) {
                Ok(header) => {
                    let bytes = header.encode();
                    let parsed = Header::parse(&bytes).expect("a valid header parses");
                    prop_assert_eq!(&parsed, &header);
                    prop_assert_eq!(parsed.encode(), bytes);
                }
                Err(error) => {
                    prop_assert!(matches!(
                        error.signal(),
                        Signal::InvalidFormat | Signal::UnsupportedVersion
                    ));
                }
            }
        }

        /// Arbitrary 32-byte strings either parse into a header that re-encodes to the same bytes,
        /// or are refused with a typed error; never a panic.
        #[test]
        fn arbitrary_header_bytes_parse_canonically_or_fail(bytes in prop::array::uniform32(any::<u8>())) {
            if let Ok(header) = Header::parse(&bytes) {
                prop_assert_eq!(header.encode(), bytes);
            }
        }

        /// Valid headers stay valid when only the magic's own format's fields are varied.
        #[test]
        fn every_supported_version_is_accepted(minor in 0u8..=7, model in any::<bool>()) {
            let format = if model { Format::Model } else { Format::Dataset };
            let version = Version { major: 1, minor };
            let result = Header::new(HeaderFields {
                format, version, type_id: 1, metadata_size: 0,
                payload_size: DeclaredSize::Exact(0), uncompressed_size: DeclaredSize::Exact(0),
                compression: Compression::None, flags: Flags::empty(), schema_size: 0, num_rows: 0,
            });
            prop_assert_eq!(result.is_ok(), version <= format.current_version());
        }
    }

    fn minimal(format: Format) -> HeaderFields {
        HeaderFields {
            format,
            version: format.current_version(),
            type_id: 1,
            metadata_size: 10,
            payload_size: DeclaredSize::Exact(100),
            uncompressed_size: DeclaredSize::Exact(100),
            compression: Compression::None,
            flags: Flags::empty(),
            schema_size: 0,
            num_rows: 0,
        }
    }

    #[test]
    fn header_layout_matches_the_documented_offsets() {
        let mut fields = minimal(Format::Dataset);
        fields.type_id = 0x0011;
        fields.schema_size = 0x0203;
        fields.num_rows = 0x0102_0304_0506_0708;
        fields.flags = Flags::SIGNED;
        let bytes = Header::new(fields).unwrap().encode();
        let expected: [u8; 32] = [
            b'A', b'L', b'D', b'F', 1, 2, 0x11, 0x00, // magic, version 1.2, type
            10, 0, 0, 0, 100, 0, 0, 0, // metadata_size, payload_size
            100, 0, 0, 0, 0x00, 0x02, 0x03, 0x02, // uncompressed, compression, flags, schema
            8, 7, 6, 5, 4, 3, 2, 1, // num_rows
        ];
        assert_eq!(bytes, expected);
    }

    #[test]
    fn reserved_model_bytes_must_be_zero() {
        let mut bytes = Header::new(minimal(Format::Model)).unwrap().encode();
        bytes[27] = 1;
        let error = Header::parse(&bytes).unwrap_err();
        assert!(matches!(
            error,
            Error::InvalidFormat(FormatError::ReservedByte {
                offset: 27,
                value: 1
            })
        ));
    }

    #[test]
    fn quantized_flag_is_reserved_for_datasets() {
        let mut fields = minimal(Format::Dataset);
        fields.flags = Flags::QUANTIZED;
        assert!(matches!(
            Header::new(fields),
            Err(Error::InvalidFormat(FormatError::ReservedFlags {
                bits: 0x20
            }))
        ));
        let mut fields = minimal(Format::Model);
        fields.flags = Flags::QUANTIZED;
        assert!(Header::new(fields).is_ok());
    }

    #[test]
    fn newer_minor_and_other_major_versions_are_unsupported() {
        for (major, minor) in [(1, 8), (2, 0), (0, 9)] {
            let mut bytes = Header::new(minimal(Format::Model)).unwrap().encode();
            bytes[4] = major;
            bytes[5] = minor;
            let error = Header::parse(&bytes).unwrap_err();
            assert_eq!(
                error.signal(),
                Signal::UnsupportedVersion,
                "{major}.{minor}"
            );
        }
    }

    #[test]
    fn magic_is_checked_before_version() {
        let mut bytes = Header::new(minimal(Format::Model)).unwrap().encode();
        bytes[0] = b'X';
        bytes[4] = 9;
        assert!(matches!(
            Header::parse(&bytes),
            Err(Error::InvalidFormat(FormatError::BadMagic { .. }))
        ));
    }

    #[test]
    fn trueno_native_refuses_compression_and_sentinel_needs_streaming() {
        let mut fields = minimal(Format::Model);
        fields.flags = Flags::TRUENO_NATIVE;
        fields.compression = Compression::Lz4;
        assert!(Header::new(fields).is_err());
        let mut fields = minimal(Format::Model);
        fields.payload_size = DeclaredSize::InChunkIndex;
        fields.uncompressed_size = DeclaredSize::InChunkIndex;
        assert!(Header::new(fields.clone()).is_err());
        fields.flags = Flags::STREAMING;
        assert!(Header::new(fields).is_ok());
    }

    #[test]
    fn declared_size_uses_the_sentinel_only_when_needed() {
        assert_eq!(DeclaredSize::for_size(0), DeclaredSize::Exact(0));
        assert_eq!(
            DeclaredSize::for_size(u64::from(u32::MAX) - 1),
            DeclaredSize::Exact(u32::MAX - 1)
        );
        assert_eq!(
            DeclaredSize::for_size(u64::from(u32::MAX)),
            DeclaredSize::InChunkIndex
        );
        assert_eq!(DeclaredSize::for_size(u64::MAX), DeclaredSize::InChunkIndex);
    }
}
