//! `lineage split`'s samples: the row counts of Parquet and `.ald` files, read by their formats'
//! own libraries (the `lineage` crate counts the text formats itself and asks for these).

use std::fs::File;
use std::panic::AssertUnwindSafe;

use lineage::dataset::RelPath;
use lineage::records::RecordFormat;

/// The row count of a Parquet file (its footer, through the `parquet` crate) or of an `.ald`
/// file (its header, after `envelope-core` verified it: the prefix CRC-32C of a STREAMING file,
/// the whole-file CRC32 of any other).
pub(crate) fn count_from_metadata(
    format: RecordFormat,
    rel: &RelPath,
    file: File,
) -> Result<u64, lineage::Error> {
    let refused = |reason: String| lineage::Error::RecordSource {
        path: rel.as_str().to_owned(),
        format: format.as_str(),
        reason,
    };
    match format {
        RecordFormat::Parquet => {
            // parquet's footer decoding is guarded: a panic on hostile bytes becomes the file's
            // failure, never the tool's.
            let rows = std::panic::catch_unwind(AssertUnwindSafe(|| {
                parquet::file::reader::SerializedFileReader::new(file).map(|reader| {
                    parquet::file::reader::FileReader::metadata(&reader)
                        .file_metadata()
                        .num_rows()
                })
            }))
            .map_err(|_| refused("the Parquet reader failed on this footer".to_owned()))?
            .map_err(|error| refused(error.to_string()))?;
            u64::try_from(rows).map_err(|_| refused(format!("the footer declares {rows} rows")))
        }
        RecordFormat::Ald => {
            let map = mapped_file::MappedFile::from_file(&file, mapped_file::Mode::Map)
                .map_err(|error| refused(error.to_string()))?;
            let envelope =
                envelope_core::Envelope::parse_lazy(&map[..], envelope_core::Format::Dataset)
                    .map_err(|error| refused(error.to_string()))?;
            let rows = envelope.header().num_rows();
            // A STREAMING file's index counts its rows again, chunk by chunk: both must agree.
            match envelope
                .chunk_index()
                .map(envelope_core::ChunkIndex::item_count)
            {
                Some(indexed) if indexed != rows => Err(refused(format!(
                    "the header declares {rows} rows, the chunk index {indexed}"
                ))),
                _ => Ok(rows),
            }
        }
        other => Err(refused(format!(
            "{} files are counted from their bytes, not their metadata",
            other.as_str()
        ))),
    }
}
