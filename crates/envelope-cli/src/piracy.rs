//! Leak tracing on the command line (000 §9.3.5-9.3.6, 003 §8.3), shared by `alimentar` and
//! `apr`: the arguments of `watermark`, and `piracy detect|entropy|extract|prove|verify|scan`.
//!
//! A tool says how it reads a suspect file through a [`Kind`] (datasets: every interchange
//! format and `.ald`; models: `.apr` and SafeTensors); everything else is the same for both. The
//! seller's watermark secret is derived from the project's key file (`keygen`; docs/signing.md
//! §4), or read as 64 hex digits from a file (what a seller hands a forensic examiner, who can
//! then trace but not sign). Evidence (`prove`) is JSON signed with that key file's Ed25519 key,
//! and `verify` checks it (docs/watermark.md §12).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use cli_support::keys::PasswordSource;
use cli_support::output::{self, Access, Content, Force};
use cli_support::terminal::Safe;
use envelope_license::{LicenseBlock, LicenseFlags};
use envelope_sign::Identity;
use serde_json::{Value, json};
use watermark::detect::{self, SliceStatistics};
use watermark::evidence::{self, FileFacts};
use watermark::{Extracted, Reading, SellerKey, Verification};

use crate::security::Tool;

/// A dataset or model read for leak tracing: named float slices (columns, tensors).
pub trait Subject: Send {
    /// Reads every slice under `seller_key` ([`watermark::Reading`]).
    fn reading(&self, seller_key: &SellerKey) -> Reading;
    /// The keyless §9.3.3 statistics of every float slice, by name.
    fn statistics(&self) -> Vec<(String, SliceStatistics)>;
}

/// How one tool reads suspect files.
#[derive(Clone, Copy)]
pub struct Kind {
    /// The running tool.
    pub tool: Tool,
    /// What a slice is called: `column` or `tensor`.
    pub noun: &'static str,
    /// `watermark`'s strength when `--strength` is not given.
    pub default_strength: f32,
    /// Whether `scan` reads a file of this name.
    pub accepts: fn(&Path) -> bool,
    /// Reads a file (unencrypted) into its slices, with its license if it has one.
    pub open: fn(&Path) -> anyhow::Result<Suspect>,
}

/// A suspect file as read: its slices, and the license an envelope file carries.
pub struct Suspect {
    /// The dataset or model.
    pub subject: Box<dyn Subject>,
    /// The license block of an `.ald`/`.apr` (read in the same pass), if any.
    pub license: Option<LicenseBlock>,
}

/// The error for an encrypted input to `watermark` or `piracy`: `DecryptionFailed` (key
/// required), with `how` to decrypt it. Marks go into the plaintext before licensing,
/// encryption and signing; leaked copies are examined decrypted.
#[must_use]
pub fn encrypted_input(how: &'static str) -> anyhow::Error {
    anyhow::Error::new(envelope_core::Error::DecryptionFailed(
        envelope_core::DecryptionFailure::KeyRequired,
    ))
    .context(format!(
        "{how} (mark the plaintext, then license, encrypt and sign)"
    ))
}

/// How `tool` reads suspects.
#[must_use]
pub fn kind_of(tool: Tool) -> Kind {
    if tool == Tool::APR {
        crate::model::leaks::PIRACY
    } else {
        crate::dataset::leaks::PIRACY
    }
}

/// The check of `license --watermarked`: FILE's content carries `licensee`'s mark under the
/// watermark secret of `identity` (the seller's key file), found by verification (p-value at most
/// 2^-40). A license never claims a fingerprint that is not there.
///
/// # Errors
/// `WatermarkNotFound` when it does not; reading the file (an encrypted file cannot be checked:
/// license before encrypting).
pub fn check_licensee_mark(
    tool: Tool,
    file: &Path,
    licensee: &str,
    identity: &Identity,
) -> anyhow::Result<()> {
    let seller_key = SellerKey::new(*identity.watermark_secret());
    let suspect = open(kind_of(tool), file)
        .context("--watermarked reads the content to check the mark; license before encrypting")?;
    let verification = suspect
        .subject
        .reading(&seller_key)
        .verify(&seller_key.buyer_hash(licensee.as_bytes()));
    if !verification.matched {
        bail!(
            "WatermarkNotFound: {} does not carry the mark of {licensee:?} under this key \
             (p-value {:.1e}): run `{} watermark {} --buyer {licensee:?} --seller-key KEY -o \
             OUT` first, then license OUT; nothing was written",
            file.display(),
            verification.p_value,
            tool.name,
            file.display()
        );
    }
    Ok(())
}

