//! JSONL inputs (one JSON object per line), through `arrow-json`, with the columns in the order
//! the first object names them.
//!
//! `arrow-json` infers a schema through `serde_json` maps, which sort keys (the workspace does not
//! enable `preserve_order`); a table written as JSONL and read back should keep its column order.
//! The first object's keys are read in order by `serde_json` itself (a map visitor that records
//! each key and skips its value), so escapes (`\u00e9`, `\"`) are decoded exactly as the reader
//! decodes them, and the fields are then put in that order. Every step is linear in the number of
//! keys (hash lookups, no pairwise comparison): issue 14 §2 measured 108 s for one line of 100k
//! keys with the quadratic scanner this replaces.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::BufRead;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};

use super::guard::guarded;
use super::input::{ByteProgress, Origin, ReadStage};
use super::{BATCH_ROWS, FileKind, Inference, arrow_error};
use crate::Result;

/// The schema of a JSONL input, inferred by `arrow-json` from `sample` rows (all by default), its
/// fields in the order of the first object's keys.
///
/// # Errors
/// `InvalidFormat` naming JSONL for malformed JSON; `Io`.
pub(crate) fn infer_schema(
    origin: &Origin,
    sample: Inference,
    progress: Option<&ByteProgress>,
) -> Result<SchemaRef> {
    let kind = FileKind::Jsonl;
    let max_records = match sample {
        Inference::Rows(rows) => Some(rows),
        Inference::Default | Inference::All => None,
    };
    let reader = origin.reader(ReadStage::Inferring, progress)?;
    let (schema, _) = guarded(kind.name(), || {
        arrow_json::reader::infer_json_schema(reader, max_records)
            .map_err(|error| arrow_error(kind, error))
    })?;
    let first = first_object_keys(origin)?;
    Ok(in_key_order(&schema, &first))
}

/// The keys of the first non-blank line's object, in order, each once (empty if that line is not
/// an object; the reader reports malformed JSON itself).
fn first_object_keys(origin: &Origin) -> Result<Vec<String>> {
    let mut reader = origin.reader(ReadStage::Inferring, None)?;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(Vec::new());
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    Ok(top_level_keys(&line))
}

/// The top-level keys of the JSON object `line`, in order, each once (empty if it is not one).
pub(crate) fn top_level_keys(line: &str) -> Vec<String> {
    struct Keys;

    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            let mut seen = HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                // A repeated key names the same column (serde_json keeps its last value).
                if seen.insert(key.clone()) {
                    keys.push(key);
                }
            }
            Ok(keys)
        }
    }

    serde_json::Deserializer::from_str(line)
        .deserialize_map(Keys)
        .unwrap_or_default()
}

/// `schema` with its fields in the order of `keys` (fields not named there keep their order, at
/// the end).
pub(crate) fn in_key_order(schema: &Schema, keys: &[String]) -> SchemaRef {
    let position: HashMap<&str, usize> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(at, field)| (field.name().as_str(), at))
        .collect();
    let mut placed = vec![false; schema.fields().len()];
    let mut fields = Vec::with_capacity(schema.fields().len());
    for key in keys {
        if let Some(&at) = position.get(key.as_str())
            && !placed[at]
        {
            placed[at] = true;
            fields.push(Arc::clone(&schema.fields()[at]));
        }
    }
    for (field, placed) in schema.fields().iter().zip(placed) {
        if !placed {
            fields.push(Arc::clone(field));
        }
    }
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Reads every row as `schema`, calling `each` with every batch until it breaks.
///
/// # Errors
/// `InvalidFormat` naming JSONL; `Io`; the first error of `each`.
pub(crate) fn read(
    origin: &Origin,
    schema: &SchemaRef,
    progress: Option<&ByteProgress>,
    mut each: impl FnMut(RecordBatch) -> Result<ControlFlow<()>>,
) -> Result<()> {
    let kind = FileKind::Jsonl;
    let reader = origin.reader(ReadStage::Reading, progress)?;
    let mut batches = guarded(kind.name(), || {
        arrow_json::ReaderBuilder::new(Arc::clone(schema))
            .with_batch_size(BATCH_ROWS)
            .build(reader)
            .map_err(|error| arrow_error(kind, error))
    })?;
    loop {
        let batch = guarded(kind.name(), || {
            batches
                .next()
                .transpose()
                .map_err(|error| arrow_error(kind, error))
        })?;
        let Some(batch) = batch else {
            return Ok(());
        };
        if each(batch)?.is_break() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};

    #[test]
    fn keys_come_in_line_order_with_escapes_decoded() {
        let line =
            r#"{"z":1,"a":{"inner":[1,{"deep":2}]},"m":"x,\"y\"","\u00e9\"q":null,"b":2,"z":3}"#;
        assert_eq!(top_level_keys(line), ["z", "a", "m", "é\"q", "b"]);
        assert!(top_level_keys("[1,2]").is_empty());
        assert!(top_level_keys("{not json").is_empty());
    }

    #[test]
    fn fields_follow_the_keys_and_unnamed_ones_keep_their_order() {
        let schema = Schema::new(
            ["a", "b", "c", "d"]
                .map(|name| Field::new(name, DataType::Int64, true))
                .to_vec(),
        );
        let keys = ["c", "a", "x"].map(str::to_owned);
        let ordered = in_key_order(&schema, &keys);
        let names: Vec<_> = ordered.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["c", "a", "b", "d"]);
    }
}
