//! The key, password, signing and encryption commands shared by `alimentar` and `apr`
//! (`keygen`, `sign`, `verify`, `encrypt`, `decrypt`, `license`), and the key options every
//! command that reads a payload accepts. One clap `Subcommand` enum, flattened into both binaries.
//!
//! Passwords never come from argv (`cli_support::keys::PasswordSource`): `--password-file PATH`,
//! the tool's environment variable (`ALIMENTAR_PASSWORD` / `APR_PASSWORD`), or an interactive
//! prompt on a terminal, in that order. A command needs at most one password: the file's
//! (password mode) or, with `--key`, the private key file's.
//!
//! Outputs follow docs/cli.md: `-o OUT` is refused if it exists unless `--force`; without `-o`,
//! `sign`, `encrypt`, `decrypt` and `license` replace FILE atomically. Private keys and decrypted
//! files are created `0600`.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use cli_support::keys::PasswordSource;
use cli_support::output::{self, Access, Content, Destination, Force, InPlace};
use envelope_core::{Envelope, EnvelopeParts, Error, Flags, Format, Section};
use envelope_crypto::{
    Argon2Params, DecryptionKey, Decryptor, EncryptOptions, EncryptTo, OsRng, Password,
};
use envelope_license::{LicenseBlock, LicenseFlags};
use envelope_sign::{Identity, Policy, TrustedKeys};
use serde_json::json;

/// Which tool is running: its name, its format and its password variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// `alimentar` or `apr`.
    pub name: &'static str,
    /// The format the tool reads and writes.
    pub format: Format,
    /// The environment variable a password may come from.
    pub password_env: &'static str,
}

impl Tool {
    /// `alimentar`, for `.ald` datasets.
    pub const ALIMENTAR: Self = Self {
        name: "alimentar",
        format: Format::Dataset,
        password_env: "ALIMENTAR_PASSWORD",
    };
    /// `apr`, for `.apr` models.
    pub const APR: Self = Self {
        name: "apr",
        format: Format::Model,
        password_env: "APR_PASSWORD",
    };

    /// Reads the command's one password from `source` (see [`PasswordSource::read`]).
    ///
    /// # Errors
    /// As [`PasswordSource::read`].
    pub fn password(
        self,
        source: &PasswordSource,
        what: &str,
        confirm: bool,
    ) -> anyhow::Result<Password> {
        source.read(self.password_env, what, confirm)
    }
}

/// Argon2id cost options for writers (the defaults are 001 §5.2's).
#[derive(Debug, Clone, Args)]
pub struct KdfOptions {
    /// Argon2id memory cost in KiB (1024 to 1048576).
    #[arg(long, value_name = "KIB", default_value_t = envelope_crypto::ARGON2_DEFAULT_M_COST_KIB)]
    pub argon2_m_kib: u32,
    /// Argon2id passes (1 to 10).
    #[arg(long, value_name = "N", default_value_t = envelope_crypto::ARGON2_DEFAULT_T_COST)]
    pub argon2_t: u32,
    /// Argon2id lanes (1 to 16).
    #[arg(long, value_name = "N", default_value_t = envelope_crypto::ARGON2_DEFAULT_P_COST)]
    pub argon2_p: u32,
}

impl KdfOptions {
    fn params(&self) -> Argon2Params {
        Argon2Params {
            m_cost_kib: self.argon2_m_kib,
            t_cost: self.argon2_t,
            p_cost: self.argon2_p,
        }
    }
}

/// The options every command that reads a payload accepts: how to decrypt, and whether to
/// require a signature.
#[derive(Debug, Clone, Default, Args)]
pub struct KeyOptions {
    /// The file is password-encrypted: take the password from --password-file, the environment
    /// variable or a prompt.
    #[arg(long)]
    pub password: bool,
    /// Decrypt with the X25519 key of this private key file (made by `keygen`); the password
    /// sources then give the key file's password.
    #[arg(long, value_name = "KEY")]
    pub key: Option<PathBuf>,
    /// Where the password comes from.
    #[command(flatten)]
    pub password_source: PasswordSource,
    /// Require a valid signature by a key in one of the `*.pub` files of DIR, checked before the
    /// payload is decrypted or parsed.
    #[arg(long, value_name = "DIR")]
    pub trusted_keys: Option<PathBuf>,
}

/// What decrypts a file, once the password or key file has been read.
enum Secret {
    Password(Password),
    Identity(Identity),
}

