//! A real S3 API on loopback for the remote-reading tests: `moto` in server mode
//! (`$INTEROP_PYTHON -m moto.server`, `moto[server]` in tests/python/requirements.txt), started on a
//! free port of 127.0.0.1 and killed when dropped, whether the test passed or not.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running moto server; killed on drop.
#[derive(Debug)]
pub struct MotoServer {
    child: Child,
    port: u16,
}

impl MotoServer {
    /// Starts the server and waits (at most 60 s) until it accepts connections.
    ///
    /// # Panics
    /// If `$INTEROP_PYTHON` is not set, the server does not start, or it does not listen in time.
    #[must_use]
    pub fn start() -> Self {
        let python = std::env::var_os("INTEROP_PYTHON").expect("INTEROP_PYTHON");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port on 127.0.0.1")
            .port();
        let child = Command::new(python)
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto.server (pip install 'moto[server]')");
        let server = Self { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto did not start within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    /// The port it listens on (127.0.0.1).
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its endpoint URL, for `AWS_ENDPOINT_URL`.
    #[must_use]
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Creates bucket `bucket` (`PUT /bucket`: moto does not check signatures, and
    /// `object_store` has no call for it).
    ///
    /// # Panics
    /// If the server does not answer 200.
    pub fn create_bucket(&self, bucket: &str) {
        use std::io::{Read as _, Write as _};
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("moto listens");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("a read timeout");
        write!(
            stream,
            "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )
        .expect("the request is sent");
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
