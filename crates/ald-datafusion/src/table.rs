//! [`AldTable`], the DataFusion `TableProvider` over one `.ald` file or a directory of them (local,
//! or objects on object storage), and its factories: `CREATE EXTERNAL TABLE ... STORED AS ALD` ([`AldTableFactory`]) and a path in the
//! `FROM` clause ([`AldUrlTableFactory`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::UrlTableFactory;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::common::Statistics;
use datafusion::common::stats::Precision;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::logical_expr::{CreateExternalTable, Expr, TableType};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_session::SessionStore;

use crate::config::{AldOptions, Keys};
use crate::scan::AldScanExec;
use crate::source::{self, FileInfo, Location, RemoteObject, RemoteUrl};
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
///
/// A table is local files or objects on object storage (`s3://`, `gs://`, `az://`,
/// `http(s)://`), not both; its objects are read through `remote_file::RemoteDataset`, and a scan
/// refuses an object whose ETag or size is not the one planned from.
#[derive(Debug)]
pub struct AldTable {
    files: Arc<[FileInfo]>,
    /// For each file, the object it is (`None`: a local file).
    origins: Arc<[Option<RemoteObject>]>,
    file_schema: arrow_schema::SchemaRef,
    schema: SchemaRef,
}

/// The schema of the files of one table, checked file by file against the first.
#[derive(Default)]
struct Schemas(Option<(arrow_schema::SchemaRef, PathBuf)>);

impl Schemas {
    fn add(&mut self, path: &std::path::Path, schema: &arrow_schema::SchemaRef) -> Result<()> {
        match &self.0 {
            None => self.0 = Some((Arc::clone(schema), path.to_owned())),
            Some((first_schema, first)) => {
                ald::check_schema(first_schema, schema).map_err(|source| {
                    Error::SchemaMismatch {
                        path: path.to_owned(),
                        first: first.clone(),
                        source: Box::new(source),
                    }
                })?;
            }
        }
        Ok(())
    }
}

/// Runs `future` to its end on a private current-thread runtime on a scoped thread: what a
/// synchronous registration of a remote table needs, whether or not its caller is inside a
/// runtime (a runtime cannot be blocked on from one of its own threads).
pub(crate) fn block_on_private<T: Send>(
    future: impl std::future::Future<Output = Result<T>> + Send,
) -> Result<T> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|error| {
                        Error::remote("the I/O runtime")(remote_file::Error::Runtime(error))
                    })?
                    .block_on(future)
            })
            .join()
            .unwrap_or_else(|_| {
                Err(Error::Location {
                    location: String::new(),
                    reason: "the thread opening the remote table panicked",
                })
            })
    })
}

impl AldTable {
    /// The table at `locations` (their files together, in order), verified under `config`'s
    /// signature policy.
    ///
    /// # Errors
    /// `Io` or `Usage` for a location that cannot be listed; the first file `ald` refuses
    /// ([`Error::File`]); `SchemaMismatch` for files of different schemas; `Usage` for a schema
    /// the bridge cannot hand to DataFusion.
    ///
    /// Object storage locations are listed and opened on a private runtime (this call blocks);
    /// their stores come from the environment. In async code, [`AldTable::try_new_async`] does
    /// the same without a thread and shares the stores of a DataFusion `RuntimeEnv`.
    pub fn try_new(
        locations: &[Location],
        options: &AldTableOptions,
        config: &AldOptions,
    ) -> Result<Self> {
        let keys = config.keys();
        if locations.iter().any(Location::is_remote) {
            return block_on_private(Self::open_async(locations, options, &keys, None));
        }
        Self::open(locations, options, &keys)
    }

    /// As [`AldTable::try_new`], for any location, without blocking. The store of an object
    /// storage URL is the one `runtime` has registered for its `scheme://authority`, else one
    /// configured from the environment and registered with `runtime` (so DataFusion's own
    /// readers of the same bucket share its client).
    ///
    /// # Errors
    /// As [`AldTable::try_new`]; [`Error::Remote`] for an object the remote reader refuses;
    /// `Usage` for a table mixing local and remote locations.
    pub async fn try_new_async(
        locations: &[Location],
        options: &AldTableOptions,
        config: &AldOptions,
        runtime: Option<&RuntimeEnv>,
    ) -> Result<Self> {
        Self::open_async(locations, options, &config.keys(), runtime).await
    }

    fn open(locations: &[Location], options: &AldTableOptions, keys: &Keys) -> Result<Self> {
        let mut files = Vec::new();
        let mut schemas = Schemas::default();
        for location in locations {
            for path in source::list(location, &options.file_extension)? {
                let dataset = source::open(&path, keys)?;
                schemas.add(&path, dataset.schema())?;
                files.push(FileInfo::of(path, &dataset)?);
            }
        }
        let origins = files.iter().map(|_| None).collect();
        Self::assemble(files, origins, schemas)
    }

    pub(crate) async fn open_async(
        locations: &[Location],
        options: &AldTableOptions,
        keys: &Keys,
        runtime: Option<&RuntimeEnv>,
    ) -> Result<Self> {
        let remote: Vec<&RemoteUrl> = locations
            .iter()
            .filter_map(|location| match location {
                Location::Remote(url) => Some(url),
                Location::Local(_) => None,
            })
            .collect();
        if remote.is_empty() {
            return Self::open(locations, options, keys);
        }
        if remote.len() != locations.len() {
            return Err(Error::Location {
                location: remote[0].as_str().to_owned(),
                reason: "a table's locations are all local or all on object storage",
            });
        }
        let mut files = Vec::new();
        let mut origins = Vec::new();
        let mut schemas = Schemas::default();
        for url in remote {
            let store = url.store(runtime)?;
            let objects = source::list_remote(url, &store, &options.file_extension).await?;
            for (object, dataset) in source::open_all_remote(objects, keys).await? {
                let info = FileInfo::of_remote(&object, &dataset)?;
                schemas.add(&info.path, dataset.schema())?;
                files.push(info);
                origins.push(Some(object));
            }
        }
        Self::assemble(files, origins, schemas)
    }

