//! A TCP proxy on 127.0.0.1 between the reader and the S3 server: it counts the GET requests that
//! pass and, when armed, cuts one response after a given number of bytes (the socket dropped in
//! the middle of the body), as a failing network does.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

#[derive(Default)]
struct Shared {
    gets: AtomicUsize,
    cuts: AtomicUsize,
    /// Bytes of server-to-client traffic still let through before the cut, when armed.
    cut_after: Mutex<Option<usize>>,
    stop: AtomicBool,
}

/// The proxy; stops accepting when dropped.
pub(crate) struct Proxy {
    port: u16,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Listens on a free port of 127.0.0.1 and forwards to `upstream` on 127.0.0.1.
    pub(crate) fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let accepting = Arc::clone(&shared);
        thread::spawn(move || {
            while !accepting.stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let server = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
                        relay(client, server, Arc::clone(&accepting));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Self { port, shared }
    }

    /// The endpoint to give the reader.
    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// GET requests forwarded so far.
    pub(crate) fn gets(&self) -> usize {
        self.shared.gets.load(Ordering::SeqCst)
    }

    /// Connections cut so far.
    pub(crate) fn cuts(&self) -> usize {
        self.shared.cuts.load(Ordering::SeqCst)
    }

    /// Cuts the connection once `bytes` more bytes have gone from the server to the reader.
    pub(crate) fn cut_after(&self, bytes: usize) {
        *self.shared.cut_after.lock().unwrap() = Some(bytes);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

fn relay(client: TcpStream, server: TcpStream, shared: Arc<Shared>) {
    for stream in [&client, &server] {
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
    }
    let (mut client_in, mut server_out) =
        (client.try_clone().unwrap(), server.try_clone().unwrap());
    let counting = Arc::clone(&shared);
    // Reader to server: requests, counted by their request line.
    thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match client_in.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let gets = buf[..n].windows(5).filter(|w| w == b"GET /").count();
            counting.gets.fetch_add(gets, Ordering::SeqCst);
            if server_out.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = server_out.shutdown(Shutdown::Both);
    });
    // Server to reader: responses, cut when armed.
    let (mut server_in, mut client_out) = (server, client);
    thread::spawn(move || {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match server_in.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut armed = shared.cut_after.lock().unwrap();
            if let Some(left) = *armed {
                if n > left {
                    let _ = client_out.write_all(&buf[..left]);
                    *armed = None;
                    shared.cuts.fetch_add(1, Ordering::SeqCst);
                    break;
                }
                *armed = Some(left - n);
            }
            drop(armed);
            if client_out.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = client_out.shutdown(Shutdown::Both);
        let _ = server_in.shutdown(Shutdown::Both);
    });
}
