//! Where a file is: a URL or a local path, turned into an `object_store` store and a path in it.
//!
//! Credentials, endpoints and options come from the environment as `object_store`'s builders read
//! them (`AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, `AWS_ACCESS_KEY_ID`, `AWS_REGION`,
//! `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_NAME`, ...): nothing is configured here that
//! the standard variables do not say.

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreScheme, RetryConfig};
use url::Url;

use crate::{Error, Result};

/// A file in a store.
#[derive(Debug, Clone)]
pub struct Location {
    pub(crate) store: Arc<dyn ObjectStore>,
    pub(crate) path: Path,
    /// The location as the user wrote it (for messages).
    pub(crate) display: String,
}

impl Location {
    /// Parses `s3://bucket/key`, `gs://bucket/key`, `az://container/key` (and object_store's other
    /// Azure spellings), `http(s)://host/path`, `file:///path` or a plain local path.
    ///
    /// # Errors
    /// `Location` (`Usage`) for an unknown scheme or a store the environment does not configure.
    pub fn parse(location: &str) -> Result<Self> {
        Self::parse_with(location, std::iter::empty::<(String, String)>())
    }

    /// As [`Location::parse`], with store options (`object_store`'s configuration keys, such as
    /// `aws_endpoint` or `aws_allow_http`) applied over those the environment gives.
    ///
    /// # Errors
    /// As [`Location::parse`]; `Location` for a key the store does not know.
    pub fn parse_with<K: AsRef<str>, V: Into<String>>(
        location: &str,
        options: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self> {
        let refuse = |reason: String| Error::Location {
            location: location.to_owned(),
            reason,
        };
        if !location.contains("://") {
            let path = Path::from_filesystem_path(location)
                .map_err(|error| refuse(format!("not a readable local path: {error}")))?;
            return Ok(Self {
                store: Arc::new(LocalFileSystem::new()),
                path,
                display: location.to_owned(),
            });
        }
        let url = Url::parse(location).map_err(|error| refuse(format!("not a URL: {error}")))?;
        let (scheme, path) = ObjectStoreScheme::parse(&url)
            .map_err(|error| refuse(format!("not a storage URL: {error}")))?;
        // object_store's own request retries stay on; this crate adds retries of whole ranges
        // (bodies cut mid-stream, which a request retry does not always cover).
        let retry = RetryConfig::default();
        let built: std::result::Result<Arc<dyn ObjectStore>, object_store::Error> = match scheme {
            ObjectStoreScheme::Local => Ok(Arc::new(LocalFileSystem::new())),
            ObjectStoreScheme::AmazonS3 => {
                let mut builder = AmazonS3Builder::from_env().with_url(location);
                for (key, value) in options {
                    let key = key.as_ref().parse().map_err(|e| refuse(format!("{e}")))?;
                    builder = builder.with_config(key, value);
                }
                builder
                    .with_retry(retry)
                    .build()
                    .map(|store| Arc::new(store) as _)
            }
            ObjectStoreScheme::GoogleCloudStorage => {
                let mut builder = GoogleCloudStorageBuilder::from_env().with_url(location);
                for (key, value) in options {
                    let key = key.as_ref().parse().map_err(|e| refuse(format!("{e}")))?;
                    builder = builder.with_config(key, value);
                }
                builder
                    .with_retry(retry)
                    .build()
                    .map(|store| Arc::new(store) as _)
            }
            ObjectStoreScheme::MicrosoftAzure => {
                let mut builder = MicrosoftAzureBuilder::from_env().with_url(location);
                for (key, value) in options {
                    let key = key.as_ref().parse().map_err(|e| refuse(format!("{e}")))?;
                    builder = builder.with_config(key, value);
                }
                builder
                    .with_retry(retry)
                    .build()
                    .map(|store| Arc::new(store) as _)
            }
            ObjectStoreScheme::Http => {
                let origin = url.origin().ascii_serialization();
                HttpBuilder::new()
                    .with_url(origin)
                    .with_retry(retry)
                    .build()
                    .map(|store| Arc::new(store) as _)
            }
            other => return Err(refuse(format!("{other:?} stores are not supported"))),
        };
        let store = built.map_err(|error| refuse(error.to_string()))?;
        Ok(Self {
            store,
            path,
            display: location.to_owned(),
        })
    }

    /// `path` in a store the caller already has (one registered with a DataFusion runtime, say,
    /// so that several readers share its client and connection pool); `display` names it in
    /// messages.
    #[must_use]
    pub fn from_store(store: Arc<dyn ObjectStore>, path: Path, display: impl Into<String>) -> Self {
        Self {
            store,
            path,
            display: display.into(),
        }
    }

    /// The store the file is in.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The file's path in its store.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The location as given.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.display
    }

    /// Whether `text` names a remote store rather than a local path (has a scheme other than
    /// `file`): what a CLI asks to choose between a memory map and this crate.
    #[must_use]
    pub fn is_remote(text: &str) -> bool {
        text.split_once("://")
            .is_some_and(|(scheme, _)| !scheme.eq_ignore_ascii_case("file"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_recognised_and_unknown_ones_refused() {
        assert!(Location::is_remote("s3://bucket/x.ald"));
        assert!(Location::is_remote("https://host/x.ald"));
        assert!(!Location::is_remote("file:///tmp/x.ald"));
        assert!(!Location::is_remote("data/x.ald"));
        let error = Location::parse("ftp://host/x.ald").unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::Usage);
        let http = Location::parse("http://127.0.0.1:9/dir/x.ald").unwrap();
        assert_eq!(http.path.as_ref(), "dir/x.ald");
        let file = Location::parse("file:///tmp/x.ald").unwrap();
        assert_eq!(file.path.as_ref(), "tmp/x.ald");
    }
}
