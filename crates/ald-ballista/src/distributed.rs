//! The scan as Ballista runs it: [`AldUnitsScanExec`], an `.ald` scan whose units of work come
//! from an in-memory input, and [`DistributedAldTable`], the table the scheduler decodes from a
//! client's plan, whose scans are such scans.
//!
//! Why: Ballista 55 runs one task per partition of a stage and cuts each task's copy of the stage
//! plan down to that task's partitions by rewriting the leaves it knows (its shuffle readers,
//! DataFusion's file and in-memory scans; `restrict_plan_to_partitions` in its scheduler). A leaf
//! it does not know keeps every partition, and then every task reads the whole table (a
//! `COUNT(*)` over 12 chunks came back 12 times too large). So the scan's partitions are carried
//! by a leaf Ballista does know: an in-memory scan (`MemorySourceConfig`) whose partition `i` holds
//! the `(file, chunk)` units of scan partition `i`, one row each. Ballista keeps a task's
//! partitions of it, DataFusion's own plan protobufs ship them, and [`AldUnitsScanExec`] above it
//! decodes exactly the units its input partition lists, through `AldScanExec` (so every check of
//! the local scan applies).
//!
//! The table does it in its `scan` rather than a physical optimizer rule: Ballista's adaptive
//! planner (on by default) plans with its own optimizer rules, not the session's.

use std::fmt;
use std::sync::Arc;

use ald_datafusion::{AldOptions, AldScanExec, AldScanParts, AldTable};
use async_trait::async_trait;
use datafusion::arrow::array::{Array, RecordBatch, UInt32Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Statistics;
use datafusion::common::internal_err;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use futures::{StreamExt, TryStreamExt};

use crate::{Error, effective_options};

/// The schema of the units input: one row per unit of scan work.
fn units_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("file", DataType::UInt32, false),
        Field::new("chunk", DataType::UInt32, false),
    ]))
}

/// An `.ald` scan whose partition `i` decodes the `(file, chunk)` units listed by partition `i`
/// of its input. Everything else (files, schema, projection, limit, signature policy) is in its
/// parts; the keys are the running process's ([`AldOptions`]).
pub struct AldUnitsScanExec {
    /// The scan's parts, without partitions (they are the input).
    parts: AldScanParts,
    options: AldOptions,
    input: Arc<dyn ExecutionPlan>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for AldUnitsScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AldUnitsScanExec")
            .field("files", &self.parts.files.len())
            .field("projection", &self.parts.projection)
            .field("limit", &self.parts.limit)
            .finish_non_exhaustive()
    }
}

impl AldUnitsScanExec {
    /// The scan `scan` with its partitions moved into an in-memory input.
    ///
    /// # Errors
    /// DataFusion's, if the input cannot be built.
    pub fn of(scan: &AldScanExec) -> DfResult<Self> {
        let mut parts = scan.parts();
        let schema = units_schema();
        let partitions = std::mem::take(&mut parts.partitions)
            .into_iter()
            .map(|units| units_batch(&schema, &units).map(|batch| vec![batch]))
            .collect::<DfResult<Vec<_>>>()?;
        let input = MemorySourceConfig::try_new_exec(&partitions, schema, None)?;
        Self::new(parts, AldOptions::new(), input)
    }

    /// The scan of `parts` (their partitions ignored) over `input`, reading with `options`.
    ///
    /// # Errors
    /// `InvalidFormat` if the parts do not hold together, or the input is not a units input.
    pub fn new(
        mut parts: AldScanParts,
        options: AldOptions,
        input: Arc<dyn ExecutionPlan>,
    ) -> DfResult<Self> {
        if !same_fields(&input.schema(), &units_schema()) {
            return Err(Error::Malformed {
                what: "the units input of a scan is not (file UInt32, chunk UInt32)",
            }
            .into());
        }
        // A scan with one empty partition checks the parts and gives the output schema.
        parts.partitions = vec![Vec::new()];
        let template = AldScanExec::from_parts(parts.clone(), &options).map_err(Error::from)?;
        let schema = template.schema();
        parts.partitions = Vec::new();
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(
                input.properties().output_partitioning().partition_count(),
            ),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Self {
            parts,
            options,
            input,
            schema,
            properties: Arc::new(properties),
        })
    }

    /// The scan's parts (without partitions: those are the input's).
    #[must_use]
    pub fn parts(&self) -> &AldScanParts {
        &self.parts
    }

    /// The units input.
    #[must_use]
    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }

    /// The same scan reading with `local`'s keys, under the stricter of `local`'s signature
    /// policy and the one the scan was planned under (an executor's view of a shipped scan).
    ///
    /// # Errors
    /// As [`AldUnitsScanExec::new`].
    pub fn with_local_options(&self, local: &AldOptions) -> DfResult<Self> {
        let options = effective_options(local, self.parts.required_signers.as_deref());
        Self::new(self.parts.clone(), options, Arc::clone(&self.input))
    }
}

fn same_fields(a: &Schema, b: &Schema) -> bool {
    a.fields().len() == b.fields().len()
        && a.fields()
            .iter()
            .zip(b.fields().iter())
            .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type())
}

