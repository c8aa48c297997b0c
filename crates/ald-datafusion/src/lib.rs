//! Apache DataFusion over `.ald` datasets: SQL on one file or a directory of files, read through
//! `ald`'s own verified path.
//!
//! ```no_run
//! # async fn example() -> datafusion::error::Result<()> {
//! use datafusion::prelude::SessionContext;
//! use ald_datafusion::{AldOptions, AldTableOptions, register_ald, register_ald_format};
//!
//! let ctx = SessionContext::new();
//! register_ald_format(&ctx); // the `ald.*` options and `STORED AS ALD`
//! ctx.sql("SET ald.password = 'correct horse'").await?;
//! register_ald(&ctx, "trips", "/data/trips/", AldTableOptions::default())?;
//! let rows = ctx.sql("SELECT city, SUM(fare) FROM trips GROUP BY city").await?.collect().await?;
//! # Ok(()) }
//! ```
//!
//! Key decisions (the user's page is `docs/datafusion.md`):
//! - **The local loader's checks, exactly.** Every file is opened with
//!   [`ald::StreamingDataset::open`] (header, metadata, schema and chunk index verified; each
//!   chunk's CRC-32C or AES-GCM tag when it is read; a required signature over every byte), and
//!   each chunk is decoded by [`ald::ChunkReader`]. A bad file is a DataFusion error wrapping
//!   [`ald::Error`] (its Andon signal first in the message, [`signal_of`] to read it back), never
//!   a panic and never a row that was not verified.
//! - **Chunks are the units of scan work.** A STREAMING file's chunks (row groups) decode
//!   independently; a scan's partitions are contiguous runs of them across the table's files (a
//!   non-STREAMING file is one unit). Each partition decodes on a blocking thread, one chunk ahead
//!   of its consumer.
//! - **Two arrows, one ABI.** DataFusion 55.2 is built on arrow 59, the format crates on arrow 60.
//!   Batches cross through the Arrow C Data Interface without a copy (the `bridge` module, the
//!   crate's only `unsafe`).
//! - **Exact statistics for the planner** from the headers and chunk indexes: row counts, and the
//!   decoded bytes of the chunks ([`AldTable::exact_statistics`]).
//! - **Keys in the session configuration** ([`AldOptions`], the `ald.*` options): a password or an
//!   X25519 secret for encrypted files, trusted Ed25519 keys and whether a signature is required.
//! - **Storage is a seam.** [`Location`] and the `source` module are the only code that knows
//!   where the bytes are: local files (a memory map) or objects on object storage (`s3://`,
//!   `gs://`, `az://`, `http(s)://`), read through `remote_file::RemoteDataset` with the same
//!   checks, chunks fetched by range during the scan; one `object_store` client per store, shared
//!   with DataFusion's `RuntimeEnv` registry.
//!
//! Native only: DataFusion brings tokio, which no format crate may reach (`deny.toml`).

// The C Data Interface moves and import (each block with its `// SAFETY:`); nothing else in the
// crate may use `unsafe` (the lints deny it).
#[allow(unsafe_code)]
mod bridge;
mod config;
mod error;
mod scan;
mod source;
mod table;

use std::sync::Arc;

use datafusion::catalog::{DynamicFileCatalog, UrlTableFactory};
use datafusion::datasource::dynamic_file::DynamicListTableFactory;
use datafusion::prelude::SessionContext;

pub use config::AldOptions;
pub use error::{Error, Result, signal_of};
pub use scan::{AldScanExec, AldScanParts};
pub use source::{DEFAULT_EXTENSION, FileInfo, Location, ObjectVersion, RemoteUrl};
pub use table::{AldTable, AldTableFactory, AldTableOptions, AldUrlTableFactory};

/// The file type `CREATE EXTERNAL TABLE ... STORED AS` names for `.ald` tables.
pub const FILE_TYPE: &str = "ALD";

/// Adds the `ald.*` session options (unless present) and the `STORED AS ALD` table factory to
/// `ctx`.
pub fn register_ald_format(ctx: &SessionContext) {
    let state = ctx.state_ref();
    let mut state = state.write();
    let options = state.config_mut().options_mut();
    if options.extensions.get::<AldOptions>().is_none() {
        options.extensions.insert(AldOptions::default());
    }
    state
        .table_factories_mut()
        .insert(FILE_TYPE.to_owned(), Arc::new(AldTableFactory));
}

