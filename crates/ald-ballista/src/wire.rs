//! The bytes of the two `.ald` plan nodes: a table (the logical plan's `AldTable`, client to
//! scheduler) and a scan (the physical plan's `AldScanExec`, scheduler to executors).
//!
//! A node is `\0ALD`, a kind byte (`T` table, `S` scan, `U` units scan: a scan whose partitions
//! are its input's, `crate::distributed`), a version byte (1), then little-endian fields:
//!
//! ```text
//! table: schema, files
//! scan:  schema, files, projection, limit, partitions, signers (a units scan: no partition)
//! schema:     u32 length, the Arrow IPC schema message as an .ald schema section holds it
//! files:      u32 count, each: u32 length + UTF-8 path, u64 file size, u64 rows,
//!             u8 flags (1 STREAMING, 2 encrypted, 4 object), [object], u32 chunk count, each
//!             chunk: u64 stored offset, u64 stored size, u64 decoded size, u64 first row,
//!             u64 rows, u32 CRC-32C
//! object:     (flag 4 only: a file on object storage, whose path is then its URL)
//!             u32 length + UTF-8 store URL (`s3://bucket/`), u32 length + UTF-8 key,
//!             u8 0 (no ETag) or 1 then u32 length + UTF-8 ETag
//! projection: u32 count, each u32 column
//! limit:      u8 0 (none) or 1 then u64
//! partitions: u32 count, each: u32 unit count, each unit u32 file index, u32 chunk
//! signers:    u8 0 (no signature required) or 1 then u32 count, each 32 bytes (Ed25519 public key)
//! ```
//!
//! No secret is ever written: keys stay in the processes that hold them (`docs/datafusion.md`).
//!
//! Decoding is of untrusted bytes (a network peer): a node larger than [`MAX_NODE_BYTES`] is
//! refused before anything is read, every count is checked against the bytes left (times the
//! smallest encoding of one element) before anything is allocated for it, unknown flags, trailing
//! bytes and non-UTF-8 paths are refused, and the schema goes through `ald`'s own schema section
//! parser. What decodes is only well-formed: whether the parts hold together is
//! `ald-datafusion`'s `from_parts` check, and whether they describe the files on disk is checked
//! when the scan opens them.
//!
//! The leading NUL byte keeps these nodes apart from Ballista's own protobuf nodes (protobuf has no
//! field number 0), so a codec can tell which is which from the first bytes.

use std::path::PathBuf;
use std::sync::Arc;

use ald_datafusion::{AldScanParts, FileInfo, ObjectVersion};
use envelope_core::ChunkEntry;
use envelope_sign::SigningPublicKey;

use crate::{Error, Result};

/// The first four bytes of every `.ald` plan node.
pub(crate) const MAGIC: [u8; 4] = *b"\0ALD";
/// The kind byte of a table node.
pub(crate) const TABLE: u8 = b'T';
/// The kind byte of a scan node.
pub(crate) const SCAN: u8 = b'S';
/// The kind byte of a units scan node (a scan whose partitions are its input's; the partitions
/// field is empty).
pub(crate) const UNITS: u8 = b'U';
/// The version this build writes and reads.
pub(crate) const VERSION: u8 = 1;

/// The largest node decoded: 64 MiB (Ballista's own gRPC messages are smaller by default), which
/// describes millions of chunks.
pub const MAX_NODE_BYTES: usize = 64 << 20;

const STREAMING: u8 = 1;
const ENCRYPTED: u8 = 2;
const OBJECT: u8 = 4;

/// The smallest encoding of one file (an empty path and no chunk).
const MIN_FILE_BYTES: usize = 4 + 8 + 8 + 1 + 4;
/// The encoding of one chunk index entry.
const CHUNK_BYTES: usize = 5 * 8 + 4;
/// The smallest encoding of one partition (no unit).
const MIN_PARTITION_BYTES: usize = 4;
/// The encoding of one unit.
const UNIT_BYTES: usize = 8;

/// Whether `bytes` is an `.ald` node of `kind` (any version): the codecs hand everything else to
/// the codec they wrap.
pub(crate) fn is_node(bytes: &[u8], kind: u8) -> bool {
    bytes.len() >= 5 && bytes[..4] == MAGIC && bytes[4] == kind
}

