//! Samples are records (004 §II.F split derivation: "file order is normalized POSIX relative
//! path order, ... within each file, record order is the physical storage order of that file
//! format"): which files hold records, how many, and where a sample index lands.
//!
//! A record-oriented source (docs/lineage.md §3.5) holds one sample per record; any other file is
//! one sample. The canonical sample order is the files in canonical path order, each file's
//! records in storage order, so sample `i` is record `i - first(file)` of the file whose range
//! holds it. Text formats are counted here from their bytes, fed in pieces so memory does not
//! grow with the file ([`RecordCounter`]); Parquet and `.ald` files keep their row count in
//! metadata that a format library verifies, so the caller counts them (the `lineage` CLI reads
//! Parquet footers with the `parquet` crate and `.ald` headers with `envelope-core`).

use crate::error::Error;

/// A record-oriented source format, recognised by its file name's extension (ASCII case
/// ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecordFormat {
    /// `.jsonl`, `.ndjson`: one record per line holding anything but spaces, tabs and CRs.
    JsonLines,
    /// `.csv`: one record per non-empty row after the header row (RFC 4180 quoting).
    Csv,
    /// `.parquet`: the footer's row count.
    Parquet,
    /// `.ald`: the verified header's row count.
    Ald,
}

impl RecordFormat {
    /// The format of the file at `path`, or `None` for a file that is one sample.
    ///
    /// # Examples
    /// ```
    /// use lineage::records::RecordFormat;
    /// assert_eq!(RecordFormat::of_path("train/part-0.JSONL"), Some(RecordFormat::JsonLines));
    /// assert_eq!(RecordFormat::of_path("images/cat.png"), None);
    /// ```
    #[must_use]
    pub fn of_path(path: &str) -> Option<Self> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let (stem, extension) = name.rsplit_once('.')?;
        if stem.is_empty() {
            return None; // a dot file such as `.csv` has no extension
        }
        match extension.to_ascii_lowercase().as_str() {
            "jsonl" | "ndjson" => Some(Self::JsonLines),
            "csv" => Some(Self::Csv),
            "parquet" => Some(Self::Parquet),
            "ald" => Some(Self::Ald),
            _ => None,
        }
    }

    /// The format's name in reports (`"jsonl"`, `"csv"`, `"parquet"`, `"ald"`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::JsonLines => "jsonl",
            Self::Csv => "csv",
            Self::Parquet => "parquet",
            Self::Ald => "ald",
        }
    }

    /// A counter for this format's bytes, or `None` for the formats counted from metadata.
    #[must_use]
    pub fn counter(self) -> Option<RecordCounter> {
        match self {
            Self::JsonLines => Some(RecordCounter::JsonLines(LineState::default())),
            Self::Csv => Some(RecordCounter::Csv(CsvState::default())),
            Self::Parquet | Self::Ald => None,
        }
    }
}

/// Counts the records of a text source from its bytes, fed in any pieces.
#[derive(Debug, Clone)]
pub enum RecordCounter {
    /// JSON Lines.
    JsonLines(LineState),
    /// CSV.
    Csv(CsvState),
}

impl RecordCounter {
    /// Feeds the next bytes of the file.
    pub fn feed(&mut self, bytes: &[u8]) {
        match self {
            Self::JsonLines(state) => state.feed(bytes),
            Self::Csv(state) => state.feed(bytes),
        }
    }

    /// The number of records, once every byte was fed.
    #[must_use]
    pub fn finish(self) -> u64 {
        match self {
            Self::JsonLines(state) => state.finish(),
            Self::Csv(state) => state.finish(),
        }
    }

    /// Counts a whole file's records in one call.
    ///
    /// # Examples
    /// ```
    /// use lineage::records::RecordFormat;
    /// let count = |format: RecordFormat, bytes: &[u8]| format.counter().map(|c| c.count(bytes));
    /// assert_eq!(count(RecordFormat::JsonLines, b"{\"a\":1}\n\n{\"a\":2}"), Some(2));
    /// assert_eq!(count(RecordFormat::Csv, b"a,b\n1,\"x\ny\"\n2,z\n"), Some(2));
    /// ```
    #[must_use]
    pub fn count(mut self, bytes: &[u8]) -> u64 {
        self.feed(bytes);
        self.finish()
    }
}

