//! Passwords and key files on the command line, with errors that say which file is wrong and why.
//!
//! Passwords never come from argv: `--password-file PATH`, the tool's environment variable
//! (`ALIMENTAR_PASSWORD`, `APR_PASSWORD`, `FOLD_PASSWORD`), or an interactive prompt on a
//! terminal, in that order. Private key files are the project's (`keygen`: `me.key`, sealed with a
//! password, and `me.key.pub`); the `.pub` file beside them lists the public keys.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::Args;
use envelope_crypto::{Password, RecipientPublicKey, Zeroizing};
use envelope_sign::{Identity, PublicKeyFile, TrustedKeys};

/// Where the one password of a command comes from.
#[derive(Debug, Clone, Default, Args)]
pub struct PasswordSource {
    /// Read the password from the first line of this file (instead of the tool's environment
    /// variable, e.g. ALIMENTAR_PASSWORD, or a prompt on the terminal).
    #[arg(long, value_name = "PATH")]
    pub password_file: Option<PathBuf>,
}

impl PasswordSource {
    /// The password: from the file, the environment variable `env`, or a prompt on a terminal
    /// (asked twice when `confirm`). `what` names it in the prompt and in errors.
    ///
    /// # Errors
    /// If the file cannot be read, no source is available, or the two entries differ.
    pub fn read(&self, env: &str, what: &str, confirm: bool) -> anyhow::Result<Password> {
        if let Some(path) = &self.password_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("Io: reading the password file {}", path.display()))?;
            let text = Zeroizing::new(text);
            let line = text.lines().next().unwrap_or_default();
            return Ok(Password::new(line.as_bytes()));
        }
        if let Some(value) = std::env::var_os(env) {
            return Ok(Password::new(value.to_string_lossy().as_bytes()));
        }
        if !std::io::stdin().is_terminal() {
            bail!(
                "Usage: no {what} given and no terminal to ask on: use --password-file PATH or \
                 set {env}"
            );
        }
        let first = Zeroizing::new(
            rpassword::prompt_password(format!("{what}: ")).context("Io: reading the password")?,
        );
        if confirm {
            let again = Zeroizing::new(
                rpassword::prompt_password("again: ").context("Io: reading the password")?,
            );
            if *first != *again {
                bail!("Usage: the passwords differ");
            }
        }
        Ok(Password::new(first.as_bytes()))
    }
}

/// Opens the private key file `path` with `password`. A public key file given where a private one
/// is needed is named as such, with the fix.
///
/// # Errors
/// `Io` naming the file; `Usage` for a public key file; `DecryptionFailed` for a wrong password or
/// a damaged key file.
pub fn read_identity(path: &Path, password: &Password) -> anyhow::Result<Identity> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("Io: reading the key file {}", path.display()))?;
    if let Ok(text) = std::str::from_utf8(&bytes)
        && PublicKeyFile::parse(text).is_ok_and(|keys| !keys.signing.is_empty())
    {
        bail!(
            "Usage: {} is a public key file; --key needs the private key file `keygen` wrote \
             beside it (the same name without .pub)",
            path.display()
        );
    }
    Identity::open(&bytes, password)
        .with_context(|| format!("opening the key file {}", path.display()))
}

/// Reads the public key file `path`.
///
/// # Errors
/// `Io` naming the file; `Usage` for a file that is not a public key file (a private key file is
/// named as such).
pub fn read_public_keys(path: &Path) -> anyhow::Result<PublicKeyFile> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("Io: reading the public key file {}", path.display()))?;
    if bytes.starts_with(&envelope_sign::KEY_FILE_MAGIC) {
        bail!(
            "Usage: {} is a private key file; give its public key file ({}.pub)",
            path.display(),
            path.display()
        );
    }
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| anyhow::anyhow!("Usage: {} is not a public key file", path.display()))?;
    PublicKeyFile::parse(text)
        .with_context(|| format!("reading the public key file {}", path.display()))
}

/// The x25519 keys of the public key files `paths` (`--recipient`).
///
/// # Errors
/// As [`read_public_keys`]; `Usage` for a file without an x25519 key.
pub fn recipients(paths: &[PathBuf]) -> anyhow::Result<Vec<RecipientPublicKey>> {
    let mut out = Vec::new();
    for path in paths {
        let file = read_public_keys(path)?;
        if file.recipients.is_empty() {
            bail!("Usage: {} has no x25519 key", path.display());
        }
        out.extend(file.recipients);
    }
    Ok(out)
}

/// The ed25519 keys of every `*.pub` file in `dir` (`--trusted-keys`).
///
/// # Errors
/// As [`envelope_sign::fs::trusted_keys_from_dir`], naming the directory.
pub fn trusted_keys(dir: &Path) -> anyhow::Result<TrustedKeys> {
    envelope_sign::fs::trusted_keys_from_dir(dir)
        .with_context(|| format!("reading trusted keys from {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_key_given_as_a_private_key_is_named_and_vice_versa() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("me.key");
        let identity = Identity::from_seed([7; 32]);
        let password = Password::new("pw");
        envelope_sign::fs::write_key_files(
            &key,
            &identity,
            &password,
            envelope_crypto::Argon2Params {
                m_cost_kib: 1024,
                t_cost: 1,
                p_cost: 1,
            },
            &mut envelope_crypto::OsRng,
        )
        .unwrap();
        let public = dir.path().join("me.key.pub");
        let error = read_identity(&public, &password).unwrap_err().to_string();
        assert!(error.contains("is a public key file"), "{error}");
        let error = read_public_keys(&key).unwrap_err().to_string();
        assert!(error.contains("is a private key file"), "{error}");
        assert!(read_identity(&key, &password).is_ok());
        assert_eq!(recipients(&[public]).unwrap().len(), 1);
        let missing = read_identity(&dir.path().join("nope.key"), &password).unwrap_err();
        assert!(format!("{missing:#}").contains("nope.key"), "{missing:#}");
    }
}