/// The node of the table with `files` and `file_schema`.
///
/// # Errors
/// `Usage` for a path that is not UTF-8 or counts beyond 32 bits; `ald`'s error for a schema it
/// cannot encode.
pub(crate) fn encode_table(
    files: &[FileInfo],
    file_schema: &arrow_schema::Schema,
) -> Result<Vec<u8>> {
    let mut out = header(TABLE);
    put_schema(&mut out, file_schema)?;
    put_files(&mut out, files)?;
    Ok(out)
}

/// The files and schema of a table node.
///
/// # Errors
/// `InvalidFormat`, `UnsupportedVersion`, or the schema parser's error, as the module says.
pub(crate) fn decode_table(bytes: &[u8]) -> Result<(Vec<FileInfo>, arrow_schema::SchemaRef)> {
    let mut reader = Reader::open(bytes, TABLE)?;
    let schema = reader.schema()?;
    let files = reader.files()?;
    reader.finish()?;
    Ok((files, schema))
}

/// The node of a scan.
///
/// # Errors
/// As [`encode_table`].
pub(crate) fn encode_scan(parts: &AldScanParts) -> Result<Vec<u8>> {
    encode_scan_as(parts, SCAN)
}

/// The node of a scan, of kind `kind` ([`SCAN`] or [`UNITS`]).
///
/// # Errors
/// As [`encode_table`].
pub(crate) fn encode_scan_as(parts: &AldScanParts, kind: u8) -> Result<Vec<u8>> {
    let mut out = header(kind);
    put_schema(&mut out, &parts.file_schema)?;
    put_files(&mut out, &parts.files)?;
    put_count(&mut out, parts.projection.len(), "columns")?;
    for &column in &parts.projection {
        put_index(&mut out, column, "a column index")?;
    }
    match parts.limit {
        None => out.push(0),
        Some(limit) => {
            out.push(1);
            out.extend_from_slice(&(limit as u64).to_le_bytes());
        }
    }
    put_count(&mut out, parts.partitions.len(), "partitions")?;
    for units in &parts.partitions {
        put_count(&mut out, units.len(), "units in a partition")?;
        for &(file, chunk) in units {
            put_index(&mut out, file, "a file index")?;
            put_index(&mut out, chunk, "a chunk index")?;
        }
    }
    match &parts.required_signers {
        None => out.push(0),
        Some(keys) => {
            out.push(1);
            put_count(&mut out, keys.len(), "trusted keys")?;
            for key in keys {
                out.extend_from_slice(key.as_bytes());
            }
        }
    }
    Ok(out)
}

/// The parts of a scan node.
///
/// # Errors
/// As [`decode_table`].
pub(crate) fn decode_scan(bytes: &[u8]) -> Result<AldScanParts> {
    decode_scan_as(bytes, SCAN)
}

/// The parts of a scan node of kind `kind`.
///
/// # Errors
/// As [`decode_table`].
pub(crate) fn decode_scan_as(bytes: &[u8], kind: u8) -> Result<AldScanParts> {
    let mut reader = Reader::open(bytes, kind)?;
    let file_schema = reader.schema()?;
    let files: Arc<[FileInfo]> = reader.files()?.into();
    let columns = reader.count(4)?;
    let mut projection = Vec::with_capacity(columns);
    for _ in 0..columns {
        projection.push(reader.index()?);
    }
    let limit = match reader.u8()? {
        0 => None,
        1 => Some(usize::try_from(reader.u64()?).map_err(|_| malformed("a limit beyond usize"))?),
        _ => return Err(malformed("a limit tag that is neither 0 nor 1")),
    };
    let count = reader.count(MIN_PARTITION_BYTES)?;
    let mut partitions = Vec::with_capacity(count);
    for _ in 0..count {
        let units = reader.count(UNIT_BYTES)?;
        let mut partition = Vec::with_capacity(units);
        for _ in 0..units {
            partition.push((reader.index()?, reader.index()?));
        }
        partitions.push(partition);
    }
    let required_signers = match reader.u8()? {
        0 => None,
        1 => {
            let count = reader.count(32)?;
            let mut keys = Vec::with_capacity(count);
            for _ in 0..count {
                keys.push(SigningPublicKey::from_bytes(reader.array::<32>()?));
            }
            Some(keys)
        }
        _ => return Err(malformed("a signature policy tag that is neither 0 nor 1")),
    };
    reader.finish()?;
    Ok(AldScanParts {
        files,
        file_schema,
        projection,
        limit,
        partitions,
        required_signers,
    })
}

fn malformed(what: &'static str) -> Error {
    Error::Malformed { what }
}

