//! The key, password, signing and encryption commands shared by `alimentar` and `apr`
//! (`keygen`, `sign`, `verify`, `encrypt`, `decrypt`), and the key options every command that
//! reads a payload accepts. One clap `Subcommand` enum, flattened into both binaries.
//!
//! Passwords never come from argv: `--password-file PATH`, the tool's environment variable
//! (`ALIMENTAR_PASSWORD` / `APR_PASSWORD`), or an interactive prompt on a terminal, in that order.
//! A command needs at most one password: the file's (password mode) or, with `--key`, the private
//! key file's.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use envelope_core::{Envelope, EnvelopeParts, Error, Flags, Format, Section};
use envelope_crypto::{
    Argon2Params, DecryptionKey, Decryptor, EncryptOptions, EncryptTo, OsRng, Password,
    RecipientPublicKey,
};
use envelope_license::{LicenseBlock, LicenseFlags};
use envelope_sign::{Identity, Policy, TrustedKeys};

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
}

/// Where the one password of a command comes from.
#[derive(Debug, Clone, Default, Args)]
pub struct PasswordSource {
    /// Read the password from the first line of this file (instead of the environment variable
    /// ALIMENTAR_PASSWORD / APR_PASSWORD or a prompt).
    #[arg(long, value_name = "PATH")]
    pub password_file: Option<PathBuf>,
}

