//! An explicit schema written as text, for command lines: `name: Type[ not null], ...`, with
//! Arrow's own type syntax (`Int64`, `Utf8`, `Timestamp(Millisecond, Some("UTC"))`,
//! `Decimal128(10, 2)`), which is also how [`crate::render_schema`] prints a schema (tested with
//! the integration tests' sample schema, `tests/tests.rs`).

use std::str::FromStr;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::{Error, Result};

/// Parses `name: Type[ not null], ...` (the braces of [`crate::render_schema`]'s output are
/// optional).
///
/// # Errors
/// `Usage` for an entry without `:` or a type Arrow does not parse.
pub fn parse_schema_text(text: &str) -> Result<SchemaRef> {
    let text = text.trim();
    let text = text
        .strip_prefix('{')
        .and_then(|inner| inner.strip_suffix('}'))
        .unwrap_or(text);
    let mut fields = Vec::new();
    for entry in split_top_level(text) {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        let (name, rest) = entry.split_once(':').ok_or_else(|| Error::SchemaText {
            entry: entry.to_owned(),
            reason: "a schema entry must be `name: Type`",
            cause: None,
        })?;
        let rest = rest.trim();
        let (type_text, nullable) = match rest.strip_suffix("not null") {
            Some(type_text) => (type_text.trim(), false),
            None => (rest, true),
        };
        let data_type = DataType::from_str(type_text).map_err(|error| Error::SchemaText {
            entry: entry.to_owned(),
            reason: "unknown Arrow type in the schema text",
            cause: Some(error),
        })?;
        fields.push(Field::new(name.trim(), data_type, nullable));
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// Splits at commas outside parentheses and quotes.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    for (at, ch) in text.char_indices() {
        match ch {
            '"' => quoted = !quoted,
            '(' | '[' | '<' if !quoted => depth += 1,
            ')' | ']' | '>' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                pieces.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    pieces.push(&text[start..]);
    pieces
}