/// Registers the `.ald` file or directory at `location` as table `name`, verified under the
/// session's `ald.*` signature policy. `location` may be an object storage URL
/// (`s3://bucket/prefix/`, `s3://bucket/x.ald`, `gs://`, `az://`, `http(s)://`): its store is
/// the one `ctx`'s runtime has registered for the bucket, else one configured from the
/// environment and registered there; its objects are listed and opened on a private runtime (this
/// call blocks until they are: use [`register_ald_async`] from async code).
///
/// # Errors
/// As [`AldTable::try_new`]; DataFusion's error if the name is taken.
pub fn register_ald(
    ctx: &SessionContext,
    name: &str,
    location: &str,
    options: AldTableOptions,
) -> datafusion::error::Result<Arc<AldTable>> {
    let config = session_options(ctx);
    let location = Location::parse(location)?;
    let table = if location.is_remote() {
        let runtime = ctx.runtime_env();
        let keys = config.keys();
        table::block_on_private(AldTable::open_async(
            &[location],
            &options,
            &keys,
            Some(&runtime),
        ))?
    } else {
        AldTable::try_new(&[location], &options, &config)?
    };
    let table = Arc::new(table);
    ctx.register_table(name, Arc::clone(&table) as _)?;
    Ok(table)
}

/// As [`register_ald`], without blocking: the objects of a remote location are listed and
/// opened on the caller's runtime.
///
/// # Errors
/// As [`register_ald`].
pub async fn register_ald_async(
    ctx: &SessionContext,
    name: &str,
    location: &str,
    options: AldTableOptions,
) -> datafusion::error::Result<Arc<AldTable>> {
    let config = session_options(ctx);
    let runtime = ctx.runtime_env();
    let table = Arc::new(
        AldTable::try_new_async(
            &[Location::parse(location)?],
            &options,
            &config,
            Some(&runtime),
        )
        .await?,
    );
    ctx.register_table(name, Arc::clone(&table) as _)?;
    Ok(table)
}

/// The object store `ctx` reads `url` (`s3://bucket/...`, `gs://`, `az://`, `http(s)://`) with:
/// the one its runtime has registered for the URL's `scheme://authority`, else one configured
/// from the environment (`AWS_ENDPOINT_URL`, ..., docs/remote.md), registered now. `.ald`
/// tables register their stores this way themselves; call it before reading other files of the
/// same bucket with DataFusion's own readers (`CREATE EXTERNAL TABLE ... STORED AS PARQUET
/// LOCATION 's3://...'`), which need a registered store, so that both share one client.
///
/// # Errors
/// `Usage` for a local path or a URL of another scheme, or a store the environment does not
/// configure.
pub fn register_object_store(
    ctx: &SessionContext,
    url: &str,
) -> datafusion::error::Result<Arc<dyn object_store::ObjectStore>> {
    match Location::parse(url)? {
        Location::Remote(remote) => Ok(remote.store(Some(&ctx.runtime_env()))?),
        Location::Local(_) => Err(Error::Location {
            location: url.to_owned(),
            reason: "not an object storage URL",
        }
        .into()),
    }
}

fn session_options(ctx: &SessionContext) -> AldOptions {
    ctx.state()
        .config_options()
        .extensions
        .get::<AldOptions>()
        .cloned()
        .unwrap_or_default()
}

/// `ctx` with paths in the `FROM` clause enabled, as [`SessionContext::enable_url_table`], with
/// `.ald` files (and directories whose name ends in `.ald`), `.ald` objects and object storage
/// prefixes holding `.ald` objects (`'s3://bucket/prefix/'`) read as [`AldTable`]s, and every
/// other path or URL left to DataFusion's own factory. Call it instead of `enable_url_table`.
#[must_use]
pub fn enable_ald_url_table(ctx: SessionContext) -> SessionContext {
    let current = Arc::clone(ctx.state().catalog_list());
    let listing = Arc::new(DynamicListTableFactory::new(
        datafusion_session::SessionStore::new(),
    ));
    let factory = Arc::new(AldUrlTableFactory::new(Some(
        Arc::clone(&listing) as Arc<dyn UrlTableFactory>
    )));
    let catalog_list = Arc::new(DynamicFileCatalog::new(
        current,
        Arc::clone(&factory) as Arc<dyn UrlTableFactory>,
    ));
    let session_id = ctx.session_id();
    let ctx: SessionContext = ctx
        .into_state_builder()
        .with_session_id(session_id)
        .with_catalog_list(catalog_list)
        .build()
        .into();
    listing.session_store().with_state(ctx.state_weak_ref());
    factory.attach(&ctx);
    ctx
}
