//! Writes the sample files the npm package's Node tests load (`packages/envelope-wasm/test/data`),
//! with the native writers and fixed keys, so the wasm readers are checked against files they did
//! not write. Deterministic: the keys come from fixed seeds and the encryption nonces and salts
//! from `test_support::CountingRng`, so re-running it gives the same bytes.
//!
//! `cargo run -p envelope-wasm --example make_test_data -- packages/envelope-wasm/test/data`
//!
//! Keys (published in `test/data/README.md`): the publisher and recipient are
//! `Identity::from_seed([7; 32])`; the password is `correct horse battery staple`.

use std::path::{Path, PathBuf};

use ald::interchange::{ReadOptions, Source};
use ald::{DatasetCard, DatasetType, Metadata, SaveOptions};
use apr::quant::QuantType;
use apr::{ModelCard, ModelType, Tensor, TensorModel};
use envelope_core::Compression;
use envelope_crypto::{Argon2Params, EncryptOptions, EncryptTo, Password};
use envelope_sign::Identity;
use fold::{FoldWriter, WriteOptions};
use test_support::CountingRng;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The password of `sales-signed-encrypted.ald`.
const PASSWORD: &str = "correct horse battery staple";

fn main() -> Result {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: make_test_data OUT_DIR")?,
    );
    std::fs::create_dir_all(&out)?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let identity = Identity::from_seed([7; 32]);
    let key = identity.signing_key();

    // The table: samples/sales.csv, its types inferred as pyarrow infers them.
    let source = Source::open(root.join("samples/sales.csv"), ReadOptions::default())?;
    let table = source.read_all()?;
    let card = DatasetCard {
        name: "sales".to_owned(),
        description: "4,000 synthetic orders (samples/sales.csv)".to_owned(),
        ..DatasetCard::default()
    };
    let save = |compression, chunk_rows: Option<usize>| {
        let mut options = SaveOptions::new(DatasetType::Tabular, compression);
        options.metadata = Metadata {
            card: Some(card.clone()),
            ..Metadata::default()
        };
        options.chunk_rows = chunk_rows;
        options
    };
    write(
        &out,
        "sales.ald",
        &table.to_bytes(&save(Compression::None, None))?,
    )?;
    write(
        &out,
        "sales-zstd-streaming.ald",
        &table.to_bytes(&save(Compression::ZstdL3, Some(1000)))?,
    )?;
    write(
        &out,
        "sales-lz4.ald",
        &table.to_bytes(&save(Compression::Lz4, None))?,
    )?;
    let signed = envelope_sign::sign(&table.to_bytes(&save(Compression::ZstdL3, None))?, &key)?;
    write(&out, "sales-signed.ald", &signed)?;
    let parts = table.to_parts(&save(Compression::ZstdL3, Some(1000)))?;
    let password = Password::new(PASSWORD);
    let sealed = envelope_crypto::encrypt(
        &parts,
        EncryptTo::Password {
            password: &password,
            params: Argon2Params::DEFAULT,
        },
        EncryptOptions::default(),
        &mut CountingRng(1),
    )?
    .to_bytes()?;
    write(
        &out,
        "sales-signed-encrypted.ald",
        &envelope_sign::sign(&sealed, &key)?,
    )?;

    // A model: f32 weights, their Q8_0 and Q4_0 forms, an f32 bias.
    let values: Vec<f32> = (0..64 * 32)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
        .collect();
    let weight = Tensor::from_f32("fc1.weight", vec![64, 32], &values)?;
    let quantized = |quant_type, name: &str| -> Result<Tensor> {
        let model = TensorModel::new(vec![weight.clone()])?.quantize(quant_type)?;
        let mut tensor = model.tensor("fc1.weight").ok_or("no tensor")?.clone();
        tensor.name = name.to_owned();
        Ok(tensor)
    };
    let model = TensorModel::new(vec![
        weight.clone(),
        quantized(QuantType::Q8_0, "fc2.weight")?,
        quantized(QuantType::Q4_0, "fc3.weight")?,
        Tensor::from_f32("fc1.bias", vec![64], &values[..64])?,
    ])?;
    let options = apr::SaveOptions {
        card: ModelCard {
            name: "tiny".to_owned(),
            version: "1.0.0".to_owned(),
            ..ModelCard::default()
        },
        compression: Compression::ZstdL3,
    };
    let model_bytes = apr::save_tensors_to_bytes(&model, ModelType::NeuralSequential, &options)?;
    write(&out, "tiny.apr", &envelope_sign::sign(&model_bytes, &key)?)?;
    let parts = apr::tensor_parts(&model, ModelType::NeuralSequential, &options)?;
    let sealed = envelope_crypto::encrypt(
        &parts,
        EncryptTo::Recipient(&identity.recipient_public_key()),
        EncryptOptions::default(),
        &mut CountingRng(2),
    )?
    .to_bytes()?;
    write(&out, "tiny-encrypted.apr", &sealed)?;

    // A container: one zstd chunk, one stored.
    let mut fold = FoldWriter::new(std::io::Cursor::new(Vec::new()), WriteOptions::default())?;
    fold.add_chunk("readme", "TEXT", b"hello from a fold container\n")?;
    fold.add_chunk("table", "ALDF", &std::fs::read(out.join("sales.ald"))?)?;
    let fold = fold
        .finish(fold::json::Map::default(), 1_764_000_000.0)?
        .into_inner();
    write(&out, "sample.fold", &fold)?;

    // What the tests expect: keys, column names, a lineage root hash computed natively.
    let files = [
        ("a.txt", "hello"),
        ("dir/b.txt", "world\n"),
        ("c.csv", "x,y\n1,2\n"),
    ];
    let root_hash = lineage::dataset_root_hash(files.iter().map(|(p, t)| (*p, t.as_bytes())))?;
    let bad_path = lineage::dataset_root_hash([("../x", &b""[..])])
        .expect_err("a path leaving the root")
        .failure_code()
        .as_str();
    let expected = serde_json::json!({
        "publisher": hex::encode(identity.signing_public_key().as_bytes()),
        "otherKey": hex::encode(Identity::from_seed([8; 32]).signing_public_key().as_bytes()),
        "x25519Secret": hex::encode(*identity.recipient_secret_key().to_bytes()),
        "password": PASSWORD,
        "columns": table.schema().fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>(),
        "rootHash": {
            "files": files,
            "hex": root_hash.root_hash.to_hex(),
            "badPathSignal": bad_path,
        },
    });
    write(&out, "expected.json", format!("{expected:#}\n").as_bytes())?;
    Ok(())
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result {
    std::fs::write(dir.join(name), bytes)?;
    Ok(())
}
