//! The listener of a serving process: it accepts every connection, holds each one to
//! deadlines, and caps how many it keeps open.
//!
//! A server that stops answering the identity probe (`GET /`) is taken for a dead one, and
//! its lease is taken over. Idle or half-written connections must therefore never use up the
//! process's file descriptors or its attention: a connection gets a few seconds to send a
//! request's headers and a minute of quiet between requests, and a reader that stops reading
//! (an event stream's subscriber, say, whose socket buffer filled) gets [`WRITE_DEADLINE`]
//! before its connection is closed and what it held is freed. Up to [`MAX_CONNECTIONS`] (or
//! half the open-file limit) connections are served in full; half as many again are served on
//! probation — one request, which must come at once — so the probe is answered while the full
//! places are taken. When the probation places are taken too, a newcomer displaces the oldest
//! connection still waiting for its request, or is closed if none is. A quarter of the
//! open-file limit always stays free for the lease, the journal and git.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use majordomus_domain::sync::LockExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

mod clock;
mod poll_again;

use clock::{Alarm, Closed, ConnectionClock, Deadlines, Phase};
use poll_again::PollAgain;

/// The most connections served in full at once: kept alive between requests and given the
/// whole header timeout. Fewer when the open-file limit is low (see [`connection_limits`]).
pub const MAX_CONNECTIONS: usize = 1024;

/// How long a kept-alive connection may wait for its next request. Longer than the gap
/// between the requests of any client that keeps a connection (a bridge pings its server
/// every 5 s), so a client never sends a request down a connection the server is just
/// closing; short enough that an idle connection does not hold its place for long.
pub const KEEP_ALIVE_IDLE: Duration = Duration::from_secs(60);

/// How long a write may wait for the other end to read. A client that reads what it asked
/// for takes milliseconds on loopback; one that stops reading (frozen, or never meaning to
/// read) would otherwise hold its connection, its answer's buffers and, for an event
/// stream, its subscription for ever. A stream closed this way is resumed with
/// `Last-Event-ID` by a client that comes back.
pub const WRITE_DEADLINE: Duration = Duration::from_secs(10);

/// How long a connection on probation has to deliver its request head. A real client writes
/// its request as soon as it has connected, so by the time a busy server accepts the
/// connection the head is already waiting; only a connection that never meant to send one
/// waits this out.
pub const PROBATION_HEAD_TIMEOUT: Duration = Duration::from_millis(500);

/// The longest the listener waits for a displaced connection to close before it serves the
/// newcomer that displaced it. Closing takes a task wake-up; waiting for it keeps a flood
/// from piling up closing connections beyond the places, and so from using up descriptors.
const DISPLACED_CLOSE_WAIT: Duration = Duration::from_millis(100);

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
    let (full, probation) = connection_limits(raise_open_file_limit());
    let limits = Limits {
        full,
        probation,
        head: header_timeout,
        idle: KEEP_ALIVE_IDLE,
        probation_head: PROBATION_HEAD_TIMEOUT.min(header_timeout),
        write: WRITE_DEADLINE,
    };
    serve_with(listener, router, limits, shutdown).await;
}

/// What the listener holds its connections to.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// How many connections are served in full at once.
    full: usize,
    /// How many more are served on probation.
    probation: usize,
    /// How long a connection in full has to send a request head.
    head: Duration,
    /// How long a connection in full may wait between requests.
    idle: Duration,
    /// How long a connection on probation has to send its request head.
    probation_head: Duration,
    /// How long a write may wait for the other end to read.
    write: Duration,
}

