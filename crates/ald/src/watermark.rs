//! Leak tracing for datasets (000 §9.3): a buyer's watermark in an [`ArrowDataset`]'s numeric
//! columns, through the `watermark` engine (re-exported here whole, so callers need one crate).
//!
//! **Key design decision: a column is one slice, whatever its batches.** The engine's step
//! follows the slice's interquartile range, so marking batch by batch would give each batch its
//! own grid and a reader who concatenates, re-chunks or samples the rows would see a different
//! scale. Here the valid values of a column are gathered across every record batch, marked
//! together, and put back in the same slots of the same batches: the schema, the batch row
//! counts, null slots (never read, never changed, like NaN), nullability and field metadata are
//! unchanged, and a file written whole, zstd-compressed or STREAMING with any chunk size reads
//! back the same buyer (docs/watermark.md §11).
//!
//! Which columns: by default every `Float32` and `Float64` column. Integer-valued columns (`Int*`,
//! `UInt*`, timestamps, dates, times and durations) are marked only when selected by index
//! ([`Watermark::column_indices`]): ids and codes must not change unless asked, and an integer
//! column stays integer, which needs a step of at least 32 units (the engine's
//! [`Skip::StepTooFine`] becomes [`crate::Error::ColumnNotWatermarkable`] with the strength that would
//! work). Reading looks at every float and integer-valued column.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::cast::AsArray as _;
use arrow_array::types::{
    ArrowPrimitiveType, Date32Type, Date64Type, DurationMicrosecondType, DurationMillisecondType,
    DurationNanosecondType, DurationSecondType, Float32Type, Float64Type, Int8Type, Int16Type,
    Int32Type, Int64Type, Time32MillisecondType, Time32SecondType, Time64MicrosecondType,
    Time64NanosecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array as _, ArrayRef, PrimitiveArray, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, TimeUnit};

pub use ::watermark::*;

// Not `crate::Error` by name: the engine's `Error`, re-exported above, keeps that name here.
use crate::Result;
use crate::dataset::ArrowDataset;

/// What a column's type allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `Float32`, `Float64`: marked by default, read, analysed by the keyless statistics.
    Float,
    /// Integer-valued (`Int*`, `UInt*`, temporal): marked only when selected, read.
    Integer,
}

/// A generic operation on one primitive column, called with the column's Arrow type.
trait ColumnOp {
    type Output;
    fn apply<P: ArrowPrimitiveType>(self) -> Self::Output
    where
        P::Native: Sample;
}

/// The kind of `data_type` and `op` applied to its primitive type, or `None` for a type that
/// cannot carry a mark (strings, booleans, decimals, `Float16`, nested, dictionaries).
fn dispatch<O: ColumnOp>(data_type: &DataType, op: O) -> Option<(Kind, O::Output)> {
    use DataType as D;
    use TimeUnit as U;
    Some(match data_type {
        D::Float32 => (Kind::Float, op.apply::<Float32Type>()),
        D::Float64 => (Kind::Float, op.apply::<Float64Type>()),
        D::Int8 => (Kind::Integer, op.apply::<Int8Type>()),
        D::Int16 => (Kind::Integer, op.apply::<Int16Type>()),
        D::Int32 => (Kind::Integer, op.apply::<Int32Type>()),
        D::Int64 => (Kind::Integer, op.apply::<Int64Type>()),
        D::UInt8 => (Kind::Integer, op.apply::<UInt8Type>()),
        D::UInt16 => (Kind::Integer, op.apply::<UInt16Type>()),
        D::UInt32 => (Kind::Integer, op.apply::<UInt32Type>()),
        D::UInt64 => (Kind::Integer, op.apply::<UInt64Type>()),
        D::Timestamp(U::Second, _) => (Kind::Integer, op.apply::<TimestampSecondType>()),
        D::Timestamp(U::Millisecond, _) => (Kind::Integer, op.apply::<TimestampMillisecondType>()),
        D::Timestamp(U::Microsecond, _) => (Kind::Integer, op.apply::<TimestampMicrosecondType>()),
        D::Timestamp(U::Nanosecond, _) => (Kind::Integer, op.apply::<TimestampNanosecondType>()),
        D::Date32 => (Kind::Integer, op.apply::<Date32Type>()),
        D::Date64 => (Kind::Integer, op.apply::<Date64Type>()),
        D::Time32(U::Second) => (Kind::Integer, op.apply::<Time32SecondType>()),
        D::Time32(U::Millisecond) => (Kind::Integer, op.apply::<Time32MillisecondType>()),
        D::Time64(U::Microsecond) => (Kind::Integer, op.apply::<Time64MicrosecondType>()),
        D::Time64(U::Nanosecond) => (Kind::Integer, op.apply::<Time64NanosecondType>()),
        D::Duration(U::Second) => (Kind::Integer, op.apply::<DurationSecondType>()),
        D::Duration(U::Millisecond) => (Kind::Integer, op.apply::<DurationMillisecondType>()),
        D::Duration(U::Microsecond) => (Kind::Integer, op.apply::<DurationMicrosecondType>()),
        D::Duration(U::Nanosecond) => (Kind::Integer, op.apply::<DurationNanosecondType>()),
        _ => return None,
    })
}

