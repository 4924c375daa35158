//! Who may open the dashboard: the one-time tickets `majordomus board` is given, and the
//! secrets of the browsers that traded one for a cookie. Bounded both ways, compared in
//! constant time; the routes that read them are the dashboard's.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use majordomus_domain::sync::LockExt;

/// How long a ticket may wait for its first use.
pub(super) const TICKET_LIFETIME: Duration = Duration::from_secs(60);
/// How many unused tickets a server keeps; minting one more forgets the oldest.
pub(super) const MAX_TICKETS: usize = 16;
/// How many browsers hold a cookie at once; one more forgets the earliest.
pub(super) const MAX_BROWSERS: usize = 16;

/// The tickets and browser cookies of one server.
#[derive(Default)]
pub(crate) struct Access {
    inner: Mutex<AccessInner>,
}

#[derive(Default)]
struct AccessInner {
    tickets: VecDeque<(String, Instant)>,
    browsers: VecDeque<String>,
}

impl Access {
    fn inner(&self) -> std::sync::MutexGuard<'_, AccessInner> {
        self.inner.lock_or_recover()
    }

    pub(super) fn mint_ticket(&self) -> String {
        let ticket = secret();
        let mut inner = self.inner();
        let now = Instant::now();
        inner.tickets.retain(|(_, expires)| *expires > now);
        while inner.tickets.len() >= MAX_TICKETS {
            inner.tickets.pop_front();
        }
        inner
            .tickets
            .push_back((ticket.clone(), now + TICKET_LIFETIME));
        ticket
    }

    /// Trades a live ticket, once, for a browser secret.
    pub(super) fn redeem(&self, ticket: &str) -> Option<String> {
        let mut inner = self.inner();
        let now = Instant::now();
        let at = inner.tickets.iter().position(|(held, expires)| {
            majordomus_core::api::same_secret(ticket, held) && *expires > now
        })?;
        inner.tickets.remove(at);
        let browser = secret();
        while inner.browsers.len() >= MAX_BROWSERS {
            inner.browsers.pop_front();
        }
        inner.browsers.push_back(browser.clone());
        Some(browser)
    }

    pub(super) fn knows_browser(&self, given: &str) -> bool {
        self.inner()
            .browsers
            .iter()
            .any(|held| majordomus_core::api::same_secret(given, held))
    }
}

/// 32 random bytes, in hex.
fn secret() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
