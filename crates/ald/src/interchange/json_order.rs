//! The key order of a JSONL file's first object. `arrow-json` infers a schema through
//! `serde_json` maps, which sort keys; a table written as JSONL and read back should keep its
//! column order, so inferred fields are put back in the order the first line names them.

use std::sync::Arc;

use arrow_schema::{Schema, SchemaRef};

/// The top-level keys of the JSON object on `line`, in order (empty if the line is not an object
/// this scanner understands; the reader itself reports malformed JSON).
pub(crate) fn top_level_keys(line: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut chars = line.chars();
    let mut depth = 0usize;
    let mut expecting_key = false;
    while let Some(ch) = chars.next() {
        match ch {
            '{' => {
                depth += 1;
                expecting_key = depth == 1;
            }
            '[' => depth += 1,
            '}' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => expecting_key = true,
            '"' => {
                let mut text = String::new();
                let mut escaped = false;
                for inner in chars.by_ref() {
                    match (escaped, inner) {
                        (false, '\\') => escaped = true,
                        (false, '"') => break,
                        (true, other) => {
                            // Keys with escapes are compared after the simple escapes only.
                            text.push(match other {
                                'n' => '\n',
                                't' => '\t',
                                other => other,
                            });
                            escaped = false;
                        }
                        (false, other) => text.push(other),
                    }
                }
                if expecting_key && depth == 1 {
                    keys.push(text);
                    expecting_key = false;
                }
            }
            _ => {}
        }
    }
    keys
}

/// `schema` with its fields in the order of `keys` (fields not named there keep their place at
/// the end).
pub(crate) fn in_key_order(schema: &Schema, keys: &[String]) -> SchemaRef {
    let mut fields: Vec<_> = keys
        .iter()
        .filter_map(|key| schema.field_with_name(key).ok().cloned())
        .collect();
    for field in schema.fields() {
        if !keys.iter().any(|key| key == field.name()) {
            fields.push(field.as_ref().clone());
        }
    }
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_in_line_order_skipping_nested_ones() {
        let line = r#"{"z":1,"a":{"inner":[1,{"deep":2}]},"m":"x,\"y\"","b":null}"#;
        assert_eq!(top_level_keys(line), ["z", "a", "m", "b"]);
        assert!(top_level_keys("[1,2]").is_empty());
    }
}