/// The kind of a column type, if it can carry a mark.
fn kind(data_type: &DataType) -> Option<Kind> {
    struct Nothing;
    impl ColumnOp for Nothing {
        type Output = ();
        fn apply<P: ArrowPrimitiveType>(self)
        where
            P::Native: Sample,
        {
        }
    }
    dispatch(data_type, Nothing).map(|(kind, ())| kind)
}

/// Column `index` of `batch` as a `P` array (the dispatch matched its data type, so the downcast
/// holds; a mismatch would be a schema the dataset's constructor refused).
fn column<P: ArrowPrimitiveType>(batch: &RecordBatch, index: usize) -> Result<&PrimitiveArray<P>> {
    batch
        .column(index)
        .as_primitive_opt::<P>()
        .ok_or(crate::Error::InvalidArgument(
            "a record batch's column differs from the schema",
        ))
}

/// The valid (non-null) values of column `index`, over every batch in order.
fn gather<P: ArrowPrimitiveType>(batches: &[RecordBatch], index: usize) -> Result<Vec<P::Native>> {
    let mut values = Vec::new();
    for batch in batches {
        let array = column::<P>(batch, index)?;
        match array.nulls() {
            None => values.extend_from_slice(array.values()),
            // Null slots hold whatever the writer left there: never read them.
            Some(nulls) => values.extend(nulls.valid_indices().map(|i| array.values()[i])),
        }
    }
    Ok(values)
}

/// Column `index` of every batch with its valid slots replaced, in order, by `marked` (what
/// [`gather`] took out, after marking); null slots, the validity bitmap and the data type (time
/// zone included) are kept.
fn scatter<P: ArrowPrimitiveType>(
    batches: &[RecordBatch],
    index: usize,
    marked: &[P::Native],
) -> Result<Vec<ArrayRef>> {
    let mut taken = marked.iter();
    let mut arrays = Vec::with_capacity(batches.len());
    for batch in batches {
        let array = column::<P>(batch, index)?;
        let mut values = array.values().to_vec();
        let slots: Box<dyn Iterator<Item = usize>> = match array.nulls() {
            None => Box::new(0..values.len()),
            Some(nulls) => Box::new(nulls.valid_indices()),
        };
        for slot in slots {
            values[slot] = *taken.next().ok_or(crate::Error::InvalidArgument(
                "fewer marked values than valid slots",
            ))?;
        }
        let rebuilt = PrimitiveArray::<P>::new(values.into(), array.nulls().cloned())
            .with_data_type(array.data_type().clone());
        arrays.push(Arc::new(rebuilt) as ArrayRef);
    }
    Ok(arrays)
}

/// One column's valid values ([`gather`]), with where they came from.
struct Gathered<'a, P: ArrowPrimitiveType> {
    batches: &'a [RecordBatch],
    index: usize,
    values: Vec<P::Native>,
}

/// What to do with a [`Gathered`] column ([`OnColumn`]).
trait ColumnUse {
    type Output;
    fn with<P: ArrowPrimitiveType>(self, column: Gathered<'_, P>) -> Result<Self::Output>
    where
        P::Native: Sample;
}

/// Gathers column `index` of `batches` and hands it to `then`.
struct OnColumn<'a, U> {
    batches: &'a [RecordBatch],
    index: usize,
    then: U,
}