async fn serve_with(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: CancellationToken,
) {
    let full = Arc::new(Semaphore::new(limits.full));
    let probation = Arc::new(ProbationPlaces::new(limits.probation));
    let connections = TaskTracker::new();
    let mut starved = false;
    let mut turning_away = false;
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
        let now = Instant::now();
        let admitted = match full.clone().try_acquire_owned() {
            Ok(place) => Some(Admitted {
                clock: Arc::new(ConnectionClock::new(limits.in_full(), now)),
                place: Place::Full { _held: place },
            }),
            Err(_) => {
                let clock = Arc::new(ConnectionClock::new(limits.on_probation(), now));
                match probation.admit(&clock) {
                    Some((place, displaced)) => {
                        if let Some(displaced) = displaced {
                            let _ = tokio::time::timeout(
                                DISPLACED_CLOSE_WAIT,
                                displaced.ended.cancelled(),
                            )
                            .await;
                        }
                        Some(Admitted {
                            clock,
                            place: Place::Probation { _held: place },
                        })
                    }
                    None => None,
                }
            }
        };
        let Some(admitted) = admitted else {
            if !turning_away {
                tracing::warn!(
                    full = limits.full,
                    probation = limits.probation,
                    "every connection place is taken by a request in progress; closing new connections until one ends"
                );
                turning_away = true;
            }
            drop(stream);
            continue;
        };
        if turning_away {
            tracing::info!("a connection place is free again");
            turning_away = false;
        }
        connections.spawn(PollAgain::new(serve_connection(
            stream,
            router.clone(),
            admitted,
            shutdown.clone(),
        )));
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

impl Limits {
    fn in_full(&self) -> Deadlines {
        Deadlines {
            head: self.head,
            idle: self.idle,
            write: self.write,
        }
    }

    fn on_probation(&self) -> Deadlines {
        Deadlines {
            head: self.probation_head,
            idle: self.probation_head,
            write: self.write,
        }
    }
}

/// A connection let in, with its clock and the place it holds until it closes.
struct Admitted {
    clock: Arc<ConnectionClock>,
    place: Place,
}

/// The place a connection holds.
enum Place {
    /// Served in full: kept alive between requests and given the whole header timeout.
    Full { _held: OwnedSemaphorePermit },
    /// On probation: one request, whose head must arrive within the probation timeout, and
    /// `Connection: close` on the answer. The probe is answered this way while the full
    /// places are taken, and so is a client with the token whose kept-alive connection
    /// lapsed meanwhile, rather than turned away to fail over for nothing.
    Probation { _held: ProbationPlace },
}

/// The probation places. When all are taken, a newcomer displaces the oldest connection
/// still waiting for its request head: a real client sends its request as it connects, so
/// the connections that wait are the idle ones, and a flood of them cannot keep the probe
/// out. A connection already serving its request is never displaced.
struct ProbationPlaces {
    limit: usize,
    /// The connections holding a place, oldest first.
    holders: Mutex<VecDeque<Arc<ConnectionClock>>>,
}

impl ProbationPlaces {
    fn new(limit: usize) -> ProbationPlaces {
        ProbationPlaces {
            limit,
            holders: Mutex::new(VecDeque::with_capacity(limit)),
        }
    }

    /// A place for the connection `clock` keeps time for, and the clock of the connection it
    /// displaced, if any; `None` when every place is held by a connection serving a request.
    fn admit(
        self: &Arc<Self>,
        clock: &Arc<ConnectionClock>,
    ) -> Option<(ProbationPlace, Option<Arc<ConnectionClock>>)> {
        let mut holders = self.holders.lock_or_recover();
        let mut displaced = None;
        if holders.len() >= self.limit {
            let waiting = holders.iter().position(|holder| holder.awaits_head())?;
            displaced = holders.remove(waiting);
            if let Some(displaced) = &displaced {
                displaced.displace();
            }
        }
        holders.push_back(clock.clone());
        let place = ProbationPlace {
            places: self.clone(),
            clock: clock.clone(),
        };
        Some((place, displaced))
    }
}

/// A probation place, given back when dropped (unless it was given to a newcomer already).
struct ProbationPlace {
    places: Arc<ProbationPlaces>,
    clock: Arc<ConnectionClock>,
}

impl Drop for ProbationPlace {
    fn drop(&mut self) {
        let mut holders = self.places.holders.lock_or_recover();
        if let Some(held) = holders
            .iter()
            .position(|holder| Arc::ptr_eq(holder, &self.clock))
        {
            holders.remove(held);
        }
    }
}

/// Serves one connection until it closes, misses a deadline, is displaced, or the server
/// stops.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    admitted: Admitted,
    shutdown: CancellationToken,
) {
    let Admitted { clock, place } = admitted;
    let in_full = matches!(place, Place::Full { .. });
    // The place and this guard are declared before the connection, so they are dropped after
    // it: a place is given back, and `ended` said, only once the socket is closed.
    let _ended = SaysEnded(clock.clone());
    let io = TokioIo::new(Watched {
        stream,
        clock: clock.clone(),
    });
    let service = Tracked {
        router: TowerToHyperService::new(router),
        clock: clock.clone(),
    };
    let connection = http1::Builder::new()
        .keep_alive(in_full)
        .header_read_timeout(None)
        .max_buf_size(READ_BUFFER_LIMIT)
        .serve_connection(io, service);
    if watch(connection, &clock, shutdown).await == Closed::Unread {
        // What the connection held is freed now; without this the allocator would keep it.
        super::http::give_freed_memory_back();
    }
}

