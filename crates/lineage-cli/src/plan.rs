//! The run's access plan and its execution certificate on the command line: the sampler and
//! plan options of `snapshot`/`verify`, `snapshot --certificate`, and `verify-certificate`.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use clap::Args;
use cli_support::keys::PasswordSource;
use cli_support::output::Destination;
use cli_support::terminal::Safe;
use lineage::certificate::{Certificate, CertificatePayload};
use lineage::plan::{AccessPlan, PlanOverrides, SamplerConfig};
use lineage::{Digest, Snapshot};
use serde_json::json;

/// The environment variable holding the certificate key's password.
pub(crate) const PASSWORD_ENV: &str = "LINEAGE_PASSWORD";

/// Certificates are a few hundred bytes; anything past this is not one.
const MAX_CERTIFICATE_BYTES: u64 = 64 * 1024;

/// The options that build a sampler configuration field by field.
const SAMPLER_FIELDS: [&str; 4] = ["world_size", "batch_size", "shuffle_seed", "drop_last"];

/// How the run reads the snapshot: the inputs of its data_access_plan_hash.
#[derive(Args, Debug)]
pub(crate) struct PlanArgs {
    /// The run's sampler configuration as a JSON object (any keys); its hash is the plan's
    /// sampler_config_hash. Without it the configuration is built from --world-size,
    /// --batch-size, --shuffle-seed and --drop-last.
    #[arg(long, value_name = "FILE", conflicts_with_all = SAMPLER_FIELDS)]
    sampler_config: Option<PathBuf>,
    /// The plan's sampler_config_hash itself, 64 hex digits, for a sampler whose configuration
    /// is committed elsewhere (instead of --sampler-config or the sampler fields).
    #[arg(long, value_name = "HEX", conflicts_with = "sampler_config", conflicts_with_all = SAMPLER_FIELDS)]
    sampler_config_hash: Option<String>,
    /// Ranks reading the snapshot (sampler configuration field world_size).
    #[arg(long, default_value_t = 1)]
    world_size: u64,
    /// Samples per batch and rank (sampler configuration field batch_size).
    #[arg(long, default_value_t = 1)]
    batch_size: u64,
    /// Seed of the sampler's shuffle (field shuffle_seed; none: canonical order).
    #[arg(long)]
    shuffle_seed: Option<u64>,
    /// Drop the last incomplete batch (field drop_last).
    #[arg(long)]
    drop_last: bool,
    /// The plan's kernel_replay_token, 64 hex digits (default: the run's replay token, from
    /// --tenant and --run-id).
    #[arg(long, value_name = "HEX")]
    kernel_replay_token: Option<String>,
    /// The plan's manifest_hash, 64 hex digits (default: the dataset_root_hash).
    #[arg(long, value_name = "HEX")]
    manifest_hash: Option<String>,
}

impl PlanArgs {
    /// The sampler configuration and the caller's overrides, checked before any byte is hashed.
    pub(crate) fn resolve(&self) -> Result<(SamplerConfig, PlanOverrides)> {
        let sampler = match &self.sampler_config {
            Some(path) => SamplerConfig::from_json(&crate::read_text(path)?)
                .with_context(|| format!("sampler configuration {}", path.display()))?,
            None => SamplerConfig::from_fields(
                self.world_size,
                self.batch_size,
                self.shuffle_seed,
                self.drop_last,
            )?,
        };
        let overrides = PlanOverrides {
            kernel_replay_token: hex_option(
                "kernel-replay-token",
                self.kernel_replay_token.as_deref(),
            )?,
            manifest_hash: hex_option("manifest-hash", self.manifest_hash.as_deref())?,
            sampler_config_hash: hex_option(
                "sampler-config-hash",
                self.sampler_config_hash.as_deref(),
            )?,
        };
        Ok((sampler, overrides))
    }
}

fn hex_option(flag: &str, value: Option<&str>) -> Result<Option<Digest>> {
    value
        .map(|text| {
            Digest::from_hex(text).with_context(|| format!("--{flag} must be 64 hex digits"))
        })
        .transpose()
}

/// `snapshot --certificate FILE --key KEY`.
#[derive(Args, Debug)]
pub(crate) struct CertificateArgs {
    /// Write a signed execution certificate to FILE (canonical CBOR, docs/lineage.md §6.2): it
    /// binds dataset_snapshot_id, data_access_plan_hash and lineage_root_hash, signed with
    /// --key. Written atomically; an existing FILE is refused without --force.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub(crate) certificate: Option<PathBuf>,
    /// The private key file that signs the certificate (made by `alimentar keygen` or
    /// `apr keygen`; its password from --password-file, LINEAGE_PASSWORD or a prompt).
    #[arg(long, value_name = "KEY", requires = "certificate")]
    pub(crate) key: Option<PathBuf>,
    /// Where the key file's password comes from.
    #[command(flatten)]
    pub(crate) password: PasswordSource,
}

impl CertificateArgs {
    /// The signing key, read before any byte is hashed so a wrong password fails fast.
    pub(crate) fn signing_key(&self) -> Result<Option<ed25519_dalek::SigningKey>> {
        let Some(path) = &self.key else {
            return Ok(None);
        };
        let password = self
            .password
            .read(PASSWORD_ENV, "key file password", false)?;
        Ok(Some(
            cli_support::keys::read_identity(path, &password)?.signing_key(),
        ))
    }
}