/// JSON Lines: lines end at LF; a line is a record when it holds a byte other than space, tab
/// or CR (so blank lines and a trailing newline add nothing, and CRLF files count the same).
#[derive(Debug, Clone, Default)]
pub struct LineState {
    records: u64,
    line_has_content: bool,
}

impl LineState {
    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            match byte {
                b'\n' => {
                    self.records += u64::from(self.line_has_content);
                    self.line_has_content = false;
                }
                b' ' | b'\t' | b'\r' => {}
                _ => self.line_has_content = true,
            }
        }
    }

    fn finish(self) -> u64 {
        self.records + u64::from(self.line_has_content)
    }
}

/// Where a CSV reader is within a row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum CsvPosition {
    /// At the start of a field (a `"` here opens a quoted field).
    #[default]
    FieldStart,
    /// Inside an unquoted field, or after a quoted field's closing quote.
    Unquoted,
    /// Inside a quoted field (CR, LF and `,` are data).
    Quoted,
    /// Just after a `"` inside a quoted field: `"` again is a literal quote, anything else
    /// closes the quoted part.
    QuoteInQuoted,
    /// Just after a CR that ended a row (an LF right after it belongs to the same terminator).
    AfterCr,
}

/// CSV as RFC 4180 delimits rows, with Python's `csv` module's reading of its loose ends: a
/// `"` opens a quoted field only at a field's start (elsewhere it is data), a quoted field ends
/// at a `"` not followed by another, and rows end at LF, CR or CRLF outside quotes. A row is a
/// record when it holds at least one byte (an empty line is no row); the first row is the header.
#[derive(Debug, Clone, Default)]
pub struct CsvState {
    rows: u64,
    row_has_content: bool,
    position: CsvPosition,
}

impl CsvState {
    fn end_row(&mut self) {
        self.rows += u64::from(self.row_has_content);
        self.row_has_content = false;
        self.position = CsvPosition::FieldStart;
    }

    fn feed(&mut self, bytes: &[u8]) {
        use CsvPosition::{AfterCr, FieldStart, QuoteInQuoted, Quoted, Unquoted};
        for &byte in bytes {
            if self.position == AfterCr {
                self.position = FieldStart;
                if byte == b'\n' {
                    continue;
                }
            }
            match (self.position, byte) {
                (Quoted, b'"') => self.position = QuoteInQuoted,
                (Quoted, _) | (QuoteInQuoted, b'"') => self.position = Quoted,
                (FieldStart | Unquoted | QuoteInQuoted, b'\n') => self.end_row(),
                (FieldStart | Unquoted | QuoteInQuoted, b'\r') => {
                    self.end_row();
                    self.position = AfterCr;
                }
                (FieldStart, b'"') => {
                    self.row_has_content = true;
                    self.position = Quoted;
                }
                (FieldStart | Unquoted | QuoteInQuoted, b',') => {
                    self.row_has_content = true;
                    self.position = FieldStart;
                }
                (FieldStart | Unquoted | QuoteInQuoted, _) => {
                    self.row_has_content = true;
                    self.position = Unquoted;
                }
                // Left before the match.
                (AfterCr, _) => {}
            }
        }
    }

    fn finish(self) -> u64 {
        // A file that ends inside a quoted field ends its last row there, as Python's reader
        // does in its non-strict mode.
        let rows = self.rows + u64::from(self.row_has_content);
        rows.saturating_sub(1)
    }
}

/// The samples of a dataset: how many each file holds, in canonical file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleLayout {
    /// For each file, the index of its first sample (ascending), then the total as the last
    /// element.
    starts: Vec<u64>,
}

impl SampleLayout {
    /// The layout of files holding `counts[i]` samples each (in canonical file order).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the total passes `u64::MAX`.
    pub fn new(counts: impl IntoIterator<Item = u64>) -> Result<Self, Error> {
        let mut starts = vec![0u64];
        let mut total = 0u64;
        for count in counts {
            total = total.checked_add(count).ok_or(Error::InvalidArgument {
                what: "record counts",
                reason: "the dataset holds more than 2^64 - 1 samples",
                source: None,
            })?;
            starts.push(total);
        }
        Ok(Self { starts })
    }

    /// Total samples.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    /// The samples of file `file` as a range of sample indices.
    #[must_use]
    pub fn file_samples(&self, file: usize) -> Option<core::ops::Range<u64>> {
        Some(*self.starts.get(file)?..*self.starts.get(file + 1)?)
    }