/// Where the seller's watermark secret comes from.
#[derive(Debug, Clone, Args)]
#[group(required = true, multiple = false, id = "seller")]
pub struct SellerKeyArgs {
    /// The seller's private key file (made by `keygen`); its watermark secret (docs/signing.md
    /// §4) marks and traces copies, and its Ed25519 key signs evidence.
    #[arg(long, value_name = "KEY", group = "seller")]
    pub seller_key: Option<PathBuf>,
    /// A file holding the 32-byte watermark secret as 64 hex digits (`piracy secret` writes
    /// it): traces copies without the power to sign.
    #[arg(long, value_name = "FILE", group = "seller")]
    pub watermark_secret: Option<PathBuf>,
}

/// The seller key options with the key file's password sources.
#[derive(Debug, Clone, Args)]
pub struct SellerArgs {
    /// `--seller-key` or `--watermark-secret`.
    #[command(flatten)]
    pub key: SellerKeyArgs,
    /// Where the key file's password comes from.
    #[command(flatten)]
    pub password: PasswordSource,
}

impl SellerArgs {
    /// The identity of `--seller-key` (reading its password), if given.
    fn identity(&self, tool: Tool) -> anyhow::Result<Option<Identity>> {
        let Some(path) = &self.key.seller_key else {
            return Ok(None);
        };
        let password = tool.password(&self.password, "key file password", false)?;
        Ok(Some(cli_support::keys::read_identity(path, &password)?))
    }

    /// The watermark secret, and the identity when it came from a key file.
    fn secret(&self, tool: Tool) -> anyhow::Result<(SellerKey, Option<Identity>)> {
        if let Some(identity) = self.identity(tool)? {
            return Ok((SellerKey::new(*identity.watermark_secret()), Some(identity)));
        }
        let path = self
            .key
            .watermark_secret
            .as_deref()
            .context("Usage: give --seller-key KEY or --watermark-secret FILE")?;
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("Io: reading {}", path.display()))?;
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text.trim(), &mut bytes).map_err(|_| {
            anyhow::anyhow!(
                "Usage: {} does not hold a watermark secret (64 hex digits)",
                path.display()
            )
        })?;
        Ok((SellerKey::new(bytes), None))
    }
}

/// The seller's private key file, when a command signs (`prove`) or exports from it (`secret`).
#[derive(Debug, Clone, Args)]
pub struct KeyFileArgs {
    /// The seller's private key file (made by `keygen`).
    #[arg(long, value_name = "KEY")]
    pub seller_key: PathBuf,
    /// Where the key file's password comes from.
    #[command(flatten)]
    pub password: PasswordSource,
}

/// `-o OUT` and `--force` of a command that writes one file.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// The file to write (atomically; an existing file is refused without --force).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Replace an existing output (`--force`).
    #[command(flatten)]
    pub force: Force,
}

/// `watermark`: the arguments both tools share.
#[derive(Debug, Args)]
pub struct MarkArgs {
    /// The file to mark (unencrypted: mark first, then license, encrypt and sign).
    pub input: PathBuf,
    /// Who this copy is for (an account id, an e-mail address). Only a keyed hash of it is
    /// embedded; `license --watermarked` later requires the same name as --licensee.
    #[arg(long, value_name = "ID")]
    pub buyer: String,
    /// The seller's key, which makes the buyer hash and the mark.
    #[command(flatten)]
    pub seller: SellerArgs,
    /// Step of the mark relative to each column's or tensor's interquartile range, from 1e-6
    /// to 0.1. Larger survives more noise and rounding and distorts more (docs/watermark.md §9,
    /// §13) [default: 1e-3 for datasets, whose means and deviations then move by under 1e-5;
    /// 1e-4 for models, whose outputs then move by under 1e-4 (1e-3 survives f16 and weight
    /// noise but moves outputs by about 5e-4)].
    #[arg(long, value_name = "S")]
    pub strength: Option<f32>,
    /// Fraction of the values that carry the mark, in (0, 1]: lower leaves more values
    /// untouched and gives fewer votes per bit [default: 1 for datasets and f32 models; for a
    /// model with Q8_0/Q4_x tensors, the sparsest of 2^-16, 2^-12, 2^-8, 2^-6, 2^-4, 2^-2, 1 that
    /// still extracts, since each marked quant moves by a whole step (docs/watermark.md §13)].
    #[arg(long, value_name = "R")]
    pub redundancy: Option<f32>,
    /// Mark only these columns (datasets) or tensors (models), comma-separated. By default every
    /// float column or tensor that can carry the mark is marked; integer columns only when named.
    #[arg(long, alias = "tensors", value_name = "NAMES", value_delimiter = ',')]
    pub columns: Vec<String>,
    /// The marked copy (atomically; an existing file is refused without --force).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Replace an existing output (`--force`).
    #[command(flatten)]
    pub force: Force,
}

