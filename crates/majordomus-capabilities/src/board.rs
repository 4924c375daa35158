//! One checkout's board, wherever it is held: in this process's memory when this process
//! serves the checkout (read through the board port), otherwise in the process its lease
//! names (asked over HTTP with that lease's token). Which one it is is decided once, in
//! [`Board::of`]; a capability reads a board the same way wherever it is, so it is written
//! once.
//!
//! A remote board is asked through the route its own capability declares, about its own
//! checkout only (`checkouts: this`), so a gather never asks back. A serving process that
//! follows a sibling lists that sibling's board from memory while the sibling's server
//! confirmed it recently enough ([`Board::listed`]); everything else is still asked.
//!
//! What a capability reads of a board is a method that capability adds beside its own
//! operation (`Board::peers` and `Board::everywhere` in `peers::list`, `Board::status` in
//! `server`, `Board::episodes` in `episodes`), asked through [`ask`]: this module names no
//! capability, so the capabilities and the board they read use one another one way only.

use std::time::Duration;

use majordomus_checkout::git::Checkout;
use majordomus_checkout::lease::LeaseView;
use majordomus_checkout::notice::Noticed;
use majordomus_domain::checkouts::ServerStanding;

use majordomus_core::api::CapabilityError;
use majordomus_core::context::{Context, Site};
use majordomus_core::port::{BoardPort, SiblingBoard};
use majordomus_core::registry::Operation;
use majordomus_core::survey::{self, AskError, Survey};

/// A checkout's board, as a capability reaches it.
pub(crate) enum Board<'a> {
    /// This process serves the checkout: the board is in memory.
    Local {
        port: &'a dyn BoardPort,
        checkout: Checkout,
    },
    /// Another process serves the checkout, or nobody does: the board is read through the
    /// lease, as the survey found it.
    Remote(Box<Survey>),
    /// Another process serves the checkout and this one follows it: its peers and changes are
    /// in memory, anything else is asked through the lease it was followed by.
    Viewed {
        found: Box<Survey>,
        view: SiblingBoard,
    },
}

/// Why a remote board's server could not be asked.
pub(crate) enum Unasked {
    /// No server answers for the checkout; the standing's reason, when it has one.
    NoServer(Option<String>),
    /// Its server was asked and gave no answer.
    Failed(survey::AskError),
}

impl<'a> Board<'a> {
    /// `checkout`'s board as `ctx` reaches it: in memory when it is the checkout this
    /// process serves (a server never asks itself), through its lease otherwise.
    pub(super) async fn of(ctx: &'a Context, checkout: Checkout) -> Board<'a> {
        Board::of_noticed(ctx, checkout, ctx.site.worktrees.noticed().as_ref()).await
    }

    /// [`Board::of`], by a call that began when the worktree registry's notice stood at
    /// `noticed` ([`survey::survey_noticed`]).
    async fn of_noticed(
        ctx: &'a Context,
        checkout: Checkout,
        noticed: Option<&Noticed>,
    ) -> Board<'a> {
        match ctx.port() {
            Some(port) if checkout.id == ctx.site.checkout.id => Board::Local { port, checkout },
            _ => Board::Remote(Box::new(
                survey::survey_noticed(&ctx.site, checkout, noticed).await,
            )),
        }
    }

