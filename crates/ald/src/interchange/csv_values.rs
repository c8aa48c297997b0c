//! CSV values: the types a column can be inferred as, in pyarrow's order, and the one parser per
//! type that both decides whether a value fits (inference) and converts it (reading).
//!
//! The rules are pyarrow's (`pyarrow.csv.read_csv` with its defaults, Arrow C++'s
//! `InferringColumnDecoder`), measured on pyarrow 26 (`tests/python/ald/interop.py csv-types`):
//! a column gets the first type of [`Kind::ORDER`] that every non-null value of the sample fits.
//! The parsers are written here rather than taken from `arrow-cast` because its grammar is not
//! pyarrow's (it takes `+1` as an integer, `tRuE` as a boolean and `2024-01-01 10:00:00 +02:00`
//! as a timestamp; pyarrow takes none of them), and inference must accept exactly what
//! conversion then parses: one function per type does both.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Date32Builder, Float64Builder, Int64Builder, Time32SecondBuilder,
    TimestampNanosecondBuilder, TimestampSecondBuilder,
};
use arrow_array::{Array, ArrayRef, NullArray, StringArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, TimeUnit};

/// pyarrow's default null values (`pyarrow.csv.ConvertOptions().null_values`).
pub const PYARROW_NULL_VALUES: [&str; 17] = [
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null",
];

/// Which field texts are nulls.
#[derive(Debug, Clone)]
pub(crate) enum NullTokens {
    /// [`PYARROW_NULL_VALUES`] in columns of every type but strings; in string columns only the
    /// empty field (as polars and DuckDB read them; pyarrow keeps even that as `""`, pandas also
    /// nulls `NA`, `null`, ...).
    Default,
    /// Exactly these, in every column.
    Listed(HashSet<String>),
}

impl NullTokens {
    /// Whether `text` is null in a column that is not a string column.
    pub(crate) fn is_null(&self, text: &str) -> bool {
        match self {
            Self::Default => PYARROW_NULL_VALUES.contains(&text),
            Self::Listed(tokens) => tokens.contains(text),
        }
    }

    /// Whether `text` is null in a string column.
    fn is_null_string(&self, text: &str) -> bool {
        match self {
            Self::Default => text.is_empty(),
            Self::Listed(tokens) => tokens.contains(text),
        }
    }
}

/// A type a CSV column can be inferred as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `Int64`: optional `-`, decimal digits; or `0x` and up to 16 hex digits (two's complement).
    Int64,
    /// `Boolean`: `1 True TRUE true` / `0 False FALSE false`.
    Boolean,
    /// `Date32`: `YYYY-MM-DD`.
    Date32,
    /// `Time32(Second)`: `HH:MM` or `HH:MM:SS`.
    Time32,
    /// `Timestamp(Second, None)`: ISO 8601 without zone or fraction (`YYYY-MM-DD[( |T)HH[:MM[:SS]]]`).
    Timestamp,
    /// `Timestamp(Nanosecond, None)`: as [`Kind::Timestamp`], with up to 9 fraction digits.
    TimestampNs,
    /// `Timestamp(Second, Some("UTC"))`: a time with a zone (`Z`, `±HH`, `±HHMM`, `±HH:MM`).
    TimestampZoned,
    /// `Timestamp(Nanosecond, Some("UTC"))`: as [`Kind::TimestampZoned`] with a fraction.
    TimestampZonedNs,
    /// `Float64`.
    Float64,
    /// `Utf8`: anything.
    Utf8,
}

impl Kind {
    /// pyarrow's inference order: the first kind every value fits wins.
    pub(crate) const ORDER: [Self; 10] = [
        Self::Int64,
        Self::Boolean,
        Self::Date32,
        Self::Time32,
        Self::Timestamp,
        Self::TimestampNs,
        Self::TimestampZoned,
        Self::TimestampZonedNs,
        Self::Float64,
        Self::Utf8,
    ];

    const fn bit(self) -> u16 {
        1 << self as u16
    }