impl KeyOptions {
    pub(crate) fn wants_decryption(&self) -> bool {
        self.password || self.key.is_some() || self.password_source.password_file.is_some()
    }

    fn secret(&self, tool: Tool) -> anyhow::Result<Secret> {
        if let Some(key) = &self.key {
            let password = tool.password(&self.password_source, "key file password", false)?;
            let identity = cli_support::keys::read_identity(key, &password)?;
            return Ok(Secret::Identity(identity));
        }
        Ok(Secret::Password(tool.password(
            &self.password_source,
            "password",
            false,
        )?))
    }

    /// Applies `--trusted-keys` to `envelope`: the verified signer, if a signature was required.
    ///
    /// # Errors
    /// `SignatureInvalid` (or `Io` / `Usage` for the directory).
    pub fn check_signature<B: AsRef<[u8]>>(
        &self,
        envelope: &Envelope<B>,
    ) -> anyhow::Result<Option<envelope_sign::SigningPublicKey>> {
        let Some(dir) = &self.trusted_keys else {
            return Ok(None);
        };
        let trusted = trusted_keys(dir)?;
        Ok(Policy::RequireSignature { trusted: &trusted }.check(envelope)?)
    }

    /// The checks that come before any payload byte is decrypted or parsed (000 §5.0, 001 §5.1),
    /// in their order: the signature under `--trusted-keys`, then the license's expiry by the
    /// system clock. Returns the verified signer, if a signature was required.
    ///
    /// # Errors
    /// `SignatureInvalid`, `LicenseExpired` (or `Io` / `Usage` for the keys directory).
    pub fn admit<B: AsRef<[u8]>>(
        &self,
        envelope: &Envelope<B>,
    ) -> anyhow::Result<Option<envelope_sign::SigningPublicKey>> {
        let signer = self.check_signature(envelope)?;
        check_license(envelope)?;
        Ok(signer)
    }

    /// Verifies the file at `path` under these options and returns its decoded payload: the
    /// signature first (with `--trusted-keys`), then the license's expiry (for licensed files),
    /// then decryption (for encrypted files) and decompression. This is the loading path of every command that reads a payload.
    ///
    /// # Errors
    /// The envelope, signature or decryption error, each naming its signal.
    pub fn load_payload(&self, tool: Tool, path: &Path) -> anyhow::Result<Vec<u8>> {
        let envelope = load(tool, path)?;
        self.admit(&envelope)?;
        if !envelope.header().flags().contains(Flags::ENCRYPTED) {
            return Ok(envelope.decode_payload()?.into_owned());
        }
        if !self.wants_decryption() {
            return Err(
                Error::DecryptionFailed(envelope_core::DecryptionFailure::KeyRequired).into(),
            );
        }
        let secret = self.secret(tool)?;
        Ok(decryptor(&envelope, &secret)?.payload()?)
    }
}

/// Refuses a licensed file whose license has expired (`LicenseExpired`), by the system clock.
///
/// # Errors
/// `LicenseExpired`, or `InvalidFormat` for a malformed license block.
pub fn check_license<B: AsRef<[u8]>>(envelope: &Envelope<B>) -> anyhow::Result<()> {
    envelope_license::check_license(envelope, Some(unix_now()?))?;
    Ok(())
}

fn decryptor<'e>(
    envelope: &'e Envelope<Vec<u8>>,
    secret: &Secret,
) -> envelope_core::Result<Decryptor<'e, Vec<u8>>> {
    match secret {
        Secret::Password(password) => Decryptor::new(envelope, DecryptionKey::Password(password)),
        Secret::Identity(identity) => {
            let key = identity.recipient_secret_key();
            Decryptor::new(envelope, DecryptionKey::Recipient(&key))
        }
    }
}

fn trusted_keys(dir: &Path) -> anyhow::Result<TrustedKeys> {
    cli_support::keys::trusted_keys(dir)
}

/// Loads and verifies the whole file at `path` (every check of docs/envelope.md §3), naming the
/// file in the error.
///
/// # Errors
/// `Io` or the first failed check, with the path.
pub fn load(tool: Tool, path: &Path) -> anyhow::Result<Envelope<Vec<u8>>> {
    Ok(envelope_core::fs::load(path, tool.format)
        .with_context(|| path.display().to_string())?
        .with_limits(crate::limits()))
}