impl MarkArgs {
    /// The watermark these arguments ask for, with slices chosen among `names` (in order) and
    /// `kind`'s default strength.
    ///
    /// # Errors
    /// `Usage` for a name that is not one of `names`, or for a strength or redundancy out of
    /// range.
    pub fn watermark(
        &self,
        seller_key: &SellerKey,
        names: &[String],
        kind: &Kind,
    ) -> anyhow::Result<watermark::Watermark> {
        let noun = kind.noun;
        let mut mark = watermark::Watermark::for_buyer(seller_key, self.buyer.as_bytes());
        mark.strength = self.strength.unwrap_or(kind.default_strength);
        mark.redundancy = self.redundancy.unwrap_or(1.0);
        for wanted in &self.columns {
            let index = names
                .iter()
                .position(|name| name == wanted)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "Usage: there is no {noun} {wanted:?} (the {noun}s are: {})",
                        names.join(", ")
                    )
                })?;
            mark.column_indices.push(index);
        }
        mark.validate()
            .map_err(|error| anyhow::anyhow!("Usage: {error}"))?;
        Ok(mark)
    }

    /// The seller key (and identity) these arguments name.
    ///
    /// # Errors
    /// Reading the key file or secret file.
    pub fn seller_key(&self, tool: Tool) -> anyhow::Result<SellerKey> {
        Ok(self.seller.secret(tool)?.0)
    }

    /// The output, checked before any work.
    ///
    /// # Errors
    /// As [`output::destination`].
    pub fn destination(&self) -> anyhow::Result<output::Destination> {
        output::destination(&self.output, self.force, Access::Shared, Content::Binary)
    }
}

