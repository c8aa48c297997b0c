//! [`AldTable`], the DataFusion `TableProvider` over one `.ald` file or a directory of them, and
//! its factories: `CREATE EXTERNAL TABLE ... STORED AS ALD` ([`AldTableFactory`]) and a path in the
//! `FROM` clause ([`AldUrlTableFactory`]).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::UrlTableFactory;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::common::Statistics;
use datafusion::common::stats::Precision;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{CreateExternalTable, Expr, TableType};
use datafusion::physical_plan::ExecutionPlan;

use crate::config::{AldOptions, Keys};
use crate::scan::AldScanExec;
use crate::source::{self, FileInfo, Location};
use crate::{Error, Result, bridge};

/// How a table finds its files.
#[derive(Debug, Clone)]
pub struct AldTableOptions {
    /// The extension of the files a directory contributes ([`source::DEFAULT_EXTENSION`],
    /// `.ald`). A path to a file is read whatever its name.
    pub file_extension: String,
}

impl Default for AldTableOptions {
    fn default() -> Self {
        Self {
            file_extension: source::DEFAULT_EXTENSION.to_owned(),
        }
    }
}

/// `.ald` datasets as a DataFusion table: one file, or every `.ald` file of a directory (one
/// schema for all). Registration opens and verifies each file (header, metadata, schema, chunk
/// index; every byte when a signature is required) and keeps its chunk index for planning; a scan
/// opens the files again through the same verified path, with the keys and policy of the session
/// that runs it.
#[derive(Debug)]
pub struct AldTable {
    files: Arc<[FileInfo]>,
    file_schema: arrow_schema::SchemaRef,
    schema: SchemaRef,
}

impl AldTable {
    /// The table at `locations` (their files together, in order), verified under `config`'s
    /// signature policy.
    ///
    /// # Errors
    /// `Io` or `Usage` for a location that cannot be listed; the first file `ald` refuses
    /// ([`Error::File`]); `SchemaMismatch` for files of different schemas; `Usage` for a schema
    /// the bridge cannot hand to DataFusion.
    pub fn try_new(
        locations: &[Location],
        options: &AldTableOptions,
        config: &AldOptions,
    ) -> Result<Self> {
        Self::open(locations, options, &config.keys())
    }

    fn open(locations: &[Location], options: &AldTableOptions, keys: &Keys) -> Result<Self> {
        let mut files = Vec::new();
        let mut file_schema: Option<(arrow_schema::SchemaRef, std::path::PathBuf)> = None;
        for location in locations {
            for path in source::list(location, &options.file_extension)? {
                let dataset = source::open(&path, keys)?;
                match &file_schema {
                    None => file_schema = Some((Arc::clone(dataset.schema()), path.clone())),
                    Some((schema, first)) => {
                        ald::check_schema(schema, dataset.schema()).map_err(|source| {
                            Error::SchemaMismatch {
                                path: path.clone(),
                                first: first.clone(),
                                source: Box::new(source),
                            }
                        })?;
                    }
                }
                files.push(FileInfo::of(path, &dataset)?);
            }
        }
        let Some((file_schema, _)) = file_schema else {
            return Err(Error::Location {
                location: String::new(),
                reason: "no location given",
            });
        };
        Ok(Self {
            schema: Arc::new(bridge::schema(&file_schema)?),
            files: files.into(),
            file_schema,
        })
    }

    /// The table of `files` (as [`AldTable::files`] lists them) with `file_schema`, as another
    /// process registered it: a plan codec's way back (`ald-ballista`). Nothing is opened here; a
    /// scan opens each file, verifies it under the keys and policy of the session that runs it,
    /// and refuses it unless it is still the file described (`Changed`).
    ///
    /// # Errors
    /// `InvalidFormat` ([`Error::Plan`]) unless the files are a consistent table (at least one; in
    /// each, chunks that follow each other and add up to its row count; totals that fit in 64
    /// bits); `Usage` for a schema the bridge cannot hand to DataFusion.
    pub fn from_parts(files: Vec<FileInfo>, file_schema: arrow_schema::SchemaRef) -> Result<Self> {
        crate::scan::parts::check_files(&files)?;
        Ok(Self {
            schema: Arc::new(bridge::schema(&file_schema)?),
            files: files.into(),
            file_schema,
        })
    }

    /// The files, in scan order, with what registration read of them.
    #[must_use]
    pub fn files(&self) -> &[FileInfo] {
        &self.files
    }

    /// The schema as `ald` reads it (arrow 60); [`TableProvider::schema`] is the same schema in
    /// DataFusion's arrow.
    #[must_use]
    pub fn file_schema(&self) -> &arrow_schema::SchemaRef {
        &self.file_schema
    }

