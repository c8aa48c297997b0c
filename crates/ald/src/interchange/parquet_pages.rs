//! The Thrift structures of a Parquet input (its footer and every page header) walked with strict
//! rules before parquet's reader parses them.
//!
//! The `parquet_reader` fuzz target found a 3 KB file that took parquet's reader 323 s: skipping
//! a Thrift field it does not know, parquet 60 loops as many times as a list's declared size even
//! when the elements take no bytes it checks (booleans in a list, which the compact protocol
//! stores as one byte each, are skipped as zero bytes; a `double` or `uuid` skipped past the end
//! of the input is not an error). A size of 2^31 is five bytes of input. This module walks the
//! same bytes first, in time proportional to their length:
//!
//! - every list, set and map declares at most as many elements as bytes remain (each element
//!   takes at least one byte), nesting stops at 64 levels (parquet's limit), and every value lies
//!   within the input;
//! - the footer (`FileMetaData`) is one such structure;
//! - every column chunk lies within the file, no two overlap, and its pages (header, then
//!   `compressed_page_size` bytes) fill it exactly, each header one such structure;
//! - walked as parquet reads it: parquet reads a field it knows by the type it expects, whatever
//!   type the field's header declares, and skips the others (booleans in a skipped collection
//!   take no bytes). A walk that skipped every field by its declared type would disagree with
//!   parquet about where the next field starts, and parquet would go on to parse bytes the walk
//!   never checked (the fuzz target's second finding: a known field declared as a list, read by
//!   parquet as an integer, then a list of 2^31 doubles skipped one `io::copy` at a time). So in a
//!   page header every field parquet knows must be declared with a type whose bytes parquet reads
//!   the same way ([`PAGE_HEADER`]), and skipped fields follow parquet's skip.
//!
//! Reading every page header once costs a pass over the headers, not the data (page bodies are
//! skipped by their declared size).

use bytes::Bytes;
use parquet::file::metadata::ParquetMetaData;

use super::{FileKind, foreign};
use crate::Result;

/// Deepest nesting followed (parquet's own skip limit).
const MAX_DEPTH: u8 = 64;

/// A strict reader of the Thrift compact protocol over a byte slice.
struct Compact<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// Why a Thrift structure was refused (turned into the caller's message).
type Walk<T> = std::result::Result<T, &'static str>;

const TRUNCATED: &str = "a Thrift value runs past the end of its bytes";

