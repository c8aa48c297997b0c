//! `RemoteTrainingSet` (and `BlockingTrainingSet`): a sharded `.ald` set read from a prefix
//! gives every rank exactly the `(unit, batch)` sequence the local `ald::train::TrainingSet`
//! gives over the same files on disk, through a local directory (always run) and through S3
//! (`moto`, `#[ignore]`d as the other S3 tests).

use std::path::Path;

use ald::train::TrainingSet;
use ald::{LoadOptions, StreamingDataset};
use arrow_array::RecordBatch;
use envelope_core::{Compression, Signal};
use envelope_crypto::{DecryptionKey, EncryptOptions, EncryptTo, OsRng};
use futures::StreamExt as _;
use remote_file::{BlockingTrainingSet, Error, ReadOptions, RemoteTrainingSet};

use super::proxy::Proxy;
use super::s3::{Moto, location};
use super::{cheap_password, save_options, table};

/// The members of the test set, keyed relative to its root: nested directories, 1 to 8 chunks,
/// a whole (non-STREAMING) file, names whose bytewise order (lineage's) is not a directory
/// walk's nor a case-insensitive one (`B` < `a-b` < `a.` < `a/` < `a0`), and a file that is not
/// `.ald`. `encrypted` seals every member with the test password.
fn set_files(encrypted: bool) -> Vec<(&'static str, Vec<u8>)> {
    let members: [(&str, usize, usize, Option<usize>, Compression); 7] = [
        ("b/part-1.ald", 160, 20, Some(20), Compression::ZstdL3),
        ("a.ald", 70, 30, Some(25), Compression::None),
        ("a/z.ald", 90, 10, Some(40), Compression::Lz4),
        ("B.ald", 33, 12, None, Compression::Lz4),
        ("a-b.ald", 55, 20, Some(11), Compression::ZstdL3),
        ("a0.ald", 12, 50, Some(12), Compression::None),
        ("deep/er/x.ald", 200, 15, Some(64), Compression::ZstdL3),
    ];
    let (password, params) = cheap_password();
    let mut files: Vec<(&'static str, Vec<u8>)> = members
        .into_iter()
        .map(|(name, rows, width, chunk_rows, compression)| {
            let data = table(rows, width);
            let save = save_options(compression, chunk_rows);
            let bytes = if encrypted {
                // Encrypted files are STREAMING: one chunk per 25 rows when none is given.
                let mut save = save;
                save.chunk_rows = Some(chunk_rows.unwrap_or(25));
                let parts = data.to_parts(&save).unwrap();
                envelope_crypto::encrypt(
                    &parts,
                    EncryptTo::Password {
                        password: &password,
                        params,
                    },
                    EncryptOptions::default(),
                    &mut OsRng,
                )
                .unwrap()
                .to_bytes()
                .unwrap()
            } else {
                data.to_bytes(&save).unwrap()
            };
            (name, bytes)
        })
        .collect();
    files.push(("README.md", b"not part of the set".to_vec()));
    files
}

fn write_set(root: &Path, files: &[(&str, Vec<u8>)]) {
    for (name, bytes) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// The sampler configurations every comparison runs: (world_size, batch_size, shuffle seed,
/// drop_last).
const CONFIGS: [(u64, u64, Option<u64>, bool); 5] = [
    (1, 1, None, false),
    (3, 2, Some(11), false),
    (2, 3, Some(5), true),
    (4, 1, None, true),
    (5, 2, Some(0), false),
];

/// Every rank of every configuration in epochs 0..3 reads from `remote` exactly what it reads
/// from `local`, and the ranks together read the units the plan names (every unit once without
/// `drop_last`).
fn check_equal_to_local(
    local: &TrainingSet,
    load: &LoadOptions<'_>,
    remote: &BlockingTrainingSet,
    mut after_rank: impl FnMut(usize),
) {
    assert_eq!(
        remote.paths().collect::<Vec<_>>(),
        local.paths().collect::<Vec<_>>()
    );
    assert_eq!(remote.num_units(), local.num_units());
    assert_eq!(remote.num_rows(), local.num_rows());
    assert_eq!(remote.schema(), local.schema());
    assert_eq!(remote.set().units(), local.units());
    for unit in 0..=local.num_units() {
        assert_eq!(remote.unit(unit), local.unit(unit));
    }
    for (world, batch, seed, drop_last) in CONFIGS {
        let config = BlockingTrainingSet::sampler_config(world, batch, seed, drop_last).unwrap();
        assert_eq!(
            config,
            TrainingSet::sampler_config(world, batch, seed, drop_last).unwrap()
        );
        let sampler = config.sampler().unwrap();
        for epoch in 0..3 {
            let mut covered = Vec::new();
            for rank in 0..world {
                let expected: Vec<(u64, RecordBatch)> = local
                    .rank_batches(&sampler, rank, epoch, load)
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                let batches = remote.rank_batches(&sampler, rank, epoch).unwrap();
                assert_eq!(batches.size_hint().0, expected.len());
                let read: Vec<(u64, RecordBatch)> = batches
                    .map(|item| item.unwrap_or_else(|error| panic!("{error}")))
                    .collect();
                assert_eq!(
                    read, expected,
                    "{world} ranks, batch {batch}, seed {seed:?}, drop_last {drop_last}: rank {rank}, epoch {epoch}"
                );
                after_rank(expected.len());
                covered.extend(read.iter().map(|(unit, _)| *unit));
            }
            covered.sort_unstable();
            let mut planned: Vec<u64> = (0..world)
                .flat_map(|rank| sampler.rank_units(local.num_units(), rank, epoch))
                .collect();
            planned.sort_unstable();
            assert_eq!(covered, planned);
            if !drop_last {
                assert_eq!(covered, (0..local.num_units()).collect::<Vec<_>>());
            }
        }
    }
    let sampler = TrainingSet::sampler_config(2, 1, None, false)
        .unwrap()
        .sampler()
        .unwrap();
    let error = remote.rank_batches(&sampler, 2, 0).unwrap_err();
    assert_eq!(error.signal(), Signal::Usage, "{error}");
}

#[test]
fn a_local_prefix_reads_as_the_local_training_set() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("set");
    write_set(&root, &set_files(false));
    let load = LoadOptions::default();
    let local = TrainingSet::open(&root, &load).unwrap();
    assert_eq!(
        local.paths().collect::<Vec<_>>(),
        [
            "B.ald",
            "a-b.ald",
            "a.ald",
            "a/z.ald",
            "a0.ald",
            "b/part-1.ald",
            "deep/er/x.ald"
        ]
    );
    let url = format!("file://{}/", root.display());
    for prefix in [root.to_str().unwrap(), url.as_str()] {
        let remote = BlockingTrainingSet::open(prefix, &load, ReadOptions::default())
            .unwrap_or_else(|error| panic!("{prefix}: {error}"));
        check_equal_to_local(&local, &load, &remote, |_| ());
    }
}

/// The async API: the stream of a rank, collected on a runtime of the caller's, equals the
/// local read, and dropping a stream half read leaves the set usable.
#[test]
fn the_async_stream_reads_as_the_local_training_set() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("set");
    write_set(&root, &set_files(false));
    let load = LoadOptions::default();
    let local = TrainingSet::open(&root, &load).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let small = ReadOptions {
        max_requests: 2,
        max_in_flight: 1024,
        ..ReadOptions::default()
    };
    let remote = runtime
        .block_on(RemoteTrainingSet::open(
            root.to_str().unwrap(),
            &load,
            small,
        ))
        .unwrap();
    let sampler = RemoteTrainingSet::sampler_config(3, 2, Some(9), false)
        .unwrap()
        .sampler()
        .unwrap();
    for rank in 0..3 {
        let expected: Vec<_> = local
            .rank_batches(&sampler, rank, 1, &load)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let read: Vec<_> = runtime.block_on(async {
            let mut half = remote.rank_batches(&sampler, rank, 1).unwrap();
            half.next().await.unwrap().unwrap();
            drop(half);
            remote
                .rank_batches(&sampler, rank, 1)
                .unwrap()
                .map(Result::unwrap)
                .collect()
                .await
        });
        assert_eq!(read, expected);
    }
    // Outside a runtime, the stream cannot be made: a typed error, not a panic.
    let error = remote.rank_batches(&sampler, 0, 0).unwrap_err();
    assert_eq!(error.signal(), Signal::Io, "{error}");
}