/// The shared commands.
#[derive(Debug, Subcommand)]
pub enum SecurityCommand {
    /// Make a key pair: the password-protected private key file KEY (created 0600) and the public
    /// key file KEY.pub (one Ed25519 signing key and one X25519 encryption key; docs/signing.md).
    /// An existing KEY or KEY.pub is never replaced without --force.
    Keygen {
        /// Where to write the private key file; the public key goes to KEY.pub.
        #[arg(short = 'o', long = "output", value_name = "KEY")]
        output: PathBuf,
        /// Replace an existing output (`--force`).
        #[command(flatten)]
        force: Force,
        /// Where the password comes from.
        #[command(flatten)]
        password: PasswordSource,
        /// Argon2id costs.
        #[command(flatten)]
        kdf: KdfOptions,
    },
    /// Sign FILE with the private key file KEY (every byte but the signature and CRC is covered).
    /// Without -o, FILE is replaced atomically by its signed version.
    Sign {
        /// FILE, -o OUT and --force.
        #[command(flatten)]
        io: InPlace,
        /// The private key file (made by `keygen`).
        #[arg(long, value_name = "KEY")]
        key: PathBuf,
        /// Where the password comes from.
        #[command(flatten)]
        password: PasswordSource,
    },
    /// Verify FILE's signature against the trusted publisher keys in DIR (every *.pub file).
    /// Exit status 0 only for a valid signature by a trusted key.
    Verify {
        /// The file to verify.
        file: PathBuf,
        /// Directory of trusted public key files.
        #[arg(long, value_name = "DIR")]
        trusted_keys: PathBuf,
    },
    /// Encrypt FILE's payload with a password or for one or more recipients (repeat
    /// --recipient for multi-recipient). A signature is removed: sign the encrypted file. Without
    /// -o, FILE is replaced atomically by its encrypted version.
    Encrypt {
        /// FILE, -o OUT and --force.
        #[command(flatten)]
        io: InPlace,
        /// Encrypt with a password (from --password-file, the environment variable or a prompt).
        #[arg(long, conflicts_with = "recipient")]
        password: bool,
        /// Where the password comes from.
        #[command(flatten)]
        password_source: PasswordSource,
        /// Encrypt for the x25519 key(s) of this public key file (made by `keygen`); repeat for
        /// several recipients.
        #[arg(long, value_name = "PUB")]
        recipient: Vec<PathBuf>,
        /// Argon2id costs.
        #[command(flatten)]
        kdf: KdfOptions,
        /// Require a valid signature of FILE by a key in DIR before encrypting it.
        #[arg(long, value_name = "DIR")]
        trusted_keys: Option<PathBuf>,
    },
    /// Attach a license block for LICENSEE to FILE and sign the file with KEY (000 §9.1, 003
    /// §8.1). The license is covered by the signature, so loaders that require a trusted
    /// signature also get a license nobody could have edited. Expiry is enforced by default
    /// (loading at or after the expiry date fails with LicenseExpired); the other limits are
    /// recorded for the caller to enforce. Works on encrypted files (the license is not part of
    /// the encrypted data); replaces an existing license and signature. Without -o, FILE is
    /// replaced atomically.
    License {
        /// FILE, -o OUT and --force.
        #[command(flatten)]
        io: InPlace,
        /// Who the license is for; the file stores only the SHA-256 of this name.
        #[arg(long, value_name = "NAME")]
        licensee: String,
        /// Expiry date (UTC midnight at its start), as YYYY-MM-DD.
        #[arg(long, value_name = "DATE")]
        expires: jiff::civil::Date,
        /// The seller's private key file (made by `keygen`), which signs the licensed file.
        #[arg(long, value_name = "KEY")]
        key: PathBuf,
        /// Record the expiry without enforcing it.
        #[arg(long)]
        no_expiry_enforcement: bool,
        /// Limit concurrent installations to N (recorded; SEATS_ENFORCED).
        #[arg(long, value_name = "N")]
        seats: Option<u16>,
        /// Limit queries (datasets) or inferences (models) to N (recorded; QUERY_LIMITED).
        #[arg(long, value_name = "N")]
        queries: Option<u32>,
        /// Record that the content carries the licensee's fingerprint (WATERMARKED). Checked,
        /// not trusted: the payload must carry the mark `watermark --buyer LICENSEE` embedded
        /// with this same --key, else nothing is written. License before encrypting.
        #[arg(long)]
        watermarked: bool,
        /// The license can be revoked remotely (REVOCABLE).
        #[arg(long)]
        revocable: bool,
        /// The license can be resold (TRANSFERABLE).
        #[arg(long)]
        transferable: bool,
        /// Custom terms: free text or a URL, stored as UTF-8 (at most 1 MiB).
        #[arg(long, value_name = "TEXT")]
        terms: Option<String>,
        /// Where the key file's password comes from.
        #[command(flatten)]
        password: PasswordSource,
    },
    /// Decrypt FILE's payload (with --password / --password-file, or --key KEY). The plaintext
    /// is created 0600 (owner only), whatever the umask. Without -o, FILE is replaced atomically.
    Decrypt {
        /// FILE, -o OUT and --force.
        #[command(flatten)]
        io: InPlace,
        /// How to decrypt, and which signatures to require.
        #[command(flatten)]
        keys: KeyOptions,
    },
}