/// Reports a finished `watermark`.
///
/// # Errors
/// Writing to stdout.
pub fn report_marked(
    shown: &str,
    buyer: &str,
    mark: &watermark::Watermark,
    report: &watermark::MarkReport,
    noun: &str,
) -> anyhow::Result<()> {
    let marked: Vec<&watermark::NamedReport> = report
        .slices
        .iter()
        .filter(|slice| slice.report.marked > 0)
        .collect();
    let traceability = traceability_name(report.traceability);
    crate::security::report_written(
        &format!(
            "{shown}: marked for buyer {buyer:?}: {} values in {} {noun}s ({}), {traceability}",
            report.marked_values(),
            marked.len(),
            marked
                .iter()
                .map(|slice| slice.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        json!({
            "ok": true,
            "output": shown,
            "buyer": buyer,
            "buyer_hash": hex::encode(mark.buyer_hash),
            "strength": mark.strength,
            "redundancy": mark.redundancy,
            "marked_values": report.marked_values(),
            "traceability": traceability,
            "slices": report.slices.iter().map(|slice| json!({
                "name": slice.name,
                "values": slice.report.values,
                "marked": slice.report.marked,
                "exponent": slice.report.exponent,
                "skipped": slice.report.skipped.map(|skip| format!("{skip:?}")),
            })).collect::<Vec<_>>(),
        }),
    )
}

fn traceability_name(traceability: watermark::Traceability) -> &'static str {
    match traceability {
        watermark::Traceability::Extractable => "extractable",
        _ => "verify-only (prove a named buyer; extraction needs more values)",
    }
}

/// `piracy`: find and prove leaks.
#[derive(Debug, Subcommand)]
pub enum PiracyCommand {
    /// Keyless statistics (000 §9.3.3): does the file look watermarked? Flags naive LSB marks;
    /// this project's keyed mark is designed not to be visible to them (docs/watermark.md §9).
    Detect {
        /// The suspect file.
        file: PathBuf,
    },
    /// Per-column (or per-tensor) LSB entropy, KS, chi-square and bit correlation.
    Entropy {
        /// The suspect file.
        file: PathBuf,
        /// Also write the JSON report to this file.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Replace an existing report (`--force`).
        #[command(flatten)]
        force: Force,
    },
    /// Recover the buyer a copy was marked for, with the seller's key.
    Extract {
        /// The suspect file.
        file: PathBuf,
        /// The seller's key, which reads the mark.
        #[command(flatten)]
        seller: SellerArgs,
        /// A file of buyer ids, one per line: names the buyer found, and when the copy is too
        /// damaged to decode, tests each of them (Bonferroni-corrected).
        #[arg(long, value_name = "FILE")]
        buyers: Option<PathBuf>,
    },
    /// Prove that a copy carries one buyer's mark and write signed evidence (000 §9.3.6).
    Prove {
        /// The suspect file.
        file: PathBuf,
        /// The buyer id the copy was sold to.
        #[arg(long, value_name = "ID", group = "who", required = true)]
        buyer: Option<String>,
        /// The buyer hash (64 hex digits, as `extract` prints it).
        #[arg(long, value_name = "HEX", group = "who")]
        buyer_hash: Option<String>,
        /// The seller's key file: traces with its watermark secret, signs with its Ed25519 key.
        #[command(flatten)]
        key: KeyFileArgs,
        /// The evidence JSON, -o OUT and --force.
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Check signed evidence: its signature, and optionally that FILE is the file it is about
    /// and that the signer is trusted.
    Verify {
        /// The evidence JSON written by `prove`.
        evidence: PathBuf,
        /// The suspect file: its BLAKE3 hash must be the one in the evidence.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Require the signer to be one of the keys in the `*.pub` files of DIR.
        #[arg(long, value_name = "DIR")]
        trusted_keys: Option<PathBuf>,
    },
    /// Extract from every readable file under DIR, in parallel, and report each.
    Scan {
        /// The directory (walked recursively; symlinks are not followed).
        dir: PathBuf,
        /// The seller's key, which reads the mark.
        #[command(flatten)]
        seller: SellerArgs,
        /// A file of buyer ids, one per line, to name the buyers found.
        #[arg(long, value_name = "FILE")]
        buyers: Option<PathBuf>,
        /// Files read at once [default: the number of cores].
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
    },
    /// Write the watermark secret of a key file as 64 hex digits (created 0600): what a forensic
    /// examiner needs to run `extract` and `scan`, without the power to sign.
    Secret {
        /// The seller's key file.
        #[command(flatten)]
        key: KeyFileArgs,
        /// The secret file, -o OUT and --force.
        #[command(flatten)]
        output: OutputArgs,
    },
}

/// Runs one `piracy` command.
///
/// # Errors
/// Reading the inputs or keys, writing outputs; `prove` when the mark is not found; `verify` when
/// the evidence does not check.
pub fn run(kind: Kind, command: PiracyCommand) -> anyhow::Result<()> {
    match command {
        PiracyCommand::Detect { file } => detect_command(kind, &file),
        PiracyCommand::Entropy {
            file,
            output,
            force,
        } => entropy_command(kind, &file, output.as_deref(), force),
        PiracyCommand::Extract {
            file,
            seller,
            buyers,
        } => extract_command(kind, &file, &seller, buyers.as_deref()),
        PiracyCommand::Prove {
            file,
            buyer,
            buyer_hash,
            key,
            output,
        } => {
            let destination =
                output::destination(&output.output, output.force, Access::Shared, Content::Text)?;
            let seller = SellerArgs {
                key: SellerKeyArgs {
                    seller_key: Some(key.seller_key),
                    watermark_secret: None,
                },
                password: key.password,
            };
            prove_command(
                kind,
                &file,
                buyer.as_deref(),
                buyer_hash.as_deref(),
                &seller,
                &destination,
            )
        }
        PiracyCommand::Verify {
            evidence,
            file,
            trusted_keys,
        } => verify_command(&evidence, file.as_deref(), trusted_keys.as_deref()),
        PiracyCommand::Scan {
            dir,
            seller,
            buyers,
            jobs,
        } => scan_command(kind, &dir, &seller, buyers.as_deref(), jobs),
        PiracyCommand::Secret { key, output } => {
            let OutputArgs { output, force } = output;
            let destination = output::destination(&output, force, Access::Private, Content::Text)?;
            let seller_key = key.seller_key;
            let password = kind
                .tool
                .password(&key.password, "key file password", false)?;
            let identity = cli_support::keys::read_identity(&seller_key, &password)?;
            let text = format!("{}\n", hex::encode(identity.watermark_secret().as_ref()));
            envelope_core::fs::write_atomic(destination.clone(), |out| {
                std::io::Write::write_all(out, text.as_bytes()).map_err(envelope_core::Error::Io)
            })
            .with_context(|| format!("writing {}", output.display()))?;
            crate::security::report_written(
                &format!(
                    "wrote the watermark secret of {} to {} (0600)",
                    seller_key.display(),
                    output.display()
                ),
                json!({ "ok": true, "output": output.display().to_string() }),
            )
        }
    }
}

fn open(kind: Kind, file: &Path) -> anyhow::Result<Suspect> {
    (kind.open)(file).with_context(|| format!("reading {}", file.display()))
}

fn statistics_json(name: &str, statistics: &SliceStatistics) -> Value {
    json!({
        "name": name,
        "values": statistics.values,
        "lsb_entropy": statistics.lsb_entropy,
        "ks_p_value": statistics.ks_p_value,
        "chi_square_p_value": statistics.chi_square_p_value,
        "bit_correlation": statistics.bit_correlation,
        "low_precision": statistics.low_precision,
        "flags": statistics.flags,
        "suspicious": statistics.suspicious(),
    })
}

fn detect_command(kind: Kind, file: &Path) -> anyhow::Result<()> {
    let subject = open(kind, file)?.subject;
    let (names, statistics): (Vec<String>, Vec<SliceStatistics>) =
        subject.statistics().into_iter().unzip();
    let result = detect::detect(statistics);
    let suspicious: Vec<&str> = result
        .suspicious_slices
        .iter()
        .map(|&i| names[i].as_str())
        .collect();
    if cli_support::run::mode().json {
        cli_support::print::json(&json!({
            "ok": true,
            "file": file.display().to_string(),
            "likely_watermarked": result.likely_watermarked,
            "confidence": result.confidence,
            "suspicious": suspicious,
            "slices": names.iter().zip(&result.slices)
                .map(|(name, s)| statistics_json(name, s)).collect::<Vec<_>>(),
        }))?;
        return Ok(());
    }
    if result.likely_watermarked {
        cli_support::print::line(format!(
            "LIKELY WATERMARKED (confidence: {:.1}%)\nSuspicious {}s: {}",
            result.confidence * 100.0,
            kind.noun,
            Safe(&suspicious.join(", "))
        ))?;
    } else {
        cli_support::print::line(format!(
            "no sign of an LSB watermark in {} {}s (keyless tests; a keyed mark such as this \
             project's is not visible to them: use `piracy extract` with the seller key)",
            names.len(),
            kind.noun
        ))?;
    }
    Ok(())
}

fn entropy_command(
    kind: Kind,
    file: &Path,
    output: Option<&Path>,
    force: Force,
) -> anyhow::Result<()> {
    let destination = output
        .map(|path| output::destination(path, force, Access::Shared, Content::Text))
        .transpose()?;
    let subject = open(kind, file)?.subject;
    let statistics = subject.statistics();
    let report = json!({
        "ok": true,
        "file": file.display().to_string(),
        "expected_lsb_entropy": 1.0,
        "slices": statistics.iter().map(|(name, s)| statistics_json(name, s)).collect::<Vec<_>>(),
    });
    if let Some(destination) = destination {
        let text = format!("{}\n", serde_json::to_string_pretty(&report)?);
        envelope_core::fs::write_atomic(destination.clone(), |out| {
            std::io::Write::write_all(out, text.as_bytes()).map_err(envelope_core::Error::Io)
        })
        .with_context(|| format!("writing {}", destination.path().display()))?;
    }
    if cli_support::run::mode().json {
        cli_support::print::json(&report)?;
        return Ok(());
    }
    cli_support::print::line(format!(
        "{:<24} {:>10} {:>11} {:>10} {:>10} {:>9}  flags",
        kind.noun, "values", "lsb entropy", "ks p", "chi2 p", "bit corr"
    ))?;
    for (name, s) in &statistics {
        cli_support::print::line(format!(
            "{:<24} {:>10} {:>11.4} {:>10.3e} {:>10.3e} {:>9.4}  {}{}",
            Safe(name),
            s.values,
            s.lsb_entropy,
            s.ks_p_value,
            s.chi_square_p_value,
            s.bit_correlation,
            s.flags,
            if s.low_precision {
                " (low precision: not testable)"
            } else if s.suspicious() {
                " SUSPICIOUS"
            } else {
                ""
            }
        ))?;
    }
    Ok(())
}

/// Buyer ids read from a list file, by their hash under one key.
struct Buyers {
    ids: Vec<String>,
    hashes: Vec<[u8; 32]>,
}

impl Buyers {
    fn read(path: Option<&Path>, seller_key: &SellerKey) -> anyhow::Result<Self> {
        let Some(path) = path else {
            return Ok(Self {
                ids: Vec::new(),
                hashes: Vec::new(),
            });
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("Io: reading the buyer list {}", path.display()))?;
        let ids: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(str::to_owned)
            .collect();
        let hashes = ids
            .iter()
            .map(|id| seller_key.buyer_hash(id.as_bytes()))
            .collect();
        Ok(Self { ids, hashes })
    }

    fn name(&self, hash: &[u8; 32]) -> Option<&str> {
        self.hashes
            .iter()
            .position(|known| known == hash)
            .map(|i| self.ids[i].as_str())
    }
}

/// What `extract` (and each file of `scan`) found.
enum Finding {
    Extracted(Extracted),
    Identified(usize, Verification),
    Nothing,
}

fn find(reading: &Reading, buyers: &Buyers) -> Finding {
    if let Some(found) = reading.extract() {
        return Finding::Extracted(found);
    }
    match reading.identify(&buyers.hashes) {
        Some((index, verification)) => Finding::Identified(index, verification),
        None => Finding::Nothing,
    }
}

fn finding_json(finding: &Finding, buyers: &Buyers) -> Value {
    match finding {
        Finding::Extracted(found) => json!({
            "found": true,
            "method": "extracted",
            "buyer_hash": hex::encode(found.buyer_hash),
            "buyer": buyers.name(&found.buyer_hash),
            "confidence": found.confidence,
            "false_match_bound": found.false_match_bound,
            "agreement": found.agreement,
        }),
        Finding::Identified(index, verification) => json!({
            "found": true,
            "method": "identified",
            "buyer_hash": hex::encode(buyers.hashes[*index]),
            "buyer": buyers.ids[*index],
            "confidence": verification.confidence,
            "p_value": verification.p_value,
            "agreement": verification.agreement,
        }),
        Finding::Nothing => json!({ "found": false }),
    }
}

fn finding_text(finding: &Finding, buyers: &Buyers) -> String {
    match finding {
        Finding::Extracted(found) => format!(
            "Buyer: hash={}{} (confidence: 1 - {:.1e}, the bound on a false match; {:.1}% of \
             votes agree)",
            hex::encode(found.buyer_hash),
            buyers
                .name(&found.buyer_hash)
                .map(|id| format!(" ({id:?})"))
                .unwrap_or_default(),
            found.false_match_bound,
            found.agreement * 100.0
        ),
        Finding::Identified(index, verification) => format!(
            "Buyer: {:?}, hash={} (identified from the buyer list: p-value {:.1e}; {:.1}% of \
             positions agree; the copy is too damaged to decode without the list)",
            buyers.ids[*index],
            hex::encode(buyers.hashes[*index]),
            verification.p_value,
            verification.agreement * 100.0
        ),
        Finding::Nothing => "no buyer found under this key".to_owned(),
    }
}

/// What a license claims about a mark, against what was found.
struct Claim {
    /// The license has the WATERMARKED flag.
    flagged: bool,
    /// A mark of this key was found (extracted or identified).
    found: Option<[u8; 32]>,
    /// The licensee, when the buyer list names them (the license stores only SHA-256 of the
    /// name, the mark HMAC(K, name): the list links the two).
    licensee: Option<String>,
}

impl Claim {
    fn of(license: &LicenseBlock, finding: &Finding, buyers: &Buyers) -> Self {
        Self {
            flagged: license.flags.contains(LicenseFlags::WATERMARKED),
            found: match finding {
                Finding::Extracted(found) => Some(found.buyer_hash),
                Finding::Identified(index, _) => Some(buyers.hashes[*index]),
                Finding::Nothing => None,
            },
            licensee: buyers.ids.iter().find(|id| license.is_for(id)).cloned(),
        }
    }

    /// Whether the mark found names the licensee (unknown without both).
    fn mark_is_licensee(&self, buyers: &Buyers) -> Option<bool> {
        let (hash, licensee) = (self.found?, self.licensee.as_deref()?);
        Some(buyers.name(&hash) == Some(licensee))
    }

    /// For a WATERMARKED license: a mark is there and nothing says it is another buyer's.
    fn holds(&self, buyers: &Buyers) -> Option<bool> {
        self.flagged
            .then(|| self.found.is_some() && self.mark_is_licensee(buyers) != Some(false))
    }

    fn json(&self, buyers: &Buyers) -> Value {
        json!({
            "watermarked_flag": self.flagged,
            "mark_found": self.found.is_some(),
            "licensee": self.licensee,
            "mark_is_licensee": self.mark_is_licensee(buyers),
            "claim_holds": self.holds(buyers),
        })
    }
}

fn extract_command(
    kind: Kind,
    file: &Path,
    seller: &SellerArgs,
    buyers: Option<&Path>,
) -> anyhow::Result<()> {
    let (seller_key, _) = seller.secret(kind.tool)?;
    let buyers = Buyers::read(buyers, &seller_key)?;
    let suspect = open(kind, file)?;
    let reading = suspect.subject.reading(&seller_key);
    let finding = find(&reading, &buyers);
    let claim = suspect
        .license
        .as_ref()
        .map(|license| Claim::of(license, &finding, &buyers));
    if cli_support::run::mode().json {
        let mut value = finding_json(&finding, &buyers);
        value["ok"] = json!(true);
        value["file"] = json!(file.display().to_string());
        value["slices"] = slices_json(&reading);
        if let Some(claim) = &claim {
            value["license"] = claim.json(&buyers);
        }
        cli_support::print::json(&value)?;
        return Ok(());
    }
    cli_support::print::line(Safe(&finding_text(&finding, &buyers)))?;
    if let Some(claim) = claim.filter(|claim| claim.flagged) {
        cli_support::print::line(match (claim.holds(&buyers), claim.found) {
            (Some(true), _) => "License: WATERMARKED, and the mark is there",
            (_, Some(_)) => {
                "License: WATERMARKED, but the mark names another buyer than the licensee"
            }
            (_, None) => {
                "License: WATERMARKED, but no mark of this key was found: the claim does not hold"
            }
        })?;
    }
    Ok(())
}

fn slices_json(reading: &Reading) -> Value {
    Value::Array(
        reading
            .slices
            .iter()
            .map(|slice| {
                json!({
                    "name": slice.name,
                    "values": slice.evidence.values,
                    "votes": slice.evidence.votes,
                    "exponent": slice.evidence.exponent,
                    "energy": slice.evidence.energy,
                })
            })
            .collect(),
    )
}

/// The name, size and BLAKE3 hash of the file at `path`.
fn file_facts(path: &Path) -> anyhow::Result<FileFacts> {
    let file =
        std::fs::File::open(path).with_context(|| format!("Io: reading {}", path.display()))?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned());
    FileFacts::read(name, file).with_context(|| format!("Io: reading {}", path.display()))
}

fn prove_command(
    kind: Kind,
    file: &Path,
    buyer: Option<&str>,
    buyer_hash: Option<&str>,
    seller: &SellerArgs,
    destination: &output::Destination,
) -> anyhow::Result<()> {
    let (seller_key, identity) = seller.secret(kind.tool)?;
    let identity = identity.context("Usage: prove signs with --seller-key KEY")?;
    let hash = match (buyer, buyer_hash) {
        (Some(id), _) => seller_key.buyer_hash(id.as_bytes()),
        (None, Some(text)) => {
            let mut hash = [0u8; 32];
            hex::decode_to_slice(text.trim(), &mut hash).map_err(|_| {
                anyhow::anyhow!("Usage: --buyer-hash takes 64 hex digits, as `extract` prints")
            })?;
            hash
        }
        (None, None) => bail!("Usage: give --buyer ID or --buyer-hash HEX"),
    };
    let facts = file_facts(file)?;
    let subject = open(kind, file)?.subject;
    let reading = subject.reading(&seller_key);
    let verification = reading.verify(&hash);
    let extracted = reading.extract();
    if !verification.matched {
        bail!(
            "WatermarkNotFound: {} does not carry this buyer's mark under this key (p-value \
             {:.1e}, {:.1}% of {} positions agree; 2^-40 is needed); no evidence written",
            file.display(),
            verification.p_value,
            verification.agreement * 100.0,
            verification.positions_voted
        );
    }
    let statistics = subject.statistics();
    let finding = evidence::Finding {
        buyer_hash: hash,
        buyer,
        verification: &verification,
        extracted: extracted.as_ref(),
        reading: &reading,
        statistics: &statistics,
    };
    let analyzed_at = jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string());
    let signing_key = identity.signing_key();
    let built = evidence::build(
        &format!("{} {}", kind.tool.name, env!("CARGO_PKG_VERSION")),
        &facts,
        &finding,
        &analyzed_at,
        &signing_key.verifying_key(),
    );
    let document = evidence::sign(built, &signing_key)?;
    let text = format!("{}\n", serde_json::to_string_pretty(&document)?);
    envelope_core::fs::write_atomic(destination.clone(), |out| {
        std::io::Write::write_all(out, text.as_bytes()).map_err(envelope_core::Error::Io)
    })
    .with_context(|| format!("writing {}", destination.path().display()))?;
    crate::security::report_written(
        &format!(
            "{}: carries the mark of buyer {} (p-value {:.1e}, {:.1}% of positions agree); \
             signed evidence written to {}",
            file.display(),
            buyer.map_or_else(|| hex::encode(hash), |id| format!("{id:?}")),
            verification.p_value,
            verification.agreement * 100.0,
            destination.path().display()
        ),
        json!({
            "ok": true,
            "output": destination.path().display().to_string(),
            "buyer_hash": hex::encode(hash),
            "p_value": verification.p_value,
            "dataset_hash": facts.blake3_hex(),
        }),
    )
}