impl<'a> Compact<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn byte(&mut self) -> Walk<u8> {
        let byte = *self.bytes.get(self.at).ok_or(TRUNCATED)?;
        self.at += 1;
        Ok(byte)
    }

    fn skip(&mut self, len: u64) -> Walk<()> {
        let len = usize::try_from(len).map_err(|_| TRUNCATED)?;
        if len > self.remaining() {
            return Err(TRUNCATED);
        }
        self.at += len;
        Ok(())
    }

    /// An unsigned LEB128 varint of at most 10 bytes.
    fn varint(&mut self) -> Walk<u64> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7F).checked_shl(shift).unwrap_or(0);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a Thrift varint longer than 10 bytes")
    }

    /// A zigzag-encoded i32.
    fn i32(&mut self) -> Walk<i32> {
        let raw = u32::try_from(self.varint()?).map_err(|_| "a Thrift i32 out of range")?;
        let magnitude = i32::try_from(raw >> 1).map_err(|_| "a Thrift i32 out of range")?;
        Ok(if raw & 1 == 0 {
            magnitude
        } else {
            -magnitude - 1
        })
    }

    /// A collection's declared element count, refused if the elements (at least `min_bytes`
    /// each) cannot fit in what remains.
    fn count(&mut self, count: u64, min_bytes: u64) -> Walk<u64> {
        if count.saturating_mul(min_bytes) > self.remaining() as u64 {
            return Err("a Thrift collection declares more elements than bytes remain");
        }
        Ok(count)
    }

    /// Skips a value of compact type `kind` as parquet's `skip` does.
    fn value(&mut self, kind: u8, depth: u8) -> Walk<()> {
        let depth = depth
            .checked_sub(1)
            .ok_or("Thrift values nested deeper than 64 levels")?;
        // Booleans take no bytes, in a collection too: that is how parquet's skip reads them
        // (the compact protocol stores a byte per element, but what matters here is agreeing
        // with parquet on where the next value starts). `count` still bounds a collection of
        // them by the bytes that remain.
        match kind {
            1 | 2 => Ok(()),
            3 => self.skip(1),
            4..=6 => self.varint().map(drop),
            7 => self.skip(8),
            8 => {
                let len = self.varint()?;
                self.skip(len)
            }
            9 | 10 => {
                let header = self.byte()?;
                let element = header & 0x0F;
                let count = match header >> 4 {
                    15 => self.varint()?,
                    short => u64::from(short),
                };
                let count = self.count(count, 1)?;
                for _ in 0..count {
                    self.value(element, depth)?;
                }
                Ok(())
            }
            11 => {
                let count = self.varint()?;
                if count == 0 {
                    return Ok(());
                }
                let types = self.byte()?;
                let count = self.count(count, 2)?;
                for _ in 0..count {
                    self.value(types >> 4, depth)?;
                    self.value(types & 0x0F, depth)?;
                }
                Ok(())
            }
            12 => self.fields(depth, |_, _, _| Ok(false)),
            13 => self.skip(16),
            _ => Err("an unknown Thrift type"),
        }
    }

    /// Walks a struct's fields; `field` may read a field itself (returning `true`), otherwise the
    /// field is skipped.
    fn fields(
        &mut self,
        depth: u8,
        mut field: impl FnMut(i16, u8, &mut Self) -> Walk<bool>,
    ) -> Walk<()> {
        let mut last_id = 0i16;
        loop {
            let header = self.byte()?;
            let kind = header & 0x0F;
            if kind == 0 {
                return Ok(());
            }
            let id = match header >> 4 {
                0 => {
                    let raw = u16::try_from(self.varint()?)
                        .map_err(|_| "a Thrift field id out of range")?;
                    let magnitude =
                        i16::try_from(raw >> 1).map_err(|_| "a Thrift field id out of range")?;
                    if raw & 1 == 0 {
                        magnitude
                    } else {
                        -magnitude - 1
                    }
                }
                delta => last_id
                    .checked_add(i16::from(delta))
                    .ok_or("a Thrift field id out of range")?,
            };
            last_id = id;
            if !field(id, kind, self)? {
                self.value(kind, depth)?;
            }
        }
    }
}

/// How parquet reads a field it knows (the Thrift IDL of parquet 60's page headers).
#[derive(Debug, Clone, Copy)]
enum Known {
    /// An `i32` or an enum: a zigzag varint, which is what I16, I32 and I64 fields hold too.
    Int,
    /// A `bool`: the value is in the field header, no bytes follow.
    Bool,
    /// A struct parquet reads with these known fields.
    Struct(&'static [(i16, Known)]),
}

/// `DataPageHeader` as `read_thrift_without_stats` reads it (statistics, field 5, skipped).
const DATA_PAGE_HEADER: &[(i16, Known)] = &[
    (1, Known::Int),
    (2, Known::Int),
    (3, Known::Int),
    (4, Known::Int),
];
/// `DictionaryPageHeader`: num_values, encoding, is_sorted.
const DICTIONARY_PAGE_HEADER: &[(i16, Known)] =
    &[(1, Known::Int), (2, Known::Int), (3, Known::Bool)];
/// `DataPageHeaderV2` as `read_thrift_without_stats` reads it (statistics, field 8, skipped).
const DATA_PAGE_HEADER_V2: &[(i16, Known)] = &[
    (1, Known::Int),
    (2, Known::Int),
    (3, Known::Int),
    (4, Known::Int),
    (5, Known::Int),
    (6, Known::Int),
    (7, Known::Bool),
];
/// `PageHeader`: type, uncompressed and compressed size, crc, then one of the four headers
/// (`IndexPageHeader` has no fields).
const PAGE_HEADER: &[(i16, Known)] = &[
    (1, Known::Int),
    (2, Known::Int),
    (3, Known::Int),
    (4, Known::Int),
    (5, Known::Struct(DATA_PAGE_HEADER)),
    (6, Known::Struct(&[])),
    (7, Known::Struct(DICTIONARY_PAGE_HEADER)),
    (8, Known::Struct(DATA_PAGE_HEADER_V2)),
];

impl Compact<'_> {
    /// Walks a struct parquet reads with the known fields `known`: each must be declared with a
    /// type parquet's read of it agrees with; the rest are skipped as parquet skips them.
    /// `on_int` sees every known integer field of this struct (not of nested ones).
    fn known_struct(
        &mut self,
        known: &'static [(i16, Known)],
        depth: u8,
        on_int: &mut dyn FnMut(i16, i32),
    ) -> Walk<()> {
        let depth = depth
            .checked_sub(1)
            .ok_or("Thrift values nested deeper than 64 levels")?;
        self.fields(depth, |id, kind, walker| {
            let Some(&(_, expected)) = known.iter().find(|(known_id, _)| *known_id == id) else {
                return Ok(false);
            };
            match (expected, kind) {
                (Known::Int, 4..=6) => on_int(id, walker.i32()?),
                (Known::Bool, 1 | 2) => {}
                (Known::Struct(fields), 12) => {
                    walker.known_struct(fields, depth, &mut |_, _| {})?
                }
                _ => return Err("a page header field of another type than parquet reads"),
            }
            Ok(true)
        })
    }
}