/// A finished run: the snapshot, the plan it was read with, and its replay token.
pub(crate) struct Run {
    pub(crate) snapshot: Snapshot,
    pub(crate) plan: AccessPlan,
    pub(crate) replay_token: Digest,
}

/// Signs the run's certificate and writes it to `destination`.
pub(crate) fn write_certificate(
    destination: Destination,
    run: &Run,
    tenant_id: &str,
    run_id: &str,
    key: &ed25519_dalek::SigningKey,
) -> Result<()> {
    let payload = CertificatePayload {
        tenant_id: tenant_id.to_owned(),
        run_id: run_id.to_owned(),
        replay_token: run.replay_token,
        dataset_snapshot_id: run.snapshot.dataset_snapshot_id,
        data_access_plan_hash: run.plan.hash,
        lineage_root_hash: run.snapshot.lineage_root_hash,
    };
    let bytes = Certificate::sign(payload, key).to_bytes();
    let shown = destination.path().display().to_string();
    output_file::write(destination, |file| std::io::Write::write_all(file, &bytes))
        .with_context(|| format!("writing certificate {shown}"))
}

/// `lineage verify-certificate`.
#[derive(Args, Debug)]
pub(crate) struct VerifyCertificateArgs {
    /// The certificate file (written by `lineage snapshot --certificate`).
    certificate: PathBuf,
    /// Directory of trusted public key files (`*.pub`); the certificate's signer must be one.
    #[arg(long, value_name = "DIR")]
    trusted_keys: PathBuf,
    /// Fail (SNAPSHOT_HASH_MISMATCH) unless the certificate binds this dataset_snapshot_id.
    #[arg(long, value_name = "HEX")]
    expect_snapshot_id: Option<String>,
    /// Fail (CERTIFICATE_INVALID) unless it binds this data_access_plan_hash.
    #[arg(long, value_name = "HEX")]
    expect_plan_hash: Option<String>,
    /// Fail (CERTIFICATE_INVALID) unless it binds this lineage_root_hash.
    #[arg(long, value_name = "HEX")]
    expect_lineage_root: Option<String>,
}

/// Checks a certificate: its form, its signature under a trusted key, and the expected hashes.
pub(crate) fn verify_certificate(args: &VerifyCertificateArgs) -> Result<()> {
    let bytes = read_bounded(&args.certificate)?;
    let certificate = Certificate::from_bytes(&bytes)
        .with_context(|| format!("certificate {}", args.certificate.display()))?;
    let trusted = cli_support::keys::trusted_keys(&args.trusted_keys)?;
    let signer = certificate.verify(trusted.keys())?;
    let payload = &certificate.payload;
    if let Some(expected) = hex_option("expect-snapshot-id", args.expect_snapshot_id.as_deref())?
        && expected != payload.dataset_snapshot_id
    {
        return Err(lineage::Error::SnapshotHashMismatch {
            expected,
            found: payload.dataset_snapshot_id,
        }
        .into());
    }
    for (flag, value, bound, reason) in [
        (
            "expect-plan-hash",
            &args.expect_plan_hash,
            payload.data_access_plan_hash,
            "the certificate binds another data_access_plan_hash",
        ),
        (
            "expect-lineage-root",
            &args.expect_lineage_root,
            payload.lineage_root_hash,
            "the certificate binds another lineage_root_hash",
        ),
    ] {
        if hex_option(flag, value.as_deref())?.is_some_and(|expected| expected != bound) {
            return Err(lineage::Error::CertificateInvalid { reason }.into());
        }
    }
    let signer = envelope_sign::SigningPublicKey::from_bytes(signer.to_bytes()).to_string();
    if cli_support::run::mode().json {
        cli_support::print::json(&json!({
            "ok": true,
            "signer": signer,
            "tenant_id": payload.tenant_id,
            "run_id": payload.run_id,
            "replay_token": payload.replay_token.to_hex(),
            "dataset_snapshot_id": payload.dataset_snapshot_id.to_hex(),
            "data_access_plan_hash": payload.data_access_plan_hash.to_hex(),
            "lineage_root_hash": payload.lineage_root_hash.to_hex(),
        }))?;
        return Ok(());
    }
    for (name, value) in [
        ("signature", format!("valid, ed25519 {signer} (trusted)")),
        ("tenant_id", payload.tenant_id.clone()),
        ("run_id", payload.run_id.clone()),
        ("replay_token", payload.replay_token.to_hex()),
        ("dataset_snapshot_id", payload.dataset_snapshot_id.to_hex()),
        (
            "data_access_plan_hash",
            payload.data_access_plan_hash.to_hex(),
        ),
        ("lineage_root_hash", payload.lineage_root_hash.to_hex()),
    ] {
        cli_support::print::line(format!("{name:<22}{}", Safe(&value)))?;
    }
    Ok(())
}

/// The file's bytes, refusing anything larger than a certificate can be.
fn read_bounded(path: &Path) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_CERTIFICATE_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() as u64 > MAX_CERTIFICATE_BYTES {
        bail!(
            "CERTIFICATE_INVALID: {} is larger than {MAX_CERTIFICATE_BYTES} bytes: not a certificate",
            path.display()
        );
    }
    Ok(bytes)
}
