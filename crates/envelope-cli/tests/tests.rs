//! End-to-end tests of the `alimentar` and `apr` binaries: exit status, messages, JSON output.

mod alimentar_dataset;
mod alimentar_interop;
mod alimentar_remote;
mod alimentar_trueno;
mod alimentar_trueno_interop;
mod apr_llama;
mod apr_models;
mod apr_remote;
mod apr_transformers;
mod hostile;
mod piracy;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use envelope_core::{Envelope, Format};
use support::{ALIMENTAR, APR, CHEAP_KDF, CommandLine, Scratch, key_of, stderr};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../envelope-core/tests/data")
        .join(name)
}

fn run(binary: &str, args: &[&str]) -> Output {
    Command::new(binary)
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn info_json_reports_sections_and_flags() {
    let file = data("dataset_encrypted_streaming.ald");
    let output = run(ALIMENTAR, &["info", file.to_str().unwrap(), "--json"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["format"], ".ald");
    assert_eq!(
        report["flags"],
        serde_json::json!(["ENCRYPTED", "STREAMING"])
    );
    assert_eq!(report["chunks"], 3);
    let names: Vec<_> = report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            "header",
            "metadata",
            "schema",
            "chunk_index",
            "encryption",
            "payload",
            "checksum"
        ]
    );
}

/// Every failing vector makes the CLI exit non-zero with a message that names its signal once
/// (with --verify, which checks every byte as the vectors' names assume; the default lazy check of
/// an indexed file may name another signal, e.g. `Truncated` for a cut file, but refuses it too).
#[test]
fn every_failing_vector_exits_non_zero_naming_its_signal() {
    for vector in test_support::fail_vectors(&data("")) {
        let (name, path, signal) = (&vector.name, &vector.path, &vector.signal);
        let (binary, command) = if name.ends_with(".apr") {
            (APR, "inspect")
        } else {
            (ALIMENTAR, "info")
        };
        let lazy = run(binary, &[command, path.to_str().unwrap()]);
        assert_eq!(lazy.status.code(), Some(1), "{name} (lazy)");
        let output = run(binary, &[command, path.to_str().unwrap(), "--verify"]);
        assert_eq!(output.status.code(), Some(1), "{name}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!(": {signal}: ")),
            "{name}: {stderr}"
        );
        assert_eq!(
            stderr.lines().count(),
            1,
            "{name}: one line, no repeated cause: {stderr}"
        );
    }
}