    fn assemble(
        files: Vec<FileInfo>,
        origins: Vec<Option<RemoteObject>>,
        schemas: Schemas,
    ) -> Result<Self> {
        let Some((file_schema, _)) = schemas.0 else {
            return Err(Error::Location {
                location: String::new(),
                reason: "no location given",
            });
        };
        Ok(Self {
            schema: Arc::new(bridge::schema(&file_schema)?),
            files: files.into(),
            origins: origins.into(),
            file_schema,
        })
    }

    /// The table of `files` (as [`AldTable::files`] lists them) with `file_schema`, as another
    /// process registered it: a plan codec's way back (`ald-ballista`). Nothing is opened here; a
    /// scan opens each file, verifies it under the keys and policy of the session that runs it,
    /// and refuses it unless it is still the file described (`Changed`). Objects on object
    /// storage ([`FileInfo::object`]) are read through the store the scanning session has
    /// registered for their store URL, else one configured from its environment, and must still
    /// have the ETag planned from.
    ///
    /// # Errors
    /// `InvalidFormat` ([`Error::Plan`]) unless the files are a consistent table (at least one; in
    /// each, chunks that follow each other and add up to its row count; totals that fit in 64
    /// bits; all local files or all objects, each object's store URL and key well-formed); `Usage`
    /// for a schema the bridge cannot hand to DataFusion.
    pub fn from_parts(files: Vec<FileInfo>, file_schema: arrow_schema::SchemaRef) -> Result<Self> {
        crate::scan::parts::check_files(&files)?;
        Ok(Self {
            schema: Arc::new(bridge::schema(&file_schema)?),
            origins: crate::scan::parts::planned_origins(&files)?,
            files: files.into(),
            file_schema,
        })
    }

    /// Whether the table's files are objects on object storage.
    #[must_use]
    pub fn is_remote(&self) -> bool {
        self.origins.iter().any(Option::is_some)
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
            Arc::clone(&self.origins),
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
        let table = AldTable::open_async(
            &locations,
            &AldTableOptions::default(),
            &session_keys(state),
            Some(state.runtime_env()),
        )
        .await?;
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

/// A path or URL in the `FROM` clause (`SELECT * FROM '/data/part-0.ald'`, a directory whose name
/// ends in `.ald`, `'s3://bucket/part-0.ald'`, or `'s3://bucket/prefix/'` when the prefix holds
/// `.ald` objects): installed by [`crate::enable_ald_url_table`]. Other paths and URLs (a prefix
/// without `.ald` objects included) are left to the factory it wraps (DataFusion's, for CSV,
/// Parquet, ...), if any.
///
/// The table is registered without a signature policy (the factory has no session options);
/// every scan opens the files again under the policy of the session that runs it, so no row is
/// read unverified. Object stores are the session's (its `RuntimeEnv`'s registry) once
/// [`crate::enable_ald_url_table`] has attached the session.
#[derive(Debug)]
pub struct AldUrlTableFactory {
    inner: Option<Arc<dyn UrlTableFactory>>,
    options: AldTableOptions,
    session: SessionStore,
    has_session: AtomicBool,
}

impl AldUrlTableFactory {
    /// `.ald` paths here, the rest through `inner`.
    #[must_use]
    pub fn new(inner: Option<Arc<dyn UrlTableFactory>>) -> Self {
        Self {
            inner,
            options: AldTableOptions::default(),
            session: SessionStore::new(),
            has_session: AtomicBool::new(false),
        }
    }

    /// Reads object stores from `ctx`'s runtime (kept as a weak reference).
    pub(crate) fn attach(&self, ctx: &datafusion::prelude::SessionContext) {
        self.session.with_state(ctx.state_weak_ref());
        self.has_session.store(true, Ordering::Release);
    }

    fn runtime(&self) -> Option<Arc<RuntimeEnv>> {
        if !self.has_session.load(Ordering::Acquire) {
            return None;
        }
        let session = self.session.get_session().upgrade()?;
        let runtime = Arc::clone(session.read().runtime_env());
        Some(runtime)
    }

    async fn pass(&self, url: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        match &self.inner {
            Some(inner) => inner.try_new(url).await,
            None => Ok(None),
        }
    }
}

#[async_trait]
impl UrlTableFactory for AldUrlTableFactory {
    async fn try_new(&self, url: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let is_ald = url
            .trim_end_matches('/')
            .ends_with(self.options.file_extension.as_str());
        let location = match Location::parse(url) {
            Ok(location) => location,
            Err(_) if !is_ald => return self.pass(url).await,
            Err(error) => return Err(error.into()),
        };
        let is_prefix = location.is_remote() && url.ends_with('/');
        if !is_ald && !is_prefix {
            return self.pass(url).await;
        }
        let runtime = self.runtime();
        match AldTable::open_async(
            &[location],
            &self.options,
            &Keys::default(),
            runtime.as_deref(),
        )
        .await
        {
            Ok(table) => Ok(Some(Arc::new(table))),
            // A prefix of other files (Parquet, CSV, ...): DataFusion's.
            Err(Error::NoFiles { .. }) if !is_ald => self.pass(url).await,
            Err(error) => Err(error.into()),
        }
    }
}
