//! End-to-end tests of the `alimentar` and `apr` binaries: exit status, messages, JSON output.

mod alimentar_dataset;
mod alimentar_interop;
mod alimentar_trueno;
mod alimentar_trueno_interop;
mod apr_models;
mod hostile;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use envelope_core::{Envelope, Format};

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
    let output = run(
        env!("CARGO_BIN_EXE_alimentar"),
        &["info", file.to_str().unwrap(), "--json"],
    );
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
            (env!("CARGO_BIN_EXE_apr"), "inspect")
        } else {
            (env!("CARGO_BIN_EXE_alimentar"), "info")
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
    let output = run(
        env!("CARGO_BIN_EXE_alimentar"),
        &["info", file.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("this is an .apr file, expected .ald")
    );
}

#[test]
fn a_missing_file_is_an_io_error() {
    let output = run(
        env!("CARGO_BIN_EXE_apr"),
        &["inspect", "/nonexistent/model.apr"],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("apr: Io: "));
}

// --- keygen, sign, verify, encrypt, decrypt -------------------------------------------------------

/// Cheap Argon2id costs for tests (still within the reader limits).
const CHEAP_KDF: &[&str] = &["--argon2-m-kib", "1024", "--argon2-t", "1"];

struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_owned()
    }

    fn write(&self, name: &str, bytes: &[u8]) -> String {
        std::fs::write(self.path(name), bytes).unwrap();
        self.path(name)
    }

    /// `keygen -o NAME.key` with password `NAME-pw` in `NAME.pw`; the public key also goes to
    /// `trusted-NAME/NAME.pub`.
    fn keygen(&self, binary: &str, name: &str) -> String {
        let pw = self.write(&format!("{name}.pw"), format!("{name}-pw\n").as_bytes());
        let key = self.path(&format!("{name}.key"));
        let mut args = vec!["keygen", "-o", &key, "--password-file", &pw];
        args.extend_from_slice(CHEAP_KDF);
        let output = run(binary, &args);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let trusted = self.path(&format!("trusted-{name}"));
        std::fs::create_dir_all(&trusted).unwrap();
        std::fs::copy(format!("{key}.pub"), format!("{trusted}/{name}.pub")).unwrap();
        key
    }
}