impl PasswordSource {
    /// The password: from the file, the environment variable, or a prompt on a terminal.
    ///
    /// # Errors
    /// If the file cannot be read, or no source is available.
    pub fn read(&self, tool: Tool, what: &str, confirm: bool) -> anyhow::Result<Password> {
        if let Some(path) = &self.password_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("Io: reading the password file {}", path.display()))?;
            let line = text.lines().next().unwrap_or_default();
            return Ok(Password::new(line.as_bytes()));
        }
        if let Some(value) = std::env::var_os(tool.password_env) {
            return Ok(Password::new(value.to_string_lossy().as_bytes()));
        }
        if !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            bail!(
                "Usage: no {what} given and no terminal to ask on: use --password-file PATH or set {}",
                tool.password_env
            );
        }
        let first = envelope_crypto::Zeroizing::new(
            rpassword::prompt_password(format!("{what}: ")).context("Io: reading the password")?,
        );
        if confirm {
            let again = envelope_crypto::Zeroizing::new(
                rpassword::prompt_password("again: ").context("Io: reading the password")?,
            );
            if *first != *again {
                bail!("Usage: the passwords differ");
            }
        }
        Ok(Password::new(first.as_bytes()))
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
    fn wants_decryption(&self) -> bool {
        self.password || self.key.is_some() || self.password_source.password_file.is_some()
    }

    fn secret(&self, tool: Tool) -> anyhow::Result<Secret> {
        if let Some(key) = &self.key {
            let password = self
                .password_source
                .read(tool, "key file password", false)?;
            let identity = envelope_sign::fs::read_identity(key, &password)
                .with_context(|| format!("opening the key file {}", key.display()))?;
            return Ok(Secret::Identity(identity));
        }
        Ok(Secret::Password(
            self.password_source.read(tool, "password", false)?,
        ))
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

    /// Verifies the file at `path` under these options and returns its decoded payload: the
    /// signature first (with `--trusted-keys`), then the license's expiry (for licensed files),
    /// then decryption (for encrypted files) and decompression. This is the loading path of every command that reads a payload.
    ///
    /// # Errors
    /// The envelope, signature or decryption error, each naming its signal.
    pub fn load_payload(&self, tool: Tool, path: &Path) -> anyhow::Result<Vec<u8>> {
        let envelope = envelope_core::fs::load(path, tool.format)?;
        self.check_signature(&envelope)?;
        check_license(&envelope)?;
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
    if let Some(license) = envelope_license::read_license(envelope)? {
        license.check(unix_now()?)?;
    }
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
    envelope_sign::fs::trusted_keys_from_dir(dir)
        .with_context(|| format!("reading trusted keys from {}", dir.display()))
}

/// The shared commands.
#[derive(Debug, Subcommand)]
pub enum SecurityCommand {
    /// Make a key pair: the password-protected private key file KEY and the public key file
    /// KEY.pub (one Ed25519 signing key and one X25519 encryption key; docs/signing.md).
    Keygen {
        /// Where to write the private key file; the public key goes to KEY.pub.
        #[arg(short = 'o', long = "output", value_name = "KEY")]
        output: PathBuf,
        /// Where the password comes from.
        #[command(flatten)]
        password: PasswordSource,
        /// Argon2id costs.
        #[command(flatten)]
        kdf: KdfOptions,
    },
    /// Sign FILE with the private key file KEY (every byte but the signature and CRC is covered).
    Sign {
        /// The file to sign.
        file: PathBuf,
        /// The private key file (made by `keygen`).
        #[arg(long, value_name = "KEY")]
        key: PathBuf,
        /// Write the signed file here instead of replacing FILE (atomically).
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
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
    /// --recipient for multi-recipient). A signature is removed: sign the encrypted file.
    Encrypt {
        /// The file to encrypt.
        file: PathBuf,
        /// Write the encrypted file here instead of replacing FILE (atomically).
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
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
    /// the encrypted data); replaces an existing license and signature.
    License {
        /// The file to license.
        file: PathBuf,
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
        /// The content carries a buyer-specific fingerprint (WATERMARKED).
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
        /// Write the licensed file here instead of replacing FILE (atomically).
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
        /// Where the key file's password comes from.
        #[command(flatten)]
        password: PasswordSource,
    },
    /// Decrypt FILE's payload (with --password / --password-file, or --key KEY).
    Decrypt {
        /// The file to decrypt.
        file: PathBuf,
        /// Write the decrypted file here instead of replacing FILE (atomically).
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
        /// How to decrypt, and which signatures to require.
        #[command(flatten)]
        keys: KeyOptions,
    },
}

#[allow(clippy::print_stdout, reason = "a CLI prints its results")]
fn say(line: &str) {
    println!("{line}");
}

/// Runs one shared command for `tool`.
///
/// # Errors
/// Whatever failed, with the Andon signal's name first for envelope errors.
pub fn run(tool: Tool, command: SecurityCommand) -> anyhow::Result<()> {
    match command {
        SecurityCommand::Keygen {
            output,
            password,
            kdf,
        } => {
            let password = password.read(tool, "new key file password", true)?;
            let identity = Identity::generate(&mut OsRng);
            envelope_sign::fs::write_key_files(
                &output,
                &identity,
                &password,
                kdf.params(),
                &mut OsRng,
            )?;
            say(&format!(
                "wrote {} and {}.pub (ed25519 {})",
                output.display(),
                output.display(),
                identity.signing_public_key()
            ));
            Ok(())
        }
        SecurityCommand::Sign {
            file,
            key,
            output,
            password,
        } => {
            let password = password.read(tool, "key file password", false)?;
            let identity = envelope_sign::fs::read_identity(&key, &password)
                .with_context(|| format!("opening the key file {}", key.display()))?;
            let envelope = envelope_core::fs::load(&file, tool.format)?;
            let signed = envelope_sign::sign(envelope.as_bytes(), &identity.signing_key())?;
            let target = output.unwrap_or(file);
            write_bytes(&target, &signed)?;
            say(&format!(
                "signed {} (ed25519 {})",
                target.display(),
                identity.signing_public_key()
            ));
            Ok(())
        }
        SecurityCommand::Verify {
            file,
            trusted_keys: dir,
        } => {
            let envelope = envelope_core::fs::load(&file, tool.format)?;
            let trusted = trusted_keys(&dir)?;
            let signer = envelope_sign::verify(&envelope, &trusted)?;
            say(&format!(
                "{}: signature valid, signed by trusted key ed25519 {signer}",
                file.display()
            ));
            Ok(())
        }
        SecurityCommand::Encrypt {
            file,
            output,
            password,
            password_source,
            recipient,
            kdf,
            trusted_keys: dir,
        } => {
            let envelope = envelope_core::fs::load(&file, tool.format)?;
            if let Some(dir) = &dir {
                let trusted = trusted_keys(dir)?;
                Policy::RequireSignature { trusted: &trusted }.check(&envelope)?;
            }
            let parts = envelope.to_parts();
            let recipients = read_recipients(&recipient)?;
            if !recipients.is_empty() && password_source.password_file.is_some() {
                bail!("Usage: encrypt takes either a password or --recipient, not both");
            }
            let sealed = if recipients.is_empty() {
                if !password && password_source.password_file.is_none() {
                    bail!(
                        "Usage: encrypt needs --password, --password-file PATH or --recipient PUB"
                    );
                }
                let password = password_source.read(tool, "new password", true)?;
                encrypt(
                    &parts,
                    EncryptTo::Password {
                        password: &password,
                        params: kdf.params(),
                    },
                )?
            } else if let [one] = recipients.as_slice() {
                encrypt(&parts, EncryptTo::Recipient(one))?
            } else {
                encrypt(&parts, EncryptTo::Recipients(&recipients))?
            };
            let target = output.unwrap_or(file);
            write_parts(&target, &sealed)?;
            let note = if parts.signature.is_some() {
                " (its signature was removed: sign the encrypted file)"
            } else {
                ""
            };
            say(&format!("encrypted {}{note}", target.display()));
            Ok(())
        }
        SecurityCommand::License {
            file,
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
            output,
            password,
        } => {
            let envelope = envelope_core::fs::load(&file, tool.format)?;
            let password = password.read(tool, "key file password", false)?;
            let identity = envelope_sign::fs::read_identity(&key, &password)
                .with_context(|| format!("opening the key file {}", key.display()))?;
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
            let target = output.unwrap_or(file);
            write_bytes(&target, &signed)?;
            say(&format!(
                "licensed {} to sha256({licensee}) until {} (license {}), signed by ed25519 {}",
                target.display(),
                crate::inspect::unix_time(expires_at),
                license.license_id,
                identity.signing_public_key()
            ));
            Ok(())
        }
        SecurityCommand::Decrypt { file, output, keys } => {
            let envelope = envelope_core::fs::load(&file, tool.format)?;
            keys.check_signature(&envelope)?;
            check_license(&envelope)?;
            if !envelope.header().flags().contains(Flags::ENCRYPTED) {
                bail!("Usage: {} is not encrypted", file.display());
            }
            let secret = keys.secret(tool)?;
            let parts = decryptor(&envelope, &secret)?.decrypted_parts()?;
            let target = output.unwrap_or(file);
            write_parts(&target, &parts)?;
            say(&format!("decrypted {}", target.display()));
            Ok(())
        }
    }
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

fn read_recipients(paths: &[PathBuf]) -> anyhow::Result<Vec<RecipientPublicKey>> {
    let mut out = Vec::new();
    for path in paths {
        let file = envelope_sign::fs::read_public_key_file(path)
            .with_context(|| format!("reading the public key file {}", path.display()))?;
        if file.recipients.is_empty() {
            bail!("Usage: {} has no x25519 key", path.display());
        }
        out.extend(file.recipients);
    }
    Ok(out)
}

fn write_parts(path: &Path, parts: &EnvelopeParts<'_>) -> anyhow::Result<()> {
    parts.header()?;
    envelope_core::fs::write_atomic(path, |out| parts.write_to(out))?;
    Ok(())
}

fn write_bytes(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    envelope_core::fs::write_atomic(path, |out| {
        std::io::Write::write_all(out, bytes).map_err(Error::Io)
    })?;
    Ok(())
}

/// With `--trusted-keys` or key options, `info` / `inspect` also check the signature and, for an
/// encrypted file given a key, authenticate the whole payload. Returns one line per check done.
///
/// # Errors
/// The first failed check.
pub fn deep_checks(tool: Tool, path: &Path, keys: &KeyOptions) -> anyhow::Result<Vec<String>> {
    let mut lines = Vec::new();
    if keys.trusted_keys.is_none() && !keys.wants_decryption() {
        return Ok(lines);
    }
    let envelope = envelope_core::fs::load(path, tool.format)?;
    if let Some(signer) = keys.check_signature(&envelope)? {
        lines.push(format!("signature    valid, trusted key ed25519 {signer}"));
    }
    if envelope.section(Section::License).is_some() {
        check_license(&envelope)?;
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
