//! `LoadOptions` of the JS API, read from a plain JS object into Rust values ([`Keys`]) before any
//! file byte is looked at, and turned into the format crates' signature policy and decryption key.
//!
//! The signature rule: a signature is required when `requireSignature` is true, or when it is
//! absent and `trustedKeys` is non-empty. When it is not required but trusted keys are given and
//! the file is signed, the signature is still checked (and must verify): the caller gave keys to
//! learn the publisher, and a signed file whose signature fails is a tampered file either way.
//! Without trusted keys a signature proves nothing (only caller-supplied keys are trusted), so it
//! is not checked and `publisher` is `null`.

use envelope_core::{Flags, Header};
use envelope_crypto::{DecryptionKey, Password, RecipientSecretKey};
use envelope_sign::{Policy, SigningPublicKey, TrustedKeys};
use js_sys::{Array, Uint8Array};
use wasm_bindgen::{JsCast as _, JsValue};

use crate::error::{Error, Result};
use crate::field;

/// Bytes of an Ed25519 public key or an X25519 secret key.
const KEY_LEN: usize = 32;

/// The keys and policy of one load, owned by Rust.
#[derive(Default)]
pub struct Keys {
    /// The caller's trusted publisher keys.
    pub trusted: TrustedKeys,
    /// `requireSignature`, if given.
    pub require_signature: Option<bool>,
    /// The password of a password-encrypted file.
    pub password: Option<Password>,
    /// The recipient secret of an X25519-encrypted file.
    pub recipient: Option<RecipientSecretKey>,
}

impl Keys {
    /// The signature policy for the file whose first bytes are `bytes`.
    #[must_use]
    pub fn policy(&self, bytes: &[u8]) -> Option<Policy<'_>> {
        let require = self.require_signature.unwrap_or(!self.trusted.is_empty());
        let signed = Header::parse(bytes).is_ok_and(|h| h.flags().contains(Flags::SIGNED));
        (require || (signed && !self.trusted.is_empty())).then_some(Policy::RequireSignature {
            trusted: &self.trusted,
        })
    }

    /// The decryption key: the recipient key if given, else the password.
    #[must_use]
    pub fn key(&self) -> Option<DecryptionKey<'_>> {
        match (&self.recipient, &self.password) {
            (Some(secret), _) => Some(DecryptionKey::Recipient(secret)),
            (None, Some(password)) => Some(DecryptionKey::Password(password)),
            (None, None) => None,
        }
    }

    /// Reads `options` (a JS object, `undefined` or `null`).
    ///
    /// # Errors
    /// `Usage` naming the field that has the wrong type or length.
    pub fn from_js(options: &JsValue) -> Result<Self> {
        let mut keys = Self::default();
        if options.is_undefined() || options.is_null() {
            return Ok(keys);
        }
        if !options.is_object() {
            return Err(Error::argument("options", "not an object"));
        }
        let trusted = field(options, "trustedKeys")?;
        if !trusted.is_undefined() && !trusted.is_null() {
            let list = trusted
                .dyn_into::<Array>()
                .map_err(|_| Error::argument("options.trustedKeys", "not an array"))?;
            for item in list.iter() {
                let bytes = key_bytes(&item, "options.trustedKeys[]")?;
                keys.trusted
                    .add(SigningPublicKey::from_bytes(bytes))
                    .map_err(|e| Error::argument("options.trustedKeys[]", e.to_string()))?;
            }
        }
        let require = field(options, "requireSignature")?;
        if !require.is_undefined() && !require.is_null() {
            keys.require_signature = Some(
                require
                    .as_bool()
                    .ok_or_else(|| Error::argument("options.requireSignature", "not a boolean"))?,
            );
        }
        let password = field(options, "password")?;
        if !password.is_undefined() && !password.is_null() {
            let text = password
                .as_string()
                .ok_or_else(|| Error::argument("options.password", "not a string"))?;
            keys.password = Some(Password::new(text.into_bytes()));
        }
        let secret = field(options, "x25519Secret")?;
        if !secret.is_undefined() && !secret.is_null() {
            let bytes = key_bytes(&secret, "options.x25519Secret")?;
            keys.recipient = Some(RecipientSecretKey::from_bytes(bytes));
        }
        Ok(keys)
    }
}

/// A verified signer as JS sees it: 64 lowercase hex digits.
pub(crate) fn key_hex(key: &SigningPublicKey) -> String {
    hex::encode(key.as_bytes())
}

/// A dataset or model card as JSON (for `JSON.parse` into a plain object).
///
/// # Errors
/// `Usage` if the card cannot be JSON (a map with non-string keys; cards have none).
pub(crate) fn card_json(card: &impl serde::Serialize) -> Result<serde_json::Value> {
    serde_json::to_value(card)
        .map_err(|e| Error::argument("card", format!("not representable as JSON: {e}")))
}

/// A 32-byte key given as a `Uint8Array` or as 64 hex digits.
fn key_bytes(value: &JsValue, what: &'static str) -> Result<[u8; KEY_LEN]> {
    let bytes = if let Some(text) = value.as_string() {
        parse_hex_key(&text).ok_or_else(|| Error::argument(what, "not 64 hex digits"))?
    } else if let Some(array) = value.dyn_ref::<Uint8Array>() {
        array.to_vec()
    } else {
        return Err(Error::argument(what, "not a Uint8Array or a hex string"));
    };
    <[u8; KEY_LEN]>::try_from(bytes.as_slice())
        .map_err(|_| Error::argument(what, format!("{} bytes, expected 32", bytes.len())))
}

/// The bytes of a 64-digit hex key, or `None`.
fn parse_hex_key(text: &str) -> Option<Vec<u8>> {
    (text.len() == 2 * KEY_LEN)
        .then(|| hex::decode(text).ok())
        .flatten()
}

/// The current time in Unix seconds, for license expiry: JavaScript's clock on wasm32, the
/// system clock natively (unit tests).
pub(crate) fn now_unix() -> Option<u64> {
    #[cfg(target_arch = "wasm32")]
    {
        let seconds = js_sys::Date::now() / 1000.0;
        // A clock before 1970 or beyond u64 is no clock: expiry is then refused as unknown.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        (seconds.is_finite() && seconds >= 0.0).then(|| seconds as u64)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_keys_are_exactly_64_digits() {
        assert_eq!(parse_hex_key(&"ab".repeat(32)), Some(vec![0xab; 32]));
        assert_eq!(parse_hex_key(&"ab".repeat(31)), None);
        assert_eq!(parse_hex_key(&"zz".repeat(32)), None);
    }

    #[test]
    fn no_keys_no_policy() {
        let keys = Keys::default();
        assert!(keys.policy(b"").is_none());
        assert!(keys.key().is_none());
    }

    #[test]
    fn required_signature_without_keys_is_still_required() {
        let keys = Keys {
            require_signature: Some(true),
            ..Keys::default()
        };
        assert!(matches!(
            keys.policy(b""),
            Some(Policy::RequireSignature { .. })
        ));
    }
}