    /// The Arrow type of the column.
    pub(crate) fn data_type(self) -> DataType {
        let utc = || Some(Arc::from("UTC"));
        match self {
            Self::Int64 => DataType::Int64,
            Self::Boolean => DataType::Boolean,
            Self::Date32 => DataType::Date32,
            Self::Time32 => DataType::Time32(TimeUnit::Second),
            Self::Timestamp => DataType::Timestamp(TimeUnit::Second, None),
            Self::TimestampNs => DataType::Timestamp(TimeUnit::Nanosecond, None),
            Self::TimestampZoned => DataType::Timestamp(TimeUnit::Second, utc()),
            Self::TimestampZonedNs => DataType::Timestamp(TimeUnit::Nanosecond, utc()),
            Self::Float64 => DataType::Float64,
            Self::Utf8 => DataType::Utf8,
        }
    }

    /// The kind whose parser reads `data_type`, if any (other types are converted by
    /// `arrow-cast`).
    pub(crate) fn of(data_type: &DataType) -> Option<Self> {
        Self::ORDER
            .into_iter()
            .find(|kind| kind.data_type() == *data_type)
    }

    /// Whether `text` (not a null token) is a value of this kind.
    fn fits(self, text: &str) -> bool {
        match self {
            Self::Int64 => parse_int64(text).is_some(),
            Self::Boolean => parse_bool(text).is_some(),
            Self::Date32 => parse_date32(text).is_some(),
            Self::Time32 => parse_time32(text).is_some(),
            Self::Timestamp | Self::TimestampNs | Self::TimestampZoned | Self::TimestampZonedNs => {
                self.timestamp(text).is_some()
            }
            Self::Float64 => parse_float64(text).is_some(),
            Self::Utf8 => true,
        }
    }

    /// The value of `text` for a timestamp kind (seconds or nanoseconds since the epoch, UTC).
    fn timestamp(self, text: &str) -> Option<i64> {
        let parsed = parse_iso8601(text)?;
        let zoned = parsed.offset_seconds.is_some();
        match self {
            Self::Timestamp if !zoned && parsed.fraction_digits == 0 => Some(parsed.seconds()),
            Self::TimestampZoned if zoned && parsed.fraction_digits == 0 => Some(parsed.seconds()),
            Self::TimestampNs if !zoned => parsed.nanoseconds(),
            Self::TimestampZonedNs if zoned => parsed.nanoseconds(),
            _ => None,
        }
    }
}

/// What a column's sample has shown so far: the kinds every value seen fits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inferred {
    candidates: u16,
    seen_value: bool,
}

impl Default for Inferred {
    fn default() -> Self {
        Self {
            candidates: Kind::ORDER.iter().fold(0, |bits, kind| bits | kind.bit()),
            seen_value: false,
        }
    }
}

impl Inferred {
    /// Takes one field's text into account.
    pub(crate) fn update(&mut self, text: &str, nulls: &NullTokens) {
        if nulls.is_null(text) {
            return;
        }
        self.seen_value = true;
        for kind in Kind::ORDER {
            if self.candidates & kind.bit() != 0 && kind != Kind::Utf8 && !kind.fits(text) {
                self.candidates &= !kind.bit();
            }
        }
    }

    /// The column's type: `Null` if every value was a null token, else the first kind every
    /// value fits.
    pub(crate) fn data_type(self) -> DataType {
        if !self.seen_value {
            return DataType::Null;
        }
        Kind::ORDER
            .into_iter()
            .find(|kind| self.candidates & kind.bit() != 0)
            .unwrap_or(Kind::Utf8)
            .data_type()
    }
}

/// Why a field could not be converted: its row within the batch and its text.
#[derive(Debug)]
pub(crate) struct Misfit {
    pub(crate) row: usize,
    pub(crate) text: String,
}

/// The fields of a raw column (arrow-csv decodes every column as `Utf8`, an empty field as
/// null) as text, the empty field as `""`.
fn texts(raw: &StringArray) -> impl Iterator<Item = &str> {
    raw.iter().map(Option::unwrap_or_default)
}