/// What a writing command says when done: one line on stderr (unless `--quiet`), or with
/// `--json` the object `value` on stdout.
///
/// # Errors
/// Writing to stdout (`BrokenPipe` ends the command quietly).
pub fn report_written(text: &str, value: serde_json::Value) -> anyhow::Result<()> {
    if cli_support::run::mode().json {
        cli_support::print::json(&value)?;
    } else {
        cli_support::print::note(cli_support::terminal::escape(text));
    }
    Ok(())
}

fn shown(destination: &Destination) -> String {
    destination.path().display().to_string()
}

/// Runs one shared command for `tool`.
///
/// # Errors
/// Whatever failed, with the Andon signal's name first for envelope errors.
pub fn run(tool: Tool, command: SecurityCommand) -> anyhow::Result<()> {
    match command {
        SecurityCommand::Keygen {
            output,
            force,
            password,
            kdf,
        } => {
            let private = output::destination(&output, force, Access::Private, Content::Binary)?;
            let mut public = output.as_os_str().to_owned();
            public.push(".pub");
            output::destination(Path::new(&public), force, Access::Shared, Content::Text)?;
            let password = tool.password(&password, "new key file password", true)?;
            let identity = Identity::generate(&mut OsRng);
            envelope_sign::fs::write_key_files(
                private,
                &identity,
                &password,
                kdf.params(),
                &mut OsRng,
            )
            .with_context(|| format!("writing {}", output.display()))?;
            report_written(
                &format!(
                    "wrote {} and {}.pub (ed25519 {})",
                    output.display(),
                    output.display(),
                    identity.signing_public_key()
                ),
                json!({
                    "ok": true,
                    "private_key": output.display().to_string(),
                    "public_key": format!("{}.pub", output.display()),
                    "ed25519": identity.signing_public_key().to_string(),
                    "x25519": identity.recipient_public_key().to_base64(),
                }),
            )
        }
        SecurityCommand::Sign { io, key, password } => {
            let file = &io.file;
            let target = io.target(access_like(file))?;
            let password = tool.password(&password, "key file password", false)?;
            let identity = cli_support::keys::read_identity(&key, &password)?;
            // One read of FILE: checked, hashed and written out block by block.
            envelope_sign::fs::sign_file(
                file,
                Some(tool.format),
                target.clone(),
                &identity.signing_key(),
            )
            .with_context(|| file.display().to_string())?;
            report_written(
                &format!(
                    "signed {} (ed25519 {})",
                    shown(&target),
                    identity.signing_public_key()
                ),
                json!({
                    "ok": true,
                    "output": shown(&target),
                    "signer": identity.signing_public_key().to_string(),
                }),
            )
        }
        SecurityCommand::Verify {
            file,
            trusted_keys: dir,
        } => {
            let trusted = trusted_keys(&dir)?;
            // One read of FILE: its CRC32 and the signed digest on two threads.
            let signer = envelope_sign::fs::verify_file(&file, Some(tool.format), &trusted)
                .with_context(|| file.display().to_string())?;
            if cli_support::run::mode().json {
                cli_support::print::json(&json!({
                    "ok": true,
                    "file": file.display().to_string(),
                    "signer": signer.to_string(),
                }))?;
            } else {
                cli_support::say!(
                    "{}: signature valid, signed by trusted key ed25519 {signer}",
                    cli_support::terminal::Safe(&file.display().to_string())
                )?;
            }
            Ok(())
        }
        SecurityCommand::Encrypt {
            io,
            password,
            password_source,
            recipient,
            kdf,
            trusted_keys: dir,
        } => {
            let file = &io.file;
            let target = io.target(access_like(file))?;
            let envelope = load(tool, file)?;
            if let Some(dir) = &dir {
                let trusted = trusted_keys(dir)?;
                Policy::RequireSignature { trusted: &trusted }.check(&envelope)?;
            }
            let parts = envelope.to_parts();
            let recipients = cli_support::keys::recipients(&recipient)?;
            if !recipients.is_empty() && password_source.password_file.is_some() {
                bail!("Usage: encrypt takes either a password or --recipient, not both");
            }
            let (sealed, mode) = if recipients.is_empty() {
                if !password && password_source.password_file.is_none() {
                    bail!(
                        "Usage: encrypt needs --password, --password-file PATH or --recipient PUB"
                    );
                }
                let password = tool.password(&password_source, "new password", true)?;
                let to = EncryptTo::Password {
                    password: &password,
                    params: kdf.params(),
                };
                (encrypt(&parts, to)?, "password")
            } else if let [one] = recipients.as_slice() {
                (encrypt(&parts, EncryptTo::Recipient(one))?, "recipient")
            } else {
                (
                    encrypt(&parts, EncryptTo::Recipients(&recipients))?,
                    "multi-recipient",
                )
            };
            write_parts(&target, &sealed)?;
            let note = if parts.signature.is_some() {
                " (its signature was removed: sign the encrypted file)"
            } else {
                ""
            };
            report_written(
                &format!("encrypted {}{note}", shown(&target)),
                json!({
                    "ok": true,
                    "output": shown(&target),
                    "mode": mode,
                    "signature_removed": parts.signature.is_some(),
                }),
            )
        }
        SecurityCommand::License {
            io,
            licensee,
            expires,
            key,
            no_expiry_enforcement,
            seats,
            queries,
            watermarked,
            revocable,
            transferable,
            terms,
            password,
        } => {
            let file = &io.file;
            let target = io.target(access_like(file))?;
            let envelope = load(tool, file)?;
            let password = tool.password(&password, "key file password", false)?;
            let identity = cli_support::keys::read_identity(&key, &password)?;
            if watermarked {
                crate::piracy::check_licensee_mark(tool, file, &licensee, &identity)?;
            }
            let now = unix_now()?;
            let expires_at = expires
                .to_zoned(jiff::tz::TimeZone::UTC)
                .context("Usage: --expires is out of range")?
                .timestamp()
                .as_second();
            let expires_at =
                u64::try_from(expires_at).context("Usage: --expires must be after 1970-01-01")?;
            if expires_at <= now && !no_expiry_enforcement {
                bail!("Usage: --expires {expires} is not in the future");
            }
            let mut random = [0u8; 16];
            envelope_crypto::RngCore::fill_bytes(&mut OsRng, &mut random);
            let mut license = LicenseBlock::new(random, &licensee, now, expires_at);
            let mut flags = LicenseFlags::NONE;
            for (set, flag) in [
                (!no_expiry_enforcement, LicenseFlags::EXPIRATION_ENFORCED),
                (seats.is_some(), LicenseFlags::SEATS_ENFORCED),
                (queries.is_some(), LicenseFlags::QUERY_LIMITED),
                (watermarked, LicenseFlags::WATERMARKED),
                (revocable, LicenseFlags::REVOCABLE),
                (transferable, LicenseFlags::TRANSFERABLE),
            ] {
                if set {
                    flags = flags.with(flag);
                }
            }
            license.flags = flags;
            license.seat_limit = seats.unwrap_or(0);
            license.query_limit = queries.unwrap_or(0);
            license.custom_terms = terms.unwrap_or_default().into_bytes();
            let mut parts = envelope.to_parts();
            parts.signature = None;
            parts.license = Some(license.encode()?.into());
            let signed = envelope_sign::sign(&parts.to_bytes()?, &identity.signing_key())?;
            write_bytes(&target, &signed)?;
            let expires_text = crate::inspect::unix_time(expires_at);
            report_written(
                &format!(
                    "licensed {} to sha256({licensee}) until {expires_text} (license {}), signed \
                     by ed25519 {}",
                    shown(&target),
                    license.license_id,
                    identity.signing_public_key()
                ),
                json!({
                    "ok": true,
                    "output": shown(&target),
                    "license_id": license.license_id.to_string(),
                    "expires": expires_text,
                    "signer": identity.signing_public_key().to_string(),
                }),
            )
        }
        SecurityCommand::Decrypt { io, keys } => {
            let file = &io.file;
            let target = io.target(Access::Private)?;
            let envelope = load(tool, file)?;
            keys.admit(&envelope)?;
            if !envelope.header().flags().contains(Flags::ENCRYPTED) {
                bail!("Usage: {} is not encrypted", file.display());
            }
            let secret = keys.secret(tool)?;
            let parts = decryptor(&envelope, &secret)?.decrypted_parts()?;
            write_parts(&target, &parts)?;
            report_written(
                &format!("decrypted {}", shown(&target)),
                json!({ "ok": true, "output": shown(&target) }),
            )
        }
    }
}

