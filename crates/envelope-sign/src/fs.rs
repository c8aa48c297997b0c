//! Key files and trusted-key directories by path (native only).

use std::path::Path;

use envelope_core::{Error, Result};
use envelope_crypto::{Argon2Params, CryptoRngCore, Password};

use crate::keys::{Identity, PublicKeyFile, TrustedKeys};

/// Writes `identity` as the private key file `path` (sealed with `password`) and the public key
/// file `path.pub`, each atomically.
///
/// # Errors
/// As [`Identity::seal`], plus `Io`.
pub fn write_key_files(
    path: &Path,
    identity: &Identity,
    password: &Password,
    params: Argon2Params,
    rng: &mut impl CryptoRngCore,
) -> Result<()> {
    let sealed = identity.seal(password, params, rng)?;
    let mut public = path.as_os_str().to_owned();
    public.push(".pub");
    // write_atomic keeps an existing file's permissions: create it owner-only first, so the
    // sealed key is never readable by others, not even for a moment.
    restrict_permissions(path)?;
    envelope_core::fs::write_atomic(path, |out| {
        std::io::Write::write_all(out, &sealed).map_err(Error::Io)
    })?;
    envelope_core::fs::write_atomic(Path::new(&public), |out| {
        std::io::Write::write_all(out, identity.public_key_file().as_bytes()).map_err(Error::Io)
    })
}

#[cfg(unix)]
fn restrict_permissions(path: &Path) -> Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(())
}

#[cfg(not(unix))]
fn restrict_permissions(_path: &Path) -> Result<()> {
    Ok(())
}

/// Opens the private key file at `path`.
///
/// # Errors
/// `Io`, then as [`Identity::open`].
pub fn read_identity(path: &Path, password: &Password) -> Result<Identity> {
    Identity::open(&std::fs::read(path)?, password)
}

/// Reads a public key file.
///
/// # Errors
/// `Io`, then as [`PublicKeyFile::parse`].
pub fn read_public_key_file(path: &Path) -> Result<PublicKeyFile> {
    let text = std::fs::read_to_string(path)?;
    PublicKeyFile::parse(&text)
}

/// The `ed25519` keys of every `*.pub` file directly in `dir`.
///
/// # Errors
/// `Io` if the directory or a file cannot be read; `Usage` if a `.pub` file does not parse or the
/// directory holds no signing key at all (a typo in a path must not mean "trust nothing" silently
/// passing as a configuration).
pub fn trusted_keys_from_dir(dir: &Path) -> Result<TrustedKeys> {
    let mut trusted = TrustedKeys::new();
    let mut paths: Vec<_> = std::fs::read_dir(dir)?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<std::io::Result<_>>()?;
    paths.sort();
    for path in paths {
        if path.extension().is_some_and(|ext| ext == "pub") && path.is_file() {
            for key in read_public_key_file(&path)?.signing {
                trusted.add(key)?;
            }
        }
    }
    if trusted.is_empty() {
        return Err(Error::InvalidArgument(
            "the trusted-keys directory holds no ed25519 key in a *.pub file",
        ));
    }
    Ok(trusted)
}
