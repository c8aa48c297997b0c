//! `loadFromUrl` and `loadCached`: a `.ald` file downloaded with the host's `fetch` (streamed, with
//! progress), verified exactly as `loadAld` verifies it, and kept in IndexedDB under a caller's
//! key so a later visit loads it without the network (000/001 Appendix A: `load_from_url`,
//! `load_cached`).
//!
//! What is cached is the file's bytes, stored only after they verified under the caller's
//! options; `loadCached` verifies them again on every load (IndexedDB is the user's storage, not a
//! trusted one) and decrypts with the key given then, so no plaintext or key is ever stored.
//!
//! `fetch` is looked up on the global object, so the same code runs in a page, a worker and
//! Node.js 18+. IndexedDB exists in browsers (and workers) only: under Node.js `loadCached` and a
//! `cacheKey` fail with the `Io` signal.

// wasm-bindgen's exports expand to `unsafe` glue (see the manifest's lint table).
#![allow(unsafe_code)]

use js_sys::{Function, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    IdbDatabase, IdbFactory, IdbOpenDbRequest, IdbRequest, IdbTransactionMode, ReadableStream,
    ReadableStreamDefaultReader, Response,
};

use crate::dataset::AldDataset;
use crate::error::{Error, Result};
use crate::options::Keys;
use crate::{LoadOptionsArg, UrlOptionsArg, field};

/// The IndexedDB database and object store that hold cached files.
const DATABASE: &str = "envelope-wasm";
/// The object store, keyed by the caller's cache key.
const STORE: &str = "files";
/// The database schema version (one store, created on first open).
const DATABASE_VERSION: u32 = 1;
/// Most bytes reserved up front from a `Content-Length` (a server's number, not a promise).
const MAX_UPFRONT_RESERVATION: usize = 64 << 20;

/// Downloads, verifies and decodes a `.ald` file; with `cacheKey`, stores the verified bytes in
/// IndexedDB for [`load_cached`].
///
/// # Errors
/// An `EnvelopeError`: `Io` for the network or IndexedDB, else the first failed check.
#[wasm_bindgen(js_name = loadFromUrl)]
pub async fn load_from_url(
    url: String,
    options: Option<UrlOptionsArg>,
) -> Result<AldDataset, JsValue> {
    let options: JsValue = options.map_or(JsValue::UNDEFINED, Into::into);
    let keys = Keys::from_js(&options)?;
    let (cache_key, progress) = url_options(&options)?;
    let bytes = download(&url, progress.as_ref()).await?;
    let dataset = AldDataset::load(&bytes, &keys)?;
    if let Some(key) = cache_key {
        put(&key, &bytes).await?;
    }
    Ok(dataset)
}

/// Loads the file cached under `key` by [`load_from_url`], verified again under `options`;
/// `null` if nothing is cached under that key.
///
/// # Errors
/// An `EnvelopeError`: `Io` if IndexedDB is unavailable, else the first failed check.
#[wasm_bindgen(js_name = loadCached, unchecked_return_type = "AldDataset | null")]
pub async fn load_cached(key: String, options: Option<LoadOptionsArg>) -> Result<JsValue, JsValue> {
    let options: JsValue = options.map_or(JsValue::UNDEFINED, Into::into);
    let keys = Keys::from_js(&options)?;
    match get(&key).await? {
        Some(bytes) => Ok(AldDataset::load(&bytes, &keys)?.into()),
        None => Ok(JsValue::NULL),
    }
}

/// `cacheKey` and `onProgress` of the options.
fn url_options(options: &JsValue) -> Result<(Option<String>, Option<Function>)> {
    if !options.is_object() {
        return Ok((None, None));
    }
    let key = field(options, "cacheKey")?;
    let key = if key.is_undefined() || key.is_null() {
        None
    } else {
        Some(
            key.as_string()
                .ok_or_else(|| Error::argument("options.cacheKey", "not a string"))?,
        )
    };
    let progress = field(options, "onProgress")?;
    let progress = if progress.is_undefined() || progress.is_null() {
        None
    } else {
        Some(
            progress
                .dyn_into::<Function>()
                .map_err(|_| Error::argument("options.onProgress", "not a function"))?,
        )
    };
    Ok((key, progress))
}

/// The body of `url`, read chunk by chunk, `progress(loaded, total | null)` after each.
async fn download(url: &str, progress: Option<&Function>) -> Result<Vec<u8>> {
    let global = js_sys::global();
    let fetch = Reflect::get(&global, &"fetch".into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .ok_or_else(|| Error::host("fetch", &"no global fetch".into()))?;
    let response = fetch
        .call1(&global, &url.into())
        .map_err(|e| Error::host("fetch", &e))?;
    let response: Response = JsFuture::from(Promise::from(response))
        .await
        .map_err(|e| Error::host("fetch", &e))?
        .dyn_into()
        .map_err(|e| Error::host("fetch", &e))?;
    if !response.ok() {
        return Err(Error::Host {
            what: "fetch",
            detail: format!(
                "HTTP {} {} for {url}",
                response.status(),
                response.status_text()
            ),
        });
    }
    let total: Option<u64> = response
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|length| length.parse().ok());
    let mut bytes = Vec::new();
    if let Some(total) = total {
        bytes.reserve(usize::try_from(total).map_or(0, |t| t.min(MAX_UPFRONT_RESERVATION)));
    }
    let Some(body) = response.body() else {
        return Ok(bytes);
    };
    read_stream(&body, &mut bytes, |loaded| {
        if let Some(progress) = progress {
            #[allow(clippy::cast_precision_loss)] // JS numbers
            let total = total.map_or(JsValue::NULL, |t| JsValue::from_f64(t as f64));
            #[allow(clippy::cast_precision_loss)]
            let loaded = JsValue::from_f64(loaded as f64);
            // A throwing callback must not abort the download.
            let _ = progress.call2(&JsValue::NULL, &loaded, &total);
        }
    })
    .await?;
    Ok(bytes)
}