/// The access of a file rewritten from `input`: private when the input is (a decrypted file
/// signed or licensed stays owner-only), shared otherwise.
fn access_like(input: &Path) -> Access {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if std::fs::metadata(input).is_ok_and(|meta| meta.permissions().mode() & 0o077 == 0) {
            return Access::Private;
        }
    }
    let _ = input;
    Access::Shared
}

/// Seconds since the Unix epoch, from the system clock.
///
/// # Errors
/// If the clock is before 1970.
pub fn unix_now() -> anyhow::Result<u64> {
    Ok(std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .context("Io: the system clock is before 1970")?
        .as_secs())
}

fn encrypt(parts: &EnvelopeParts<'_>, to: EncryptTo<'_>) -> anyhow::Result<EnvelopeParts<'static>> {
    Ok(envelope_crypto::encrypt(
        parts,
        to,
        EncryptOptions::default(),
        &mut OsRng,
    )?)
}

fn write_parts(destination: &Destination, parts: &EnvelopeParts<'_>) -> anyhow::Result<()> {
    parts.header()?;
    envelope_core::fs::write_atomic(destination.clone(), |out| parts.write_to(out))
        .with_context(|| format!("writing {}", shown(destination)))
}

fn write_bytes(destination: &Destination, bytes: &[u8]) -> anyhow::Result<()> {
    envelope_core::fs::write_atomic(destination.clone(), |out| {
        std::io::Write::write_all(out, bytes).map_err(Error::Io)
    })
    .with_context(|| format!("writing {}", shown(destination)))
}

