//! A Ballista cluster in this process, on loopback: one scheduler and any number of executors,
//! each a separate gRPC server on its own free port, talking to each other over TCP exactly as
//! separate machines would (the executors poll the scheduler for tasks and fetch each other's
//! shuffle output through Arrow Flight). For tests, demos and single-machine use; a deployment
//! builds the same pieces into its own scheduler and executor processes (`docs/datafusion.md`
//! §7).
//!
//! Each executor counts the tasks it ran ([`ExecutorTasks`]), through Ballista's per-task metrics
//! hook.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use ald_datafusion::{AldOptions, register_ald_format};
use ballista_core::extension::{SessionConfigExt, SessionStateExt};
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_core::serde::BallistaCodec;
use ballista_core::serde::protobuf::ExecutorRegistration;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_core::serde::scheduler::{
    ExecutorOperatingSystemSpecification, ExecutorSpecification,
};
use ballista_core::utils::{
    GrpcClientConfig, GrpcServerConfig, create_grpc_client_connection, create_grpc_server,
    default_session_builder,
};
use ballista_core::{BALLISTA_PROTOCOL_VERSION, ConfigProducer, JobId, RuntimeProducer};
use ballista_executor::execution_engine::QueryStageExecutor;
use ballista_executor::executor::Executor;
use ballista_executor::flight_service::BallistaFlightService;
use ballista_executor::metrics::ExecutorMetricsCollector;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::object_store::ObjectStoreRegistry;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::{AldLogicalCodec, AldPhysicalCodec, Error, Result};

/// The session configuration of a client (or a scheduler) of a cluster that reads `.ald`
/// tables: Ballista's, with the `ald.*` options `options` and this crate's codecs.
#[must_use]
pub fn session_config(options: AldOptions) -> SessionConfig {
    SessionConfig::new_with_ballista()
        .with_option_extension(options)
        .with_ballista_logical_extension_codec(Arc::new(AldLogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(AldPhysicalCodec::default()))
}

/// A client session of the scheduler at `scheduler_url` (`df://host:port`): queries are planned
/// by the scheduler and run by its executors. `options` are the client's `ald.*` options: its
/// signature policy reaches the scheduler with the session's settings (and from there every
/// scan's plan); its secrets do not leave this process (`docs/datafusion.md` §7). `.ald` tables
/// are registered on it as on a local context ([`ald_datafusion::register_ald`]).
///
/// # Errors
/// DataFusion's, for a URL Ballista does not accept.
pub fn remote_context(
    scheduler_url: &str,
    options: AldOptions,
) -> datafusion::error::Result<SessionContext> {
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(session_config(options))
        .build()
        .upgrade_for_ballista(scheduler_url.to_owned())?;
    let ctx = SessionContext::new_with_state(state);
    register_ald_format(&ctx);
    Ok(ctx)
}

/// The tasks one executor ran, by stage.
#[derive(Debug, Clone)]
pub struct ExecutorTasks {
    /// The executor's id (as the scheduler knows it).
    pub id: String,
    /// Where its Arrow Flight server listens.
    pub address: SocketAddr,
    /// Tasks run, by stage id.
    pub by_stage: BTreeMap<usize, usize>,
}

impl ExecutorTasks {
    /// Tasks run, all stages.
    #[must_use]
    pub fn total(&self) -> usize {
        self.by_stage.values().sum()
    }
}

/// Ballista's per-task hook: counts the tasks of each stage.
#[derive(Default)]
struct TaskCounter {
    by_stage: Mutex<BTreeMap<usize, usize>>,
}

impl ExecutorMetricsCollector for TaskCounter {
    fn record_stage(
        &self,
        _job_id: &JobId,
        stage_id: usize,
        _task_id: usize,
        _plan: Arc<dyn QueryStageExecutor>,
    ) {
        *self
            .by_stage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(stage_id)
            .or_default() += 1;
    }
}

struct LocalExecutor {
    id: String,
    address: SocketAddr,
    counter: Arc<TaskCounter>,
    /// Shuffle files; removed when the cluster is dropped.
    _work_dir: tempfile::TempDir,
}

/// A scheduler and executors on loopback, in this process. Dropping it stops the executors (their
/// Flight servers and poll loops); the scheduler's server, which Ballista spawns itself, ends with
/// the tokio runtime.
pub struct LocalCluster {
    scheduler: SocketAddr,
    executors: Vec<LocalExecutor>,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for LocalCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalCluster")
            .field("scheduler", &self.scheduler)
            .field("executors", &self.executors.len())
            .finish_non_exhaustive()
    }
}

fn cluster_error(
    what: &'static str,
) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> Error {
    move |source| Error::Cluster { what, source }
}

impl LocalCluster {
    /// Starts a scheduler and `executors` executors of `vcores` task slots each, on free loopback
    /// ports. Every executor reads `.ald` scans with `options` (its keys and signature policy).
    /// Must be called inside a tokio runtime (the servers are tasks of it).
    ///
    /// # Errors
    /// `Io` ([`Error::Cluster`]) if a server cannot bind or the executors cannot reach the
    /// scheduler.
    pub async fn start(executors: usize, vcores: usize, options: AldOptions) -> Result<Self> {
        Self::start_with_stores(executors, vcores, options, None).await
    }

