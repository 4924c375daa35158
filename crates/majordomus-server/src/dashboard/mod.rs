//! The dashboard at `/board`: one page of plain HTML, CSS and JavaScript embedded in the
//! binary, which reads the repository's listing and follows the event stream.
//!
//! A browser never sees the lease's token. `majordomus board` asks the server (with the
//! token) for a ticket: random, good for [`TICKET_LIFETIME`](super::browsers::TICKET_LIFETIME) and for one use. The URL it
//! prints carries the ticket; the first request of it trades the ticket for a cookie
//! (HttpOnly, SameSite=Strict, Path=/) and is redirected to `/board`, so the ticket leaves
//! the address bar before the page loads and a used or expired one opens nothing. The
//! cookie is accepted only by the page, its assets, the event stream, the listing and the
//! messages the page reads, for reading ([`admits`]); every other route, and a message's
//! sending, still wants the token.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::ServerState;
use super::browsers::TICKET_LIFETIME;

/// Where the page is.
pub const PAGE: &str = "/board";
/// The route `majordomus board` asks for a ticket (with the token).
pub const TICKETS: &str = "/api/v1/board/tickets";
const HTML: &str = include_str!("board.html");
const CSS: &str = include_str!("board.css");
const JS: &str = include_str!("board.js");

/// No script, style, image or connection but this server's own, no inline script, no
/// framing, no forms.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
    img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// The routes the dashboard's cookie opens, all read-only.
const COOKIE_ROUTES: [&str; 4] = [PAGE, "/api/v1/events", "/api/v1/peers", "/api/v1/messages"];

/// The cookie's name: one per server, since a browser keeps cookies per host, not per port,
/// and two worktrees' servers both answer on 127.0.0.1.
fn cookie_name(state: &ServerState) -> String {
    let port = state
        .url()
        .and_then(|url| url.rsplit(':').next().map(str::to_owned))
        .unwrap_or_default();
    format!("majordomus_board_{port}")
}

/// Whether the guard lets a request without the token through: a ticket on its way to the
/// page (the page checks it), or a browser's cookie on one of the routes it opens.
pub(crate) fn admits(state: &ServerState, request: &Request) -> bool {
    if request.method() != Method::GET {
        return false;
    }
    let path = request.uri().path();
    if path == PAGE && ticket_of(request.uri().query()).is_some() {
        return true;
    }
    let opened = COOKIE_ROUTES.contains(&path)
        || path
            .strip_prefix(PAGE)
            .is_some_and(|rest| rest.starts_with('/'));
    opened && carries_cookie(state, request.headers())
}

fn carries_cookie(state: &ServerState, headers: &HeaderMap) -> bool {
    let name = cookie_name(state);
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .any(|(key, value)| key == name && state.dashboard.knows_browser(value))
}

fn ticket_of(query: Option<&str>) -> Option<String> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(query?)
        .ok()?
        .into_iter()
        .find_map(|(key, value)| (key == "ticket").then_some(value))
}

/// `GET /board`: with a ticket, trades it for the cookie and redirects to the bare page;
/// otherwise (the guard has seen the token or the cookie) the page itself.
pub async fn page(
    State(state): State<Arc<ServerState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(ticket) = query.get("ticket") else {
        return asset(HTML, "text/html; charset=utf-8");
    };
    let Some(browser) = state.dashboard.redeem(ticket) else {
        let mut refusal = (
            StatusCode::UNAUTHORIZED,
            "This link was used already or has expired: run `majordomus board` for a new one.\n",
        )
            .into_response();
        secure(refusal.headers_mut());
        return refusal;
    };
    let cookie = format!(
        "{}={browser}; HttpOnly; SameSite=Strict; Path=/",
        cookie_name(&state)
    );
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, PAGE)]).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).expect("cookies are ASCII"),
    );
    secure(headers);
    response
}

/// `GET /board/board.css`.
pub async fn stylesheet() -> Response {
    asset(CSS, "text/css; charset=utf-8")
}

/// `GET /board/board.js`.
pub async fn script() -> Response {
    asset(JS, "text/javascript; charset=utf-8")
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    secure(response.headers_mut());
    response
}

fn secure(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// What `POST /api/v1/board/tickets` answers.
#[derive(Debug, Serialize)]
pub struct Ticket {
    /// The page's address with the ticket, to open once.
    pub url: String,
    pub expires_in_seconds: u64,
}

/// `POST /api/v1/board/tickets`: a one-time link to the dashboard (the token was checked).
pub async fn mint(State(state): State<Arc<ServerState>>) -> Response {
    let ticket = state.dashboard.mint_ticket();
    let base = state.url().unwrap_or_default();
    axum::Json(Ticket {
        url: format!("{base}{PAGE}?ticket={ticket}"),
        expires_in_seconds: TICKET_LIFETIME.as_secs(),
    })
    .into_response()
}