#[test]
fn a_model_given_to_alimentar_is_refused_as_the_wrong_format() {
    let file = data("model_signed_licensed.apr");
    let output = run(ALIMENTAR, &["info", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("this is an .apr file, expected .ald")
    );
}

#[test]
fn a_missing_file_is_an_io_error() {
    let output = run(APR, &["inspect", "/nonexistent/model.apr"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("apr: Io: "));
}

// --- keygen, sign, verify, encrypt, decrypt -------------------------------------------------------

#[test]
fn keygen_sign_verify_and_the_trusted_key_policy() {
    let ws = Scratch::new();
    ws.keygen(APR, "alice");
    ws.keygen(APR, "mallory");
    ws.write(
        "model.apr",
        std::fs::read(data("model_signed_licensed.apr")).unwrap(),
    );

    // The sample's signature block is a placeholder: verification refuses it.
    ws.refused(
        APR,
        "verify model.apr --trusted-keys trusted-alice",
        "SignatureInvalid",
    );

    ws.ok(APR, format!("sign model.apr {}", key_of("alice")));
    let said = ws.ok(APR, "verify model.apr --trusted-keys trusted-alice");
    assert!(said.contains("signature valid"), "{said}");
    ws.refused(
        APR,
        "verify model.apr --trusted-keys trusted-mallory",
        "SignatureInvalid: signed by a key that is not trusted",
    );

    let report = ws.json(APR, "inspect model.apr --trusted-keys trusted-alice --json");
    assert!(
        report["checks"][0]
            .as_str()
            .unwrap()
            .starts_with("signature    valid")
    );

    // A wrong key file password is a decryption failure of the key file.
    ws.write("wrong.pw", b"nope\n");
    let wrong = "sign model.apr --key alice.key --password-file wrong.pw";
    ws.refused(APR, wrong, "DecryptionFailed");
}

#[test]
fn unsigned_files_are_refused_when_a_signature_is_required() {
    let ws = Scratch::new();
    ws.keygen(ALIMENTAR, "alice");
    let file = data("dataset_plain.ald");
    let file = file.to_str().unwrap();
    let needle = "SignatureInvalid: the file is not signed";
    ws.refused(
        ALIMENTAR,
        ["info", file, "--trusted-keys", "trusted-alice"],
        needle,
    );
    std::fs::create_dir(ws.path("empty")).unwrap();
    let output = ws.run(ALIMENTAR, ["verify", file, "--trusted-keys", "empty"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("Usage"), "{}", stderr(&output));
}

#[test]
fn password_encryption_round_trips_and_a_wrong_password_fails() {
    let ws = Scratch::new();
    let original = std::fs::read(data("dataset_plain.ald")).unwrap();
    ws.write("data.ald", &original);
    ws.write("pw", b"s3cret\n");
    ws.ok(
        ALIMENTAR,
        format!("encrypt data.ald --password-file pw {CHEAP_KDF}"),
    );

    let report = ws.json(ALIMENTAR, "info data.ald --json");
    assert_eq!(report["flags"], serde_json::json!(["ENCRYPTED"]));

    let said = ws.ok(ALIMENTAR, "info data.ald --password-file pw");
    assert!(said.contains("decryption   ok"), "{said}");

    ws.write("wrong", b"guess\n");
    let needle = "DecryptionFailed: decryption failed";
    ws.refused(ALIMENTAR, "info data.ald --password-file wrong", needle);

    // The environment variable is a password source too; without any source and no terminal,
    // the command is a usage error.
    let output = ws.run_env(
        ALIMENTAR,
        "decrypt data.ald -o plain.ald --password",
        &[("ALIMENTAR_PASSWORD", "s3cret")],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(ws.read("plain.ald"), original);
    let needle = "Usage: no password given";
    ws.refused(ALIMENTAR, "decrypt data.ald --password", needle);

    // Without -o the file is replaced.
    ws.ok(ALIMENTAR, "decrypt data.ald --password-file pw");
    assert_eq!(ws.read("data.ald"), original);
}

#[test]
fn multi_recipient_encryption_then_signing_and_every_recipient_decrypts() {
    let ws = Scratch::new();
    for name in ["alice", "bob", "carol"] {
        ws.keygen(APR, name);
    }
    let original = std::fs::read(data("model_signed_licensed.apr")).unwrap();
    ws.write("model.apr", &original);
    // The sample's placeholder signature does not pass a signature requirement.
    let encrypt = "encrypt model.apr -o sealed.apr --recipient alice.key.pub";
    ws.refused(
        APR,
        format!("{encrypt} --trusted-keys trusted-alice"),
        "SignatureInvalid",
    );
    let said = ws.wrote(APR, format!("{encrypt} --recipient bob.key.pub"));
    assert!(said.contains("signature was removed"), "{said}");
    ws.ok(APR, format!("sign sealed.apr {}", key_of("alice")));

    for name in ["alice", "bob"] {
        let key = key_of(name);
        ws.ok(
            APR,
            format!("decrypt sealed.apr -o {name}.apr {key} --trusted-keys trusted-alice"),
        );
        let plain = Envelope::from_vec(ws.read(&format!("{name}.apr")), Format::Model).unwrap();
        let before = Envelope::parse(&original[..], Format::Model).unwrap();
        assert_eq!(
            plain.decode_payload().unwrap(),
            before.decode_payload().unwrap()
        );
    }
    let needle = "DecryptionFailed: not encrypted for this key";
    ws.refused(
        APR,
        format!("inspect sealed.apr {}", key_of("carol")),
        needle,
    );
    ws.refused(
        APR,
        "inspect sealed.apr --trusted-keys trusted-bob",
        "SignatureInvalid",
    );
}

#[test]
fn license_attaches_a_signed_license_and_expiry_is_enforced() {
    let ws = Scratch::new();
    ws.keygen(ALIMENTAR, "seller");
    ws.write(
        "data.ald",
        std::fs::read(data("dataset_plain.ald")).unwrap(),
    );
    let seller = key_of("seller");
    let license = format!("license data.ald --licensee buyer@example.com {seller} --seats 3");
    let mut args = license.to_args();
    args.extend(
        [
            "--terms",
            "research only",
            "--expires",
            "2099-12-31",
            "-o",
            "licensed.ald",
        ]
        .map(String::from),
    );
    let said = ws.wrote(ALIMENTAR, args);
    assert!(
        said.contains("licensed") && said.contains("2099-12-31T00:00:00Z"),
        "{said}"
    );

    // The license is covered by the signature, which a trusted-key check verifies.
    ws.ok(
        ALIMENTAR,
        "verify licensed.ald --trusted-keys trusted-seller",
    );
    let envelope = Envelope::from_vec(ws.read("licensed.ald"), Format::Dataset).unwrap();
    let license = envelope_license::read_license(&envelope).unwrap().unwrap();
    assert!(license.is_for("buyer@example.com"));
    assert_eq!(license.seat_limit, 3);
    assert_eq!(license.custom_terms, b"research only");
    assert_eq!(
        license.flags.names().collect::<Vec<_>>(),
        ["SEATS_ENFORCED", "EXPIRATION_ENFORCED"]
    );

    // A past date is refused unless expiry is only recorded.
    let again = format!("license data.ald --licensee x {seller} -o licensed.ald --force --expires");
    let needle = "Usage: --expires 2001-01-01 is not in the future";
    ws.refused(ALIMENTAR, format!("{again} 2001-01-01"), needle);
    let output = ws.run(ALIMENTAR, format!("{again} tomorrow"));
    assert_eq!(output.status.code(), Some(2), "a command-line error");
    assert!(stderr(&output).contains("invalid value 'tomorrow' for '--expires <DATE>'"));
    ws.ok(
        ALIMENTAR,
        format!("{again} 2001-01-01 --no-expiry-enforcement"),
    );

    // An enforced license that has expired stops every command that reads the payload.
    let original = Envelope::from_vec(ws.read("data.ald"), Format::Dataset).unwrap();
    let mut parts = original.to_parts();
    let mut expired = envelope_license::LicenseBlock::new([1; 16], "buyer", 1_000, 2_000);
    expired.flags = envelope_license::LicenseFlags::EXPIRATION_ENFORCED;
    parts.license = Some(expired.encode().unwrap().into());
    ws.write("stale.ald", parts.to_bytes().unwrap());
    let needle = "LicenseExpired: license expired at 2000";
    ws.refused(ALIMENTAR, "decrypt stale.ald --password", needle);
}