#[test]
fn a_local_set_is_refused_as_the_local_reader_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let load = LoadOptions::default();
    // No .ald file: a typed Usage error.
    let root = dir.path().join("empty");
    write_set(&root, &[("notes.txt", b"text".to_vec())]);
    let error = BlockingTrainingSet::open(root.to_str().unwrap(), &load, ReadOptions::default())
        .unwrap_err();
    assert!(matches!(error, Error::EmptySet { .. }), "{error}");
    assert_eq!(error.signal(), Signal::Usage);
    // Two schemas.
    let root = dir.path().join("mixed");
    let mut files = set_files(false);
    let other = ald::ArrowDataset::from_batch(
        RecordBatch::try_from_iter([(
            "other",
            std::sync::Arc::new(arrow_array::Int32Array::from(vec![1, 2, 3]))
                as arrow_array::ArrayRef,
        )])
        .unwrap(),
    );
    files.push((
        "c.ald",
        other
            .to_bytes(&save_options(Compression::None, Some(2)))
            .unwrap(),
    ));
    write_set(&root, &files);
    let error = BlockingTrainingSet::open(root.to_str().unwrap(), &load, ReadOptions::default())
        .unwrap_err();
    assert_eq!(error.signal(), Signal::SchemaMismatch, "{error}");
    assert!(error.to_string().contains("c.ald"), "{error}");
    assert_eq!(
        TrainingSet::open(&root, &load).unwrap_err().signal(),
        Signal::SchemaMismatch
    );
    // A member replaced after the open: its chunks are refused, the others still read.
    let root = dir.path().join("replaced");
    let files = set_files(false);
    write_set(&root, &files);
    let remote =
        BlockingTrainingSet::open(root.to_str().unwrap(), &load, ReadOptions::default()).unwrap();
    let next = root.join("next.tmp");
    std::fs::write(&next, &files[0].1[..]).unwrap();
    std::fs::rename(&next, root.join("a0.ald")).unwrap();
    let sampler = TrainingSet::sampler_config(1, 1, None, false)
        .unwrap()
        .sampler()
        .unwrap();
    let items: Vec<_> = remote.rank_batches(&sampler, 0, 0).unwrap().collect();
    assert_eq!(items.len() as u64, remote.num_units());
    for (unit, item) in (0..).zip(items) {
        match (remote.unit(unit).unwrap().0, item) {
            ("a0.ald", Err(error)) => {
                assert!(matches!(error, Error::ObjectChanged { .. }), "{error}");
            }
            ("a0.ald", Ok(_)) => panic!("a replaced member read"),
            (path, item) => {
                assert!(item.is_ok(), "{path}: {:?}", item.err());
            }
        }
    }
}

