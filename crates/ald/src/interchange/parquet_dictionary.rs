//! Dictionary columns written to Parquet with their dictionary in the Arrow order.
//!
//! Parquet stores a dictionary-encoded column chunk as a dictionary page and data pages of
//! indices into it; pyarrow, pandas (category order and unused categories), polars and arrow-rs
//! take the dictionary page as the column's dictionary. arrow-rs's writer builds that page from
//! the values in the order rows first use them, so `["low", "mid", "high"]` with rows
//! `high, low` came back as categories `["high", "low"]`: another order (meaningful for an
//! ordered categorical) and a lost category. There is no option for it, so this module writes
//! such column chunks itself, through parquet's own page writer (thrift headers, offsets):
//!
//! - the dictionary page is the Arrow dictionary, in order, PLAIN-encoded (values used by no row
//!   included); when the batches of one row group carry different dictionaries, the first one's
//!   order comes first and values new in later ones follow;
//! - data pages (format v1, [`PAGE_ROWS`] rows each) hold the definition levels and the indices,
//!   each as one bit-packed run of the RLE/bit-packing hybrid (Parquet `Encodings.md`);
//! - the chunk is stored uncompressed: indices are already a few bits per row.
//!
//! Only top-level dictionary columns of strings or binaries are written this way: readers take the
//! dictionary page as the dictionary only for those (arrow-rs and Arrow C++ decode a numeric
//! dictionary column to values and encode them again, in the order rows use them, whatever the
//! page holds), so other dictionary columns go through arrow-rs.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use arrow_array::cast::AsArray as _;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves};
use parquet::basic::{Compression, Encoding};
use parquet::column::page::{CompressedPage, Page, PageWriter as _};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result as ParquetResult};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

/// Rows per data page.
pub(crate) const PAGE_ROWS: usize = 1 << 16;

/// Rows per row group (arrow-rs's default `max_row_group_size`).
const ROW_GROUP_ROWS: usize = 1 << 20;

/// Whether a top-level column of `data_type` is written by this module.
pub(crate) fn keeps_order(data_type: &DataType) -> bool {
    match data_type {
        DataType::Dictionary(_, value) => matches!(
            value.as_ref(),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary
        ),
        _ => false,
    }
}