/// Walks the footer of a Parquet input of `file_len` bytes (the Thrift `FileMetaData` before the
/// last 8 bytes, read through `read`), before parquet parses it. Inputs too short to have one, or
/// without the `PAR1` magic, are left to parquet's own refusal.
///
/// # Errors
/// `InvalidFormat` naming Parquet and the rule the footer breaks; the errors of `read`.
pub(crate) fn check_footer(
    file_len: u64,
    mut read: impl FnMut(u64, usize) -> Result<Bytes>,
) -> Result<()> {
    const TAIL: u64 = 8;
    if file_len < TAIL + 4 {
        return Ok(());
    }
    let tail = read(file_len - TAIL, 8)?;
    if &tail[4..] != b"PAR1" {
        return Ok(());
    }
    let footer_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    let Some(start) = (file_len - TAIL).checked_sub(footer_len) else {
        return Ok(());
    };
    let len = usize::try_from(footer_len)
        .map_err(|_| foreign(FileKind::Parquet, "a footer too large"))?;
    let footer = read(start, len)?;
    Compact::new(&footer)
        .value(12, MAX_DEPTH)
        .map_err(|reason| foreign(FileKind::Parquet, format!("the footer: {reason}")))
}

/// Checks the column chunks `metadata` lists in a Parquet input of `file_len` bytes, read through
/// `read`: within the file, not overlapping, each filled exactly by its pages, every page header
/// a valid Thrift structure.
///
/// # Errors
/// `InvalidFormat` naming Parquet, the row group and column; the errors of `read`.
pub(crate) fn check_chunks(
    metadata: &ParquetMetaData,
    file_len: u64,
    mut read: impl FnMut(u64, usize) -> Result<Bytes>,
) -> Result<()> {
    let refuse = |what: &str, reason: &str| foreign(FileKind::Parquet, format!("{what}: {reason}"));
    let mut chunks = Vec::new();
    for (group, row_group) in metadata.row_groups().iter().enumerate() {
        for (column, chunk) in row_group.columns().iter().enumerate() {
            let start = chunk
                .dictionary_page_offset()
                .unwrap_or_else(|| chunk.data_page_offset());
            let span = u64::try_from(start)
                .ok()
                .zip(u64::try_from(chunk.compressed_size()).ok())
                .and_then(|(start, len)| Some((start, start.checked_add(len)?)))
                .filter(|(_, end)| *end <= file_len);
            let Some(span) = span else {
                return Err(foreign(
                    FileKind::Parquet,
                    format!("row group {group}, column {column}: a column chunk outside the file"),
                ));
            };
            chunks.push((span, group, column));
        }
    }
    chunks.sort_unstable();
    if chunks.windows(2).any(|pair| pair[1].0.0 < pair[0].0.1) {
        return Err(foreign(FileKind::Parquet, "two column chunks overlap"));
    }
    for ((start, end), group, column) in chunks {
        let what = || format!("row group {group}, column {column}: a page header");
        let mut at = start;
        while at < end {
            // Headers are read through a window that grows only for a header longer than it
            // (large statistics): the pages' bodies are never read here.
            let mut window = PAGE_HEADER_WINDOW.min(end - at);
            let (header_len, body) = loop {
                let len = usize::try_from(window)
                    .map_err(|_| foreign(FileKind::Parquet, "a page header too large"))?;
                let bytes = read(at, len)?;
                match page_header(&bytes) {
                    Ok(found) => break found,
                    Err(TRUNCATED) if window < end - at => window = (window * 4).min(end - at),
                    Err(reason) => return Err(refuse(&what(), reason)),
                }
            };
            at = at
                .checked_add(header_len)
                .and_then(|at| at.checked_add(body))
                .filter(|next| *next <= end)
                .ok_or_else(|| refuse(&what(), "its page runs past its column chunk"))?;
        }
    }
    Ok(())
}