    /// Exact statistics of the whole table: rows from the headers, decoded bytes from the chunk
    /// indexes (the Arrow IPC bytes the arrays are views of). No column statistics: the format
    /// keeps none.
    #[must_use]
    pub fn exact_statistics(&self) -> Statistics {
        let rows: u64 = self.files.iter().map(|file| file.num_rows).sum();
        let bytes: u64 = self.files.iter().map(FileInfo::decoded_bytes).sum();
        Statistics::new_unknown(&self.schema)
            .with_num_rows(Precision::Exact(
                usize::try_from(rows).unwrap_or(usize::MAX),
            ))
            .with_total_byte_size(Precision::Exact(
                usize::try_from(bytes).unwrap_or(usize::MAX),
            ))
    }
}

/// The `ald.*` options of a session (none set if the extension was never registered).
fn session_keys(state: &dyn Session) -> Keys {
    state
        .config_options()
        .extensions
        .get::<AldOptions>()
        .map(AldOptions::keys)
        .unwrap_or_default()
}

#[async_trait]
impl TableProvider for AldTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(AldScanExec::new(
            Arc::clone(&self.files),
            Arc::clone(&self.file_schema),
            &self.schema,
            projection.map(Vec::as_slice),
            limit,
            session_keys(state),
            state.config().target_partitions(),
        )?))
    }

    fn statistics(&self) -> Option<Statistics> {
        Some(self.exact_statistics())
    }
}

/// `CREATE EXTERNAL TABLE name STORED AS ALD LOCATION 'path'`: registered under the file type
/// `ALD` by [`crate::register_ald_format`]. Several locations make one table. A column list, if
/// given, must be the files' schema (names, types, nullability, in order). No `OPTIONS` are
/// taken: keys come from the session (`SET ald.password = ...`).
#[derive(Debug, Default)]
pub struct AldTableFactory;

#[async_trait]
impl TableProviderFactory for AldTableFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> DfResult<Arc<dyn TableProvider>> {
        if let Some(key) = cmd.options.keys().next() {
            return Err(DataFusionError::Configuration(format!(
                "Usage: STORED AS ALD takes no OPTIONS ({key:?} given): set keys with SET ald.*"
            )));
        }
        if !cmd.table_partition_cols.is_empty() {
            return Err(DataFusionError::NotImplemented(
                "Usage: STORED AS ALD tables have no partition columns".to_owned(),
            ));
        }
        let locations = cmd
            .locations
            .iter()
            .map(|location| Location::parse(location))
            .collect::<Result<Vec<_>>>()?;
        let table = AldTable::open(
            &locations,
            &AldTableOptions::default(),
            &session_keys(state),
        )?;
        let declared = cmd.schema.as_arrow();
        if !declared.fields().is_empty() && !same_fields(declared.fields(), table.schema.fields()) {
            return Err(DataFusionError::Plan(format!(
                "SchemaMismatch: the declared columns are not the files' schema {:?}",
                table.schema.fields()
            )));
        }
        Ok(Arc::new(table))
    }
}

fn same_fields(
    declared: &datafusion::arrow::datatypes::Fields,
    found: &datafusion::arrow::datatypes::Fields,
) -> bool {
    declared.len() == found.len()
        && declared.iter().zip(found.iter()).all(|(a, b)| {
            a.name() == b.name()
                && a.data_type() == b.data_type()
                && a.is_nullable() == b.is_nullable()
        })
}

/// A path in the `FROM` clause (`SELECT * FROM '/data/part-0.ald'`, or a directory whose name
/// ends in `.ald`): installed by [`crate::enable_ald_url_table`]. Other paths are left to the
/// factory it wraps (DataFusion's, for CSV, Parquet, ...), if any.
///
/// The table is registered without a signature policy (the factory has no session); every scan
/// opens the files again under the policy of the session that runs it, so no row is read
/// unverified.
#[derive(Debug)]
pub struct AldUrlTableFactory {
    inner: Option<Arc<dyn UrlTableFactory>>,
    options: AldTableOptions,
}

impl AldUrlTableFactory {
    /// `.ald` paths here, the rest through `inner`.
    #[must_use]
    pub fn new(inner: Option<Arc<dyn UrlTableFactory>>) -> Self {
        Self {
            inner,
            options: AldTableOptions::default(),
        }
    }
}

#[async_trait]
impl UrlTableFactory for AldUrlTableFactory {
    async fn try_new(&self, url: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let is_ald = url
            .trim_end_matches('/')
            .ends_with(self.options.file_extension.as_str());
        if !is_ald {
            return match &self.inner {
                Some(inner) => inner.try_new(url).await,
                None => Ok(None),
            };
        }
        let location = Location::parse(url)?;
        let table = AldTable::open(&[location], &self.options, &Keys::default())?;
        Ok(Some(Arc::new(table)))
    }
}
