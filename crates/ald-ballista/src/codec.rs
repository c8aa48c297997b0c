//! The two Ballista codecs: [`AldLogicalCodec`] ships an [`AldTable`] in a logical plan (client to
//! scheduler), [`AldPhysicalCodec`] ships an [`AldScanExec`] in a physical plan (scheduler to
//! executors). Each wraps another codec (Ballista's own by default) and hands it every node that
//! is not theirs, so shuffles, Ballista's file formats and functions keep working.

use std::sync::Arc;

use ald_datafusion::{AldOptions, AldScanExec, AldTable};
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{
    AggregateUDF, Extension, HigherOrderUDF, LogicalPlan, ScalarUDF, WindowUDF,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::proto_decode::PhysicalExprDecodeCtx;
use datafusion::physical_expr_common::physical_expr::proto_encode::PhysicalExprEncodeCtx;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use envelope_sign::SigningPublicKey;

use crate::distributed::{AldUnitsScanExec, DistributedAldTable};
use crate::{Error, wire};

/// The logical codec: [`AldTable`]s as table providers of a logical plan (the files as
/// registered and their schema; for objects on object storage, their store URL, key and ETag; no
/// key, no policy, no store credentials: those are each process's own), everything else by the
/// codec it wraps.
///
/// The client and the scheduler both need it (`SessionConfigExt::
/// with_ballista_logical_extension_codec`). The scheduler rebuilds the table without opening a
/// file ([`AldTable::from_parts`]): it plans from the chunk indexes the client read, as a
/// [`DistributedAldTable`] (scans whose partitions Ballista can hand out task by task).
#[derive(Debug)]
pub struct AldLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
}

impl Default for AldLogicalCodec {
    /// Over Ballista's own logical codec.
    fn default() -> Self {
        Self::new(Arc::new(BallistaLogicalExtensionCodec::default()))
    }
}

impl AldLogicalCodec {
    /// `.ald` tables here, every other node through `inner`.
    #[must_use]
    pub fn new(inner: Arc<dyn LogicalExtensionCodec>) -> Self {
        Self { inner }
    }
}

impl LogicalExtensionCodec for AldLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> DfResult<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn TableProvider>> {
        if !wire::is_node(buf, wire::TABLE) {
            return self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx);
        }
        let (files, file_schema) = wire::decode_table(buf)?;
        let table = AldTable::from_parts(files, file_schema).map_err(Error::from)?;
        // The plan declares the table's schema beside the node: they must agree, or the
        // planner's idea of the columns would not be what the scan hands out.
        if !same_columns(&table.schema(), &schema) {
            return Err(Error::Malformed {
                what: "the table's schema is not the one the plan declares",
            }
            .into());
        }
        Ok(Arc::new(DistributedAldTable::new(Arc::new(table))))
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> DfResult<()> {
        let table = node.downcast_ref::<AldTable>().or_else(|| {
            node.downcast_ref::<DistributedAldTable>()
                .map(|distributed| distributed.table().as_ref())
        });
        match table {
            Some(table) => {
                buf.extend_from_slice(&wire::encode_table(table.files(), table.file_schema())?);
                Ok(())
            }
            None => self.inner.try_encode_table_provider(table_ref, node, buf),
        }
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn datafusion::datasource::file_format::FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn datafusion::datasource::file_format::FileFormatFactory>,
    ) -> DfResult<()> {
        self.inner.try_encode_file_format(buf, node)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
        self.inner.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode_udf(node, buf)
    }

    fn try_decode_higher_order_function(
        &self,
        name: &str,
        buf: &[u8],
    ) -> DfResult<Arc<HigherOrderUDF>> {
        self.inner.try_decode_higher_order_function(name, buf)
    }

    fn try_encode_higher_order_function(
        &self,
        node: &HigherOrderUDF,
        buf: &mut Vec<u8>,
    ) -> DfResult<()> {
        self.inner.try_encode_higher_order_function(node, buf)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
        self.inner.try_decode_udaf(name, buf)
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode_udaf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<WindowUDF>> {
        self.inner.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode_udwf(node, buf)
    }
}

fn same_columns(
    a: &datafusion::arrow::datatypes::Schema,
    b: &datafusion::arrow::datatypes::Schema,
) -> bool {
    a.fields().len() == b.fields().len()
        && a.fields().iter().zip(b.fields().iter()).all(|(a, b)| {
            a.name() == b.name()
                && a.data_type() == b.data_type()
                && a.is_nullable() == b.is_nullable()
        })
}

/// The physical codec: [`AldScanExec`]s as leaves of a physical plan (the files as planned,
/// schema, projection, limit, each partition's chunks, and the signature policy the scan was
/// planned under; never a secret), everything else by the codec it wraps.
///
/// Every process that encodes or decodes physical plans needs it: the scheduler (encoding
/// stages) and each executor (decoding its tasks). On an executor it holds that executor's own
/// [`AldOptions`]: the keys it decrypts with, and its signature policy. A decoded scan reads with
/// those keys, under the stricter of the two policies (see [`effective_options`]). The task's
/// session configuration is not consulted for keys: in Ballista 55 it is whatever the client
/// sent, and the `ald.*` secrets never leave the client (they show as `<set>`).
#[derive(Debug)]
pub struct AldPhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
    options: AldOptions,
}

