//! Key files and trusted-key directories by path (native only).

use std::path::Path;

use envelope_core::fs::{Access, Destination};
use envelope_core::{Error, Result};
use envelope_crypto::{Argon2Params, CryptoRngCore, Password};

use crate::keys::{Identity, PublicKeyFile, TrustedKeys};

/// Writes `identity` as the private key file `destination` (sealed with `password`; owner-only,
/// `0600`, whatever the umask) and the public key file `destination.pub` (with the destination's
/// overwrite policy), each atomically. Both are checked before either is written, so a refused
/// `.pub` never leaves a lone new private key.
///
/// # Errors
/// As [`Identity::seal`], plus `Io` (`AlreadyExists` under `Existing::Keep`).
pub fn write_key_files(
    destination: impl Into<Destination>,
    identity: &Identity,
    password: &Password,
    params: Argon2Params,
    rng: &mut impl CryptoRngCore,
) -> Result<()> {
    let private = destination.into().access(Access::Private);
    let mut public_path = private.path().as_os_str().to_owned();
    public_path.push(".pub");
    let public = Destination::new(Path::new(&public_path)).existing(private.existing_policy());
    private.check()?;
    public.check()?;
    let sealed = identity.seal(password, params, rng)?;
    envelope_core::fs::write_atomic(private, |out| {
        std::io::Write::write_all(out, &sealed).map_err(Error::Io)
    })?;
    envelope_core::fs::write_atomic(public, |out| {
        std::io::Write::write_all(out, identity.public_key_file().as_bytes()).map_err(Error::Io)
    })
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