/// Drives `connection` until it ends or its clock says to close it; dropping it on return
/// closes the socket and frees its buffers and its answer in progress.
///
/// The connection is polled first, then its clock is read: whatever the connection changed
/// while it was polled (bytes arriving, a request beginning or ending, a write waiting) is
/// seen in the same poll of the task, with no wake-up (see [`ConnectionClock`]).
async fn watch(
    connection: http1::Connection<TokioIo<Watched>, Tracked>,
    clock: &ConnectionClock,
    shutdown: CancellationToken,
) -> Closed {
    tokio::pin!(connection);
    let mut alarm = Alarm::new();
    let mut stopping = false;
    loop {
        tokio::select! {
            biased;
            ended = &mut connection => {
                if let Err(error) = ended {
                    tracing::debug!(%error, "a connection ended with an error");
                }
                return Closed::Ended;
            }
            closed = std::future::poll_fn(|cx| clock.poll_verdict(&mut alarm, cx)) => {
                if closed == Closed::Unread {
                    tracing::debug!("closed a connection whose reader stopped reading");
                }
                return closed;
            }
            // A newcomer displaced it: the clock is read again.
            () = clock.changed.notified() => {}
            () = shutdown.cancelled(), if !stopping => {
                connection.as_mut().graceful_shutdown();
                stopping = true;
            }
        }
    }
}

/// Cancels its clock's `ended` when dropped.
struct SaysEnded(Arc<ConnectionClock>);

impl Drop for SaysEnded {
    fn drop(&mut self) {
        self.0.ended.cancel();
    }
}

/// Held from the moment a request's head is read until its answer has been written.
struct RequestInFlight(Arc<ConnectionClock>);

impl Drop for RequestInFlight {
    fn drop(&mut self) {
        self.0.update(|phase| phase.request_ended(Instant::now()));
    }
}

/// A connection's socket, telling its clock when bytes arrive and when a write waits for the
/// other end to read.
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