fn verify_command(
    evidence_path: &Path,
    file: Option<&Path>,
    trusted_keys: Option<&Path>,
) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(evidence_path)
        .with_context(|| format!("Io: reading {}", evidence_path.display()))?;
    let document: Value = serde_json::from_str(&text).map_err(|error| {
        anyhow::anyhow!(
            "InvalidFormat: {} is not evidence JSON: {error}",
            evidence_path.display()
        )
    })?;
    let (evidence, signer) = evidence::verify(&document)?;
    let signer_text = envelope_sign::SigningPublicKey::from_bytes(signer.to_bytes()).to_string();
    let mut checks = vec![format!("signature    valid, ed25519 {signer_text}")];
    if let Some(dir) = trusted_keys {
        let trusted = cli_support::keys::trusted_keys(dir)?;
        if !trusted.keys().any(|key| key == &signer) {
            bail!(
                "SignatureInvalid: the evidence's signer is not among the trusted keys of {}",
                dir.display()
            );
        }
        checks.push("signer       trusted".to_owned());
    }
    if let Some(file) = file {
        let facts = file_facts(file)?;
        evidence::check_file(evidence, &facts)
            .map_err(|error| anyhow::anyhow!("{error} (file {})", file.display()))?;
        checks.push(format!(
            "file         {} matches (BLAKE3 {})",
            file.display(),
            facts.blake3_hex()
        ));
    }
    if cli_support::run::mode().json {
        cli_support::print::json(&json!({
            "ok": true,
            "buyer_hash": evidence["buyer_hash"],
            "buyer": evidence["buyer"],
            "dataset_hash": evidence["dataset_hash"]["hex"],
            "signer": signer_text,
            "trusted": trusted_keys.is_some(),
            "file_checked": file.is_some(),
        }))?;
        return Ok(());
    }
    for line in checks {
        cli_support::print::line(Safe(&line))?;
    }
    cli_support::print::line(format!(
        "evidence     buyer {} in {}, analyzed {}",
        evidence["buyer_hash"].as_str().unwrap_or("?"),
        Safe(evidence["file_name"].as_str().unwrap_or("?")),
        Safe(evidence["analyzed_at"].as_str().unwrap_or("?"))
    ))?;
    Ok(())
}