/// Bytes read at first for a page header (grown while a header is longer).
const PAGE_HEADER_WINDOW: u64 = 4096;

/// A `PageHeader` at the start of `bytes`: its length and its `compressed_page_size` (field 3).
fn page_header(bytes: &[u8]) -> Walk<(u64, u64)> {
    let mut walker = Compact::new(bytes);
    let mut compressed = None;
    walker.known_struct(PAGE_HEADER, MAX_DEPTH, &mut |id, value| {
        if id == 3 {
            compressed = Some(value);
        }
    })?;
    let body = compressed
        .and_then(|size| u64::try_from(size).ok())
        .ok_or("no valid compressed_page_size")?;
    Ok((walker.at as u64, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collections_larger_than_their_bytes_are_refused_in_linear_time() {
        // A struct with field 1 a list of 2^31 - 1 booleans: 7 bytes, declaring 2^31 elements.
        let list_of_bools = [0x19, 0xF1, 0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x00];
        assert!(Compact::new(&list_of_bools).value(12, MAX_DEPTH).is_err());
        // A double past the end.
        assert!(Compact::new(&[0x17, 1, 2, 3]).value(12, MAX_DEPTH).is_err());
        // A map of 2^31 entries.
        let map = [0x1B, 0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x11, 0x00];
        assert!(Compact::new(&map).value(12, MAX_DEPTH).is_err());
        // Too deep.
        let mut deep = vec![0x1C; 70];
        deep.extend(vec![0; 71]);
        assert!(Compact::new(&deep).value(12, MAX_DEPTH).is_err());
    }

    #[test]
    fn valid_structs_are_walked_to_their_end() {
        // {1: i32 -3, 2: list<i32> [1, -1], 3: binary "ab", 5: struct {}} then stop.
        let bytes = [
            0x15, 0x05, 0x19, 0x25, 0x02, 0x01, 0x18, 0x02, b'a', b'b', 0x2C, 0x00, 0x00,
        ];
        let mut walker = Compact::new(&bytes);
        let mut first = None;
        walker
            .fields(MAX_DEPTH, |id, kind, walker| {
                if id == 1 && kind == 5 {
                    first = Some(walker.i32()?);
                    return Ok(true);
                }
                Ok(false)
            })
            .unwrap();
        assert_eq!((first, walker.at), (Some(-3), bytes.len()));
    }

    #[test]
    fn skipped_booleans_take_no_bytes_as_in_parquets_skip() {
        // {1: list<bool> of 1} then stop: parquet's skip reads no element bytes, so the stop
        // byte follows the list header.
        let bytes = [0x19, 0x11, 0x00];
        let mut walker = Compact::new(&bytes);
        walker.value(12, MAX_DEPTH).unwrap();
        assert_eq!(walker.at, bytes.len());
    }

    /// The fuzz finding: parquet reads a field it knows by the type it expects, so a known field
    /// declared with another type is refused (the walk and parquet would part ways there).
    #[test]
    fn known_page_header_fields_must_have_the_type_parquet_reads() {
        // PageHeader {1: i32 0 (DATA_PAGE), 2: i32 1, 3: i32 1, 7: DictionaryPageHeader {..}}.
        let good = [
            0x15, 0x00, 0x15, 0x02, 0x15, 0x02, 0x4C, 0x15, 0x02, 0x15, 0x00, 0x11, 0x00, 0x00,
        ];
        assert_eq!(page_header(&good), Ok((good.len() as u64, 1)));
        // The same with the dictionary header's num_values declared as a list of 2^31 doubles.
        let mut bad = good[..7].to_vec();
        bad.extend([0x19, 0xF7, 0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x00, 0x00]);
        assert_eq!(
            page_header(&bad),
            Err("a page header field of another type than parquet reads")
        );
        // A known struct field declared as an integer.
        let not_a_struct = [0x15, 0x00, 0x15, 0x02, 0x15, 0x02, 0x45, 0x02, 0x00];
        assert!(page_header(&not_a_struct).is_err());
    }
}
