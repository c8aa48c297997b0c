//! End-to-end tests of the `fold` binary: pack, ls, cat, verify, corrupt, repair.

use std::path::Path;
use std::process::{Command, Output};

fn fold(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fold"))
        .args(args)
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn pack_ls_cat_verify_corrupt_repair_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let weights: Vec<u8> = (0..50_000_u32)
        .map(|i| (i * 7 % 251).to_le_bytes()[0])
        .collect();
    std::fs::write(d.join("w.bin"), &weights).unwrap();
    std::fs::write(d.join("m.json"), br#"{"model":"tiny"}"#).unwrap();
    std::fs::write(
        d.join("meta.json"),
        r#"{"model_type":"Tiny","tags":{"k":"vé"}}"#,
    )
    .unwrap();
    let out = d.join("x.mind");
    let w = format!("weights=TSAV:{}", s(&d.join("w.bin")));
    let m = format!("manifest=JSON:{}", s(&d.join("m.json")));
    let meta = d.join("meta.json");
    let o = fold(&[
        "pack",
        s(&out),
        &w,
        &m,
        "--compress",
        "none",
        "--ecc",
        "med",
        "--metadata",
        s(&meta),
        "--created-at",
        "1.5",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let o = fold(&["ls", s(&out), "--json"]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains(r#""name":"weights","ctype":"TSAV","compression":"none""#),
        "{text}"
    );
    assert!(text.contains(r#""ecc_algo":"rs(32)""#));

    let o = fold(&["cat", s(&out), "weights"]);
    assert_eq!(o.stdout, weights);

    let o = fold(&["verify", s(&out)]);
    assert!(o.status.success());

    // Corrupt 3 bytes of the first codeword of "weights": correctable, so verify passes and says
    // so; then corrupt a chunk header byte, which ECC does not cover: verify fails naming it.
    let mut bytes = std::fs::read(&out).unwrap();
    for k in [40, 41, 50] {
        bytes[28 + 32 + k] ^= 0xFF;
    }
    std::fs::write(&out, &bytes).unwrap();
    let o = fold(&["verify", s(&out)]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("3 bytes corrected"));
    let fixed = d.join("fixed.mind");
    let o = fold(&["repair", s(&out), "-o", s(&fixed)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(fold(&["verify", s(&fixed)]).status.success());
    assert_eq!(fold(&["cat", s(&fixed), "weights"]).stdout, weights);

    // Beyond the capacity of the first codeword: reported with its rule, named once.
    let mut beyond = bytes.clone();
    for k in 0..40 {
        beyond[28 + 32 + k] ^= 0x5A;
    }
    let damaged = d.join("damaged.mind");
    std::fs::write(&damaged, &beyond).unwrap();
    let o = fold(&["verify", s(&damaged)]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("FAIL  weights [§7.8 ecc] chunk \"weights\": ECC codeword 0"),
        "{text}"
    );

    bytes[28 + 20] ^= 1; // comp_len in the chunk header of "weights"
    std::fs::write(&out, &bytes).unwrap();
    let o = fold(&["verify", s(&out), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains(r#""name":"weights","ok":false"#) && text.contains("header/index"),
        "{text}"
    );
    let o = fold(&["cat", s(&out), "weights"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("\"weights\""));
}

#[test]
fn not_a_fold_file_fails_with_the_magic_rule() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("junk");
    std::fs::write(&p, vec![0_u8; 100]).unwrap();
    let o = fold(&["verify", s(&p)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("§8.1 magic"));
}

#[test]
fn signed_pack_verifies_with_the_public_key_and_damaged_parity_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fold/tests/data");
    std::fs::write(d.join("p.bin"), vec![3_u8; 100]).unwrap();
    std::fs::write(
        d.join("meta.json"),
        r#"{"model_type":"Tiny","protection":"low"}"#,
    )
    .unwrap();
    let out = d.join("s.fold");
    let chunk = format!("p=TSAV:{}", s(&d.join("p.bin")));
    let key = data.join("pyfolds_signed.key.pem");
    let public = data.join("pyfolds_signed.pub.pem");
    let meta = d.join("meta.json");
    let o = fold(&[
        "pack",
        s(&out),
        &chunk,
        "--ecc",
        "low",
        "--compress",
        "none",
        "--metadata",
        s(&meta),
        "--sign-key",
        s(&key),
        "--key-id",
        "k",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = fold(&[
        "verify",
        s(&out),
        "--public-key",
        s(&public),
        "--ecc-parity",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stdout).contains("ok    (signature)"));
    assert_signature_scope_is_stated(&out, &public);
    // Damage one ECC byte: the data still verifies, --ecc-parity reports it, repair restores it.
    let mut bytes = std::fs::read(&out).unwrap();
    bytes[28 + 32 + 100 + 3] ^= 0x10;
    std::fs::write(&out, &bytes).unwrap();
    assert!(fold(&["verify", s(&out)]).status.success());
    let o = fold(&["verify", s(&out), "--ecc-parity"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("FAIL  p [ecc parity]"));
    let fixed = d.join("fixed.fold");
    assert!(fold(&["repair", s(&out), "-o", s(&fixed)]).status.success());
    assert!(
        fold(&["verify", s(&fixed), "--ecc-parity"])
            .status
            .success()
    );
}

/// `fold verify --public-key` must not read as "these chunks are vouched for": pyfolds' signature
/// covers four metadata fields, so a file whose chunks were replaced (hashes recomputed, signature
/// copied) still verifies. The signature line says what it covers, in text and JSON.
fn assert_signature_scope_is_stated(signed: &Path, public: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The signed metadata, moved onto a file with other chunk bytes.
    let bytes = std::fs::read(signed).unwrap();
    let index_off = usize::try_from(u64::from_be_bytes(bytes[12..20].try_into().unwrap())).unwrap();
    let index = std::str::from_utf8(&bytes[index_off..]).unwrap();
    let start = index.find("\"metadata\":").unwrap() + "\"metadata\":".len();
    let end = index.find(",\"chunks\":").unwrap();
    std::fs::write(d.join("meta.json"), &index[start..end]).unwrap();
    std::fs::write(d.join("other.bin"), vec![9_u8; 100]).unwrap();
    let replaced = d.join("replaced.fold");
    let chunk = format!("p=TSAV:{}", s(&d.join("other.bin")));
    let o = fold(&[
        "pack",
        s(&replaced),
        &chunk,
        "--metadata",
        s(&d.join("meta.json")),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = fold(&["verify", s(&replaced), "--public-key", s(public)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text.lines().find(|l| l.contains("(signature)")).unwrap();
    assert!(
        line.contains("model_type, tags, reproducibility, protection only")
            && line.contains("does not cover the chunk bytes"),
        "{line}"
    );
    let o = fold(&["verify", s(&replaced), "--public-key", s(public), "--json"]);
    let json = String::from_utf8_lossy(&o.stdout);
    assert!(
        json.contains(
            r#""signature":true,"signature_covers":["metadata.model_type","metadata.tags","metadata.reproducibility","metadata.protection"]"#
        ),
        "{json}"
    );
}

/// `fold cat` of a damaged stored chunk (no ECC): refused with the CRC32C rule on every output,
/// and nothing reaches stdout or the output path (`-o` writes its temporary file while hashing;
/// it must be gone and never renamed).
#[test]
fn cat_of_a_corrupted_chunk_writes_nothing_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let weights: Vec<u8> = (0..2_000_000_u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(d.join("w.bin"), &weights).unwrap();
    let good = d.join("good.fold");
    let w = format!("weights=TSAV:{}", s(&d.join("w.bin")));
    let o = fold(&["pack", "-o", s(&good), &w, "--compression", "none"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = d.join("out.bin");
    let o = fold(&["cat", s(&good), "weights", "-o", s(&out)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&out).unwrap(), weights);
    std::fs::remove_file(&out).unwrap();

    let mut bytes = std::fs::read(&good).unwrap();
    bytes[28 + 32 + 1_234_567] ^= 0x10;
    let bad = d.join("bad.fold");
    std::fs::write(&bad, &bytes).unwrap();
    let listing = |d: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = listing(d);
    for args in [
        vec!["cat", s(&bad), "weights", "-o", s(&out)],
        vec!["cat", s(&bad), "weights", "-o", "/dev/null"],
        vec!["cat", s(&bad), "weights"],
    ] {
        let o = fold(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}: bytes reached stdout");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("crc32c") && err.contains("\"weights\""),
            "{err}"
        );
        assert_eq!(
            listing(d),
            before,
            "{args:?}: output or temporary file left"
        );
    }
}