fn units_batch(schema: &SchemaRef, units: &[(usize, usize)]) -> DfResult<RecordBatch> {
    let index = |value: usize| {
        u32::try_from(value).map_err(|_| {
            DataFusionError::from(Error::Unshippable {
                what: "a file or chunk index beyond u32".to_owned(),
            })
        })
    };
    let files = units
        .iter()
        .map(|&(file, _)| index(file))
        .collect::<DfResult<Vec<_>>>()?;
    let chunks = units
        .iter()
        .map(|&(_, chunk)| index(chunk))
        .collect::<DfResult<Vec<_>>>()?;
    Ok(RecordBatch::try_new(
        Arc::clone(schema),
        vec![
            Arc::new(UInt32Array::from(files)),
            Arc::new(UInt32Array::from(chunks)),
        ],
    )?)
}

/// The units listed by `batch` (refused unless two non-null UInt32 columns).
fn units_of(batch: &RecordBatch, units: &mut Vec<(usize, usize)>) -> Result<(), Error> {
    let bad = || Error::Malformed {
        what: "a units batch that is not two non-null UInt32 columns",
    };
    let column = |index: usize| {
        batch
            .columns()
            .get(index)
            .and_then(|column| column.as_any().downcast_ref::<UInt32Array>())
            .filter(|column| column.null_count() == 0)
            .ok_or_else(bad)
    };
    let (files, chunks) = (column(0)?, column(1)?);
    for (file, chunk) in files.values().iter().zip(chunks.values().iter()) {
        let to_usize = |value: u32| usize::try_from(value).map_err(|_| bad());
        units.push((to_usize(*file)?, to_usize(*chunk)?));
    }
    Ok(())
}

impl DisplayAs for AldUnitsScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let columns = self
            .parts
            .projection
            .iter()
            .filter_map(|&index| self.parts.file_schema.fields().get(index))
            .map(|field| field.name().as_str())
            .collect::<Vec<_>>()
            .join(", ");
        write!(
            f,
            "AldUnitsScanExec: files={}, partitions={}, projection=[{columns}], limit={:?}",
            self.parts.files.len(),
            self.properties.output_partitioning().partition_count(),
            self.parts.limit
        )
    }
}

impl ExecutionPlan for AldUnitsScanExec {
    fn name(&self) -> &'static str {
        "AldUnitsScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match <[_; 1]>::try_from(children) {
            Ok([input]) => Ok(Arc::new(Self::new(
                self.parts.clone(),
                self.options.clone(),
                input,
            )?)),
            Err(_) => internal_err!("AldUnitsScanExec has one child"),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let units = self.input.execute(partition, Arc::clone(&context))?;
        let mut parts = self.parts.clone();
        let options = self.options.clone();
        let start = async move {
            let batches: Vec<RecordBatch> = units.try_collect().await?;
            let mut units = Vec::new();
            for batch in &batches {
                units_of(batch, &mut units)?;
            }
            parts.partitions = vec![units];
            let scan = AldScanExec::from_parts(parts, &options).map_err(Error::from)?;
            scan.execute(0, context)
        };
        let stream = futures::stream::once(start).try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream.boxed(),
        )))
    }
}

/// An [`AldTable`] as the scheduler plans it: its scans are [`AldUnitsScanExec`]s, whose
/// partitions Ballista hands out task by task. [`crate::AldLogicalCodec`] decodes every `.ald`
/// table of a client's plan into one.
#[derive(Debug)]
pub struct DistributedAldTable {
    table: Arc<AldTable>,
}

impl DistributedAldTable {
    /// `table`, planned for Ballista.
    #[must_use]
    pub fn new(table: Arc<AldTable>) -> Self {
        Self { table }
    }

    /// The table.
    #[must_use]
    pub fn table(&self) -> &Arc<AldTable> {
        &self.table
    }
}

#[async_trait]
impl TableProvider for DistributedAldTable {
    fn schema(&self) -> SchemaRef {
        self.table.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let plan = self.table.scan(state, projection, filters, limit).await?;
        match plan.downcast_ref::<AldScanExec>() {
            Some(scan) => Ok(Arc::new(AldUnitsScanExec::of(scan)?)),
            None => internal_err!("AldTable::scan returned {}, not AldScanExec", plan.name()),
        }
    }

    fn statistics(&self) -> Option<Statistics> {
        self.table.statistics()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, UInt32Array};

    #[test]
    fn units_round_trip_through_a_batch_and_bad_batches_are_refused() {
        let schema = units_schema();
        let units = [(0, 0), (0, 1), (3, 7)];
        let batch = units_batch(&schema, &units).unwrap();
        let mut back = Vec::new();
        units_of(&batch, &mut back).unwrap();
        assert_eq!(back, units);

        let nulls = RecordBatch::try_from_iter(vec![
            (
                "file",
                Arc::new(UInt32Array::from(vec![Some(1), None])) as _,
            ),
            ("chunk", Arc::new(UInt32Array::from(vec![1, 2])) as _),
        ])
        .unwrap();
        let signed = RecordBatch::try_from_iter(vec![
            ("file", Arc::new(Int32Array::from(vec![1])) as _),
            ("chunk", Arc::new(Int32Array::from(vec![1])) as _),
        ])
        .unwrap();
        for bad in [nulls, signed] {
            let error = units_of(&bad, &mut Vec::new()).unwrap_err();
            assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
        }
        let too_big = units_batch(&schema, &[(usize::MAX, 0)]);
        assert!(too_big.is_err());
    }
}
