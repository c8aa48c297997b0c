//! `apr::fs::import_hf_dir` on Hugging Face model directories built in the test with the
//! `safetensors` crate: single file and sharded checkpoints, F32/F16/BF16 kept as stored, tied
//! embeddings, the kept files byte for byte, the deterministic tensor order, and every refusal
//! naming what failed.

use std::path::{Path, PathBuf};

use apr::hf::HfError;
use apr::{DType, Error, ModelCard, ModelType};
use envelope_core::{Compression, Signal};
use safetensors::tensor::{Dtype, TensorView};

/// One tensor to write: name, dtype, shape, bytes.
type Spec = (&'static str, Dtype, Vec<usize>, Vec<u8>);

fn bytes_of(dtype: Dtype, shape: &[usize], seed: u8) -> Vec<u8> {
    let elements: usize = shape.iter().product();
    let width = match dtype {
        Dtype::F32 | Dtype::I32 => 4,
        Dtype::I64 => 8,
        _ => 2,
    };
    (0..=u8::MAX)
        .cycle()
        .take(elements * width)
        .map(|i| i.wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn spec(name: &'static str, dtype: Dtype, shape: &[usize], seed: u8) -> Spec {
    (name, dtype, shape.to_vec(), bytes_of(dtype, shape, seed))
}

fn write_shard(path: &Path, tensors: &[Spec]) {
    let views: Vec<(&str, TensorView<'_>)> = tensors
        .iter()
        .map(|(name, dtype, shape, data)| {
            (*name, TensorView::new(*dtype, shape.clone(), data).unwrap())
        })
        .collect();
    safetensors::serialize_to_file(views, None, path).unwrap();
}

const CONFIG: &[u8] =
    br#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "tie_word_embeddings": true}"#;
/// Not UTF-8: a SentencePiece model is a protobuf.
const TOKENIZER_MODEL: &[u8] = &[0x0a, 0x0b, 0xff, 0x00, 0x80, 0xfe, 0x12];

struct Fixture {
    tmp: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let fixture = Self {
            tmp: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(fixture.dir()).unwrap();
        fixture
    }
    fn dir(&self) -> PathBuf {
        self.tmp.path().join("model")
    }
    fn out(&self) -> PathBuf {
        self.tmp.path().join("out.apr")
    }
    fn write(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.dir().join(name), bytes).unwrap();
    }
    fn import(&self) -> apr::Result<apr::fs::HfImportReport> {
        apr::fs::import_hf_dir(
            &self.dir(),
            self.out(),
            ModelType::NeuralCustom,
            ModelCard {
                name: "tiny".into(),
                ..ModelCard::default()
            },
            Compression::None,
            &mut |_| {},
        )
    }
    /// The import's error, having checked that nothing was written.
    fn refused(&self) -> Error {
        let error = self.import().unwrap_err();
        assert!(!self.out().exists(), "a refused import wrote {error}");
        error
    }
}

/// A tied-embedding Llama-like checkpoint (no `lm_head`), in one file, with tokenizer files and a
/// file that is not kept.
fn single() -> (Fixture, Vec<Spec>) {
    let fixture = Fixture::new();
    let tensors = vec![
        spec("model.embed_tokens.weight", Dtype::F32, &[8, 4], 1),
        spec(
            "model.layers.0.self_attn.q_proj.weight",
            Dtype::F32,
            &[4, 4],
            2,
        ),
        spec("model.norm.weight", Dtype::F32, &[4], 3),
    ];
    write_shard(&fixture.dir().join("model.safetensors"), &tensors);
    fixture.write("config.json", CONFIG);
    fixture.write("tokenizer.json", br#"{"model": {"type": "BPE"}}"#);
    fixture.write("tokenizer_config.json", br#"{"bos_token": "<s>"}"#);
    fixture.write("tokenizer.model", TOKENIZER_MODEL);
    fixture.write("README.md", b"# not kept");
    (fixture, tensors)
}

fn assert_tensors(out: &Path, expected: &[&Spec]) {
    let file = apr::fs::open(out).unwrap();
    let entries = &file.metadata().tensors;
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let expected_names: Vec<&str> = expected.iter().map(|s| s.0).collect();
    assert_eq!(names, expected_names);
    for (position, (name, dtype, shape, data)) in expected.iter().enumerate() {
        let tensor = file.tensor_at(position).unwrap();
        let dtype = match dtype {
            Dtype::F32 => DType::F32,
            Dtype::F16 => DType::F16,
            Dtype::BF16 => DType::BF16,
            other => panic!("{other:?}"),
        };
        assert_eq!(tensor.dtype, dtype, "{name}");
        let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        assert_eq!(tensor.shape, shape, "{name}");
        assert_eq!(tensor.data(), &data[..], "{name}");
    }
}

#[test]
fn a_single_file_checkpoint_imports_with_its_tokenizer_kept_byte_for_byte() {
    let (fixture, tensors) = single();
    let mut calls = Vec::new();
    let report = apr::fs::import_hf_dir(
        &fixture.dir(),
        fixture.out(),
        ModelType::NeuralCustom,
        ModelCard::default(),
        Compression::None,
        &mut |progress| calls.push(progress),
    )
    .unwrap();
    assert_eq!(report.tensors, 3);
    assert_eq!(report.shards, 1);
    assert_eq!(report.architecture, "LlamaForCausalLM");
    assert_eq!(report.config_model_type.as_deref(), Some("llama"));
    assert_eq!(
        report.source_files,
        [
            "config.json",
            "tokenizer.json",
            "tokenizer.model",
            "tokenizer_config.json"
        ]
    );
    assert_eq!(report.bytes, (32 + 16 + 4) * 4);
    // Progress: once before the first tensor, then after each, ending at the whole file.
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0].tensors, 0);
    let last = calls.last().unwrap();
    assert_eq!((last.tensors, last.total_tensors), (3, 3));
    let file_len = std::fs::metadata(fixture.dir().join("model.safetensors"))
        .unwrap()
        .len();
    assert_eq!((last.bytes, last.total_bytes), (file_len, file_len));

    // One dtype: the safetensors writer orders by name, and the header order is kept.
    let mut expected: Vec<&Spec> = tensors.iter().collect();
    expected.sort_by_key(|s| s.0);
    assert_tensors(&fixture.out(), &expected);
    // Tied embeddings: no lm_head in, none made up.
    let file = apr::fs::open(fixture.out()).unwrap();
    assert!(
        file.metadata()
            .tensors
            .iter()
            .all(|t| !t.name.contains("lm_head"))
    );
    let kept = &file.metadata().model_card.source_files;
    assert_eq!(kept.get("config.json"), Some(CONFIG));
    assert_eq!(kept.get("tokenizer.model"), Some(TOKENIZER_MODEL));
    assert_eq!(
        kept.get("tokenizer_config.json"),
        Some(&br#"{"bos_token": "<s>"}"#[..])
    );
    assert_eq!(kept.get("README.md"), None);
    assert_eq!(kept.0.len(), 4);
}

/// Two shards (F16 and BF16) and an index listing them out of order.
fn sharded() -> (Fixture, Vec<Spec>, Vec<Spec>) {
    let fixture = Fixture::new();
    let first = vec![
        spec("model.layers.0.mlp.up_proj.weight", Dtype::F16, &[4, 2], 5),
        spec("model.embed_tokens.weight", Dtype::F16, &[8, 2], 6),
    ];
    let second = vec![
        spec("model.norm.weight", Dtype::BF16, &[2], 7),
        spec("lm_head.weight", Dtype::BF16, &[8, 2], 8),
    ];
    write_shard(
        &fixture.dir().join("model-00001-of-00002.safetensors"),
        &first,
    );
    write_shard(
        &fixture.dir().join("model-00002-of-00002.safetensors"),
        &second,
    );
    fixture.write("config.json", CONFIG);
    fixture.write("generation_config.json", br#"{"do_sample": false}"#);
    write_index(
        &fixture,
        &[
            ("model.norm.weight", "model-00002-of-00002.safetensors"),
            (
                "model.embed_tokens.weight",
                "model-00001-of-00002.safetensors",
            ),
            ("lm_head.weight", "model-00002-of-00002.safetensors"),
            (
                "model.layers.0.mlp.up_proj.weight",
                "model-00001-of-00002.safetensors",
            ),
        ],
    );
    (fixture, first, second)
}

fn write_index(fixture: &Fixture, entries: &[(&str, &str)]) {
    let map: serde_json::Map<String, serde_json::Value> = entries
        .iter()
        .map(|(t, s)| ((*t).to_owned(), serde_json::Value::from(*s)))
        .collect();
    let index = serde_json::json!({"metadata": {"total_size": 0}, "weight_map": map});
    fixture.write("model.safetensors.index.json", index.to_string().as_bytes());
}

#[test]
fn a_sharded_checkpoint_imports_in_shard_then_header_order_with_dtypes_as_stored() {
    let (fixture, first, second) = sharded();
    let report = fixture.import().unwrap();
    assert_eq!((report.tensors, report.shards), (4, 2));
    assert_eq!(
        report.source_files,
        ["config.json", "generation_config.json"]
    );
    // Shard 1 then shard 2; within each, the order of the data (here by name, one dtype each).
    let expected = [&first[1], &first[0], &second[1], &second[0]];
    assert_tensors(&fixture.out(), &expected);
    // The same directory imports to the same bytes (deterministic order and card).
    let again = fixture.tmp.path().join("again.apr");
    apr::fs::import_hf_dir(
        &fixture.dir(),
        again.clone(),
        ModelType::NeuralCustom,
        ModelCard {
            name: "tiny".into(),
            ..ModelCard::default()
        },
        Compression::None,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        std::fs::read(fixture.out()).unwrap(),
        std::fs::read(again).unwrap()
    );
}

fn hf_error(error: &Error) -> &HfError {
    match error {
        Error::HfDirectory(error) => error,
        other => panic!("not an HF directory error: {other}"),
    }
}

#[test]
fn an_index_that_disagrees_with_its_shards_is_refused_naming_the_tensor_and_shard() {
    // A tensor the index lists that its shard does not hold.
    let (fixture, ..) = sharded();
    write_index(
        &fixture,
        &[
            ("model.norm.weight", "model-00002-of-00002.safetensors"),
            (
                "model.embed_tokens.weight",
                "model-00001-of-00002.safetensors",
            ),
            ("lm_head.weight", "model-00002-of-00002.safetensors"),
            (
                "model.layers.0.mlp.up_proj.weight",
                "model-00001-of-00002.safetensors",
            ),
            (
                "model.layers.1.mlp.up_proj.weight",
                "model-00001-of-00002.safetensors",
            ),
        ],
    );
    let error = fixture.refused();
    assert!(
        matches!(hf_error(&error), HfError::MissingTensor { tensor, shard }
        if tensor == "model.layers.1.mlp.up_proj.weight"
            && shard == "model-00001-of-00002.safetensors")
    );
    assert_eq!(error.signal(), Signal::InvalidFormat);
    assert!(error.to_string().starts_with("InvalidFormat"), "{error}");

    // A tensor a shard holds that the index does not list.
    write_index(
        &fixture,
        &[
            ("model.norm.weight", "model-00002-of-00002.safetensors"),
            (
                "model.embed_tokens.weight",
                "model-00001-of-00002.safetensors",
            ),
            (
                "model.layers.0.mlp.up_proj.weight",
                "model-00001-of-00002.safetensors",
            ),
        ],
    );
    let error = fixture.refused();
    assert!(
        matches!(hf_error(&error), HfError::NotInIndex { tensor, shard }
        if tensor == "lm_head.weight" && shard == "model-00002-of-00002.safetensors")
    );

    // A tensor in another shard than the index says.
    write_index(
        &fixture,
        &[
            ("model.norm.weight", "model-00001-of-00002.safetensors"),
            (
                "model.embed_tokens.weight",
                "model-00001-of-00002.safetensors",
            ),
            ("lm_head.weight", "model-00002-of-00002.safetensors"),
            (
                "model.layers.0.mlp.up_proj.weight",
                "model-00001-of-00002.safetensors",
            ),
        ],
    );
    let error = fixture.refused();
    assert!(
        matches!(hf_error(&error), HfError::WrongShard { tensor, shard, listed }
        if tensor == "model.norm.weight"
            && shard == "model-00002-of-00002.safetensors"
            && listed == "model-00001-of-00002.safetensors")
    );
}

#[test]
fn shard_names_that_leave_the_directory_and_missing_shards_are_refused() {
    let (fixture, first, _) = sharded();
    // The escape target exists, so only the name check can stop it.
    write_shard(&fixture.tmp.path().join("outside.safetensors"), &first);
    for shard in [
        "../outside.safetensors",
        "sub/../../outside.safetensors",
        "/etc/passwd.safetensors",
    ] {
        write_index(&fixture, &[("model.norm.weight", shard)]);
        let error = fixture.refused();
        assert!(
            matches!(hf_error(&error), HfError::ShardName { shard: s } if s == shard),
            "{error}"
        );
    }
    write_index(
        &fixture,
        &[
            ("model.norm.weight", "model-00002-of-00002.safetensors"),
            (
                "model.embed_tokens.weight",
                "model-00001-of-00003.safetensors",
            ),
        ],
    );
    let error = fixture.refused();
    assert!(matches!(hf_error(&error), HfError::MissingShard { shard }
        if shard == "model-00001-of-00003.safetensors"));
    assert!(
        error.to_string().contains("model-00001-of-00003"),
        "{error}"
    );
}

#[test]
fn a_directory_that_is_not_a_model_is_refused_by_what_it_lacks() {
    let (fixture, _) = single();
    std::fs::remove_file(fixture.dir().join("config.json")).unwrap();
    assert!(matches!(
        hf_error(&fixture.refused()),
        HfError::NoConfig { .. }
    ));

    for (config, reason) in [
        (&b"[\"LlamaForCausalLM\"]"[..], "not a JSON object"),
        (b"{\"model_type\": \"llama\"}", "no \"architectures\""),
        (
            b"{\"architectures\": \"LlamaForCausalLM\"}",
            "non-empty array",
        ),
    ] {
        fixture.write("config.json", config);
        let error = fixture.refused();
        assert!(
            matches!(hf_error(&error), HfError::Config { .. }),
            "{error}"
        );
        assert!(error.to_string().contains(reason), "{error}");
    }
    fixture.write("config.json", b"{not json");
    assert!(matches!(
        hf_error(&fixture.refused()),
        HfError::Json {
            file: "config.json",
            ..
        }
    ));

    fixture.write("config.json", CONFIG);
    std::fs::rename(
        fixture.dir().join("model.safetensors"),
        fixture.dir().join("pytorch_model.safetensors"),
    )
    .unwrap();
    assert!(matches!(
        hf_error(&fixture.refused()),
        HfError::NoWeights { .. }
    ));
}

#[test]
fn model_safetensors_beside_an_index_of_other_shards_is_ambiguous() {
    let (fixture, first, _) = sharded();
    write_shard(&fixture.dir().join("model.safetensors"), &first);
    assert!(matches!(
        hf_error(&fixture.refused()),
        HfError::AmbiguousWeights { .. }
    ));
}

#[test]
fn tensors_of_other_dtypes_are_refused_by_name() {
    let fixture = Fixture::new();
    fixture.write("config.json", CONFIG);
    write_shard(
        &fixture.dir().join("model.safetensors"),
        &[
            spec("model.norm.weight", Dtype::F32, &[2], 1),
            spec("position_ids", Dtype::I64, &[4], 2),
        ],
    );
    let error = fixture.refused();
    assert!(
        matches!(&error, Error::ExportFailed { tensor, .. } if tensor == "position_ids"),
        "{error}"
    );
}

#[test]
fn oversized_kept_files_are_refused_without_being_read() {
    let (fixture, _) = single();
    // Sparse: 17 MiB that are never read (the length is checked first).
    let big = std::fs::File::create(fixture.dir().join("tokenizer_config.json")).unwrap();
    big.set_len(17 << 20).unwrap();
    let error = fixture.refused();
    assert!(matches!(hf_error(&error), HfError::TooLarge { file, limit }
        if file == "tokenizer_config.json" && *limit == 16 << 20));
    assert_eq!(error.signal(), Signal::Io);
}

#[cfg(unix)]
#[test]
fn links_are_followed_only_within_the_directory_or_a_cache_snapshot() {
    use std::os::unix::fs::symlink;

    // A link out of the directory: its target would end up in the .apr card.
    let (fixture, _) = single();
    let secret = fixture.tmp.path().join("id_rsa");
    std::fs::write(&secret, b"secret").unwrap();
    std::fs::remove_file(fixture.dir().join("tokenizer.json")).unwrap();
    symlink(&secret, fixture.dir().join("tokenizer.json")).unwrap();
    let error = fixture.refused();
    assert!(
        matches!(hf_error(&error), HfError::LinkEscapes { file, .. }
            if file.ends_with("tokenizer.json")),
        "{error}"
    );
    assert_eq!(error.signal(), Signal::Io);

    // A link inside the directory is followed.
    std::fs::remove_file(fixture.dir().join("tokenizer.json")).unwrap();
    fixture.write("real-tokenizer.json", b"{}");
    symlink("real-tokenizer.json", fixture.dir().join("tokenizer.json")).unwrap();
    fixture.import().unwrap();
    let file = apr::fs::open(fixture.out()).unwrap();
    assert_eq!(
        file.metadata()
            .model_card
            .source_files
            .get("tokenizer.json"),
        Some(&b"{}"[..])
    );

    // The Hugging Face cache: snapshots/<revision>/* link into ../../blobs.
    let (fixture, tensors) = single();
    let entry = fixture.tmp.path().join("models--org--tiny");
    let blobs = entry.join("blobs");
    let snapshot = entry.join("snapshots").join("0123abcd");
    std::fs::create_dir_all(&blobs).unwrap();
    std::fs::create_dir_all(&snapshot).unwrap();
    for name in ["config.json", "model.safetensors", "tokenizer.model"] {
        std::fs::rename(fixture.dir().join(name), blobs.join(format!("blob-{name}"))).unwrap();
        symlink(format!("../../blobs/blob-{name}"), snapshot.join(name)).unwrap();
    }
    let report = apr::fs::import_hf_dir(
        &snapshot,
        fixture.out(),
        ModelType::NeuralCustom,
        ModelCard::default(),
        Compression::None,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(report.tensors, tensors.len());
    assert_eq!(report.source_files, ["config.json", "tokenizer.model"]);
}

#[cfg(unix)]
#[test]
fn special_files_are_refused_not_waited_on() {
    let (fixture, _) = single();
    std::fs::remove_file(fixture.dir().join("tokenizer.json")).unwrap();
    let fifo = fixture.dir().join("tokenizer.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let error = fixture.refused();
    assert!(
        matches!(hf_error(&error), HfError::Open { file, .. } if file == &fifo),
        "{error}"
    );
    assert!(error.to_string().contains("not a regular file"), "{error}");
}
