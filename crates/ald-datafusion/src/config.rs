//! Keys and trusted signers from the DataFusion session configuration: the `ald.*` options.
//!
//! [`AldOptions`] is a DataFusion [`ConfigExtension`] with the prefix `ald`. Register it once
//! ([`crate::register_ald_format`] does), then set it in code ([`AldOptions::with_password`],
//! [`AldOptions::with_recipient`], [`AldOptions::with_trusted_keys`]) or in SQL:
//!
//! ```sql
//! SET ald.password = 'correct horse';
//! SET ald.x25519_secret = '<base64 of the 32-byte X25519 secret>';
//! SET ald.trusted_keys = 'ed25519 <base64>; ed25519 <base64>';
//! SET ald.require_signature = true;
//! ```
//!
//! Secrets never print: [`ExtensionOptions::entries`] (what `SHOW ALL` and `information_schema`
//! list) and `Debug` show `<set>` in their place, and an unparsable secret is refused without
//! repeating it. Keys are wiped from memory when the options are dropped (`envelope-crypto`'s
//! types).

use std::any::Any;
use std::fmt;

use base64ct::{Base64, Encoding};
use datafusion::common::config::{ConfigEntry, ConfigExtension, ExtensionOptions};
use envelope_crypto::{DecryptionKey, Password, RecipientSecretKey};
use envelope_sign::{Policy, PublicKeyFile, SigningPublicKey, TrustedKeys};

use crate::{Error, Result};

/// The `ald.*` session options: the key of encrypted files and the signature policy.
#[derive(Clone, Default)]
pub struct AldOptions {
    password: Option<Password>,
    recipient: Option<RecipientSecretKey>,
    trusted: Vec<SigningPublicKey>,
    require_signature: bool,
}

impl fmt::Debug for AldOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |present: bool| if present { "<set>" } else { "<unset>" };
        f.debug_struct("AldOptions")
            .field("password", &set(self.password.is_some()))
            .field("x25519_secret", &set(self.recipient.is_some()))
            .field("trusted_keys", &self.trusted.len())
            .field("require_signature", &self.require_signature)
            .finish()
    }
}

impl AldOptions {
    /// No key, no signature required.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Decrypt password-encrypted files with `password`.
    #[must_use]
    pub fn with_password(mut self, password: Password) -> Self {
        self.password = Some(password);
        self
    }

    /// Decrypt files encrypted to this X25519 recipient.
    #[must_use]
    pub fn with_recipient(mut self, secret: RecipientSecretKey) -> Self {
        self.recipient = Some(secret);
        self
    }

    /// Require every file to be signed by one of `keys` (an empty list refuses every file).
    #[must_use]
    pub fn with_trusted_keys(mut self, keys: impl IntoIterator<Item = SigningPublicKey>) -> Self {
        self.trusted = keys.into_iter().collect();
        self.require_signature = true;
        self
    }

    /// Whether a signature by a trusted key is required.
    #[must_use]
    pub fn requires_signature(&self) -> bool {
        self.require_signature
    }

    /// The trusted signers (whether they are required: [`AldOptions::requires_signature`]).
    #[must_use]
    pub fn trusted_keys(&self) -> &[SigningPublicKey] {
        &self.trusted
    }

    /// What a scan needs of these options, resolved once.
    pub(crate) fn keys(&self) -> Keys {
        Keys {
            password: self.password.clone(),
            recipient: self.recipient.clone(),
            trusted: self
                .require_signature
                .then(|| TrustedKeys::from_keys(self.trusted.iter().copied())),
        }
    }
}

impl ConfigExtension for AldOptions {
    const PREFIX: &'static str = "ald";
}

const PASSWORD: &str = "password";
const X25519_SECRET: &str = "x25519_secret";
const TRUSTED_KEYS: &str = "trusted_keys";
const REQUIRE_SIGNATURE: &str = "require_signature";

impl ExtensionOptions for AldOptions {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, value: &str) -> datafusion::error::Result<()> {
        match key {
            PASSWORD => {
                self.password = (!value.is_empty()).then(|| Password::new(value.as_bytes()));
            }
            X25519_SECRET => {
                self.recipient = if value.is_empty() {
                    None
                } else {
                    Some(parse_secret(value)?)
                };
            }
            TRUSTED_KEYS => self.trusted = parse_trusted(value)?,
            REQUIRE_SIGNATURE => {
                self.require_signature = match value.trim() {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(Error::Config {
                            key: REQUIRE_SIGNATURE,
                            reason: "expected true or false",
                        }
                        .into());
                    }
                };
            }
            _ => {
                return Err(Error::Config {
                    key: "*",
                    reason: "unknown option (password, x25519_secret, trusted_keys, require_signature)",
                }
                .into());
            }
        }
        Ok(())
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        let secret = |present: bool| present.then(|| "<set>".to_owned());
        vec![
            ConfigEntry {
                key: format!("ald.{PASSWORD}"),
                value: secret(self.password.is_some()),
                description: "Password of password-encrypted .ald files (never shown)",
            },
            ConfigEntry {
                key: format!("ald.{X25519_SECRET}"),
                value: secret(self.recipient.is_some()),
                description: "Base64 X25519 secret key of a recipient of encrypted .ald files (never shown)",
            },
            ConfigEntry {
                key: format!("ald.{TRUSTED_KEYS}"),
                value: Some(
                    self.trusted
                        .iter()
                        .map(|key| format!("ed25519 {key}"))
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
                description: "Trusted Ed25519 signers, `ed25519 BASE64` separated by `;` or new lines",
            },
            ConfigEntry {
                key: format!("ald.{REQUIRE_SIGNATURE}"),
                value: Some(self.require_signature.to_string()),
                description: "Refuse .ald files not signed by a trusted key",
            },
        ]
    }
}