/// The PLAIN encoding of dictionary value `at` (Parquet `Encodings.md`: a byte array is its
/// length as u32 then its bytes), `None` for a null value.
fn plain_value(values: &ArrayRef, at: usize) -> Option<Vec<u8>> {
    if values.is_null(at) {
        return None;
    }
    let bytes = |data: &[u8]| {
        let mut out = u32::try_from(data.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes()
            .to_vec();
        out.extend_from_slice(data);
        out
    };
    Some(match values.data_type() {
        DataType::Utf8 => bytes(values.as_string::<i32>().value(at).as_bytes()),
        DataType::LargeUtf8 => bytes(values.as_string::<i64>().value(at).as_bytes()),
        DataType::Binary => bytes(values.as_binary::<i32>().value(at)),
        DataType::LargeBinary => bytes(values.as_binary::<i64>().value(at)),
        _ => return None,
    })
}

/// One row group of one dictionary column, as it accumulates.
#[derive(Default)]
struct DictionaryChunk {
    /// The dictionary page's content.
    plain: Vec<u8>,
    /// Position of each value (by its PLAIN bytes) in the dictionary page.
    positions: HashMap<Vec<u8>, u32>,
    /// Whether each row is present (definition level 1).
    present: Vec<bool>,
    /// The dictionary position of each present row.
    indices: Vec<u32>,
}

impl DictionaryChunk {
    fn push(&mut self, column: &ArrayRef) -> ParquetResult<()> {
        let dictionary = column.as_any_dictionary_opt().ok_or_else(|| {
            ParquetError::General("a dictionary column that is not a DictionaryArray".into())
        })?;
        let values = dictionary.values();
        // Where each of this batch's dictionary values sits in the page (None: a null value).
        let mut remap = Vec::with_capacity(values.len());
        for at in 0..values.len() {
            remap.push(match plain_value(values, at) {
                None => None,
                Some(plain) => {
                    let next = u32::try_from(self.positions.len())
                        .map_err(|_| ParquetError::General("too many dictionary values".into()))?;
                    let position = *self.positions.entry(plain.clone()).or_insert_with(|| {
                        self.plain.extend_from_slice(&plain);
                        next
                    });
                    Some(position)
                }
            });
        }
        let keys = dictionary.normalized_keys();
        let nulls = column.logical_nulls();
        for (row, key) in keys.iter().enumerate() {
            let position = if nulls.as_ref().is_some_and(|nulls| nulls.is_null(row)) {
                None
            } else {
                remap.get(*key).copied().flatten()
            };
            self.present.push(position.is_some());
            if let Some(position) = position {
                self.indices.push(position);
            }
        }
        Ok(())
    }

    /// The column chunk's bytes (dictionary page first) and what the row group writer needs.
    fn finish(self, descriptor: ColumnDescPtr) -> ParquetResult<(Bytes, ColumnCloseResult)> {
        let nullable = descriptor.max_def_level() > 0;
        if !nullable && self.present.iter().any(|present| !present) {
            return Err(ParquetError::General(format!(
                "column {} is not nullable but holds nulls",
                descriptor.name()
            )));
        }
        let entries = u32::try_from(self.positions.len())
            .map_err(|_| ParquetError::General("too many dictionary values".into()))?;
        let width = bit_width(entries.saturating_sub(1));
        let mut sink = TrackedWrite::new(Vec::new());
        let mut pages = SerializedPageWriter::new(&mut sink);
        let dictionary_size = self.plain.len();
        pages.write_page(CompressedPage::new(
            Page::DictionaryPage {
                buf: Bytes::from(self.plain),
                num_values: entries,
                encoding: Encoding::PLAIN,
                is_sorted: false,
            },
            dictionary_size,
        ))?;
        let mut data_page_offset = None;
        let mut indices = self.indices.iter().copied();
        for rows in self.present.chunks(PAGE_ROWS) {
            let mut buf = Vec::new();
            if nullable {
                let mut levels = Vec::new();
                bit_packed(
                    rows.iter().map(|present| u32::from(*present)),
                    1,
                    &mut levels,
                );
                let length = u32::try_from(levels.len())
                    .map_err(|_| ParquetError::General("a page too large".into()))?;
                buf.extend_from_slice(&length.to_le_bytes());
                buf.extend_from_slice(&levels);
            }
            let present = rows.iter().filter(|present| **present).count();
            buf.push(width);
            bit_packed(indices.by_ref().take(present), width, &mut buf);
            let size = buf.len();
            let spec = pages.write_page(CompressedPage::new(
                Page::DataPage {
                    buf: Bytes::from(buf),
                    num_values: u32::try_from(rows.len())
                        .map_err(|_| ParquetError::General("a page too large".into()))?,
                    encoding: Encoding::RLE_DICTIONARY,
                    def_level_encoding: Encoding::RLE,
                    rep_level_encoding: Encoding::RLE,
                    statistics: None,
                },
                size,
            ))?;
            data_page_offset.get_or_insert(spec.offset);
        }
        pages.close()?;
        let bytes = Bytes::from(sink.into_inner()?);
        let total = i64::try_from(bytes.len())
            .map_err(|_| ParquetError::General("a column chunk too large".into()))?;
        let rows = i64::try_from(self.present.len())
            .map_err(|_| ParquetError::General("too many rows".into()))?;
        let data_page_offset = data_page_offset
            .and_then(|offset| i64::try_from(offset).ok())
            .unwrap_or(total);
        let metadata = ColumnChunkMetaData::builder(descriptor)
            .set_encodings(vec![
                Encoding::PLAIN,
                Encoding::RLE,
                Encoding::RLE_DICTIONARY,
            ])
            .set_compression(Compression::UNCOMPRESSED)
            .set_num_values(rows)
            .set_total_compressed_size(total)
            .set_total_uncompressed_size(total)
            .set_dictionary_page_offset(Some(0))
            .set_data_page_offset(data_page_offset)
            .build()?;
        let close = ColumnCloseResult {
            bytes_written: bytes.len() as u64,
            rows_written: self.present.len() as u64,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: None,
        };
        Ok((bytes, close))
    }
}

/// Bits needed for `max` (at least 1: some readers mishandle width 0).
fn bit_width(max: u32) -> u8 {
    u8::try_from(32 - max.leading_zeros()).unwrap_or(32).max(1)
}

/// Appends `values` as one bit-packed run of the RLE/bit-packing hybrid: the header (number of
/// groups of 8, shifted left, low bit set) as a ULEB128 varint, then the values `width` bits
/// each, least significant bit first, the last group padded with zeros.
fn bit_packed(values: impl Iterator<Item = u32>, width: u8, out: &mut Vec<u8>) {
    let mut packed = Vec::new();
    let (mut buffer, mut bits, mut count) = (0u64, 0u32, 0usize);
    let mut put = |value: u32, buffer: &mut u64, bits: &mut u32| {
        *buffer |= u64::from(value) << *bits;
        *bits += u32::from(width);
        while *bits >= 8 {
            packed.push(buffer.to_le_bytes()[0]);
            *buffer >>= 8;
            *bits -= 8;
        }
    };
    for value in values {
        put(value, &mut buffer, &mut bits);
        count += 1;
    }
    while count % 8 != 0 {
        put(0, &mut buffer, &mut bits);
        count += 1;
    }
    let mut header = ((count / 8) << 1) | 1;
    loop {
        let byte = u8::try_from(header & 0x7F).unwrap_or(0);
        header >>= 7;
        if header == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.extend_from_slice(&packed);
}

/// A row group being written: arrow-rs's column writers for most leaves, [`DictionaryChunk`]s for
/// the columns of [`keeps_order`].
struct RowGroup {
    writers: Vec<ArrowColumnWriter>,
    chunks: Vec<Option<DictionaryChunk>>,
    rows: usize,
}

/// Writes `batches` (already in `schema`'s stored types) to `out`, as [`ArrowWriter`] would
/// except for the dictionary columns of [`keeps_order`].
pub(crate) struct OrderedWriter<W: Write + Send> {
    file: SerializedFileWriter<W>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// The top-level field of every leaf column.
    roots: Vec<usize>,
    group: Option<RowGroup>,
    groups_written: usize,
}

impl<W: Write + Send> OrderedWriter<W> {
    /// Takes over `writer` (nothing written yet) for its file and row group writers.
    pub(crate) fn new(writer: ArrowWriter<W>, schema: SchemaRef) -> ParquetResult<Self> {
        let (file, factory) = writer.into_serialized_writer()?;
        let descriptor = file.schema_descr();
        let roots = (0..descriptor.num_columns())
            .map(|leaf| descriptor.get_column_root_idx(leaf))
            .collect();
        Ok(Self {
            file,
            factory,
            schema,
            roots,
            group: None,
            groups_written: 0,
        })
    }

    fn group(&mut self) -> ParquetResult<&mut RowGroup> {
        if self.group.is_none() {
            let writers = self.factory.create_column_writers(self.groups_written)?;
            let chunks = self
                .schema
                .fields()
                .iter()
                .map(|field| keeps_order(field.data_type()).then(DictionaryChunk::default))
                .collect();
            self.group = Some(RowGroup {
                writers,
                chunks,
                rows: 0,
            });
        }
        self.group
            .as_mut()
            .ok_or_else(|| ParquetError::General("no row group".into()))
    }

    /// Writes `batch`, closing row groups of [`ROW_GROUP_ROWS`] rows.
    pub(crate) fn write(&mut self, batch: &RecordBatch) -> ParquetResult<()> {
        let mut offset = 0;
        while offset < batch.num_rows() {
            let roots = self.roots.clone();
            let schema = Arc::clone(&self.schema);
            let group = self.group()?;
            let take = (ROW_GROUP_ROWS - group.rows).min(batch.num_rows() - offset);
            let slice = batch.slice(offset, take);
            for (field_index, (field, column)) in
                schema.fields().iter().zip(slice.columns()).enumerate()
            {
                if let Some(chunk) = &mut group.chunks[field_index] {
                    chunk.push(column)?;
                    continue;
                }
                let leaves = compute_leaves(field, column)?;
                let writers = group
                    .writers
                    .iter_mut()
                    .zip(&roots)
                    .filter(|(_, root)| **root == field_index)
                    .map(|(writer, _)| writer);
                for (writer, leaf) in writers.zip(&leaves) {
                    writer.write(leaf)?;
                }
            }
            group.rows += take;
            offset += take;
            if group.rows == ROW_GROUP_ROWS {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> ParquetResult<()> {
        let Some(group) = self.group.take() else {
            return Ok(());
        };
        let descriptors: Vec<ColumnDescPtr> = self.file.schema_descr().columns().to_vec();
        let mut row_group = self.file.next_row_group()?;
        let mut chunks = group.chunks;
        for (leaf, writer) in group.writers.into_iter().enumerate() {
            let root = self.roots[leaf];
            match chunks.get_mut(root).and_then(Option::take) {
                Some(chunk) => {
                    let (bytes, close) = chunk.finish(Arc::clone(&descriptors[leaf]))?;
                    row_group.append_column(&bytes, close)?;
                }
                None => writer.close()?.append_to_row_group(&mut row_group)?,
            }
        }
        row_group.close()?;
        self.groups_written += 1;
        Ok(())
    }

    /// Writes the last row group and the footer.
    pub(crate) fn close(mut self) -> ParquetResult<()> {
        if self.group.as_ref().is_some_and(|group| group.rows > 0) {
            self.flush()?;
        }
        self.file.close()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_packed_runs_follow_the_parquet_example() {
        // Encodings.md: 0..7 at width 3 packs to 10001000 11000110 11111010.
        let mut out = Vec::new();
        bit_packed(0..8, 3, &mut out);
        assert_eq!(out, [0b0000_0011, 0b1000_1000, 0b1100_0110, 0b1111_1010]);
        let mut padded = Vec::new();
        bit_packed([1, 1, 1].into_iter(), 1, &mut padded);
        assert_eq!(padded, [0b11, 0b0000_0111]);
        assert_eq!(
            (bit_width(0), bit_width(1), bit_width(2), bit_width(255)),
            (1, 1, 2, 8)
        );
    }
}