/// The set on S3, read through a proxy that counts GETs: opening N members is one LIST and two
/// ranges each (one more for the whole file), each chunk one range; every rank reads what the
/// local set reads.
#[test]
#[ignore = "needs $INTEROP_PYTHON with moto[server] (.ci/run)"]
fn a_set_on_s3_reads_as_the_local_training_set() {
    let moto = Moto::start();
    let proxy = Proxy::start(moto.port());
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("set");
    let files = set_files(false);
    write_set(&root, &files);
    for (name, bytes) in &files {
        moto.put(&format!("runs/set/{name}"), bytes);
    }
    // Beside the prefix, not in it.
    moto.put("runs/set2/a.ald", &files[1].1);
    let load = LoadOptions::default();
    let local = TrainingSet::open(&root, &load).unwrap();
    let members = local.paths().count();
    let before = proxy.gets();
    let remote = BlockingTrainingSet::open_location(
        location(&proxy.endpoint(), "runs/set/"),
        &load,
        ReadOptions::default(),
    )
    .unwrap();
    // One LIST, two ranges per member, the whole file (B.ald) once more.
    assert_eq!(proxy.gets() - before, 1 + 2 * members + 1);
    assert_eq!(remote.set().requests(), 2 * members as u64 + 1);
    let whole: u64 = remote
        .set()
        .datasets()
        .iter()
        .filter(|dataset| !dataset.is_ranged())
        .map(|dataset| dataset.num_chunks() as u64)
        .sum();
    assert_eq!(whole, 1);
    let mut counted = proxy.gets();
    let proxy_ref = &proxy;
    check_equal_to_local(&local, &load, &remote, |read| {
        // One GET per chunk read, none for the unit of the file held whole (at most one per
        // rank and epoch).
        let gets = proxy_ref.gets() - counted;
        assert!(
            gets == read || gets + 1 == read,
            "{gets} GETs for {read} chunks"
        );
        counted = proxy_ref.gets();
    });
}