impl<U: ColumnUse> ColumnOp for OnColumn<'_, U> {
    type Output = Result<U::Output>;
    fn apply<P: ArrowPrimitiveType>(self) -> Self::Output
    where
        P::Native: Sample,
    {
        let values = gather::<P>(self.batches, self.index)?;
        self.then.with(Gathered::<P> {
            batches: self.batches,
            index: self.index,
            values,
        })
    }
}

/// Marks the column through the marking, named `.0`; gives back its new arrays, one per batch
/// (none if nothing was marked).
struct Mark<'a>(&'a str, &'a mut Marking);

impl ColumnUse for Mark<'_> {
    type Output = (SliceReport, Vec<ArrayRef>);
    fn with<P: ArrowPrimitiveType>(self, mut column: Gathered<'_, P>) -> Result<Self::Output>
    where
        P::Native: Sample,
    {
        let report = self.1.embed(self.0, &mut column.values).clone();
        let arrays = if report.marked > 0 {
            scatter::<P>(column.batches, column.index, &column.values)?
        } else {
            Vec::new()
        };
        Ok((report, arrays))
    }
}

/// Reads the column into the reading, named `.0`.
struct Read<'a>(&'a str, &'a mut Reading);

impl ColumnUse for Read<'_> {
    type Output = ();
    fn with<P: ArrowPrimitiveType>(self, column: Gathered<'_, P>) -> Result<()>
    where
        P::Native: Sample,
    {
        self.1.add(self.0, &column.values);
        Ok(())
    }
}

/// The keyless statistics of the column.
struct Analyze;

impl ColumnUse for Analyze {
    type Output = detect::SliceStatistics;
    fn with<P: ArrowPrimitiveType>(self, column: Gathered<'_, P>) -> Result<Self::Output>
    where
        P::Native: Sample,
    {
        Ok(detect::analyze(&column.values))
    }
}

/// Why an explicitly selected column carries no mark, in words.
fn skip_reason(skip: Skip, strength: f32) -> Cow<'static, str> {
    match skip {
        Skip::TooFewValues => "fewer than 16 finite, non-null values (integers beyond 2^53 in \
                               magnitude, such as nanosecond timestamps, count as not finite: \
                               store microseconds)"
            .into(),
        Skip::NoSpread => "every value is the same".into(),
        Skip::StepTooFine {
            exponent,
            min_exponent,
        } => {
            // strength × scale lies in [2^E, 2^(E+1)): this strength gives 2^min_exponent at least.
            let needed = f64::from(strength) * 2f64.powi(min_exponent - exponent);
            let units = 1u64 << min_exponent.clamp(0, 63);
            let advice = if needed <= f64::from(STRENGTH_RANGE.1) {
                format!("use a strength of at least {needed:.2e}, or leave the column out")
            } else {
                format!(
                    "no strength up to {} reaches it (the spread is too small): leave the column \
                     out",
                    STRENGTH_RANGE.1
                )
            };
            format!(
                "an integer column needs a step of at least {units} units, and strength \
                 {strength} gives 2^{exponent}; {advice}"
            )
            .into()
        }
        _ => "the step strength × interquartile range is out of range".into(),
    }
}

