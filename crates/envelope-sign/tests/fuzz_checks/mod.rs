//! The properties the crypto and signing fuzz targets check, shared with the stable corpus replay
//! in `tests.rs`. The fuzz targets include this file by path (`fuzz/fuzz_targets/*.rs`).

use envelope_crypto::{EncryptionBlock, Password};
use envelope_sign::{Identity, PublicKeyFile, SignatureBlock};

/// `crypto_parsers`: the encryption block, the signature block and the public key file parsers
/// either refuse the bytes with a typed error or parse them into a value that encodes back to the
/// same bytes (blocks) / parses again to the same keys (key text). Never a panic.
pub(crate) fn crypto_parsers(data: &[u8]) {
    if let Ok(block) = EncryptionBlock::parse(data) {
        let encoded = block.encode().expect("a parsed block encodes");
        assert_eq!(
            encoded, data,
            "encryption block re-encodes to the same bytes"
        );
    }
    if let Ok(block) = SignatureBlock::parse(data) {
        assert_eq!(
            &block.encode()[..],
            data,
            "signature block re-encodes to the same bytes"
        );
    }
    let text = String::from_utf8_lossy(data);
    if let Ok(keys) = PublicKeyFile::parse(&text) {
        let again = PublicKeyFile::parse(&text).expect("parsing is deterministic");
        assert_eq!(again.signing.len(), keys.signing.len());
        assert_eq!(again.recipients.len(), keys.recipients.len());
    }
}

/// `key_file`: opening a private key file with a password never panics; malformed files are
/// refused before any key derivation runs.
pub(crate) fn key_file(data: &[u8]) {
    let _ = Identity::open(data, &Password::new(b"fuzz".to_vec()));
}
