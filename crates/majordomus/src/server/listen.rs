//! The listener of a serving process: it accepts every connection, holds each one to
//! deadlines, and caps how many it keeps open.
//!
//! A server that stops answering the identity probe (`GET /`) is taken for a dead one, and
//! its lease is taken over. Idle or half-written connections must therefore never use up the
//! process's file descriptors or its attention: a connection gets a few seconds to send a
//! request's headers and a minute of quiet between requests; beyond [`MAX_CONNECTIONS`] (or
//! half the open-file limit) new connections are still accepted, but on probation — one
//! request, which must come at once — so the probe is answered however many connections are
//! open.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;

/// The most connections served in full at once: kept alive between requests and given the
/// whole header timeout. Fewer when the open-file limit is low (see [`connection_cap`]).
pub const MAX_CONNECTIONS: usize = 1024;

/// How long a kept-alive connection may wait for its next request. Longer than the gap
/// between the requests of any client that keeps a connection (a bridge pings its server
/// every 5 s), so a client never sends a request down a connection the server is just
/// closing; short enough that an idle connection does not hold its place for long.
pub const KEEP_ALIVE_IDLE: Duration = Duration::from_secs(60);

/// How long a connection on probation has to deliver its request head. A real client writes
/// its request as soon as it has connected, so by the time a busy server accepts the
/// connection the head is already waiting; only a connection that never meant to send one
/// waits this out.
pub const PROBATION_HEAD_TIMEOUT: Duration = Duration::from_millis(500);

/// The pause after `accept` fails for want of resources (no file descriptor left, say):
/// enough not to spin, short enough to accept again as soon as a connection has closed.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// The most a connection's read buffer grows to. Request heads are a few hundred bytes;
/// hyper's default (about 400 KB) would let every hostile connection pin far more.
const READ_BUFFER_LIMIT: usize = 64 * 1024;

/// Serves `router` on `listener` until `shutdown` is cancelled, then asks every open
/// connection to close after its current request and returns once all have. Accept
/// failures are retried, never returned.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    header_timeout: Duration,
    shutdown: CancellationToken,
) {
    let limits = Limits {
        connections: connection_cap(raise_open_file_limit()),
        head: header_timeout,
        idle: KEEP_ALIVE_IDLE,
        probation_head: PROBATION_HEAD_TIMEOUT.min(header_timeout),
    };
    serve_with(listener, router, limits, shutdown).await;
}

/// What the listener holds its connections to.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// How many connections are served in full at once.
    connections: usize,
    /// How long a connection in full has to send a request head.
    head: Duration,
    /// How long a connection in full may wait between requests.
    idle: Duration,
    /// How long a connection on probation has to send its request head.
    probation_head: Duration,
}

