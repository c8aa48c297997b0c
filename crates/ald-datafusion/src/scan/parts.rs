//! A scan taken apart and rebuilt: what a plan codec ships to another process (`ald-ballista`'s,
//! from a Ballista scheduler to its executors), and the checks that make rebuilding from untrusted
//! parts safe.
//!
//! The parts hold no secret: the files as planned (paths, sizes, chunk indexes), the schema, the
//! projection, the limit, the units of each partition, and the signature policy the scan was
//! planned under (public keys). The process that rebuilds the scan supplies its own keys
//! ([`AldOptions`]). Everything else is checked twice: here for consistency (so no later sum or
//! index can overflow or panic), and against the files themselves when the scan opens them (the
//! schema, row counts, chunk index and flags must be the planned ones, else `Changed`).

use std::sync::{Arc, Mutex};

use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::{Partitioning, PlanProperties};
use envelope_sign::SigningPublicKey;

use super::{AldScanExec, Shared, Unit};
use crate::config::AldOptions;
use crate::source::{FileInfo, RemoteObject};
use crate::{Error, Result, bridge};

/// Everything an [`AldScanExec`] was planned from, as [`AldScanExec::parts`] returns it and
/// [`AldScanExec::from_parts`] takes it back.
#[derive(Debug, Clone)]
pub struct AldScanParts {
    /// The files, in scan order, as the table found them.
    pub files: Arc<[FileInfo]>,
    /// The table's schema in `ald`'s arrow (every file must still have it).
    pub file_schema: arrow_schema::SchemaRef,
    /// The columns of the table handed to DataFusion, in order.
    pub projection: Vec<usize>,
    /// The number of rows the scan stops after.
    pub limit: Option<usize>,
    /// The units of scan work of each partition, as `(file index, chunk)`.
    pub partitions: Vec<Vec<(usize, usize)>>,
    /// The signature policy the scan was planned under: `Some(keys)` when every file must be
    /// signed by one of `keys`.
    pub required_signers: Option<Vec<SigningPublicKey>>,
}

/// `Plan` unless `files` are a consistent table: at least one file; in each, chunks that follow
/// each other (each `first_item` the rows before it) and add up to the file's row count, one
/// chunk for a non-STREAMING file; and totals (rows, decoded bytes, each file's stored bytes) that
/// fit in 64 bits, so no statistic computed from them can overflow.
pub(crate) fn check_files(files: &[FileInfo]) -> Result<()> {
    let bad = |what| Err(Error::Plan { what });
    if files.is_empty() {
        return bad("no file");
    }
    let (mut rows, mut decoded) = (0u64, 0u64);
    for file in files {
        if file.chunks.is_empty() || (!file.streaming && file.chunks.len() != 1) {
            return bad("a file's chunk count does not match its flags");
        }
        let mut first = 0u64;
        let mut end = 0u64;
        for chunk in &file.chunks {
            if chunk.first_item != first || chunk.stored_offset != end {
                return bad("a file's chunks do not follow each other");
            }
            let next = (
                first.checked_add(chunk.item_count),
                end.checked_add(chunk.stored_size),
                decoded.checked_add(chunk.uncompressed_size),
            );
            let (Some(next_first), Some(next_end), Some(next_decoded)) = next else {
                return bad("a file's chunk sizes overflow");
            };
            (first, end, decoded) = (next_first, next_end, next_decoded);
        }
        if first != file.num_rows {
            return bad("a file's chunks do not add up to its row count");
        }
        rows = match rows.checked_add(file.num_rows) {
            Some(rows) => rows,
            None => return bad("the row counts overflow"),
        };
    }
    Ok(())
}

/// The objects `files` name ([`RemoteObject::of_planned`]), without stores: the scanning
/// session supplies them.
///
/// # Errors
/// `Plan` for a table mixing local files and objects, or an object that does not parse.
pub(crate) fn planned_origins(files: &[FileInfo]) -> Result<Arc<[Option<RemoteObject>]>> {
    let origins = files
        .iter()
        .map(RemoteObject::of_planned)
        .collect::<Result<Vec<_>>>()?;
    let objects = origins.iter().filter(|origin| origin.is_some()).count();
    if objects != 0 && objects != origins.len() {
        return Err(Error::Plan {
            what: "a table mixes local files and objects",
        });
    }
    Ok(origins.into())
}