fn header(kind: u8) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.push(kind);
    out.push(VERSION);
    out
}

fn put_count(out: &mut Vec<u8>, count: usize, what: &str) -> Result<()> {
    let count = u32::try_from(count).map_err(|_| Error::Unshippable {
        what: format!("more {what} than a u32 counts"),
    })?;
    out.extend_from_slice(&count.to_le_bytes());
    Ok(())
}

fn put_index(out: &mut Vec<u8>, index: usize, what: &str) -> Result<()> {
    let index = u32::try_from(index).map_err(|_| Error::Unshippable {
        what: format!("{what} beyond u32"),
    })?;
    out.extend_from_slice(&index.to_le_bytes());
    Ok(())
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8], what: &str) -> Result<()> {
    put_count(out, bytes.len(), what)?;
    out.extend_from_slice(bytes);
    Ok(())
}

fn put_schema(out: &mut Vec<u8>, schema: &arrow_schema::Schema) -> Result<()> {
    let message = ald::ipc::schema_message(schema).map_err(Error::Schema)?;
    put_bytes(out, &message, "schema bytes")
}

fn put_files(out: &mut Vec<u8>, files: &[FileInfo]) -> Result<()> {
    put_count(out, files.len(), "files")?;
    for file in files {
        let path = file.path.to_str().ok_or_else(|| Error::Unshippable {
            what: format!("{} is not a UTF-8 path", file.path.display()),
        })?;
        put_bytes(out, path.as_bytes(), "path bytes")?;
        out.extend_from_slice(&file.file_size.to_le_bytes());
        out.extend_from_slice(&file.num_rows.to_le_bytes());
        let mut flags = 0;
        if file.streaming {
            flags |= STREAMING;
        }
        if file.encrypted {
            flags |= ENCRYPTED;
        }
        if file.object.is_some() {
            flags |= OBJECT;
        }
        out.push(flags);
        if let Some(object) = &file.object {
            put_bytes(out, object.store.as_bytes(), "store URL bytes")?;
            put_bytes(out, object.key.as_bytes(), "key bytes")?;
            match &object.e_tag {
                None => out.push(0),
                Some(e_tag) => {
                    out.push(1);
                    put_bytes(out, e_tag.as_bytes(), "ETag bytes")?;
                }
            }
        }
        put_count(out, file.chunks.len(), "chunks in a file")?;
        for chunk in &file.chunks {
            for value in [
                chunk.stored_offset,
                chunk.stored_size,
                chunk.uncompressed_size,
                chunk.first_item,
                chunk.item_count,
            ] {
                out.extend_from_slice(&value.to_le_bytes());
            }
            out.extend_from_slice(&chunk.stored_crc32c.to_le_bytes());
        }
    }
    Ok(())
}