/// Converts a raw column to `kind`'s type, with `nulls` as null tokens.
///
/// # Errors
/// The first field that is neither a null token nor a value of `kind`.
pub(crate) fn convert(
    raw: &StringArray,
    kind: Kind,
    nulls: &NullTokens,
) -> Result<ArrayRef, Misfit> {
    macro_rules! build {
        ($builder:expr, $parse:expr) => {{
            let mut builder = $builder;
            for (row, text) in texts(raw).enumerate() {
                if nulls.is_null(text) {
                    builder.append_null();
                } else {
                    let value = $parse(text).ok_or_else(|| Misfit {
                        row,
                        text: text.to_owned(),
                    })?;
                    builder.append_value(value);
                }
            }
            Arc::new(builder.finish()) as ArrayRef
        }};
    }
    Ok(match kind {
        Kind::Int64 => build!(Int64Builder::with_capacity(raw.len()), parse_int64),
        Kind::Boolean => build!(BooleanBuilder::with_capacity(raw.len()), parse_bool),
        Kind::Date32 => build!(Date32Builder::with_capacity(raw.len()), parse_date32),
        Kind::Time32 => build!(Time32SecondBuilder::with_capacity(raw.len()), parse_time32),
        Kind::Timestamp => build!(TimestampSecondBuilder::with_capacity(raw.len()), |text| {
            kind.timestamp(text)
        }),
        Kind::TimestampNs => build!(
            TimestampNanosecondBuilder::with_capacity(raw.len()),
            |text| kind.timestamp(text)
        ),
        Kind::TimestampZoned => build!(
            TimestampSecondBuilder::with_capacity(raw.len()).with_timezone("UTC"),
            |text| kind.timestamp(text)
        ),
        Kind::TimestampZonedNs => build!(
            TimestampNanosecondBuilder::with_capacity(raw.len()).with_timezone("UTC"),
            |text| kind.timestamp(text)
        ),
        Kind::Float64 => build!(Float64Builder::with_capacity(raw.len()), parse_float64),
        Kind::Utf8 => Arc::new(string_column(raw, nulls)),
    })
}

/// A column of only null tokens (inferred `Null`).
///
/// # Errors
/// The first field that is not a null token.
pub(crate) fn convert_null(raw: &StringArray, nulls: &NullTokens) -> Result<ArrayRef, Misfit> {
    match texts(raw)
        .enumerate()
        .find(|(_, text)| !nulls.is_null(text))
    {
        Some((row, text)) => Err(Misfit {
            row,
            text: text.to_owned(),
        }),
        None => Ok(Arc::new(NullArray::new(raw.len()))),
    }
}

/// A string column: the raw column itself (its buffers reused) with the nulls `nulls` names.
pub(crate) fn string_column(raw: &StringArray, nulls: &NullTokens) -> StringArray {
    if matches!(nulls, NullTokens::Default) {
        // arrow-csv already reads an empty field as null.
        return raw.clone();
    }
    let valid: NullBuffer = texts(raw).map(|text| !nulls.is_null_string(text)).collect();
    let (offsets, values, _) = raw.clone().into_parts();
    StringArray::new(
        offsets,
        values,
        Some(valid).filter(|valid| valid.null_count() > 0),
    )
}

/// Arrow C++ trims spaces and tabs around numbers and dates (not booleans or timestamps).
fn trim_numeric(text: &str) -> &str {
    text.trim_matches([' ', '\t'])
}

fn parse_int64(text: &str) -> Option<i64> {
    let text = trim_numeric(text);
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        // Arrow reads `0xFFFFFFFFFFFFFFFF` as -1: the 64 bits, two's complement.
        return u64::from_str_radix(hex, 16)
            .ok()
            .map(|bits| i64::from_ne_bytes(bits.to_ne_bytes()));
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "True" | "TRUE" | "true" => Some(true),
        "0" | "False" | "FALSE" | "false" => Some(false),
        _ => None,
    }
}

fn parse_float64(text: &str) -> Option<f64> {
    // Rust's grammar is fast_float's (Arrow C++): optional sign, digits with an optional point,
    // an optional exponent, or inf/infinity/nan in any case.
    trim_numeric(text).parse().ok()
}

fn parse_date32(text: &str) -> Option<i32> {
    let (days, rest) = parse_date(trim_numeric(text).as_bytes())?;
    if !rest.is_empty() {
        return None;
    }
    i32::try_from(days).ok()
}

