//! The input-side options of `alimentar convert`, `head` and `schema` for CSV (and the inference
//! sample, which JSONL shares), and the progress bar of reading an input: bytes of the input
//! consumed, from the first one (inference included), against the file's size.

use std::io::IsTerminal as _;
use std::path::Path;
use std::time::Duration;

use ald::interchange::{ByteProgress, CsvOptions, FileKind, Inference, ReadOptions, ReadStage};
use clap::Args;

/// How to read a CSV input (ignored for other kinds, refused if given for them).
#[derive(Debug, Clone, Default, Args)]
pub struct CsvInputArgs {
    /// Field delimiter of a CSV input: one ASCII character, or `tab` (also `\t`).
    #[arg(long, value_name = "CHAR", value_parser = parse_delimiter)]
    pub delimiter: Option<u8>,
    /// The CSV input has no header row; its columns are named f0, f1, ... (as pyarrow names them).
    #[arg(long)]
    pub no_header: bool,
    /// Lines skipped at the start of a CSV input, before the header (a preamble).
    #[arg(long, value_name = "N")]
    pub skip_rows: Option<u64>,
    /// Field texts read as null in every column of a CSV input, comma-separated or repeated
    /// (`--null-values ''` for only the empty field). Default: pyarrow's list ("", NA, N/A, NULL,
    /// null, NaN, nan, #N/A, ...) in numeric, boolean and date/time columns, and only the empty
    /// field in text columns.
    #[arg(long, value_name = "TEXT", value_delimiter = ',', num_args = 1)]
    pub null_values: Option<Vec<String>>,
    /// Rows read to infer the column types of a CSV or JSONL input: a number, or `all`.
    /// Default: CSV, the first 1 MiB (pyarrow's block; a later value that does not fit is an
    /// error naming it); JSONL, all rows.
    #[arg(long, value_name = "N|all", value_parser = parse_inference)]
    pub infer_rows: Option<Inference>,
}

fn parse_delimiter(text: &str) -> Result<u8, String> {
    match text {
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        _ => match text.as_bytes() {
            [byte] if byte.is_ascii() && *byte != b'"' && *byte != b'\n' && *byte != b'\r' => {
                Ok(*byte)
            }
            _ => Err("one ASCII character other than a quote or a line end, or `tab`".to_owned()),
        },
    }
}

fn parse_inference(text: &str) -> Result<Inference, String> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(Inference::All);
    }
    match text.parse::<usize>() {
        Ok(rows) if rows > 0 => Ok(Inference::Rows(rows)),
        _ => Err("a number of rows (at least 1) or `all`".to_owned()),
    }
}

impl CsvInputArgs {
    /// Puts these options into `options` for reading `input`.
    ///
    /// # Errors
    /// `Usage` for CSV options given for an input that is not CSV.
    pub fn apply(&self, input: &Path, options: &mut ReadOptions<'_>) -> anyhow::Result<()> {
        let kind = FileKind::of(input)?;
        let csv_only = self.delimiter.is_some()
            || self.no_header
            || self.skip_rows.is_some()
            || self.null_values.is_some();
        if csv_only && kind != FileKind::Csv {
            anyhow::bail!(
                "Usage: --delimiter, --no-header, --skip-rows and --null-values apply to CSV inputs, not {}",
                kind.name()
            );
        }
        if self.infer_rows.is_some() && !matches!(kind, FileKind::Csv | FileKind::Jsonl) {
            anyhow::bail!(
                "Usage: --infer-rows applies to CSV and JSONL inputs, not {}",
                kind.name()
            );
        }
        let defaults = CsvOptions::default();
        options.csv = CsvOptions {
            delimiter: self.delimiter.unwrap_or(defaults.delimiter),
            header: !self.no_header,
            skip_rows: self.skip_rows.unwrap_or(0),
            null_values: self.null_values.clone(),
        };
        options.infer = self.infer_rows.unwrap_or_default();
        Ok(())
    }
}

/// A progress bar on stderr (only when it is a terminal and `--quiet` is off) counting the bytes of `input` read,
/// from the first one: "inferring types" while a CSV or JSONL sample is read, then "reading".
/// `ReadOptions::progress` drives it; rows written go to its message.
pub(super) fn input_bar(input: &Path, total: u64) -> (indicatif::ProgressBar, ByteProgress) {
    let bar = if std::io::stderr().is_terminal() && !cli_support::run::mode().quiet {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {prefix:<16} [{bar:30}] {bytes}/{total_bytes} ({binary_bytes_per_sec}, {eta}) {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_prefix(format!("{}", input.display()));
    let reporter = bar.clone();
    let progress = ByteProgress::new(move |stage, bytes| {
        let prefix = match stage {
            ReadStage::Inferring => "inferring types",
            ReadStage::Reading => "reading",
        };
        if reporter.prefix() != prefix {
            reporter.set_prefix(prefix);
        }
        reporter.set_position(bytes);
    });
    (bar, progress)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delimiters_and_samples_parse() {
        assert_eq!(parse_delimiter(";"), Ok(b';'));
        assert_eq!(parse_delimiter("tab"), Ok(b'\t'));
        assert_eq!(parse_delimiter("\\t"), Ok(b'\t'));
        assert!(parse_delimiter("\"").is_err());
        assert!(parse_delimiter(";;").is_err());
        assert!(parse_delimiter("é").is_err());
        assert_eq!(parse_inference("all"), Ok(Inference::All));
        assert_eq!(parse_inference("500"), Ok(Inference::Rows(500)));
        assert!(parse_inference("0").is_err());
        assert!(parse_inference("some").is_err());
    }
}