    /// `checkout`'s board for a listing, by a call that began when the worktree registry's
    /// notice stood at `noticed`: as [`Board::of`], but a sibling's board that this serving
    /// process follows, confirmed by its server within the bound, is read from memory rather
    /// than asked.
    pub(super) async fn listed(
        ctx: &'a Context,
        checkout: Checkout,
        noticed: Option<&Noticed>,
    ) -> Board<'a> {
        let view = match ctx.port() {
            Some(port) if checkout.id != ctx.site.checkout.id => port.sibling_board(&checkout.id),
            _ => None,
        };
        match view {
            Some(view) => Board::Viewed {
                found: Box::new(Survey {
                    checkout,
                    lease: Some(view.lease.clone()),
                    standing: view.standing.clone(),
                }),
                view,
            },
            None => Board::of_noticed(ctx, checkout, noticed).await,
        }
    }

    /// The board of the checkout the call reached.
    pub(super) async fn here(ctx: &'a Context) -> Board<'a> {
        Board::of(ctx, ctx.site.checkout.clone()).await
    }

    pub(super) fn checkout(&self) -> &Checkout {
        match self {
            Board::Local { checkout, .. } => checkout,
            Board::Remote(found) | Board::Viewed { found, .. } => &found.checkout,
        }
    }

    /// How long ago the board's server last confirmed it, for a board read from memory.
    pub(super) fn age(&self) -> Option<Duration> {
        match self {
            Board::Viewed { view, .. } => Some(view.age),
            _ => None,
        }
    }

    /// Whether the board is in this process's memory: its worktree's changes are then read
    /// here, since no other server reports them.
    pub(super) fn is_local(&self) -> bool {
        matches!(self, Board::Local { .. })
    }

    /// Where the board's server stands.
    pub(super) fn standing(&self) -> ServerStanding {
        match self {
            Board::Local { port, .. } => port.own_standing(),
            Board::Remote(found) | Board::Viewed { found, .. } => found.standing.standing,
        }
    }

    /// Why the board's server stands so, for every standing but `absent` and `ready`.
    pub(super) fn standing_reason(&self) -> Option<String> {
        match self {
            Board::Local { port, .. } => port.own_standing_reason(),
            Board::Remote(found) | Board::Viewed { found, .. } => found.standing.reason.clone(),
        }
    }

    /// The address the board's server answers on, when known.
    pub(super) fn url(&self) -> Option<String> {
        match self {
            Board::Local { port, .. } => port.url(),
            Board::Remote(found) | Board::Viewed { found, .. } => found.url().map(str::to_string),
        }
    }

    /// The lease that names the board's server, without its token.
    pub(super) fn lease(&self) -> Option<LeaseView> {
        match self {
            Board::Local { port, .. } => Some(port.lease_view()),
            Board::Remote(found) | Board::Viewed { found, .. } => {
                found.lease.as_ref().map(|lease| lease.redacted())
            }
        }
    }
}

/// Asks the server a survey found for capability `O`, through the route `O` declares.
pub(crate) async fn ask<O: Operation>(
    found: &Survey,
    site: &Site,
    input: &O::Input,
    patience: Duration,
) -> Result<O::Output, Unasked> {
    let Some(lease) = found.lease.as_ref().filter(|_| found.answers()) else {
        return Err(Unasked::NoServer(found.standing.reason.clone()));
    };
    survey::ask::<O>(site, lease, input, patience)
        .await
        .map_err(Unasked::Failed)
}

/// What a federated repository keeps in the federation (its `kept`: leases, messages), asked
/// for where this process does not serve (the command line, say): the checkout's serving
/// process, which alone follows the federation, is asked through the route the capability
/// declares. `None` when this process is the one to reach it. `wait` is how long the server
/// may take to answer, beyond its own reading and changing of the federation's value.
pub(crate) async fn forwarded<O: Operation>(
    ctx: &Context,
    input: &O::Input,
    wait: Duration,
    kept: &str,
) -> Result<Option<O::Output>, CapabilityError> {
    if ctx.server().is_some() || ctx.site.config.federation.url.is_none() {
        return Ok(None);
    }
    let survey = survey::survey(&ctx.site, ctx.site.checkout.clone()).await;
    let answers = survey.answers();
    let Some(lease) = survey.lease.filter(|_| answers) else {
        return Err(CapabilityError::refused(format!(
            "this repository is federated: its {kept} are kept in the federation, which only \
             the checkout's server follows, and no server of this checkout answers; \
             `majordomus serve ensure` starts one"
        )));
    };
    survey::ask::<O>(&ctx.site, &lease, input, wait + FORWARD_MARGIN)
        .await
        .map(Some)
        .map_err(|error| match error {
            AskError::Refusal { kind, message } => CapabilityError::new(kind, message),
            other => CapabilityError::refused(format!(
                "this checkout's server, which keeps the federated {kept}, could not be asked: \
                 {other}"
            )),
        })
}

/// What a forwarded request may take beyond its wait: the server's own reading and changing
/// of the federation's value.
const FORWARD_MARGIN: Duration = Duration::from_secs(10);