fn parse_time32(text: &str) -> Option<i32> {
    let text = trim_numeric(text).as_bytes();
    let (seconds, rest) = match text.len() {
        5 => parse_clock(text, false)?,
        8 => parse_clock(text, true)?,
        _ => return None,
    };
    if !rest.is_empty() {
        return None;
    }
    i32::try_from(seconds).ok()
}

fn two_digits(bytes: &[u8]) -> Option<u32> {
    match bytes {
        [a, b] if a.is_ascii_digit() && b.is_ascii_digit() => {
            Some(u32::from(a - b'0') * 10 + u32::from(b - b'0'))
        }
        _ => None,
    }
}

/// `YYYY-MM-DD` at the start of `text`: days since 1970-01-01 and the rest.
fn parse_date(text: &[u8]) -> Option<(i64, &[u8])> {
    let (date, rest) = text.split_at_checked(10)?;
    if date[4] != b'-' || date[7] != b'-' {
        return None;
    }
    let year = i64::from(two_digits(&date[0..2])? * 100 + two_digits(&date[2..4])?);
    let month = two_digits(&date[5..7])?;
    let day = two_digits(&date[8..10])?;
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some((days_from_civil(year, month, day), rest))
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month = i64::from(month);
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// `HH:MM` (or `HH:MM:SS` with `seconds`) at the start of `text`: seconds of the day and the rest.
fn parse_clock(text: &[u8], seconds: bool) -> Option<(u32, &[u8])> {
    let len = if seconds { 8 } else { 5 };
    let (clock, rest) = text.split_at_checked(len)?;
    if clock[2] != b':' || (seconds && clock[5] != b':') {
        return None;
    }
    let hour = two_digits(&clock[0..2])?;
    let minute = two_digits(&clock[3..5])?;
    let second = if seconds {
        two_digits(&clock[6..8])?
    } else {
        0
    };
    (hour < 24 && minute < 60 && second < 60).then_some((hour * 3600 + minute * 60 + second, rest))
}

/// An ISO 8601 timestamp as pyarrow reads one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Iso8601 {
    days: i64,
    seconds_of_day: u32,
    nanos: u32,
    /// Digits after the decimal point (0: no fraction).
    fraction_digits: u8,
    /// The zone's offset east of UTC, when the text has one.
    offset_seconds: Option<i32>,
}

impl Iso8601 {
    /// Seconds since the epoch, UTC.
    fn seconds(self) -> i64 {
        self.days * 86_400 + i64::from(self.seconds_of_day)
            - i64::from(self.offset_seconds.unwrap_or(0))
    }

    /// Nanoseconds since the epoch, UTC, if an `i64` holds them (about 1677 to 2262).
    fn nanoseconds(self) -> Option<i64> {
        self.seconds()
            .checked_mul(1_000_000_000)?
            .checked_add(i64::from(self.nanos))
    }
}

/// `YYYY-MM-DD`, optionally followed by `T` or a space and `HH`, `HH:MM` or `HH:MM:SS` (the last
/// with an optional `.` and 1 to 9 digits), then optionally a zone: `Z`, `±HH`, `±HHMM` or
/// `±HH:MM`. A date alone has no zone.
fn parse_iso8601(text: &str) -> Option<Iso8601> {
    let (days, rest) = parse_date(text.as_bytes())?;
    let mut parsed = Iso8601 {
        days,
        seconds_of_day: 0,
        nanos: 0,
        fraction_digits: 0,
        offset_seconds: None,
    };
    let Some((separator, time)) = rest.split_first() else {
        return Some(parsed);
    };
    if *separator != b'T' && *separator != b' ' {
        return None;
    }
    let zone_at = time
        .iter()
        .position(|b| matches!(b, b'Z' | b'+' | b'-'))
        .unwrap_or(time.len());
    let (clock, zone) = time.split_at(zone_at);
    let (clock, fraction) = match clock.iter().position(|b| *b == b'.') {
        Some(dot) => (&clock[..dot], Some(&clock[dot + 1..])),
        None => (clock, None),
    };
    parsed.seconds_of_day = match clock.len() {
        2 => {
            let hour = two_digits(clock)?;
            (hour < 24).then_some(hour * 3600)?
        }
        5 => parse_clock(clock, false)?.0,
        8 => parse_clock(clock, true)?.0,
        _ => return None,
    };
    if let Some(fraction) = fraction {
        if clock.len() != 8
            || fraction.is_empty()
            || fraction.len() > 9
            || !fraction.iter().all(u8::is_ascii_digit)
        {
            return None;
        }
        let digits = std::str::from_utf8(fraction).ok()?;
        let scale = 10u32.pow(9 - u32::try_from(fraction.len()).ok()?);
        parsed.nanos = digits.parse::<u32>().ok()? * scale;
        parsed.fraction_digits = u8::try_from(fraction.len()).ok()?;
    }
    if !zone.is_empty() {
        parsed.offset_seconds = Some(parse_zone(zone)?);
    }
    Some(parsed)
}