/// The command failed with exit status 1 (2 for a usage error) and its one line names `needle`:
/// `SIGNAL: detail` matches the signal right after the tool's name and the detail anywhere after
/// it (the file the failure is about is named in between).
fn assert_fails_with(output: &Output, needle: &str) {
    let text = stderr(output);
    let status = if needle.starts_with("Usage") { 2 } else { 1 };
    assert_eq!(output.status.code(), Some(status), "{text}");
    let (code, detail) = needle.split_once(": ").unwrap_or((needle, ""));
    let after_tool = text.split_once(": ").map_or("", |(_, rest)| rest);
    assert!(after_tool.starts_with(code), "{needle}: {text}");
    assert!(text.contains(detail), "{needle}: {text}");
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn run_env(binary: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(binary);
    command.args(args).stdin(std::process::Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("the binary runs")
}

#[test]
fn keygen_sign_verify_and_the_trusted_key_policy() {
    let apr = env!("CARGO_BIN_EXE_apr");
    let ws = Workspace::new();
    let key = ws.keygen(apr, "alice");
    ws.keygen(apr, "mallory");
    let model = ws.write(
        "model.apr",
        &std::fs::read(data("model_signed_licensed.apr")).unwrap(),
    );

    // The sample's signature block is a placeholder: verification refuses it.
    let output = run(
        apr,
        &[
            "verify",
            &model,
            "--trusted-keys",
            &ws.path("trusted-alice"),
        ],
    );
    assert_fails_with(&output, "SignatureInvalid");

    let output = run(
        apr,
        &[
            "sign",
            &model,
            "--key",
            &key,
            "--password-file",
            &ws.path("alice.pw"),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let output = run(
        apr,
        &[
            "verify",
            &model,
            "--trusted-keys",
            &ws.path("trusted-alice"),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("signature valid"));

    let output = run(
        apr,
        &[
            "verify",
            &model,
            "--trusted-keys",
            &ws.path("trusted-mallory"),
        ],
    );
    assert_fails_with(
        &output,
        "SignatureInvalid: signed by a key that is not trusted",
    );

    let output = run(
        apr,
        &[
            "inspect",
            &model,
            "--trusted-keys",
            &ws.path("trusted-alice"),
            "--json",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        report["checks"][0]
            .as_str()
            .unwrap()
            .starts_with("signature    valid")
    );

    // A wrong key file password is a decryption failure of the key file.
    let wrong = ws.write("wrong.pw", b"nope\n");
    let output = run(
        apr,
        &["sign", &model, "--key", &key, "--password-file", &wrong],
    );
    assert_fails_with(&output, "DecryptionFailed");
}

#[test]
fn unsigned_files_are_refused_when_a_signature_is_required() {
    let alimentar = env!("CARGO_BIN_EXE_alimentar");
    let ws = Workspace::new();
    ws.keygen(alimentar, "alice");
    let file = data("dataset_plain.ald");
    let output = run(
        alimentar,
        &[
            "info",
            file.to_str().unwrap(),
            "--trusted-keys",
            &ws.path("trusted-alice"),
        ],
    );
    assert_fails_with(&output, "SignatureInvalid: the file is not signed");
    let empty = ws.path("empty");
    std::fs::create_dir(&empty).unwrap();
    let output = run(
        alimentar,
        &["verify", file.to_str().unwrap(), "--trusted-keys", &empty],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("Usage"), "{}", stderr(&output));
}

#[test]
fn password_encryption_round_trips_and_a_wrong_password_fails() {
    let alimentar = env!("CARGO_BIN_EXE_alimentar");
    let ws = Workspace::new();
    let original = std::fs::read(data("dataset_plain.ald")).unwrap();
    let file = ws.write("data.ald", &original);
    let pw = ws.write("pw", b"s3cret\n");
    let mut args = vec!["encrypt", &file, "--password-file", &pw];
    args.extend_from_slice(CHEAP_KDF);
    let output = run(alimentar, &args);
    assert!(output.status.success(), "{}", stderr(&output));

    let output = run(alimentar, &["info", &file, "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["flags"], serde_json::json!(["ENCRYPTED"]));

    let output = run(alimentar, &["info", &file, "--password-file", &pw]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("decryption   ok"));

    let wrong = ws.write("wrong", b"guess\n");
    let output = run(alimentar, &["info", &file, "--password-file", &wrong]);
    assert_fails_with(&output, "DecryptionFailed: decryption failed");

    // The environment variable is a password source too; without any source and no terminal,
    // the command is a usage error.
    let out = ws.path("plain.ald");
    let output = run_env(
        alimentar,
        &["decrypt", &file, "-o", &out, "--password"],
        &[("ALIMENTAR_PASSWORD", "s3cret")],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read(&out).unwrap(), original);
    let output = run_env(alimentar, &["decrypt", &file, "--password"], &[]);
    assert_fails_with(&output, "Usage: no password given");

    // Without -o the file is replaced.
    let output = run(alimentar, &["decrypt", &file, "--password-file", &pw]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read(&file).unwrap(), original);
}

#[test]
fn multi_recipient_encryption_then_signing_and_every_recipient_decrypts() {
    let apr = env!("CARGO_BIN_EXE_apr");
    let ws = Workspace::new();
    let (alice, bob, carol) = (
        ws.keygen(apr, "alice"),
        ws.keygen(apr, "bob"),
        ws.keygen(apr, "carol"),
    );
    let original = std::fs::read(data("model_signed_licensed.apr")).unwrap();
    let model = ws.write("model.apr", &original);
    let sealed = ws.path("sealed.apr");
    // The sample's placeholder signature does not pass a signature requirement.
    let output = run(
        apr,
        &[
            "encrypt",
            &model,
            "-o",
            &sealed,
            "--recipient",
            &format!("{alice}.pub"),
            "--trusted-keys",
            &ws.path("trusted-alice"),
        ],
    );
    assert_fails_with(&output, "SignatureInvalid");
    let output = run(
        apr,
        &[
            "encrypt",
            &model,
            "-o",
            &sealed,
            "--recipient",
            &format!("{alice}.pub"),
            "--recipient",
            &format!("{bob}.pub"),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("signature was removed"));
    let output = run(
        apr,
        &[
            "sign",
            &sealed,
            "--key",
            &alice,
            "--password-file",
            &ws.path("alice.pw"),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));

    for (name, key) in [("alice", &alice), ("bob", &bob)] {
        let out = ws.path(&format!("{name}.apr"));
        let output = run(
            apr,
            &[
                "decrypt",
                &sealed,
                "-o",
                &out,
                "--key",
                key,
                "--password-file",
                &ws.path(&format!("{name}.pw")),
                "--trusted-keys",
                &ws.path("trusted-alice"),
            ],
        );
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        let plain = Envelope::parse(std::fs::read(&out).unwrap(), Format::Model).unwrap();
        let before = Envelope::parse(&original[..], Format::Model).unwrap();
        assert_eq!(
            plain.decode_payload().unwrap(),
            before.decode_payload().unwrap()
        );
    }
    let output = run(
        apr,
        &[
            "inspect",
            &sealed,
            "--key",
            &carol,
            "--password-file",
            &ws.path("carol.pw"),
        ],
    );
    assert_fails_with(&output, "DecryptionFailed: not encrypted for this key");
    let output = run(
        apr,
        &[
            "inspect",
            &sealed,
            "--trusted-keys",
            &ws.path("trusted-bob"),
        ],
    );
    assert_fails_with(&output, "SignatureInvalid");
}

#[test]
fn license_attaches_a_signed_license_and_expiry_is_enforced() {
    let alimentar = env!("CARGO_BIN_EXE_alimentar");
    let ws = Workspace::new();
    let key = ws.keygen(alimentar, "seller");
    let pw = ws.path("seller.pw");
    let dataset = ws.write(
        "data.ald",
        &std::fs::read(data("dataset_plain.ald")).unwrap(),
    );
    let licensed = ws.path("licensed.ald");
    let output = run(
        alimentar,
        &[
            "license",
            &dataset,
            "--licensee",
            "buyer@example.com",
            "--expires",
            "2099-12-31",
            "--key",
            &key,
            "--password-file",
            &pw,
            "--seats",
            "3",
            "--terms",
            "research only",
            "-o",
            &licensed,
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(
        said.contains("licensed") && said.contains("2099-12-31T00:00:00Z"),
        "{said}"
    );

    // The license is covered by the signature, which a trusted-key check verifies.
    let trusted = ws.path("trusted-seller");
    let output = run(
        alimentar,
        &["verify", &licensed, "--trusted-keys", &trusted],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let envelope = Envelope::from_vec(std::fs::read(&licensed).unwrap(), Format::Dataset).unwrap();
    let license = envelope_license::read_license(&envelope).unwrap().unwrap();
    assert!(license.is_for("buyer@example.com"));
    assert_eq!(license.seat_limit, 3);
    assert_eq!(license.custom_terms, b"research only");
    assert_eq!(
        license.flags.names().collect::<Vec<_>>(),
        ["SEATS_ENFORCED", "EXPIRATION_ENFORCED"]
    );

    // A past date is refused unless expiry is only recorded.
    let args = |date: &'static str, enforce: bool| {
        let mut args = vec![
            "license",
            &*dataset,
            "--licensee",
            "x",
            "--expires",
            date,
            "--key",
            &*key,
            "--password-file",
            &*pw,
            "-o",
            &*licensed,
            "--force",
        ];
        if !enforce {
            args.push("--no-expiry-enforcement");
        }
        args
    };
    assert_fails_with(
        &run(alimentar, &args("2001-01-01", true)),
        "Usage: --expires 2001-01-01 is not in the future",
    );
    let output = run(alimentar, &args("tomorrow", true));
    assert_eq!(output.status.code(), Some(2), "a command-line error");
    assert!(stderr(&output).contains("invalid value 'tomorrow' for '--expires <DATE>'"));
    let output = run(alimentar, &args("2001-01-01", false));
    assert!(output.status.success(), "{}", stderr(&output));

    // An enforced license that has expired stops every command that reads the payload.
    let original = Envelope::from_vec(std::fs::read(&dataset).unwrap(), Format::Dataset).unwrap();
    let mut parts = original.to_parts();
    let mut expired = envelope_license::LicenseBlock::new([1; 16], "buyer", 1_000, 2_000);
    expired.flags = envelope_license::LicenseFlags::EXPIRATION_ENFORCED;
    parts.license = Some(expired.encode().unwrap().into());
    let stale = ws.write("stale.ald", &parts.to_bytes().unwrap());
    assert_fails_with(
        &run(alimentar, &["decrypt", &stale, "--password"]),
        "LicenseExpired: license expired at 2000",
    );
}