async fn serve_with(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.connections));
    let connections = TaskTracker::new();
    let mut starved = false;
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) if concerns_one_connection(&error) => continue,
            Err(error) => {
                if !starved {
                    tracing::warn!(%error, "cannot accept connections; retrying as connections close");
                    starved = true;
                }
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                }
            }
        };
        if starved {
            tracing::info!("accepting connections again");
            starved = false;
        }
        // Answers are small and a client waits on each one: without TCP_NODELAY, Nagle's
        // algorithm meets a keep-alive client's delayed ACK and every call stalls ~40 ms.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        let slot = slots.clone().try_acquire_owned().ok();
        connections.spawn(serve_connection(
            stream,
            router.clone(),
            slot,
            limits,
            shutdown.clone(),
        ));
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// Whether an accept error concerns only the one connection (reset before it was accepted,
/// say), so the next accept may go ahead at once.
fn concerns_one_connection(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Serves one connection until it closes, misses a deadline, or the server stops.
///
/// A connection with one of the capped slots is kept alive between requests and given the
/// whole header timeout; the slot frees when it closes. A connection without one is on
/// probation: one request, whose head must arrive within the probation timeout, and
/// `Connection: close` on the answer. The probe is answered this way however many
/// connections are open, and so is a client with the token whose kept-alive connection
/// lapsed while the slots were full, rather than turned away to fail over for nothing.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    slot: Option<OwnedSemaphorePermit>,
    limits: Limits,
    shutdown: CancellationToken,
) {
    let in_full = slot.is_some();
    let deadlines = if in_full {
        Deadlines {
            head: limits.head,
            idle: limits.idle,
        }
    } else {
        Deadlines {
            head: limits.probation_head,
            idle: limits.probation_head,
        }
    };
    let clock = Arc::new(ConnectionClock::new(deadlines, Instant::now()));
    let io = TokioIo::new(Watched {
        stream,
        clock: clock.clone(),
    });
    let service = Tracked {
        router,
        clock: clock.clone(),
    };
    let connection = http1::Builder::new()
        .keep_alive(in_full)
        .header_read_timeout(None)
        .max_buf_size(READ_BUFFER_LIMIT)
        .serve_connection(io, service);
    tokio::pin!(connection);
    let mut stopping = false;
    loop {
        let deadline = clock.deadline();
        tokio::select! {
            ended = &mut connection => {
                if let Err(error) = ended {
                    tracing::debug!(%error, "a connection ended with an error");
                }
                break;
            }
            () = clock.changed.notified() => {}
            () = sleep_until(deadline) => {
                if clock.deadline().is_some_and(|deadline| deadline <= Instant::now()) {
                    tracing::debug!("closed a connection that missed its deadline");
                    break;
                }
            }
            () = shutdown.cancelled(), if !stopping => {
                connection.as_mut().graceful_shutdown();
                stopping = true;
            }
        }
    }
    drop(slot);
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The two deadlines a connection is held to.
#[derive(Clone, Copy, Debug)]
struct Deadlines {
    /// From the connection's start, or the first byte of its next request, to a whole head.
    head: Duration,
    /// From the end of one answer to the first byte of the next request.
    idle: Duration,
}

/// What a connection is doing, as far as its deadlines care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request head, since the connection opened or the next request's first
    /// byte arrived.
    AwaitingHead { since: Instant },
    /// Serving requests: no deadline while an answer is on its way.
    Serving { requests: usize },
    /// Kept alive between requests, since the last answer ended.
    Idle { since: Instant },
}

impl Phase {
    fn bytes_arrived(self, now: Instant) -> Phase {
        match self {
            Phase::Idle { .. } => Phase::AwaitingHead { since: now },
            other => other,
        }
    }

    fn request_began(self) -> Phase {
        match self {
            Phase::Serving { requests } => Phase::Serving {
                requests: requests + 1,
            },
            Phase::AwaitingHead { .. } | Phase::Idle { .. } => Phase::Serving { requests: 1 },
        }
    }

    fn request_ended(self, now: Instant) -> Phase {
        match self {
            Phase::Serving { requests } if requests > 1 => Phase::Serving {
                requests: requests - 1,
            },
            Phase::Serving { .. } => Phase::Idle { since: now },
            other => other,
        }
    }

    fn deadline(self, deadlines: Deadlines) -> Option<Instant> {
        match self {
            Phase::AwaitingHead { since } => Some(since + deadlines.head),
            Phase::Idle { since } => Some(since + deadlines.idle),
            Phase::Serving { .. } => None,
        }
    }
}

/// One connection's phase, shared by its socket (bytes arriving), its service (requests
/// beginning, answers ending) and its watchdog, which is woken on every change.
struct ConnectionClock {
    deadlines: Deadlines,
    phase: Mutex<Phase>,
    changed: Notify,
}

impl ConnectionClock {
    fn new(deadlines: Deadlines, opened: Instant) -> ConnectionClock {
        ConnectionClock {
            deadlines,
            phase: Mutex::new(Phase::AwaitingHead { since: opened }),
            changed: Notify::new(),
        }
    }