/// Every regular file under `dir` that `kind` reads, sorted (symlinks are not followed).
fn files_under(kind: Kind, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("Io: reading {}", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("Io: reading {}", dir.display()))?;
            let file_type = entry.file_type()?;
            let path = entry.path();
            if file_type.is_dir() {
                pending.push(path);
            } else if file_type.is_file() && (kind.accepts)(&path) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

fn scan_command(
    kind: Kind,
    dir: &Path,
    seller: &SellerArgs,
    buyers: Option<&Path>,
    jobs: Option<usize>,
) -> anyhow::Result<()> {
    if !dir.is_dir() {
        bail!("Usage: {} is not a directory", dir.display());
    }
    let (seller_key, _) = seller.secret(kind.tool)?;
    let buyers = Buyers::read(buyers, &seller_key)?;
    let files = files_under(kind, dir)?;
    let workers = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .clamp(1, files.len().max(1));
    let bar = cli_support::progress::items(files.len() as u64, "files", "scanning");
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Result<Finding, String>)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = files.get(index) else { break };
                    let outcome = open(kind, path)
                        .map(|suspect| find(&suspect.subject.reading(&seller_key), &buyers))
                        .map_err(|error| cli_support::run::error_line(&error));
                    results
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((index, outcome));
                    bar.inc(1);
                }
            });
        }
    });
    bar.finish_and_clear();
    let mut results = results
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    results.sort_by_key(|(index, _)| *index);
    let found = results
        .iter()
        .filter(|(_, outcome)| {
            matches!(outcome, Ok(Finding::Extracted(_) | Finding::Identified(..)))
        })
        .count();
    let failed = results
        .iter()
        .filter(|(_, outcome)| outcome.is_err())
        .count();
    if cli_support::run::mode().json {
        cli_support::print::json(&json!({
            "ok": true,
            "dir": dir.display().to_string(),
            "scanned": files.len(),
            "found": found,
            "failed": failed,
            "files": results.iter().map(|(index, outcome)| {
                let mut value = match outcome {
                    Ok(finding) => finding_json(finding, &buyers),
                    Err(error) => json!({ "found": false, "error": error }),
                };
                value["path"] = json!(files[*index].display().to_string());
                value
            }).collect::<Vec<_>>(),
        }))?;
        return Ok(());
    }
    for (index, outcome) in &results {
        let path = files[*index].display().to_string();
        let text = match outcome {
            Ok(Finding::Nothing) => "no buyer".to_owned(),
            Ok(finding) => finding_text(finding, &buyers),
            Err(error) => format!("unreadable: {error}"),
        };
        cli_support::print::line(format!("{}: {}", Safe(&path), Safe(&text)))?;
    }
    cli_support::print::note(format!(
        "{} files scanned: {found} marked by this key, {failed} unreadable",
        files.len()
    ));
    Ok(())
}