    /// The file and the record within it of sample `sample`.
    #[must_use]
    pub fn locate(&self, sample: u64) -> Option<(usize, u64)> {
        if sample >= self.total() {
            return None;
        }
        // The last start at or before `sample` among files that hold samples.
        let file = self.starts.partition_point(|&start| start <= sample) - 1;
        Some((file, sample - self.starts[file]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(text: &str) -> u64 {
        RecordFormat::Csv
            .counter()
            .map_or(0, |c| c.count(text.as_bytes()))
    }

    fn jsonl(text: &str) -> u64 {
        RecordFormat::JsonLines
            .counter()
            .map_or(0, |c| c.count(text.as_bytes()))
    }

    #[test]
    fn csv_rows_follow_quotes_and_terminators() {
        assert_eq!(csv(""), 0);
        assert_eq!(csv("a,b"), 0);
        assert_eq!(csv("a,b\n"), 0);
        assert_eq!(csv("a,b\n1,2"), 1);
        assert_eq!(csv("a,b\r\n1,2\r\n3,4\r\n"), 2);
        assert_eq!(csv("a,b\r1,2\r3,4"), 2);
        assert_eq!(csv("a\n\n\n1\n\n2\n"), 2, "empty lines are no rows");
        assert_eq!(
            csv("a\n\"x\ny\"\n\"p\"\"q\r\n\"\n"),
            2,
            "CR and LF inside quotes"
        );
        assert_eq!(csv("a\nx\"y\nz\n"), 2, "a quote inside a field is data");
        assert_eq!(
            csv("a\n\"x\"y\nz\n"),
            2,
            "text after a closing quote stays in the field"
        );
        assert_eq!(csv("a\n\"\"\n"), 1, "an empty quoted field is a row");
        assert_eq!(csv("a\n,\n"), 1, "a row of two empty fields");
        assert_eq!(
            csv("a\n\"open\n"),
            1,
            "an unterminated quote ends the last row"
        );
    }

    #[test]
    fn pieces_count_as_the_whole() {
        let text = b"h1,h2\r\n\"a\r\nb\",\"c\"\"\"\r\n\r\nx,y\ry,z\n";
        let whole = RecordFormat::Csv.counter().map(|c| c.count(text));
        for cut in 0..text.len() {
            let mut counter = RecordFormat::Csv.counter().expect("csv");
            counter.feed(&text[..cut]);
            counter.feed(&text[cut..]);
            assert_eq!(Some(counter.finish()), whole, "cut at {cut}");
        }
    }

    #[test]
    fn json_lines_skip_blank_lines() {
        assert_eq!(jsonl(""), 0);
        assert_eq!(jsonl("\n\n"), 0);
        assert_eq!(jsonl("{}"), 1);
        assert_eq!(jsonl("{}\n"), 1);
        assert_eq!(jsonl("{}\r\n \t\r\n[1]\r\n"), 2);
    }

    #[test]
    fn formats_come_from_the_extension() {
        assert_eq!(RecordFormat::of_path("a/b.csv"), Some(RecordFormat::Csv));
        assert_eq!(
            RecordFormat::of_path("B.Parquet"),
            Some(RecordFormat::Parquet)
        );
        assert_eq!(RecordFormat::of_path("x.ald"), Some(RecordFormat::Ald));
        assert_eq!(
            RecordFormat::of_path("x.ndjson"),
            Some(RecordFormat::JsonLines)
        );
        for other in ["x.txt", "csv", ".csv", "dir.csv/file", "x.csv.gz"] {
            assert_eq!(RecordFormat::of_path(other), None, "{other}");
        }
    }

    #[test]
    fn layout_locates_samples_across_files_with_no_records() {
        let layout = SampleLayout::new([2, 0, 1, 3]).unwrap();
        assert_eq!(layout.total(), 6);
        let located: Vec<_> = (0..6).filter_map(|s| layout.locate(s)).collect();
        assert_eq!(located, [(0, 0), (0, 1), (2, 0), (3, 0), (3, 1), (3, 2)]);
        assert_eq!(layout.locate(6), None);
        assert_eq!(layout.file_samples(1), Some(2..2));
        assert!(SampleLayout::new([u64::MAX, 1]).is_err());
    }
}