/// An X25519 secret as base64 of 32 bytes. The decoder's reason is not kept: it could echo the
/// secret.
fn parse_secret(text: &str) -> Result<RecipientSecretKey> {
    let bad = || Error::Config {
        key: X25519_SECRET,
        reason: "expected standard base64 of 32 bytes",
    };
    let mut bytes = envelope_crypto::Zeroizing::new([0u8; 32]);
    let decoded = Base64::decode(text.trim(), &mut bytes[..]).map_err(|_| bad())?;
    if decoded.len() != 32 {
        return Err(bad());
    }
    Ok(RecipientSecretKey::from_bytes(*bytes))
}

/// Trusted keys as public key file lines (`ed25519 BASE64`), separated by new lines or `;`.
fn parse_trusted(text: &str) -> Result<Vec<SigningPublicKey>> {
    let file = PublicKeyFile::parse(&text.replace(';', "\n")).map_err(|_| Error::Config {
        key: TRUSTED_KEYS,
        reason: "expected `ed25519 BASE64` entries separated by `;` or new lines",
    })?;
    if !file.recipients.is_empty() {
        return Err(Error::Config {
            key: TRUSTED_KEYS,
            reason: "x25519 keys encrypt, they do not sign: list ed25519 keys",
        });
    }
    Ok(file.signing)
}

/// The keys and policy of one scan (a snapshot of [`AldOptions`]).
#[derive(Clone, Default)]
pub(crate) struct Keys {
    password: Option<Password>,
    recipient: Option<RecipientSecretKey>,
    /// `Some` when a signature is required.
    trusted: Option<TrustedKeys>,
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys")
            .field("password", &self.password.is_some())
            .field("recipient", &self.recipient.is_some())
            .field("require_signature", &self.trusted.is_some())
            .finish()
    }
}

impl Keys {
    /// The load options that verify a file under this policy (no key: the payload is decrypted
    /// chunk by chunk by [`Keys::decryption_keys`]). The clock is now, for license expiry.
    pub(crate) fn load_options(&self) -> ald::LoadOptions<'_> {
        ald::LoadOptions {
            signature: self
                .trusted
                .as_ref()
                .map(|trusted| Policy::RequireSignature { trusted }),
            now_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .ok()
                .map(|elapsed| elapsed.as_secs()),
            ..ald::LoadOptions::default()
        }
    }

    /// The signers a file must be signed by one of, when a signature is required (the policy a
    /// shipped scan plan carries; no secret).
    pub(crate) fn required_signers(&self) -> Option<Vec<SigningPublicKey>> {
        self.trusted.as_ref().map(|trusted| {
            trusted
                .keys()
                .map(|key| SigningPublicKey::from_bytes(key.to_bytes()))
                .collect()
        })
    }

    /// The keys to try on an encrypted file, recipient first (deriving it costs nothing, a
    /// password costs an Argon2id).
    pub(crate) fn decryption_keys(&self) -> impl Iterator<Item = DecryptionKey<'_>> {
        self.recipient
            .iter()
            .map(DecryptionKey::Recipient)
            .chain(self.password.iter().map(DecryptionKey::Password))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_set_from_sql_text_and_never_shown() {
        let mut options = AldOptions::new();
        options.set(PASSWORD, "hunter2").unwrap();
        options
            .set(X25519_SECRET, &Base64::encode_string(&[7u8; 32]))
            .unwrap();
        let key = SigningPublicKey::from_bytes([3; 32]);
        options
            .set(TRUSTED_KEYS, &format!("ed25519 {key}; ed25519 {key}"))
            .unwrap();
        options.set(REQUIRE_SIGNATURE, "true").unwrap();
        let shown = format!("{options:?} {:?}", options.entries());
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(
            !shown.contains(&Base64::encode_string(&[7u8; 32])),
            "{shown}"
        );
        assert!(options.requires_signature());
        assert_eq!(options.trusted.len(), 2);
        assert_eq!(options.keys().decryption_keys().count(), 2);
        assert!(options.keys().load_options().signature.is_some());
    }

    #[test]
    fn bad_values_are_refused_without_repeating_the_secret() {
        let mut options = AldOptions::new();
        let error = options.set(X25519_SECRET, "c2VjcmV0LXRleHQ=").unwrap_err();
        assert!(!error.to_string().contains("c2VjcmV0LXRleHQ"), "{error}");
        assert!(error.to_string().contains("Usage: ald.x25519_secret"));
        assert!(options.set(REQUIRE_SIGNATURE, "yes").is_err());
        assert!(options.set(TRUSTED_KEYS, "x25519 AAAA").is_err());
        let x25519 = format!("x25519 {}", Base64::encode_string(&[1u8; 32]));
        assert!(options.set(TRUSTED_KEYS, &x25519).is_err());
        assert!(options.set("colour", "blue").is_err());
        // An empty value unsets.
        options.set(PASSWORD, "p").unwrap();
        options.set(PASSWORD, "").unwrap();
        assert!(options.password.is_none());
    }
}