impl AldScanExec {
    /// This scan's parts, to ship it to another process.
    #[must_use]
    pub fn parts(&self) -> AldScanParts {
        AldScanParts {
            files: Arc::clone(&self.shared.files),
            file_schema: Arc::clone(&self.shared.file_schema),
            projection: self.shared.projection.clone(),
            limit: self.shared.limit,
            partitions: self.partition_units(),
            required_signers: self.shared.keys.required_signers(),
        }
    }

    /// The scan `parts` describe, reading with the keys and under the signature policy of
    /// `options` (the rebuilding process's own: `parts` carry the policy it was planned under, and
    /// the caller decides how the two combine, see `ald-ballista`). Nothing is opened here; each
    /// file is opened, verified and compared with its planned [`FileInfo`] when a partition first
    /// reads it.
    ///
    /// # Errors
    /// `InvalidFormat` ([`Error::Plan`]) for parts that do not hold together (files as in
    /// [`crate::AldTable::from_parts`], a column, file or chunk index out of range, no
    /// partition); `Usage` for a schema the bridge cannot hand to DataFusion.
    pub fn from_parts(parts: AldScanParts, options: &AldOptions) -> Result<Self> {
        let AldScanParts {
            files,
            file_schema,
            projection,
            limit,
            partitions,
            required_signers: _,
        } = parts;
        check_files(&files)?;
        let table_schema = bridge::schema(&file_schema)?;
        if projection
            .iter()
            .any(|&column| column >= table_schema.fields().len())
        {
            return Err(Error::Plan {
                what: "a projected column is not in the schema",
            });
        }
        let projected_schema =
            Arc::new(table_schema.project(&projection).map_err(|_| Error::Plan {
                what: "the projection does not apply to the schema",
            })?);
        if partitions.is_empty() {
            return Err(Error::Plan {
                what: "no partition",
            });
        }
        let partitions = partitions
            .iter()
            .map(|units| {
                units
                    .iter()
                    .map(|&(file, chunk)| {
                        let entry = files
                            .get(file)
                            .and_then(|info| info.chunks.get(chunk))
                            .ok_or(Error::Plan {
                                what: "a unit names a file or chunk that is not planned",
                            })?;
                        Ok(Unit {
                            file,
                            chunk,
                            rows: entry.item_count,
                            decoded_bytes: entry.uncompressed_size,
                        })
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&projected_schema)),
            Partitioning::UnknownPartitioning(partitions.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Self {
            shared: Arc::new(Shared {
                opened: files.iter().map(|_| Mutex::new(None)).collect(),
                origins: planned_origins(&files)?,
                remote: files.iter().map(|_| tokio::sync::OnceCell::new()).collect(),
                reported: files.iter().map(|_| Default::default()).collect(),
                files,
                file_schema,
                projection,
                projected_schema,
                limit,
                keys: options.keys(),
            }),
            partitions: partitions.into(),
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field, Schema};
    use envelope_core::ChunkEntry;

    fn file(rows: &[u64]) -> FileInfo {
        let (mut first, mut offset) = (0, 0);
        let chunks = rows
            .iter()
            .map(|&count| {
                let entry = ChunkEntry {
                    stored_offset: offset,
                    stored_size: count,
                    uncompressed_size: 10 * count,
                    first_item: first,
                    item_count: count,
                    stored_crc32c: 0,
                };
                first += count;
                offset += count;
                entry
            })
            .collect();
        FileInfo {
            path: "f.ald".into(),
            file_size: 0,
            chunks,
            num_rows: rows.iter().sum(),
            streaming: rows.len() > 1,
            encrypted: false,
            object: None,
        }
    }

    fn object(key: &str, rows: &[u64]) -> FileInfo {
        FileInfo {
            path: format!("s3://bucket/{key}").into(),
            object: Some(crate::ObjectVersion {
                store: "s3://bucket/".to_owned(),
                key: key.to_owned(),
                e_tag: Some("\"abc\"".to_owned()),
            }),
            ..file(rows)
        }
    }

    #[test]
    fn objects_are_rebuilt_without_a_store_and_bad_ones_are_refused() {
        let scan = AldScanExec::from_parts(
            parts(
                vec![object("t/a.ald", &[3]), object("t/b.ald", &[2, 2])],
                vec![vec![(0, 0), (1, 1)]],
            ),
            &AldOptions::new(),
        )
        .unwrap();
        assert!(scan.is_remote());
        let origins = planned_origins(&scan.parts().files).unwrap();
        let urls: Vec<_> = origins
            .iter()
            .map(|origin| origin.as_ref().map(|o| (o.url.clone(), o.store.is_none())))
            .collect();
        assert_eq!(
            urls,
            [
                Some(("s3://bucket/t/a.ald".to_owned(), true)),
                Some(("s3://bucket/t/b.ald".to_owned(), true))
            ]
        );
        assert_eq!(scan.parts().files[1].object, object("t/b.ald", &[1]).object);

        let refused = |files: Vec<FileInfo>, why: &str| {
            let error = AldScanExec::from_parts(parts(files, vec![vec![]]), &AldOptions::new())
                .unwrap_err();
            assert!(matches!(error, Error::Plan { .. }), "{error}");
            assert!(error.to_string().contains(why), "{error}");
        };
        refused(
            vec![file(&[3]), object("t/a.ald", &[3])],
            "mixes local files and objects",
        );
        let with = |store: &str, key: &str| {
            let mut info = object("t/a.ald", &[3]);
            let version = info.object.as_mut().unwrap();
            version.store = store.to_owned();
            version.key = key.to_owned();
            info
        };
        refused(vec![with("not a url", "t/a.ald")], "store URL");
        refused(vec![with("ftp://host/", "t/a.ald")], "not object storage");
        refused(vec![with("s3://bucket/", "")], "key is empty");
        refused(
            vec![with("s3://bucket/", "a//b")],
            "not a valid object path",
        );
    }

    fn parts(files: Vec<FileInfo>, partitions: Vec<Vec<(usize, usize)>>) -> AldScanParts {
        AldScanParts {
            files: files.into(),
            file_schema: Arc::new(Schema::new(vec![
                Field::new("a", DataType::Int64, false),
                Field::new("b", DataType::Utf8, true),
            ])),
            projection: vec![1],
            limit: Some(7),
            partitions,
            required_signers: None,
        }
    }

    #[test]
    fn a_scan_rebuilt_from_its_parts_has_the_same_parts() {
        let original = parts(
            vec![file(&[3, 4]), file(&[5])],
            vec![vec![(0, 0), (0, 1)], vec![(1, 0)]],
        );
        let scan = AldScanExec::from_parts(original.clone(), &AldOptions::new()).unwrap();
        let again = scan.parts();
        assert_eq!(again.partitions, original.partitions);
        assert_eq!(again.projection, [1]);
        assert_eq!(again.limit, Some(7));
        assert_eq!(again.file_schema, original.file_schema);
        assert_eq!(again.files.len(), 2);
        assert_eq!(again.required_signers, None);
        let signer = envelope_sign::Identity::from_seed([9; 32]).signing_public_key();
        let signed = AldOptions::new().with_trusted_keys([signer]);
        let scan = AldScanExec::from_parts(original, &signed).unwrap();
        assert_eq!(scan.parts().required_signers, Some(vec![signer]));
    }

    #[test]
    fn inconsistent_parts_are_refused_with_a_plan_error() {
        let refused = |parts: AldScanParts| {
            let error = AldScanExec::from_parts(parts, &AldOptions::new()).unwrap_err();
            assert!(matches!(error, Error::Plan { .. }), "{error}");
            assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
        };
        refused(parts(vec![], vec![vec![]]));
        refused(parts(vec![file(&[3])], vec![]));
        refused(parts(vec![file(&[3])], vec![vec![(1, 0)]]));
        refused(parts(vec![file(&[3])], vec![vec![(0, 1)]]));
        let mut wrong_projection = parts(vec![file(&[3])], vec![vec![(0, 0)]]);
        wrong_projection.projection = vec![2];
        refused(wrong_projection);
        let mut gap = file(&[3, 4]);
        gap.chunks[1].first_item = 4;
        refused(parts(vec![gap], vec![vec![]]));
        let mut short = file(&[3, 4]);
        short.num_rows = 8;
        refused(parts(vec![short], vec![vec![]]));
        let mut huge = file(&[1, 1]);
        huge.chunks[1].item_count = u64::MAX;
        huge.num_rows = u64::MAX;
        refused(parts(vec![huge], vec![vec![]]));
        let mut rows_overflow = file(&[1]);
        rows_overflow.chunks[0].item_count = u64::MAX;
        rows_overflow.num_rows = u64::MAX;
        refused(parts(
            vec![rows_overflow.clone(), rows_overflow],
            vec![vec![]],
        ));
        let mut two_chunks_not_streaming = file(&[1, 1]);
        two_chunks_not_streaming.streaming = false;
        refused(parts(vec![two_chunks_not_streaming], vec![vec![]]));
    }
}