/// With `--trusted-keys` or key options, `info` / `inspect` also check the signature and, for an
/// encrypted file given a key, authenticate the whole payload. Returns one line per check done.
///
/// # Errors
/// The first failed check.
pub fn deep_checks(tool: Tool, path: &Path, keys: &KeyOptions) -> anyhow::Result<Vec<String>> {
    if keys.trusted_keys.is_none() && !keys.wants_decryption() {
        return Ok(Vec::new());
    }
    checks_of(tool, load(tool, path)?, keys)
}

/// [`deep_checks`] of the bytes of a file named `name` (a URL whose object was fetched whole).
///
/// # Errors
/// The envelope's first failed check, naming `name`; the first failed deep check.
pub fn deep_checks_of(
    tool: Tool,
    name: &str,
    bytes: Vec<u8>,
    keys: &KeyOptions,
) -> anyhow::Result<Vec<String>> {
    if keys.trusted_keys.is_none() && !keys.wants_decryption() {
        return Ok(Vec::new());
    }
    let envelope = Envelope::parse(bytes, tool.format)
        .with_context(|| name.to_owned())?
        .with_limits(crate::limits());
    checks_of(tool, envelope, keys)
}

fn checks_of(
    tool: Tool,
    envelope: Envelope<Vec<u8>>,
    keys: &KeyOptions,
) -> anyhow::Result<Vec<String>> {
    let mut lines = Vec::new();
    if let Some(signer) = keys.admit(&envelope)? {
        lines.push(format!("signature    valid, trusted key ed25519 {signer}"));
    }
    if envelope.section(Section::License).is_some() {
        lines.push("license      valid now".to_owned());
    }
    if keys.wants_decryption() && envelope.section(Section::Encryption).is_some() {
        let secret = keys.secret(tool)?;
        let payload = decryptor(&envelope, &secret)?.payload()?;
        lines.push(format!(
            "decryption   ok, {} payload bytes authenticated and decoded",
            payload.len()
        ));
    }
    Ok(lines)
}