    /// As [`LocalCluster::start`], the executors reading object storage through the stores of
    /// `stores` (each executor's runtime has this registry; a store it lacks is configured from
    /// the environment when a scan first needs it, as in any session). `None`: DataFusion's
    /// default registry, empty.
    ///
    /// # Errors
    /// As [`LocalCluster::start`].
    pub async fn start_with_stores(
        executors: usize,
        vcores: usize,
        options: AldOptions,
        stores: Option<Arc<dyn ObjectStoreRegistry>>,
    ) -> Result<Self> {
        // The scheduler: its sessions are Ballista's, with the `ald.*` options the clients send.
        let config_producer: ConfigProducer = Arc::new(|| session_config(AldOptions::new()));
        let scheduler = ballista_scheduler::standalone::new_standalone_scheduler_with_builder(
            Arc::new(default_session_builder),
            config_producer,
            BallistaCodec::new(
                Arc::new(AldLogicalCodec::default()),
                Arc::new(AldPhysicalCodec::default()),
            ),
        )
        .await
        .map_err(|e| cluster_error("starting the scheduler")(Box::new(e)))?;
        let mut cluster = Self {
            scheduler,
            executors: Vec::with_capacity(executors),
            tasks: Vec::new(),
        };
        for _ in 0..executors {
            cluster
                .start_executor(vcores, options.clone(), stores.clone())
                .await?;
        }
        Ok(cluster)
    }

    async fn start_executor(
        &mut self,
        vcores: usize,
        options: AldOptions,
        stores: Option<Arc<dyn ObjectStoreRegistry>>,
    ) -> Result<()> {
        let channel = create_grpc_client_connection(
            format!("http://localhost:{}", self.scheduler.port()),
            &GrpcClientConfig::default(),
        )
        .await
        .map_err(|e| cluster_error("connecting an executor to the scheduler")(Box::new(e)))?;
        let scheduler = SchedulerGrpcClient::new(channel);
        let listener = TcpListener::bind("localhost:0")
            .await
            .map_err(|e| cluster_error("binding an executor's port")(Box::new(e)))?;
        let address = listener
            .local_addr()
            .map_err(|e| cluster_error("binding an executor's port")(Box::new(e)))?;
        let work_dir = tempfile::tempdir()
            .map_err(|e| cluster_error("creating an executor's work directory")(Box::new(e)))?;
        let work_path = work_dir.path().to_string_lossy().into_owned();
        let id = ballista_core::ids::new_instance_id();
        let registration = ExecutorRegistration {
            id: id.clone(),
            host: Some("localhost".to_owned()),
            port: u32::from(address.port()),
            // The executor's own gRPC service is for push scheduling; this cluster pulls.
            grpc_port: 0,
            specification: Some(
                ExecutorSpecification::default()
                    .with_vcores(u32::try_from(vcores).unwrap_or(u32::MAX))
                    .into(),
            ),
            os_info: Some(ExecutorOperatingSystemSpecification::default().into()),
            ballista_protocol_version: BALLISTA_PROTOCOL_VERSION,
        };
        // The task's session: Ballista's defaults with the client's settings over them. The
        // `ald.*` options are not registered here: the executor's keys and policy are in its
        // codec, which no client setting reaches.
        let config_producer: ConfigProducer = Arc::new(SessionConfig::new_with_ballista);
        let mut runtime = RuntimeEnvBuilder::new();
        if let Some(stores) = stores {
            runtime = runtime.with_object_store_registry(stores);
        }
        let runtime = runtime
            .build_arc()
            .map_err(|e| cluster_error("building an executor's runtime")(Box::new(e)))?;
        let runtime_producer: RuntimeProducer = Arc::new(move |_| Ok(Arc::clone(&runtime)));
        let counter = Arc::new(TaskCounter::default());
        let executor = Arc::new(Executor::with_default_execution_engine(
            registration,
            &work_path,
            runtime_producer,
            config_producer,
            Arc::new(BallistaFunctionRegistry::default()),
            Arc::clone(&counter) as Arc<dyn ExecutorMetricsCollector>,
            vcores,
        ));
        let flight = arrow_flight::flight_service_server::FlightServiceServer::new(
            BallistaFlightService::new(work_path),
        );
        let server = create_grpc_server(&GrpcServerConfig::default())
            .add_service(flight)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
        self.tasks.push(tokio::spawn(async move {
            // Stops only with the runtime or an I/O failure of the listener; the scheduler then
            // sees the executor's tasks fail.
            let _ = server.await;
        }));
        let codec: BallistaCodec = BallistaCodec::new(
            Arc::new(AldLogicalCodec::default()),
            Arc::new(AldPhysicalCodec::with_options(options)),
        );
        self.tasks.push(tokio::spawn(async move {
            let _ = ballista_executor::execution_loop::poll_loop(
                scheduler,
                executor,
                codec,
                None,
                None,
                ballista_executor::health::ExecutorHealth::new(),
            )
            .await;
        }));
        self.executors.push(LocalExecutor {
            id,
            address,
            counter,
            _work_dir: work_dir,
        });
        Ok(())
    }

    /// The scheduler's URL for [`remote_context`] (`df://localhost:PORT`).
    #[must_use]
    pub fn scheduler_url(&self) -> String {
        format!("df://localhost:{}", self.scheduler.port())
    }

    /// The tasks each executor has run so far, in the order they were started.
    #[must_use]
    pub fn tasks(&self) -> Vec<ExecutorTasks> {
        self.executors
            .iter()
            .map(|executor| ExecutorTasks {
                id: executor.id.clone(),
                address: executor.address,
                by_stage: executor
                    .counter
                    .by_stage
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone(),
            })
            .collect()
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