/// Appends every chunk of `body` to `bytes`, calling `step` with the running total.
async fn read_stream(
    body: &ReadableStream,
    bytes: &mut Vec<u8>,
    mut step: impl FnMut(usize),
) -> Result<()> {
    let reader: ReadableStreamDefaultReader = body
        .get_reader()
        .dyn_into()
        .map_err(|e| Error::host("response body", &e))?;
    loop {
        let chunk = JsFuture::from(reader.read())
            .await
            .map_err(|e| Error::host("response body", &e))?;
        if field(&chunk, "done")?.is_truthy() {
            return Ok(());
        }
        let value: Uint8Array = field(&chunk, "value")?
            .dyn_into()
            .map_err(|e| Error::host("response body", &e))?;
        let start = bytes.len();
        bytes.resize(start + value.length() as usize, 0);
        value.copy_to(&mut bytes[start..]);
        step(bytes.len());
    }
}

/// Waits for `request` to succeed and returns its result.
async fn settle(request: &IdbRequest, what: &'static str) -> Result<JsValue> {
    // The request's success and error events settle a promise directly: the event handlers are
    // the promise's own resolve and reject functions.
    let promise = Promise::new(&mut |resolve, reject| {
        request.set_onsuccess(Some(&resolve));
        request.set_onerror(Some(&reject));
    });
    let outcome = JsFuture::from(promise).await;
    request.set_onsuccess(None);
    request.set_onerror(None);
    match outcome {
        Ok(_) => request.result().map_err(|e| Error::host(what, &e)),
        Err(event) => Err(match request.error() {
            Ok(Some(error)) => Error::host(what, &error.into()),
            _ => Error::host(what, &event),
        }),
    }
}

/// The cache database, created on first use.
async fn open() -> Result<IdbDatabase> {
    let factory: IdbFactory = Reflect::get(&js_sys::global(), &"indexedDB".into())
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .ok_or_else(|| Error::host("IndexedDB", &"not available in this environment".into()))?;
    let request: IdbOpenDbRequest = factory
        .open_with_u32(DATABASE, DATABASE_VERSION)
        .map_err(|e| Error::host("IndexedDB open", &e))?;
    let upgrading = request.clone();
    let upgrade = Closure::once_into_js(move |_event: JsValue| {
        let created = upgrading
            .result()
            .and_then(|db| db.dyn_into::<IdbDatabase>())
            .and_then(|db| db.create_object_store(STORE));
        // A failure here aborts the version change, which fails the open request: reported there.
        drop(created);
    });
    request.set_onupgradeneeded(Some(upgrade.unchecked_ref()));
    let db = settle(&request, "IndexedDB open").await;
    request.set_onupgradeneeded(None);
    db?.dyn_into()
        .map_err(|e| Error::host("IndexedDB open", &e))
}

/// Stores `bytes` under `key`, returning once the transaction has committed (so a reload right
/// after `loadFromUrl` resolves finds the file).
async fn put(key: &str, bytes: &[u8]) -> Result<()> {
    let db = open().await?;
    let stored = commit(&db, key, bytes).await;
    db.close();
    stored
}

/// One read-write transaction putting `bytes` under `key`, awaited until complete.
async fn commit(db: &IdbDatabase, key: &str, bytes: &[u8]) -> Result<()> {
    let failed = |e: JsValue| Error::host("IndexedDB put", &e);
    let tx = db
        .transaction_with_str_and_mode(STORE, IdbTransactionMode::Readwrite)
        .map_err(failed)?;
    tx.object_store(STORE)
        .and_then(|store| store.put_with_key(&Uint8Array::from(bytes), &key.into()))
        .map_err(failed)?;
    // As in `settle`: the transaction's events settle the promise directly.
    let done = Promise::new(&mut |resolve, reject| {
        tx.set_oncomplete(Some(&resolve));
        tx.set_onerror(Some(&reject));
        tx.set_onabort(Some(&reject));
    });
    let outcome = JsFuture::from(done).await;
    tx.set_oncomplete(None);
    tx.set_onerror(None);
    tx.set_onabort(None);
    outcome.map(drop).map_err(|event| match tx.error() {
        Some(error) => failed(error.into()),
        None => failed(event),
    })
}

/// The bytes stored under `key`, if any.
async fn get(key: &str) -> Result<Option<Vec<u8>>> {
    let db = open().await?;
    let request = db
        .transaction_with_str(STORE)
        .and_then(|tx| tx.object_store(STORE))
        .and_then(|store| store.get(&key.into()))
        .map_err(|e| Error::host("IndexedDB get", &e))?;
    let value = settle(&request, "IndexedDB get").await;
    db.close();
    let value = value?;
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    if let Some(array) = value.dyn_ref::<Uint8Array>() {
        return Ok(Some(array.to_vec()));
    }
    if let Some(buffer) = value.dyn_ref::<js_sys::ArrayBuffer>() {
        return Ok(Some(Uint8Array::new(buffer).to_vec()));
    }
    Err(Error::host(
        "IndexedDB get",
        &"the cached value is not bytes".into(),
    ))
}
