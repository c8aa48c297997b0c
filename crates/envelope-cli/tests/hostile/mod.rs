//! Hostile files against the CLIs (issue 14): memory bounded by the reader's limits, not by what a
//! file declares; commands that show part of a file read only that part; allocation failure is an
//! error, never an abort.

use std::borrow::Cow;
use std::process::{Command, Output};

use envelope_core::{ChunkIndex, Compression, EnvelopeParts, Format, Payload};

fn alimentar() -> &'static str {
    env!("CARGO_BIN_EXE_alimentar")
}

fn apr() -> &'static str {
    env!("CARGO_BIN_EXE_apr")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Exit status 1 and `needle` in the one error line.
fn assert_fails_with(output: &Output, needle: &str) {
    let said = stderr(output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains(needle), "expected {needle}: {said}");
}

/// `binary args...` under `ulimit -v` (KiB of address space): an attempt to allocate what a file
/// declares would abort; a refusal made before allocating is an ordinary error.
fn run_limited(kib: u64, binary: &str, args: &[&str]) -> Output {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    Command::new("bash")
        .args([
            "-c",
            &format!("ulimit -v {kib}; exec '{binary}' {}", quoted.join(" ")),
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("bash runs")
}

/// A zstd frame of `len` zeros (tiny) and a claim of `claimed` decoded bytes.
fn bomb_parts(len: usize, claimed: u64) -> (Vec<u8>, u64) {
    let frame = envelope_core::compression::compress(Compression::ZstdL3, &vec![0u8; len])
        .unwrap()
        .into_owned();
    (frame, claimed)
}

/// A valid, empty `.ald` file of one Int64 column, whose parts the bombs below reuse.
fn empty_dataset() -> Vec<u8> {
    let schema = ald::arrow_schema::Schema::new(vec![ald::arrow_schema::Field::new(
        "x",
        ald::arrow_schema::DataType::Int64,
        false,
    )]);
    ald::ArrowDataset::new(std::sync::Arc::new(schema), Vec::new())
        .unwrap()
        .to_bytes(&ald::SaveOptions::new(
            ald::DatasetType::Tabular,
            Compression::ZstdL3,
        ))
        .unwrap()
}

/// A dataset whose whole payload is a few hundred bytes that claim 1.5 GB decoded.
fn dataset_bomb() -> Vec<u8> {
    let valid = empty_dataset();
    let envelope = envelope_core::Envelope::parse(&valid[..], Format::Dataset).unwrap();
    let mut parts = envelope.to_parts();
    let (frame, claimed) = bomb_parts(1 << 20, 1_500_000_000);
    parts.num_rows = 1;
    parts.payload = Payload::Whole {
        stored: Cow::Owned(frame),
        uncompressed_size: claimed,
    };
    parts.to_bytes().unwrap()
}

/// A STREAMING dataset of one chunk: 2 MB stored that claim 64 GiB.
fn streaming_bomb() -> Vec<u8> {
    let valid = empty_dataset();
    let envelope = envelope_core::Envelope::parse(&valid[..], Format::Dataset).unwrap();
    let mut parts = envelope.to_parts();
    let (mut stored, _) = bomb_parts(64 << 20, 0);
    stored.resize(stored.len().max(2_000_000), 0);
    parts.num_rows = 1;
    parts.payload = Payload::Chunked {
        index: ChunkIndex::from_sizes([(stored.len() as u64, 64u64 << 30, 1)]).unwrap(),
        stored: Cow::Owned(stored),
    };
    parts.to_bytes().unwrap()
}

/// A tensor model with one tensor whose few hundred stored bytes claim 1.5 GB.
fn model_bomb() -> Vec<u8> {
    let metadata = apr::ModelMetadata {
        model_card: apr::ModelCard::default(),
        payload: apr::PayloadKind::Tensors,
        tensors: vec![apr::TensorEntry {
            name: "w".into(),
            dtype: apr::DType::F32.code(),
            shape: vec![375_000_000],
            quantizer: String::new(),
        }],
        quantization: None,
    };
    let (frame, claimed) = bomb_parts(1 << 20, 1_500_000_000);
    let mut parts = EnvelopeParts::new(Format::Model, apr::ModelType::NeuralCustom.id());
    parts.compression = Compression::ZstdL3;
    parts.metadata = Cow::Owned(metadata.encode().unwrap());
    parts.payload = Payload::Chunked {
        index: ChunkIndex::from_sizes([(frame.len() as u64, claimed, 1)]).unwrap(),
        stored: Cow::Owned(frame),
    };
    parts.to_bytes().unwrap()
}

/// 14 §1: every reading command refuses the bombs at once, under a memory limit that the
/// declared sizes would blow through, with `LimitExceeded` naming the limit and the flag that
/// raises it.
#[test]
fn declared_sizes_beyond_the_limits_are_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    std::fs::write(path("bomb.ald"), dataset_bomb()).unwrap();
    std::fs::write(path("streaming.ald"), streaming_bomb()).unwrap();
    std::fs::write(path("bomb.apr"), model_bomb()).unwrap();
    let out = path("out.gguf");
    let csv = path("out.csv");
    for (binary, args) in [
        (alimentar(), vec!["head", &path("bomb.ald")]),
        (alimentar(), vec!["convert", &path("bomb.ald"), "-o", &csv]),
        (alimentar(), vec!["head", &path("streaming.ald")]),
        (
            apr(),
            vec!["export", &path("bomb.apr"), "--format", "gguf", "-o", &out],
        ),
        (
            apr(),
            vec!["quantize", &path("bomb.apr"), "--type", "q8_0", "-o", &out],
        ),
    ] {
        let output = run_limited(600_000, binary, &args);
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {said}");
        assert!(said.contains("LimitExceeded"), "{args:?}: {said}");
        assert!(said.contains("--max-"), "names the flag: {said}");
    }
    assert!(!std::path::Path::new(&out).exists());
    // Raising the limit lets the reader go on: it then finds the stream holds only 1 MiB.
    let output = run_limited(
        600_000,
        alimentar(),
        &["head", &path("bomb.ald"), "--max-expansion", "1000000000"],
    );
    assert_fails_with(&output, "InvalidFormat");
}

/// 14 §1: `head` decodes only the record batches holding the rows it shows. The second batch of
/// this file is malformed (behind a valid checksum): `head -n 3` shows the first rows, `convert`,
/// which needs every row, refuses the file.
#[test]
fn head_reads_only_the_batches_it_shows() {
    use std::sync::Arc;
    let schema = Arc::new(ald::arrow_schema::Schema::new(vec![
        ald::arrow_schema::Field::new("id", ald::arrow_schema::DataType::Int64, false),
    ]));
    let batch = |start: i64| {
        ald::arrow_array::RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(ald::arrow_array::Int64Array::from_iter_values(
                start..start + 1000,
            ))],
        )
        .unwrap()
    };
    let dataset = ald::ArrowDataset::new(Arc::clone(&schema), vec![batch(0), batch(1000)]).unwrap();
    let bytes = dataset
        .to_bytes(&ald::SaveOptions::new(
            ald::DatasetType::Tabular,
            Compression::None,
        ))
        .unwrap();
    let envelope = envelope_core::Envelope::parse(&bytes[..], Format::Dataset).unwrap();
    let mut parts = envelope.to_parts();
    let mut payload = envelope.payload().to_vec();
    // The second message's continuation marker (the values 0..2000 never hold 0xffffffff): give
    // it a metadata length past the payload's end.
    let second = payload
        .windows(4)
        .enumerate()
        .filter(|(_, window)| *window == [0xff; 4])
        .map(|(at, _)| at)
        .nth(1)
        .expect("a second message");
    payload[second + 4..second + 8].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    parts.payload = Payload::Whole {
        uncompressed_size: payload.len() as u64,
        stored: Cow::Owned(payload),
    };
    let damaged = parts.to_bytes().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.ald");
    std::fs::write(&file, damaged).unwrap();
    let file = file.to_str().unwrap();
    let output = Command::new(alimentar())
        .args(["head", file, "-n", "3"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(text.lines().count(), 4, "{text}");
    let out = dir.path().join("all.csv");
    let output = Command::new(alimentar())
        .args(["convert", file, "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_fails_with(&output, "InvalidFormat");
}

/// 14 §1: a password-encrypted file may ask for 1 GiB of Argon2id memory (the reader's ceiling);
/// where the machine cannot give it, decryption fails with an `Io` error, never an abort. A key
/// file asking for more than 256 MiB is refused before any work.
#[test]
fn argon2_memory_a_file_asks_for_is_allocated_fallibly() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    std::fs::write(path("pw"), "secret\n").unwrap();
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../envelope-core/tests/data/dataset_plain.ald");
    let cheap = ["--argon2-m-kib", "1024", "--argon2-t", "1"];
    let mut args = vec![
        "encrypt",
        source.to_str().unwrap(),
        "-o",
        &*Box::leak(path("enc.ald").into_boxed_str()),
        "--password-file",
        &*Box::leak(path("pw").into_boxed_str()),
    ];
    args.extend(cheap);
    let output = Command::new(alimentar()).args(&args).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    // Raise m_cost in the encryption block to 1 GiB (the reader's limit) and fix the CRC.
    let mut bytes = std::fs::read(path("enc.ald")).unwrap();
    let envelope = envelope_core::Envelope::parse(&bytes[..], Format::Dataset).unwrap();
    let block = envelope
        .layout()
        .span(envelope_core::Section::Encryption)
        .unwrap();
    let at = usize::try_from(block.offset).unwrap() + 6;
    assert_eq!(
        &bytes[at..at + 4],
        &1024u32.to_le_bytes(),
        "m_cost at offset 6"
    );
    bytes[at..at + 4].copy_from_slice(&(1u32 << 20).to_le_bytes());
    let end = bytes.len() - 4;
    let crc = crc32fast::hash(&bytes[..end]);
    bytes[end..].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(path("greedy.ald"), &bytes).unwrap();
    let output = run_limited(
        400_000,
        alimentar(),
        &[
            "decrypt",
            &path("greedy.ald"),
            "--password-file",
            &path("pw"),
            "-o",
            &path("plain.ald"),
        ],
    );
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "not an abort: {said}");
    assert!(
        said.contains("Io: ") && said.contains("could not allocate"),
        "{said}"
    );

    // keygen refuses a key-file cost past 256 MiB; a key file claiming one is refused at once.
    let output = Command::new(alimentar())
        .args([
            "keygen",
            "-o",
            &path("big.key"),
            "--password-file",
            &path("pw"),
            "--argon2-m-kib",
            "300000",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(stderr(&output).contains("256 MiB"), "{}", stderr(&output));
}

/// A signed model of one f32 tensor of `value`s, and the same file with `other`s in the tensor
/// (its CRC-32C forged to match the index, the trailer fixed, the signature block kept): what a
/// program without the key can write over the file in place. Same length, same header and index.
fn signed_model_pair(
    identity: &envelope_sign::Identity,
    value: f32,
    other: f32,
) -> (Vec<u8>, Vec<u8>) {
    let model = |v: f32| {
        let tensor = apr::Tensor::from_f32("w", vec![256], &[v; 256]).unwrap();
        let model = apr::TensorModel::new(vec![tensor]).unwrap();
        apr::save_tensors_to_bytes(
            &model,
            apr::ModelType::NeuralCustom,
            &apr::SaveOptions {
                card: apr::ModelCard::default(),
                compression: Compression::None,
            },
        )
        .unwrap()
    };
    let good = envelope_sign::sign(&model(value), &identity.signing_key()).unwrap();
    let other = test_support::stored_chunk(&model(other), Format::Model, 0);
    let evil = test_support::forge_chunk(&good, Format::Model, 0, &other);
    (good, evil)
}

/// 14 §4: `apr export --trusted-keys` while another program keeps rewriting the model in place,
/// between the signed bytes and a variant whose tensor checksum still matches: every export that
/// succeeds holds the signed weights; the others fail the signature.
#[test]
fn what_was_verified_is_what_is_exported_while_a_writer_races() {
    use std::io::{Seek as _, SeekFrom, Write as _};
    use std::sync::atomic::{AtomicBool, Ordering};
    let identity = envelope_sign::Identity::from_seed([9; 32]);
    let (good, evil) = signed_model_pair(&identity, 1.0, 2.0);
    let dir = tempfile::tempdir().unwrap();
    let trusted = dir.path().join("trusted");
    std::fs::create_dir(&trusted).unwrap();
    std::fs::write(trusted.join("seller.pub"), identity.public_key_file()).unwrap();
    let model = dir.path().join("race.apr");
    std::fs::write(&model, &good).unwrap();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, model, good, evil) = (stop.clone(), model.clone(), good.clone(), evil.clone());
        std::thread::spawn(move || {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .open(&model)
                .unwrap();
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let bytes = if flips.is_multiple_of(2) {
                    &evil
                } else {
                    &good
                };
                file.seek(SeekFrom::Start(0)).unwrap();
                file.write_all(bytes).unwrap();
                flips += 1;
                std::thread::sleep(std::time::Duration::from_micros(300));
            }
            flips
        })
    };
    let one = 1.0f32.to_le_bytes().repeat(64);
    let two = 2.0f32.to_le_bytes().repeat(64);
    let (mut exported, mut refused) = (0, 0);
    for run in 0..40 {
        let out = dir.path().join(format!("out-{run}.gguf"));
        let output = Command::new(apr())
            .args([
                "export",
                model.to_str().unwrap(),
                "--format",
                "gguf",
                "-o",
                out.to_str().unwrap(),
                "--trusted-keys",
                trusted.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        if output.status.success() {
            let gguf = std::fs::read(&out).unwrap();
            assert!(
                gguf.windows(one.len()).any(|w| w == one),
                "run {run}: the signed weights"
            );
            assert!(
                !gguf.windows(two.len()).any(|w| w == two),
                "run {run}: never the others"
            );
            exported += 1;
        } else {
            assert!(
                stderr(&output).contains("SignatureInvalid"),
                "{}",
                stderr(&output)
            );
            refused += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = writer.join().unwrap();
    assert!(flips > 40, "the writer raced ({flips} rewrites)");
    assert!(
        exported > 0 && refused > 0,
        "{exported} exported, {refused} refused"
    );
}