impl Watched {
    /// Tells the clock whether a write went through or waits.
    fn written(&self, polled: &Poll<io::Result<usize>>) {
        match polled {
            Poll::Pending => self.clock.write_waits(Instant::now()),
            Poll::Ready(_) => self.clock.write_went(),
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.written(&polled);
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.written(&polled);
        polled
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
/// has been written (its body dropped). The router is a tower service; hyper-util's adapter
/// calls it as hyper calls its services, each request on a clone of it.
struct Tracked {
    router: TowerToHyperService<Router>,
    clock: Arc<ConnectionClock>,
}

impl hyper::service::Service<hyper::Request<Incoming>> for Tracked {
    type Response = hyper::Response<TrackedBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        self.clock.update(Phase::request_began);
        let in_flight = RequestInFlight(self.clock.clone());
        let answer = self.router.call(request);
        Box::pin(async move {
            let response = answer.await?;
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

/// How many connections are served in full, and how many more on probation:
/// [`MAX_CONNECTIONS`] or half the open-file limit when that is lower, and half as many
/// again. A quarter of the limit stays free for the process's own files, sockets and pipes.
fn connection_limits(open_files: Option<u64>) -> (usize, usize) {
    let full = open_files.map_or(MAX_CONNECTIONS, |limit| {
        usize::try_from(limit / 2)
            .unwrap_or(usize::MAX)
            .clamp(1, MAX_CONNECTIONS)
    });
    (full, (full / 2).max(1))
}

/// Raises this process's soft limit on open files to its hard limit, once, and returns the
/// soft limit in force (`None` if it cannot be read). Most Unix systems start a process at
/// 1,024 however many more they allow, which a busy server would run out of. Windows has no
/// such limit on sockets: there it is `None`, and [`MAX_CONNECTIONS`] bounds the server.
pub fn raise_open_file_limit() -> Option<u64> {
    static LIMIT: OnceLock<Option<u64>> = OnceLock::new();
    *LIMIT.get_or_init(raise_open_file_limit_once)
}

#[cfg(not(unix))]
fn raise_open_file_limit_once() -> Option<u64> {
    None
}

#[cfg(unix)]
fn raise_open_file_limit_once() -> Option<u64> {
    {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::sync::Notify;

    #[test]
    fn connections_take_at_most_three_quarters_of_the_open_file_limit() {
        assert_eq!(connection_limits(Some(256)), (128, 64));
        assert_eq!(
            connection_limits(Some(1_048_576)),
            (MAX_CONNECTIONS, MAX_CONNECTIONS / 2)
        );
        assert_eq!(connection_limits(Some(1)), (1, 1));
        assert_eq!(
            connection_limits(None),
            (MAX_CONNECTIONS, MAX_CONNECTIONS / 2)
        );
    }

    #[cfg(unix)]
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

    /// A listener with one full place and one on probation, answering `GET /` with
    /// `probe` and `GET /slow` once `gate` lets it (saying on `started` that it began).
    async fn small_server(
        probation_head: Duration,
        gate: Arc<Semaphore>,
        started: Arc<Notify>,
    ) -> (std::net::SocketAddr, CancellationToken) {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let address = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let limits = Limits {
            full: 1,
            probation: 1,
            head: Duration::from_secs(2),
            idle: Duration::from_millis(300),
            probation_head,
            write: WRITE_DEADLINE,
        };
        let router = Router::new().route("/", get(|| async { "probe" })).route(
            "/slow",
            get(move || async move {
                started.notify_one();
                let _pass = gate.acquire().await;
                "slow"
            }),
        );
        tokio::spawn(serve_with(listener, router, limits, shutdown.clone()));
        (address, shutdown)
    }

    /// A listener whose `GET /endless` answers bytes for as long as they are read, each
    /// write allowed `write` to go through.
    async fn endless_server(write: Duration) -> (std::net::SocketAddr, CancellationToken) {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let address = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let limits = Limits {
            full: 4,
            probation: 1,
            head: Duration::from_secs(2),
            idle: Duration::from_secs(60),
            probation_head: Duration::from_secs(2),
            write,
        };
        let router = Router::new().route(
            "/endless",
            get(|| async {
                let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
                Body::from_stream(futures::stream::repeat_with(move || {
                    Ok::<_, Infallible>(chunk.clone())
                }))
            }),
        );
        tokio::spawn(serve_with(listener, router, limits, shutdown.clone()));
        (address, shutdown)
    }

    #[tokio::test]
    async fn a_reader_that_stops_reading_is_closed_at_the_write_deadline() {
        let deadline = Duration::from_secs(1);
        let (address, shutdown) = endless_server(deadline).await;
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(address).await.unwrap();
        stream
            .write_all(b"GET /endless HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        // Not a byte read for four times the deadline: the server's writes wait, then it
        // closes the connection, and what was buffered is all there is to read.
        tokio::time::sleep(4 * deadline).await;
        let answer = read_to_close(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{}", &answer[..40]);

        // A reader that reads is never closed: it reads on for longer than the deadline.
        let mut reading = request(address, "/endless").await;
        let mut buffer = vec![0; 64 * 1024];
        let started = Instant::now();
        while started.elapsed() < 2 * deadline {
            let read = reading.read(&mut buffer).await.unwrap();
            assert!(read > 0, "the connection of a reader stays open");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        shutdown.cancel();
    }

    async fn plain_server(probation_head: Duration) -> (std::net::SocketAddr, CancellationToken) {
        small_server(
            probation_head,
            Arc::new(Semaphore::new(0)),
            Arc::new(Notify::new()),
        )
        .await
    }

    /// Reads until the server closes the connection (a reset counts: the server closed it
    /// with bytes unread); what it sent.
    async fn read_to_close(stream: &mut TcpStream) -> String {
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
            .await
            .expect("the server closes the connection");
        match read {
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::ConnectionReset => {}
            Err(error) => panic!("the connection failed: {error}"),
        }
        String::from_utf8_lossy(&answer).into_owned()
    }

    async fn request(address: std::net::SocketAddr, path: &str) -> TcpStream {
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        stream
    }

    async fn half_written(address: std::net::SocketAddr) -> TcpStream {
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        stream
    }

    fn assert_answered_once(answer: &str, body: &str) {
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            answer.to_ascii_lowercase().contains("connection: close"),
            "{answer}"
        );
        assert!(answer.ends_with(body), "{answer}");
    }

    #[tokio::test]
    async fn half_written_heads_are_closed_and_the_probe_is_answered_on_probation() {
        let (address, shutdown) = plain_server(Duration::from_millis(100)).await;
        // The full place, then the probation place, taken by connections that never finish.
        let mut in_full = half_written(address).await;
        let mut on_probation = half_written(address).await;
        assert_eq!(read_to_close(&mut on_probation).await, "");
        assert_answered_once(
            &read_to_close(&mut request(address, "/").await).await,
            "probe",
        );
        assert_eq!(read_to_close(&mut in_full).await, "");
        shutdown.cancel();
    }

    #[tokio::test]
    async fn a_newcomer_takes_the_place_of_a_connection_still_waiting_for_its_head() {
        // Probation lasts longer than any wait here: only the newcomer can end it.
        let (address, shutdown) = plain_server(Duration::from_secs(60)).await;
        let _in_full = half_written(address).await;
        let mut waiting = half_written(address).await;
        let mut probe = request(address, "/").await;
        assert_eq!(read_to_close(&mut waiting).await, "");
        assert_answered_once(&read_to_close(&mut probe).await, "probe");
        shutdown.cancel();
    }

    #[tokio::test]
    async fn a_connection_serving_its_request_keeps_its_place() {
        let gate = Arc::new(Semaphore::new(0));
        let started = Arc::new(Notify::new());
        let (address, shutdown) =
            small_server(Duration::from_secs(60), gate.clone(), started.clone()).await;
        let _in_full = half_written(address).await;
        let mut slow = request(address, "/slow").await;
        started.notified().await;
        let mut turned_away = request(address, "/").await;
        assert_eq!(read_to_close(&mut turned_away).await, "");
        gate.add_permits(1);
        assert_answered_once(&read_to_close(&mut slow).await, "slow");
        shutdown.cancel();
    }

    #[tokio::test]
    async fn a_kept_alive_connection_serves_requests_until_it_idles_out() {
        let (address, shutdown) = plain_server(Duration::from_millis(100)).await;
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