impl ArrowDataset {
    /// A marked copy of the dataset and what was marked (000 §9.3.1).
    ///
    /// `watermark.column_indices` index the schema's fields; empty means every `Float32` and
    /// `Float64` column. Integer-valued columns are marked only when selected explicitly. Each
    /// column is one slice across all record batches; null slots are never read or changed; the
    /// schema and the batch boundaries are kept. The marked columns are read back with
    /// `seller_key` before anything is returned, so an `Ok` is a mark the key traces.
    ///
    /// # Errors
    /// [`crate::Error::NoSuchColumn`] for an index past the schema; [`crate::Error::ColumnNotWatermarkable`] for
    /// a selected column whose type or values cannot carry a mark; [`crate::Error::Watermark`] for an
    /// invalid strength or redundancy, or `NotTraceable` when the marked columns together do not
    /// read back as the buyer (then nothing is returned and nothing may claim a mark).
    pub fn watermarked(
        &self,
        watermark: &Watermark,
        seller_key: &SellerKey,
    ) -> Result<(Self, MarkReport)> {
        let fields = self.schema().fields();
        let mut selected: Vec<usize> = if watermark.column_indices.is_empty() {
            (0..fields.len())
                .filter(|&i| kind(fields[i].data_type()) == Some(Kind::Float))
                .collect()
        } else {
            watermark.column_indices.clone()
        };
        selected.sort_unstable();
        selected.dedup();
        let explicit = !watermark.column_indices.is_empty();
        let refuse =
            |index: usize, reason: Cow<'static, str>| crate::Error::ColumnNotWatermarkable {
                index,
                column: fields[index].name().clone(),
                data_type: fields[index].data_type().to_string(),
                reason,
            };
        for &index in &selected {
            if index >= fields.len() {
                return Err(crate::Error::NoSuchColumn {
                    index,
                    columns: fields.len(),
                });
            }
            if kind(fields[index].data_type()).is_none() {
                return Err(refuse(
                    index,
                    "only Float32, Float64 and integer-valued columns (Int*, UInt*, timestamps, \
                     dates, times, durations) can carry a mark"
                        .into(),
                ));
            }
        }
        let mut marking = Marking::new(seller_key, watermark)?;
        let mut columns: Vec<Vec<ArrayRef>> = self
            .batches()
            .iter()
            .map(|batch| batch.columns().to_vec())
            .collect();
        for &index in &selected {
            let op = OnColumn {
                batches: self.batches(),
                index,
                then: Mark(fields[index].name(), &mut marking),
            };
            let Some((_, outcome)) = dispatch(fields[index].data_type(), op) else {
                continue;
            };
            let (report, arrays) = outcome?;
            if explicit && let Some(skip) = report.skipped {
                return Err(refuse(index, skip_reason(skip, watermark.strength)));
            }
            for (batch, array) in columns.iter_mut().zip(arrays) {
                batch[index] = array;
            }
        }
        let report = marking.finish()?;
        let batches = self
            .batches()
            .iter()
            .zip(columns)
            .map(|(batch, columns)| {
                let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
                RecordBatch::try_new_with_options(self.schema().clone(), columns, &options).map_err(
                    crate::Error::unencodable("a marked record batch cannot be rebuilt"),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((Self::new(self.schema().clone(), batches)?, report))
    }

    /// Every float and integer-valued column read under `seller_key` into one [`Reading`], each
    /// named by its column, in schema order (null slots are not read). Then
    /// [`Reading::extract`], [`Reading::verify`] or [`Reading::identify`].
    #[must_use]
    pub fn watermark_reading(&self, seller_key: &SellerKey) -> Reading {
        let mut reading = Reading::new(seller_key);
        for (index, field) in self.schema().fields().iter().enumerate() {
            let op = OnColumn {
                batches: self.batches(),
                index,
                then: Read(field.name(), &mut reading),
            };
            // A batch that disagrees with the schema cannot exist (`ArrowDataset::new`); were one
            // to, its column would simply add no votes.
            let _ = dispatch(field.data_type(), op);
        }
        reading
    }

    /// The keyless §9.3.3 statistics of every float column, `(name, statistics)` in schema order
    /// (the input of [`detect::detect`]).
    #[must_use]
    pub fn watermark_statistics(&self) -> Vec<(String, detect::SliceStatistics)> {
        self.schema()
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, field)| kind(field.data_type()) == Some(Kind::Float))
            .filter_map(|(index, field)| {
                let op = OnColumn {
                    batches: self.batches(),
                    index,
                    then: Analyze,
                };
                match dispatch(field.data_type(), op) {
                    Some((_, Ok(statistics))) => Some((field.name().clone(), statistics)),
                    _ => None,
                }
            })
            .collect()
    }
}

/// A dataset marks, extracts and verifies as a whole: [`ArrowDataset::watermarked`] in place,
/// [`ArrowDataset::watermark_reading`] to read.
impl Watermarkable for ArrowDataset {
    type Error = crate::Error;

    fn embed_watermark(
        &mut self,
        watermark: &Watermark,
        seller_key: &SellerKey,
    ) -> Result<Traceability> {
        let (marked, report) = self.watermarked(watermark, seller_key)?;
        *self = marked;
        Ok(report.traceability)
    }

    fn extract_watermark(&self, seller_key: &SellerKey) -> Option<Extracted> {
        self.watermark_reading(seller_key).extract()
    }

    fn verify_watermark(&self, buyer_hash: &[u8; 32], seller_key: &SellerKey) -> bool {
        self.watermark_reading(seller_key)
            .verify(buyer_hash)
            .matched
    }
}