/// `Z`, `±HH`, `±HHMM` or `±HH:MM`: seconds east of UTC.
fn parse_zone(zone: &[u8]) -> Option<i32> {
    let (sign, digits) = match zone.split_first()? {
        (b'Z', []) => return Some(0),
        (b'+', digits) => (1, digits),
        (b'-', digits) => (-1, digits),
        _ => return None,
    };
    let (hours, minutes) = match digits.len() {
        2 => (two_digits(digits)?, 0),
        4 => (two_digits(&digits[..2])?, two_digits(&digits[2..])?),
        5 if digits[2] == b':' => (two_digits(&digits[..2])?, two_digits(&digits[3..])?),
        _ => return None,
    };
    if hours > 23 || minutes > 59 {
        return None;
    }
    Some(sign * i32::try_from(hours * 3600 + minutes * 60).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn infer(values: &[&str]) -> DataType {
        let mut inferred = Inferred::default();
        for value in values {
            inferred.update(value, &NullTokens::Default);
        }
        inferred.data_type()
    }

    /// The inference table measured with pyarrow 26 (`read_csv` defaults), one column at a time.
    #[test]
    fn types_are_inferred_as_pyarrow_infers_them() {
        let utc = Some(Arc::from("UTC"));
        let cases: &[(&[&str], DataType)] = &[
            (&["1", "-2", "007", "-0"], DataType::Int64),
            (&["1", "-2", "+3"], DataType::Float64),
            (&["9223372036854775808"], DataType::Float64),
            (&["-9223372036854775808"], DataType::Int64),
            (&["0x10", "0XaB", "0xFFFFFFFFFFFFFFFF"], DataType::Int64),
            (&["-0x10"], DataType::Utf8),
            (&["0x1FFFFFFFFFFFFFFFF"], DataType::Utf8),
            (&["\t1", " 2 "], DataType::Int64),
            (&["true", "False", "TRUE", "1", "0"], DataType::Boolean),
            (&["tRue"], DataType::Utf8),
            (&[" true"], DataType::Utf8),
            (&["yes", "no"], DataType::Utf8),
            (
                &["1.5", "2", "-3e4", ".5", "5.", "1E5", "1e+5"],
                DataType::Float64,
            ),
            (
                &["inf", "-Infinity", "+inf", "INF", "nAn"],
                DataType::Float64,
            ),
            (&["1e"], DataType::Utf8),
            (&["1_000.5"], DataType::Utf8),
            (&["NaN"], DataType::Null),
            (&["nan", "1.0"], DataType::Float64),
            (&["NA", "1"], DataType::Int64),
            (&["#N/A", "NULL", "1.5"], DataType::Float64),
            (&["null", "x"], DataType::Utf8),
            (&["None", "1"], DataType::Utf8),
            (&["", ""], DataType::Null),
            (&["2024-01-01", " 2024-02-29"], DataType::Date32),
            (&["2023-02-29"], DataType::Utf8),
            (&["2024-1-1"], DataType::Utf8),
            (&["2024-00-10"], DataType::Utf8),
            (&["12024-01-01"], DataType::Utf8),
            (&["10:00:00", "10:00"], DataType::Time32(TimeUnit::Second)),
            (&["10:00:00.5"], DataType::Utf8),
            (&["24:00:00"], DataType::Utf8),
            (&["10:00:60"], DataType::Utf8),
            (&["1:00"], DataType::Utf8),
            (&["100000"], DataType::Int64),
            (
                &[
                    "2024-01-01 10:00:00",
                    "2024-01-01T10:00",
                    "2024-01-01T10",
                    "2024-01-01",
                ],
                DataType::Timestamp(TimeUnit::Second, None),
            ),
            (
                &["2024-01-01T10:00:00.123", "2024-01-01T10:00:00.123456789"],
                DataType::Timestamp(TimeUnit::Nanosecond, None),
            ),
            (
                &[
                    "2024-01-01T10:00:00Z",
                    "2024-01-01 10:00:00+0200",
                    "2024-01-01T10:00:00+02",
                    "2024-01-01T10:00:00-05:00",
                    "2024-01-01T10:00Z",
                    "2024-01-01T10Z",
                ],
                DataType::Timestamp(TimeUnit::Second, utc.clone()),
            ),
            (
                &["2024-01-01T10:00:00.5Z", "2024-01-01T10:00:00Z"],
                DataType::Timestamp(TimeUnit::Nanosecond, utc),
            ),
            (
                &["2024-01-01T10:00:00Z", "2024-01-01T10:00:00"],
                DataType::Utf8,
            ),
            (&["2024-01-01", "2024-01-01T00:00:00Z"], DataType::Utf8),
            (&["2024-01-01T10:00:00z"], DataType::Utf8),
            (&["2024-01-01Z"], DataType::Utf8),
            (&["2024-01-01T10:00:00+25:00"], DataType::Utf8),
            (&["2024-01-01T10:00:00.1234567891"], DataType::Utf8),
            (&["2024-01-01T10:00:00."], DataType::Utf8),
            (&["2024-01-01 10:00:00 "], DataType::Utf8),
            (&["2024-01-01  10:00:00"], DataType::Utf8),
            (&["2024-01-01 10:00:00 +02:00"], DataType::Utf8),
            (&["20240101T100000"], DataType::Utf8),
            (&["2024-01-01T100000"], DataType::Utf8),
            (&["2262-04-12T00:00:00.5"], DataType::Utf8),
            (
                &["1677-09-21T00:12:44.5"],
                DataType::Timestamp(TimeUnit::Nanosecond, None),
            ),
            (
                &["9999-12-31T23:59:59"],
                DataType::Timestamp(TimeUnit::Second, None),
            ),
            (&["ü", "a"], DataType::Utf8),
            (&["-", "+", "e"], DataType::Utf8),
        ];
        for (values, expected) in cases {
            assert_eq!(infer(values), *expected, "{values:?}");
        }
    }

    #[test]
    fn values_convert_to_what_they_mean() {
        let raw = StringArray::from(vec![
            Some("2024-01-01T10:00:00+02:00"),
            Some("1970-01-01T00:00:00Z"),
            None,
        ]);
        let array = convert(&raw, Kind::TimestampZoned, &NullTokens::Default).unwrap();
        assert_eq!(array.data_type(), &Kind::TimestampZoned.data_type());
        let values = array
            .as_any()
            .downcast_ref::<arrow_array::TimestampSecondArray>()
            .unwrap();
        assert_eq!(values.value(0), 1_704_096_000);
        assert_eq!(values.value(1), 0);
        assert!(values.is_null(2));
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(parse_date32("0000-01-01"), Some(-719_528));
        assert_eq!(parse_time32("23:59:59"), Some(86_399));
        let fraction = Kind::TimestampNs
            .timestamp("1970-01-01 00:00:01.25")
            .unwrap();
        assert_eq!(fraction, 1_250_000_000);
        let misfit = convert(
            &StringArray::from(vec!["1", "x"]),
            Kind::Int64,
            &NullTokens::Default,
        )
        .unwrap_err();
        assert_eq!((misfit.row, misfit.text.as_str()), (1, "x"));
    }

    #[test]
    fn listed_nulls_apply_to_strings_and_the_default_only_to_empty_strings() {
        let raw = StringArray::from(vec![Some("NA"), None, Some("x")]);
        let default = string_column(&raw, &NullTokens::Default);
        assert_eq!(
            default.iter().collect::<Vec<_>>(),
            [Some("NA"), None, Some("x")]
        );
        let listed = NullTokens::Listed(["NA".to_owned()].into());
        let strings = string_column(&raw, &listed);
        assert_eq!(
            strings.iter().collect::<Vec<_>>(),
            [None, Some(""), Some("x")]
        );
    }
}