/// A cursor over a node's bytes that never reads past them.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    /// The fields of a node of `kind`, after its header.
    fn open(bytes: &'a [u8], kind: u8) -> Result<Self> {
        if bytes.len() > MAX_NODE_BYTES {
            return Err(Error::TooLarge {
                size: bytes.len(),
                max: MAX_NODE_BYTES,
            });
        }
        if !is_node(bytes, kind) {
            return Err(malformed("not an .ald plan node of the expected kind"));
        }
        let mut reader = Self { bytes: &bytes[5..] };
        let version = reader.u8()?;
        if version != VERSION {
            return Err(Error::Version {
                found: version,
                expected: VERSION,
            });
        }
        Ok(reader)
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        if len > self.bytes.len() {
            return Err(malformed("truncated"));
        }
        let (taken, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A u32 index.
    fn index(&mut self) -> Result<usize> {
        usize::try_from(self.u32()?).map_err(|_| malformed("an index beyond usize"))
    }

    /// A count of elements whose encoding takes at least `min_bytes` each: refused unless that
    /// many could fit in the bytes left, so nothing is allocated beyond the bytes present.
    fn count(&mut self, min_bytes: usize) -> Result<usize> {
        let count = self.index()?;
        if count.saturating_mul(min_bytes) > self.bytes.len() {
            return Err(malformed("a count larger than the bytes left"));
        }
        Ok(count)
    }

    /// A u32 length and that many bytes of UTF-8.
    fn text(&mut self, not_utf8: &'static str) -> Result<String> {
        let len = self.count(1)?;
        let text = std::str::from_utf8(self.take(len)?).map_err(|_| malformed(not_utf8))?;
        Ok(text.to_owned())
    }

    fn schema(&mut self) -> Result<arrow_schema::SchemaRef> {
        let len = self.count(1)?;
        ald::ipc::parse_schema(self.take(len)?).map_err(Error::Schema)
    }

    fn files(&mut self) -> Result<Vec<FileInfo>> {
        let count = self.count(MIN_FILE_BYTES)?;
        let mut files = Vec::with_capacity(count);
        for _ in 0..count {
            let len = self.count(1)?;
            let path = std::str::from_utf8(self.take(len)?)
                .map_err(|_| malformed("a path that is not UTF-8"))?;
            if path.is_empty() || path.contains('\0') {
                return Err(malformed("an empty path or one with a NUL byte"));
            }
            let file_size = self.u64()?;
            let num_rows = self.u64()?;
            let flags = self.u8()?;
            if flags & !(STREAMING | ENCRYPTED | OBJECT) != 0 {
                return Err(malformed("unknown file flags"));
            }
            let object = if flags & OBJECT == 0 {
                None
            } else {
                let store = self.text("a store URL that is not UTF-8")?;
                let key = self.text("a key that is not UTF-8")?;
                let e_tag = match self.u8()? {
                    0 => None,
                    1 => Some(self.text("an ETag that is not UTF-8")?),
                    _ => return Err(malformed("an ETag tag that is neither 0 nor 1")),
                };
                Some(ObjectVersion { store, key, e_tag })
            };
            let chunk_count = self.count(CHUNK_BYTES)?;
            let mut chunks = Vec::with_capacity(chunk_count);
            for _ in 0..chunk_count {
                chunks.push(ChunkEntry {
                    stored_offset: self.u64()?,
                    stored_size: self.u64()?,
                    uncompressed_size: self.u64()?,
                    first_item: self.u64()?,
                    item_count: self.u64()?,
                    stored_crc32c: self.u32()?,
                });
            }
            files.push(FileInfo {
                path: PathBuf::from(path),
                file_size,
                chunks,
                num_rows,
                streaming: flags & STREAMING != 0,
                encrypted: flags & ENCRYPTED != 0,
                object,
            });
        }
        Ok(files)
    }

    fn finish(self) -> Result<()> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(malformed("bytes after the end of the node"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field, Schema};
    use proptest::prelude::*;

    fn schema() -> arrow_schema::SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("city", DataType::Utf8, true),
        ]))
    }

    fn chunk() -> impl Strategy<Value = ChunkEntry> {
        (
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
        )
            .prop_map(
                |(stored_offset, stored_size, uncompressed_size, first_item, item_count, crc)| {
                    ChunkEntry {
                        stored_offset,
                        stored_size,
                        uncompressed_size,
                        first_item,
                        item_count,
                        stored_crc32c: crc,
                    }
                },
            )
    }

    fn object() -> impl Strategy<Value = ObjectVersion> {
        (
            "[a-z0-9]{1,8}://[a-z0-9.-]{0,12}/",
            "[a-zé/._ -]{0,24}",
            proptest::option::of("[ -~]{0,40}"),
        )
            .prop_map(|(store, key, e_tag)| ObjectVersion { store, key, e_tag })
    }

    fn file() -> impl Strategy<Value = FileInfo> {
        (
            "[a-zé/._-]{1,24}",
            any::<u64>(),
            any::<u64>(),
            any::<bool>(),
            any::<bool>(),
            proptest::collection::vec(chunk(), 0..5),
            proptest::option::of(object()),
        )
            .prop_map(
                |(path, file_size, num_rows, streaming, encrypted, chunks, object)| FileInfo {
                    path: path.into(),
                    file_size,
                    chunks,
                    num_rows,
                    streaming,
                    encrypted,
                    object,
                },
            )
    }

    fn same_files(a: &[FileInfo], b: &[FileInfo]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(a, b)| {
                a.path == b.path
                    && a.file_size == b.file_size
                    && a.chunks == b.chunks
                    && a.num_rows == b.num_rows
                    && a.streaming == b.streaming
                    && a.encrypted == b.encrypted
                    && a.object == b.object
            })
    }

    fn scan() -> impl Strategy<Value = AldScanParts> {
        (
            proptest::collection::vec(file(), 0..4),
            proptest::collection::vec(0usize..1000, 0..4),
            proptest::option::of(any::<u32>()),
            proptest::collection::vec(
                proptest::collection::vec((0usize..100, 0usize..100), 0..4),
                0..4,
            ),
            proptest::option::of(proptest::collection::vec(any::<[u8; 32]>(), 0..3)),
        )
            .prop_map(
                |(files, projection, limit, partitions, signers)| AldScanParts {
                    files: files.into(),
                    file_schema: schema(),
                    projection,
                    limit: limit.map(|limit| limit as usize),
                    partitions,
                    required_signers: signers
                        .map(|keys| keys.into_iter().map(SigningPublicKey::from_bytes).collect()),
                },
            )
    }

    proptest! {
        #[test]
        fn tables_round_trip(files in proptest::collection::vec(file(), 0..5)) {
            let bytes = encode_table(&files, &schema()).unwrap();
            prop_assert!(is_node(&bytes, TABLE) && !is_node(&bytes, SCAN));
            let (back, back_schema) = decode_table(&bytes).unwrap();
            prop_assert!(same_files(&files, &back));
            prop_assert_eq!(back_schema, schema());
        }

        #[test]
        fn scans_round_trip(parts in scan()) {
            let bytes = encode_scan(&parts).unwrap();
            let back = decode_scan(&bytes).unwrap();
            prop_assert!(same_files(&parts.files, &back.files));
            prop_assert_eq!(&back.file_schema, &parts.file_schema);
            prop_assert_eq!(&back.projection, &parts.projection);
            prop_assert_eq!(back.limit, parts.limit);
            prop_assert_eq!(&back.partitions, &parts.partitions);
            prop_assert_eq!(&back.required_signers, &parts.required_signers);
        }

        /// Every strict prefix of a node, and every single-byte change of one, is either refused
        /// with a typed error or decodes: never a panic.
        #[test]
        fn damaged_scans_are_refused_or_decoded_never_a_panic(
            parts in scan(),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
        ) {
            let bytes = encode_scan(&parts).unwrap();
            for len in 0..bytes.len() {
                prop_assert!(decode_scan(&bytes[..len]).is_err());
            }
            let mut changed = bytes.clone();
            let at = at.index(changed.len());
            changed[at] = byte;
            let _ = decode_scan(&changed);
            let _ = decode_table(&changed);
        }

        #[test]
        fn arbitrary_bytes_never_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_scan(&bytes);
            if bytes.len() >= 6 {
                bytes[..4].copy_from_slice(&MAGIC);
                bytes[4] = SCAN;
                bytes[5] = VERSION;
                let _ = decode_scan(&bytes);
                bytes[4] = TABLE;
                let _ = decode_table(&bytes);
            }
        }
    }

    #[test]
    fn counts_beyond_the_bytes_are_refused_before_allocating() {
        let mut bytes = header(SCAN);
        put_schema(&mut bytes, &schema()).unwrap();
        // Four billion files announced, none present.
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        let error = decode_scan(&bytes).unwrap_err();
        assert!(
            matches!(error, Error::Malformed { what } if what.contains("count larger")),
            "{error}"
        );
    }

    #[test]
    fn headers_versions_sizes_and_trailing_bytes_are_checked() {
        let bytes = encode_table(&[], &schema()).unwrap();
        let mut newer = bytes.clone();
        newer[5] = VERSION + 1;
        assert!(matches!(
            decode_table(&newer),
            Err(Error::Version {
                found: 2,
                expected: 1
            })
        ));
        assert!(matches!(decode_scan(&bytes), Err(Error::Malformed { .. })));
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(matches!(
            decode_table(&trailing),
            Err(Error::Malformed { what }) if what.contains("after the end")
        ));
        let huge = vec![0u8; MAX_NODE_BYTES + 1];
        assert!(matches!(decode_table(&huge), Err(Error::TooLarge { .. })));
        // A protobuf message never starts with a NUL byte: Ballista's nodes are never ours.
        assert!(!is_node(&[0x0a, 0x02, 0x08, 0x01, 0x00, 0x00], TABLE));
    }

    #[cfg(unix)]
    #[test]
    fn a_path_that_is_not_utf8_cannot_be_shipped() {
        use std::os::unix::ffi::OsStrExt;
        let file = FileInfo {
            path: std::ffi::OsStr::from_bytes(b"/data/\xff.ald").into(),
            file_size: 0,
            chunks: Vec::new(),
            num_rows: 0,
            streaming: false,
            encrypted: false,
            object: None,
        };
        let error = encode_table(&[file], &schema()).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::Usage);
    }
}
