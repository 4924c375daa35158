//! A loopback HTTP server that stands in for a download host or a package registry: it
//! answers `GET` of each path it was given with that path's bytes, anything else with 404,
//! and counts what it answered, so a test can tell its files were fetched from it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// The files, by URL path, and how often each was fetched.
#[derive(Default)]
struct Files {
    bodies: BTreeMap<String, Bytes>,
    fetched: BTreeMap<String, usize>,
}

/// A running server; it stops when dropped.
pub(crate) struct FileServer {
    url: String,
    files: Arc<Mutex<Files>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FileServer {
    /// Starts a server on `127.0.0.1:0` with no files.
    pub(crate) async fn start() -> FileServer {
        let files = Arc::new(Mutex::new(Files::default()));
        let app = axum::Router::new()
            .fallback(serve)
            .with_state(files.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the file server binds a loopback port");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FileServer { url, files, server }
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Serves `body` at `path` (which starts with `/`) from now on.
    pub(crate) fn put(&self, path: &str, body: impl Into<Bytes>) {
        assert!(path.starts_with('/'), "a URL path: {path}");
        self.files
            .lock()
            .unwrap()
            .bodies
            .insert(path.to_owned(), body.into());
    }

    /// How many times `path` was fetched.
    pub(crate) fn fetched(&self, path: &str) -> usize {
        self.files
            .lock()
            .unwrap()
            .fetched
            .get(path)
            .copied()
            .unwrap_or(0)
    }
}

async fn serve(State(files): State<Arc<Mutex<Files>>>, method: Method, uri: Uri) -> Response {
    let mut files = files.lock().unwrap();
    let path = uri.path().to_owned();
    let Some(body) = files.bodies.get(&path).cloned() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if method != Method::GET {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    *files.fetched.entry(path).or_default() += 1;
    body.into_response()
}