    fn update(&self, step: impl FnOnce(Phase) -> Phase) {
        let mut phase = self.phase.lock().unwrap_or_else(PoisonError::into_inner);
        let next = step(*phase);
        if next != *phase {
            *phase = next;
            self.changed.notify_one();
        }
    }

    fn deadline(&self) -> Option<Instant> {
        self.phase
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .deadline(self.deadlines)
    }
}

/// Held from the moment a request's head is read until its answer has been written.
struct RequestInFlight(Arc<ConnectionClock>);

impl Drop for RequestInFlight {
    fn drop(&mut self) {
        self.0.update(|phase| phase.request_ended(Instant::now()));
    }
}

/// A connection's socket, telling its clock when bytes arrive.
struct Watched {
    stream: TcpStream,
    clock: Arc<ConnectionClock>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.clock
                .update(|phase| phase.bytes_arrived(Instant::now()));
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The router, telling the connection's clock when a request begins and when its answer
/// has been written (its body dropped).
struct Tracked {
    router: Router,
    clock: Arc<ConnectionClock>,
}

impl hyper::service::Service<hyper::Request<Incoming>> for Tracked {
    type Response = hyper::Response<TrackedBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        self.clock.update(Phase::request_began);
        let in_flight = RequestInFlight(self.clock.clone());
        let router = self.router.clone();
        Box::pin(async move {
            let response = router.oneshot(request).await?;
            Ok(response.map(|body| TrackedBody {
                body,
                _in_flight: in_flight,
            }))
        })
    }
}

