//! Polling a connection again at once when it woke itself while it was being polled.
//!
//! hyper runs a request's handler in the connection's own task, and reads the request's body
//! there too: a handler that asks for the body wakes that task while it is being polled.
//! Tokio takes a task woken by itself for one that yields: it goes to the back of the run
//! queue, and an idle worker is woken to take it, which on every POST costs two `futex`
//! calls and often a move of the connection to the other core. Polled again here, at once,
//! the connection carries on where it is; the runtime hears only of what wakes it from
//! outside (its socket, a timer, the server's stop). A connection that goes on waking itself
//! yields after [`POLLS`] polls, as it would have at the first.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;

/// How many times one poll of the task polls the connection at most.
const POLLS: usize = 4;

/// Nobody is polling the connection: a wake goes to the task.
const IDLE: u8 = 0;
/// The connection is being polled: a wake has it polled again.
const POLLING: u8 = 1;
/// It was woken while being polled.
const WOKEN: u8 = 2;

/// `future`, polled again at once when it wakes itself while being polled.
pub(super) struct PollAgain<F> {
    future: Pin<Box<F>>,
    wakes: Arc<Wakes>,
    /// The waker `future` is polled with, which reaches [`Wakes`].
    waker: Waker,
}

/// Where the wakes of a connection go.
struct Wakes {
    state: AtomicU8,
    /// The task's own waker, from its latest poll.
    task: AtomicWaker,
}

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let polled =
            self.state
                .compare_exchange(POLLING, WOKEN, Ordering::AcqRel, Ordering::Acquire);
        if polled == Err(IDLE) {
            self.task.wake();
        }
    }
}

impl<F: Future> PollAgain<F> {
    pub(super) fn new(future: F) -> PollAgain<F> {
        let wakes = Arc::new(Wakes {
            state: AtomicU8::new(IDLE),
            task: AtomicWaker::new(),
        });
        PollAgain {
            future: Box::pin(future),
            waker: Waker::from(wakes.clone()),
            wakes,
        }
    }
}

impl<F: Future> Future for PollAgain<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        this.wakes.task.register(cx.waker());
        let mut inner = Context::from_waker(&this.waker);
        for _ in 0..POLLS {
            this.wakes.state.store(POLLING, Ordering::Release);
            if let Poll::Ready(output) = this.future.as_mut().poll(&mut inner) {
                this.wakes.state.store(IDLE, Ordering::Release);
                return Poll::Ready(output);
            }
            let idle = this.wakes.state.compare_exchange(
                POLLING,
                IDLE,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            if idle.is_ok() {
                return Poll::Pending;
            }
        }
        this.wakes.state.store(IDLE, Ordering::Release);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A task's waker that counts its wakes.
    #[derive(Default)]
    struct Counted(AtomicUsize);

    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Counted {
        fn wakes(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    /// A future that wakes itself on each of its first `self_wakes` polls, keeps the waker
    /// of its latest poll, and is ready once `ready` is set.
    struct Scripted {
        polls: usize,
        self_wakes: usize,
        ready: Arc<std::sync::atomic::AtomicBool>,
        waker: Arc<std::sync::Mutex<Option<Waker>>>,
    }

    impl Scripted {
        fn new(self_wakes: usize) -> Scripted {
            Scripted {
                polls: 0,
                self_wakes,
                ready: Arc::default(),
                waker: Arc::default(),
            }
        }
    }

    impl Future for Scripted {
        type Output = usize;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            self.polls += 1;
            if self.ready.load(Ordering::SeqCst) {
                return Poll::Ready(self.polls);
            }
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            if self.polls <= self.self_wakes {
                cx.waker().wake_by_ref();
            }
            Poll::Pending
        }
    }

    fn poll_once<F: Future>(future: &mut PollAgain<F>, task: &Arc<Counted>) -> Poll<F::Output> {
        let waker = Waker::from(task.clone());
        Pin::new(future).poll(&mut Context::from_waker(&waker))
    }

    #[test]
    fn a_connection_that_woke_itself_is_polled_again_without_waking_the_task() {
        let scripted = Scripted::new(1);
        let ready = scripted.ready.clone();
        let mut connection = PollAgain::new(scripted);
        let task = Arc::new(Counted::default());
        assert!(poll_once(&mut connection, &task).is_pending());
        assert_eq!(connection.future.polls, 2, "polled again in the same poll");
        assert_eq!(task.wakes(), 0, "the runtime was told nothing");
        ready.store(true, Ordering::SeqCst);
        assert_eq!(poll_once(&mut connection, &task), Poll::Ready(3));
    }

    #[test]
    fn a_wake_from_outside_after_the_poll_reaches_the_task() {
        let scripted = Scripted::new(0);
        let (ready, kept) = (scripted.ready.clone(), scripted.waker.clone());
        let mut connection = PollAgain::new(scripted);
        let task = Arc::new(Counted::default());
        assert!(poll_once(&mut connection, &task).is_pending());
        assert_eq!(task.wakes(), 0);
        ready.store(true, Ordering::SeqCst);
        let waker = kept
            .lock()
            .unwrap()
            .take()
            .expect("the connection kept its waker");
        std::thread::spawn(move || waker.wake()).join().unwrap();
        assert_eq!(task.wakes(), 1, "the socket's wake reached the task");
        assert_eq!(poll_once(&mut connection, &task), Poll::Ready(2));
    }

    #[test]
    fn a_connection_that_keeps_waking_itself_yields_to_the_runtime() {
        let mut connection = PollAgain::new(Scripted::new(usize::MAX));
        let task = Arc::new(Counted::default());
        assert!(poll_once(&mut connection, &task).is_pending());
        assert_eq!(connection.future.polls, POLLS);
        assert_eq!(
            task.wakes(),
            1,
            "it yields: the task is woken to be polled later"
        );
    }
}
