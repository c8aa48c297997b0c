//! What a loader checks before a model's tensors are used, in one order for every caller (the
//! library, the CLI, and `ald`'s [`ald::LoadOptions`] for datasets): the envelope walk, the
//! signature policy, the license at the caller's clock, the expected model type, then the
//! metadata. Decryption is asked for later, per tensor ([`AprFile::decrypt_tensors`]).
//!
//! [`ald::LoadOptions`]: https://docs.rs/ald
//! [`AprFile::decrypt_tensors`]: crate::AprFile

use envelope_core::{Envelope, Format};

use crate::codec::AprFile;
use crate::error::Result;
use crate::model_type::ModelType;

/// The policy a model is loaded under (default: no signature required, no license clock, any
/// model type, the default [`envelope_core::Limits`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions<'a> {
    /// Refuse the file with `ModelTypeMismatch` unless it holds this kind of model.
    pub expected_type: Option<ModelType>,
    /// The current time (Unix seconds), to check a license's expiry. A file whose license
    /// enforces expiry is refused with `Usage` when this is `None`.
    pub now_unix: Option<u64>,
    /// Which signatures to require (default: none).
    #[cfg(feature = "format-signing")]
    pub signature: Option<envelope_sign::Policy<'a>>,
    /// The reader's resource policy: how much a tensor or the metadata may decode to.
    pub limits: envelope_core::Limits,
    /// Holds `'a` when `format-signing` is off (construct with `..LoadOptions::default()`).
    #[doc(hidden)]
    #[cfg(not(feature = "format-signing"))]
    pub _lifetime: core::marker::PhantomData<&'a ()>,
}

impl LoadOptions<'_> {
    /// Whether these options require a signature (a caller then holds the file still while it is
    /// read: `apr::fs::open_verified` snapshots it).
    #[must_use]
    pub fn requires_signature(&self) -> bool {
        #[cfg(feature = "format-signing")]
        {
            matches!(
                self.signature,
                Some(envelope_sign::Policy::RequireSignature { .. })
            )
        }
        #[cfg(not(feature = "format-signing"))]
        {
            false
        }
    }
}

impl<B: AsRef<[u8]>> AprFile<B> {
    /// Verifies `bytes` as an `.apr` file under `options` (see the module docs for the order).
    ///
    /// # Errors
    /// The first failed check: the envelope's signals, `SignatureInvalid`, `LicenseExpired` (or
    /// `Usage` for an expiring license and no `now_unix`), `ModelTypeMismatch`, then those of
    /// [`AprFile::parse`].
    pub fn open(bytes: B, options: &LoadOptions<'_>) -> Result<Self> {
        Self::verify(
            Envelope::parse_lazy(bytes, Format::Model)?.with_limits(options.limits),
            options,
        )
    }

    /// The checks of [`AprFile::open`] after the envelope walk.
    ///
    /// # Errors
    /// As [`AprFile::open`].
    pub fn verify(envelope: Envelope<B>, options: &LoadOptions<'_>) -> Result<Self> {
        #[cfg(feature = "format-signing")]
        if let Some(policy) = options.signature {
            policy.check(&envelope)?;
        }
        envelope_license::check_license(&envelope, options.now_unix)?;
        if let Some(expected) = options.expected_type {
            expected.expect(envelope.header().type_id())?;
        }
        Self::from_envelope(envelope)
    }
}
