//! JSON for the Arrow types `arrow-json`'s writer leaves out, so that JSONL output and
//! `head --json` hold every type an `.ald` file can: lists and structs are `arrow-json`'s own
//! (arrays and objects, nulls written as `null`: exactly what polars' `write_ndjson` writes), maps
//! with string keys are objects; this module adds
//! - **unions**: the value of the row's member, as is (what `pyarrow`'s `to_pylist` gives);
//! - **maps with other keys**: an array of `{"key": k, "value": v}` objects, the map's entries as
//!   Arrow stores them (what polars writes for a map it reads as a list of structs).

use std::sync::Arc;

use arrow_array::cast::AsArray as _;
use arrow_array::{Array, MapArray, UnionArray};
use arrow_buffer::OffsetBuffer;
use arrow_json::writer::{Encoder, EncoderFactory, EncoderOptions, NullableEncoder, make_encoder};
use arrow_schema::{ArrowError, DataType, FieldRef, UnionMode};

/// The [`EncoderFactory`] of every JSON writer here.
#[derive(Debug)]
pub(crate) struct MoreTypes;

/// A JSON writer configuration with [`MoreTypes`].
pub(crate) fn factory() -> Arc<dyn EncoderFactory> {
    Arc::new(MoreTypes)
}

impl EncoderFactory for MoreTypes {
    fn make_default_encoder<'a>(
        &self,
        field: &'a FieldRef,
        array: &'a dyn Array,
        options: &'a EncoderOptions,
    ) -> Result<Option<NullableEncoder<'a>>, ArrowError> {
        match (field.data_type(), array.data_type()) {
            (DataType::Union(members, mode), DataType::Union(..)) => {
                let union = array.as_any().downcast_ref::<UnionArray>().ok_or_else(|| {
                    ArrowError::JsonError("a union column that is not a UnionArray".to_owned())
                })?;
                let mut children = Vec::new();
                for (type_id, member) in members.iter() {
                    let child = make_encoder(member, union.child(type_id).as_ref(), options)?;
                    children.push((type_id, child));
                }
                let encoder = UnionEncoder {
                    union,
                    dense: *mode == UnionMode::Dense,
                    children,
                };
                Ok(Some(NullableEncoder::new(
                    Box::new(encoder),
                    union.logical_nulls(),
                )))
            }
            (DataType::Map(entries, _), DataType::Map(..)) => {
                let map: &MapArray = array.as_map();
                let DataType::Struct(parts) = entries.data_type() else {
                    return Ok(None);
                };
                let (Some(key_field), Some(value_field)) = (parts.first(), parts.get(1)) else {
                    return Ok(None);
                };
                if matches!(
                    key_field.data_type(),
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                ) {
                    // arrow-json writes these as objects.
                    return Ok(None);
                }
                let encoder = MapEntriesEncoder {
                    offsets: map.offsets().clone(),
                    keys: make_encoder(key_field, map.keys().as_ref(), options)?,
                    values: make_encoder(value_field, map.values().as_ref(), options)?,
                };
                Ok(Some(NullableEncoder::new(
                    Box::new(encoder),
                    map.nulls().cloned(),
                )))
            }
            _ => Ok(None),
        }
    }
}

struct UnionEncoder<'a> {
    union: &'a UnionArray,
    dense: bool,
    children: Vec<(i8, NullableEncoder<'a>)>,
}

impl Encoder for UnionEncoder<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let type_id = self.union.type_id(idx);
        let child_idx = if self.dense {
            self.union.value_offset(idx)
        } else {
            idx
        };
        match self.children.iter_mut().find(|(id, _)| *id == type_id) {
            Some((_, child)) if !child.is_null(child_idx) => child.encode(child_idx, out),
            _ => out.extend_from_slice(b"null"),
        }
    }
}

struct MapEntriesEncoder<'a> {
    offsets: OffsetBuffer<i32>,
    keys: NullableEncoder<'a>,
    values: NullableEncoder<'a>,
}

impl Encoder for MapEntriesEncoder<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let start = usize::try_from(self.offsets[idx]).unwrap_or(0);
        let end = usize::try_from(self.offsets[idx + 1]).unwrap_or(start);
        out.push(b'[');
        for entry in start..end {
            if entry > start {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"key\":");
            if self.keys.is_null(entry) {
                out.extend_from_slice(b"null");
            } else {
                self.keys.encode(entry, out);
            }
            out.extend_from_slice(b",\"value\":");
            if self.values.is_null(entry) {
                out.extend_from_slice(b"null");
            } else {
                self.values.encode(entry, out);
            }
            out.push(b'}');
        }
        out.push(b']');
    }
}