#[test]
#[ignore = "needs $INTEROP_PYTHON with moto[server] (.ci/run)"]
fn an_encrypted_set_on_s3_reads_with_its_key_only() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sealed");
    let files = set_files(true);
    write_set(&root, &files);
    for (name, bytes) in &files {
        moto.put(&format!("sealed/{name}"), bytes);
    }
    let (password, _) = cheap_password();
    let keyed = LoadOptions {
        key: Some(DecryptionKey::Password(&password)),
        ..LoadOptions::default()
    };
    let local = TrainingSet::open(&root, &keyed).unwrap();
    let remote = BlockingTrainingSet::open_location(
        location(&moto.endpoint(), "sealed"),
        &keyed,
        ReadOptions::default(),
    )
    .unwrap();
    assert!(remote.set().datasets().iter().all(|d| d.is_encrypted()));
    check_equal_to_local(&local, &keyed, &remote, |_| ());

    let sampler = TrainingSet::sampler_config(1, 1, None, false)
        .unwrap()
        .sampler()
        .unwrap();
    let keyless = BlockingTrainingSet::open_location(
        location(&moto.endpoint(), "sealed"),
        &LoadOptions::default(),
        ReadOptions::default(),
    )
    .unwrap();
    let error = keyless.rank_batches(&sampler, 0, 0).unwrap_err();
    assert_eq!(error.signal(), Signal::DecryptionFailed, "{error}");
    // A wrong password: every chunk refused by AES-GCM, none decoded.
    let wrong = envelope_crypto::Password::new("not the password");
    let wrong_key = BlockingTrainingSet::open_location(
        location(&moto.endpoint(), "sealed"),
        &LoadOptions {
            key: Some(DecryptionKey::Password(&wrong)),
            ..LoadOptions::default()
        },
        ReadOptions::default(),
    )
    .unwrap();
    let items: Vec<_> = wrong_key.rank_batches(&sampler, 0, 0).unwrap().collect();
    assert_eq!(items.len() as u64, wrong_key.num_units());
    for item in items {
        let error = item.unwrap_err();
        assert_eq!(error.signal(), Signal::DecryptionFailed, "{error}");
    }
}

#[test]
#[ignore = "needs $INTEROP_PYTHON with moto[server] (.ci/run)"]
fn empty_truncated_and_replaced_sets_on_s3_are_refused() {
    let moto = Moto::start();
    let files = set_files(false);
    let load = LoadOptions::default();
    // Nothing under the prefix, or nothing .ald.
    moto.put("other/notes.txt", b"text");
    for prefix in ["nothing/", "other"] {
        let error = BlockingTrainingSet::open_location(
            location(&moto.endpoint(), prefix),
            &load,
            ReadOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(error, Error::EmptySet { .. }), "{prefix}: {error}");
        assert_eq!(error.signal(), Signal::Usage);
    }
    // A truncated member: the open fails with the local reader's signal.
    for (name, bytes) in &files {
        moto.put(&format!("cut/{name}"), bytes);
    }
    let (name, bytes) = &files[0];
    moto.put(&format!("cut/{name}"), &bytes[..bytes.len() - 100]);
    let error = BlockingTrainingSet::open_location(
        location(&moto.endpoint(), "cut"),
        &load,
        ReadOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(
            error.signal(),
            Signal::InvalidFormat | Signal::ChecksumMismatch
        ),
        "{error}"
    );
    // A member replaced after the open: its chunks stop with ObjectChanged.
    for (name, bytes) in &files {
        moto.put(&format!("replaced/{name}"), bytes);
    }
    let remote = BlockingTrainingSet::open_location(
        location(&moto.endpoint(), "replaced"),
        &load,
        ReadOptions::default(),
    )
    .unwrap();
    moto.put("replaced/a.ald", &files[0].1);
    let sampler = TrainingSet::sampler_config(1, 1, None, false)
        .unwrap()
        .sampler()
        .unwrap();
    let planned = (0..remote.num_units())
        .filter(|&unit| remote.unit(unit).unwrap().0 == "a.ald")
        .count();
    assert_eq!(planned, 3, "a.ald: 70 rows in chunks of 25");
    let mut refused = 0;
    for (unit, item) in (0..).zip(remote.rank_batches(&sampler, 0, 0).unwrap()) {
        let (path, _) = remote.unit(unit).unwrap();
        match item {
            Err(error) if path == "a.ald" => {
                assert!(matches!(error, Error::ObjectChanged { .. }), "{error}");
                assert_eq!(error.signal(), Signal::ChecksumMismatch);
                refused += 1;
            }
            Err(error) => panic!("{path}: {error}"),
            Ok(_) => assert_ne!(path, "a.ald", "a replaced member read"),
        }
    }
    assert_eq!(refused, planned, "every chunk of a.ald refused");
}