/// An answer's body, holding its request in flight until hyper drops it.
struct TrackedBody {
    body: Body,
    _in_flight: RequestInFlight,
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// How many connections are served in full: [`MAX_CONNECTIONS`], or half the open-file
/// limit when that is lower, so probation connections, files and sockets of its own keep
/// the other half.
fn connection_cap(open_files: Option<libc::rlim_t>) -> usize {
    open_files.map_or(MAX_CONNECTIONS, |limit| {
        usize::try_from(limit / 2)
            .unwrap_or(usize::MAX)
            .clamp(1, MAX_CONNECTIONS)
    })
}

/// Raises this process's soft limit on open files to its hard limit, once, and returns the
/// soft limit in force (`None` if it cannot be read). Most systems start a process at 1,024
/// however many more they allow, which a busy server would run out of.
pub fn raise_open_file_limit() -> Option<libc::rlim_t> {
    static LIMIT: OnceLock<Option<libc::rlim_t>> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes the struct it is given, which lives on this stack.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            // SAFETY: setrlimit only reads the struct it is given. It refuses a hard limit
            // the kernel caps lower (an unlimited one, say); the soft limit then stays.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                return Some(raised.rlim_cur);
            }
            tracing::debug!(
                soft = limit.rlim_cur,
                hard = limit.rlim_max,
                "could not raise the open-file limit"
            );
        }
        Some(limit.rlim_cur)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const DEADLINES: Deadlines = Deadlines {
        head: Duration::from_secs(5),
        idle: Duration::from_secs(60),
    };

    #[test]
    fn a_connection_is_held_to_the_deadline_of_its_phase() {
        let opened = Instant::now();
        let later = opened + Duration::from_secs(7);
        let fresh = Phase::AwaitingHead { since: opened };
        assert_eq!(fresh.deadline(DEADLINES), Some(opened + DEADLINES.head));
        assert_eq!(
            fresh.bytes_arrived(later),
            fresh,
            "more of the same head keeps its deadline"
        );

        let serving = fresh.request_began();
        assert_eq!(serving.deadline(DEADLINES), None);
        assert_eq!(serving.bytes_arrived(later), serving);

        let idle = serving.request_ended(later);
        assert_eq!(idle, Phase::Idle { since: later });
        assert_eq!(idle.deadline(DEADLINES), Some(later + DEADLINES.idle));

        let next = idle.bytes_arrived(later + Duration::from_secs(1));
        assert_eq!(
            next.deadline(DEADLINES),
            Some(later + Duration::from_secs(1) + DEADLINES.head),
            "the next request's head gets the head deadline from its first byte"
        );
    }

    #[test]
    fn overlapping_requests_end_the_serving_phase_only_when_both_have() {
        let now = Instant::now();
        let two = Phase::AwaitingHead { since: now }
            .request_began()
            .request_began();
        assert_eq!(two.request_ended(now), Phase::Serving { requests: 1 });
        assert_eq!(
            two.request_ended(now).request_ended(now),
            Phase::Idle { since: now }
        );
    }

    #[test]
    fn the_cap_is_half_the_open_file_limit_at_most_the_maximum() {
        assert_eq!(connection_cap(Some(256)), 128);
        assert_eq!(connection_cap(Some(1_048_576)), MAX_CONNECTIONS);
        assert_eq!(connection_cap(Some(1)), 1);
        assert_eq!(connection_cap(None), MAX_CONNECTIONS);
    }

    #[test]
    fn the_open_file_limit_is_raised_to_the_hard_limit() {
        let soft = raise_open_file_limit().expect("the limit can be read");
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes the struct it is given.
        assert_eq!(
            unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
            0
        );
        assert_eq!(soft, limit.rlim_cur);
        assert!(
            limit.rlim_cur == limit.rlim_max || limit.rlim_max == libc::RLIM_INFINITY,
            "{soft} of {}",
            limit.rlim_max
        );
    }

    /// A listener with one slot and short deadlines, answering `GET /` with `probe`.
    async fn small_server() -> (std::net::SocketAddr, CancellationToken) {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let address = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let limits = Limits {
            connections: 1,
            head: Duration::from_secs(2),
            idle: Duration::from_millis(300),
            probation_head: Duration::from_millis(100),
        };
        let router = Router::new().route("/", get(|| async { "probe" }));
        tokio::spawn(serve_with(listener, router, limits, shutdown.clone()));
        (address, shutdown)
    }

    /// Reads until the server closes the connection; what it sent.
    async fn read_to_close(stream: &mut TcpStream) -> String {
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
            .await
            .expect("the server closes the connection")
            .expect("the connection reads");
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[tokio::test]
    async fn half_written_heads_are_closed_and_the_probe_is_answered_over_the_cap() {
        let (address, shutdown) = small_server().await;
        let mut in_slot = TcpStream::connect(address).await.unwrap();
        in_slot
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        // Once the slot is taken, the next connection is on probation.
        let mut stuck = TcpStream::connect(address).await.unwrap();
        stuck.write_all(b"GET / HTT").await.unwrap();
        assert_eq!(read_to_close(&mut stuck).await, "");

        let mut probe = TcpStream::connect(address).await.unwrap();
        probe
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let answer = read_to_close(&mut probe).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            answer.to_ascii_lowercase().contains("connection: close"),
            "{answer}"
        );
        assert!(answer.ends_with("probe"), "{answer}");

        assert_eq!(read_to_close(&mut in_slot).await, "");
        shutdown.cancel();
    }

    #[tokio::test]
    async fn a_kept_alive_connection_serves_requests_until_it_idles_out() {
        let (address, shutdown) = small_server().await;
        let mut stream = TcpStream::connect(address).await.unwrap();
        for _ in 0..3 {
            stream
                .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut buffer = [0u8; 1024];
            let read = stream.read(&mut buffer).await.unwrap();
            let answer = String::from_utf8_lossy(&buffer[..read]).into_owned();
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            assert!(
                !answer.to_ascii_lowercase().contains("connection: close"),
                "{answer}"
            );
        }
        assert_eq!(read_to_close(&mut stream).await, "");
        shutdown.cancel();
    }
}