impl Default for AldPhysicalCodec {
    /// Over Ballista's own physical codec, with no key and no policy of its own (a scheduler's).
    fn default() -> Self {
        Self::new(
            Arc::new(BallistaPhysicalExtensionCodec::default()),
            AldOptions::new(),
        )
    }
}

impl AldPhysicalCodec {
    /// `.ald` scans here, read with `options` (this process's keys and signature policy), every
    /// other node through `inner`.
    #[must_use]
    pub fn new(inner: Arc<dyn PhysicalExtensionCodec>, options: AldOptions) -> Self {
        Self { inner, options }
    }

    /// Over Ballista's own physical codec, with this executor's keys and policy.
    #[must_use]
    pub fn with_options(options: AldOptions) -> Self {
        Self::new(Arc::new(BallistaPhysicalExtensionCodec::default()), options)
    }
}

/// The options a shipped scan reads with: `local`'s keys, under the stricter of `local`'s
/// signature policy and the one the scan was `planned` under. When both require a signature, a
/// file must be signed by a key both trust; when one does, its keys; when neither, none.
#[must_use]
pub fn effective_options(local: &AldOptions, planned: Option<&[SigningPublicKey]>) -> AldOptions {
    match (local.requires_signature(), planned) {
        (_, None) => local.clone(),
        (false, Some(keys)) => local.clone().with_trusted_keys(keys.iter().copied()),
        (true, Some(keys)) => {
            let both: Vec<SigningPublicKey> = local
                .trusted_keys()
                .iter()
                .filter(|key| keys.contains(key))
                .copied()
                .collect();
            local.clone().with_trusted_keys(both)
        }
    }
}

impl PhysicalExtensionCodec for AldPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if wire::is_node(buf, wire::UNITS) {
            let parts = wire::decode_scan_as(buf, wire::UNITS)?;
            let [input] = inputs else {
                return Err(Error::Malformed {
                    what: "a units scan node without exactly one input",
                }
                .into());
            };
            let options = effective_options(&self.options, parts.required_signers.as_deref());
            let scan = AldUnitsScanExec::new(parts, options, Arc::clone(input))?;
            return Ok(Arc::new(scan));
        }
        if !wire::is_node(buf, wire::SCAN) {
            return self.inner.try_decode(buf, inputs, ctx, proto_converter);
        }
        if !inputs.is_empty() {
            return Err(Error::Malformed {
                what: "a scan node with inputs",
            }
            .into());
        }
        let parts = wire::decode_scan(buf)?;
        let options = effective_options(&self.options, parts.required_signers.as_deref());
        let scan = AldScanExec::from_parts(parts, &options).map_err(Error::from)?;
        Ok(Arc::new(scan))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<()> {
        if let Some(scan) = node.downcast_ref::<AldUnitsScanExec>() {
            buf.extend_from_slice(&wire::encode_scan_as(scan.parts(), wire::UNITS)?);
            return Ok(());
        }
        match node.downcast_ref::<AldScanExec>() {
            Some(scan) => {
                buf.extend_from_slice(&wire::encode_scan(&scan.parts())?);
                Ok(())
            }
            None => self.inner.try_encode(node, buf, proto_converter),
        }
    }

    fn try_decode_expr(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn PhysicalExpr>],
        ctx: &PhysicalExprDecodeCtx<'_>,
    ) -> DfResult<Arc<dyn PhysicalExpr>> {
        self.inner.try_decode_expr(buf, inputs, ctx)
    }

    fn try_encode_expr(
        &self,
        node: &Arc<dyn PhysicalExpr>,
        buf: &mut Vec<u8>,
        ctx: &PhysicalExprEncodeCtx<'_>,
    ) -> DfResult<()> {
        self.inner.try_encode_expr(node, buf, ctx)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
        self.inner.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode_udf(node, buf)
    }

    fn try_decode_higher_order_function(
        &self,
        name: &str,
        buf: &[u8],
    ) -> DfResult<Arc<HigherOrderUDF>> {
        self.inner.try_decode_higher_order_function(name, buf)
    }

    fn try_encode_higher_order_function(
        &self,
        node: &HigherOrderUDF,
        buf: &mut Vec<u8>,
    ) -> DfResult<()> {
        self.inner.try_encode_higher_order_function(node, buf)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
        self.inner.try_decode_udaf(name, buf)
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode_udaf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<WindowUDF>> {
        self.inner.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode_udwf(node, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> SigningPublicKey {
        envelope_sign::Identity::from_seed([seed; 32]).signing_public_key()
    }

    #[test]
    fn the_stricter_signature_policy_wins() {
        let (a, b, c) = (key(1), key(2), key(3));
        let open = AldOptions::new();
        assert!(!effective_options(&open, None).requires_signature());
        let planned = effective_options(&open, Some(&[a, b]));
        assert!(planned.requires_signature());
        assert_eq!(planned.trusted_keys(), [a, b]);
        let local = AldOptions::new().with_trusted_keys([b, c]);
        assert_eq!(effective_options(&local, None).trusted_keys(), [b, c]);
        let both = effective_options(&local, Some(&[a, b]));
        assert!(both.requires_signature());
        assert_eq!(both.trusted_keys(), [b]);
        // No key trusted by both: every file is refused, never accepted unsigned.
        let none = effective_options(&local, Some(&[a]));
        assert!(none.requires_signature());
        assert!(none.trusted_keys().is_empty());
    }
}