/// The chunks a member's unit names are the member's own chunks, whatever the store.
#[test]
fn units_name_the_members_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("set");
    write_set(&root, &set_files(false));
    let load = LoadOptions::default();
    let remote =
        BlockingTrainingSet::open(root.to_str().unwrap(), &load, ReadOptions::default()).unwrap();
    let sampler = TrainingSet::sampler_config(1, 1, None, false)
        .unwrap()
        .sampler()
        .unwrap();
    for item in remote.rank_batches(&sampler, 0, 0).unwrap() {
        let (unit, batch) = item.unwrap();
        let (path, chunk) = remote.unit(unit).unwrap();
        let file = StreamingDataset::open(root.join(path), &load).unwrap();
        assert_eq!(
            batch,
            file.get_chunk(chunk).unwrap(),
            "{path} chunk {chunk}"
        );
    }
}

/// A rank's stream fetches ahead on the runtime's workers, while the consumer holds its batch,
/// exactly `max_requests` units and no more.
#[test]
fn a_rank_fetches_a_bounded_number_of_chunks_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("set");
    write_set(&root, &set_files(false));
    let load = LoadOptions::default();
    let sampler = TrainingSet::sampler_config(1, 1, None, false)
        .unwrap()
        .sampler()
        .unwrap();
    for ahead in [1, 3, 6] {
        let options = ReadOptions {
            max_requests: ahead,
            ..ReadOptions::default()
        };
        let remote = BlockingTrainingSet::open(root.to_str().unwrap(), &load, options).unwrap();
        let opened = remote.set().requests();
        // Units held whole cost no request.
        let ranged = |units: std::ops::Range<u64>| {
            units
                .filter(|&unit| {
                    let (file, _) = remote.set().units().locate(unit).unwrap();
                    remote.set().datasets()[file].is_ranged()
                })
                .count() as u64
        };
        let mut batches = remote.rank_batches(&sampler, 0, 0).unwrap();
        batches.next().unwrap().unwrap();
        let expected = ranged(0..ahead as u64);
        // The units after the first complete in the background, while nothing is polled.
        let waited = std::time::Instant::now();
        while remote.set().requests() - opened < expected
            && waited.elapsed() < std::time::Duration::from_secs(10)
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(remote.set().requests() - opened, expected, "{ahead} ahead");
        // Each further item takes up one more unit.
        batches.next().unwrap().unwrap();
        let taken = ranged(0..ahead as u64 + 1);
        let waited = std::time::Instant::now();
        while remote.set().requests() - opened < taken
            && waited.elapsed() < std::time::Duration::from_secs(10)
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(remote.set().requests() - opened, taken, "{ahead} ahead");
        assert_eq!(batches.count() as u64, remote.num_units() - 2);
        assert_eq!(
            remote.set().requests() - opened,
            ranged(0..remote.num_units())
        );
    }
}
