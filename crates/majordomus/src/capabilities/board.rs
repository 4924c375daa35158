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

use std::time::{Duration, SystemTime};

use majordomus_checkout::git::Checkout;
use majordomus_checkout::lease::LeaseView;
use majordomus_domain::changes::WorktreeChanges;
use majordomus_domain::checkouts::{Checkouts, ServerStanding};
use majordomus_domain::episodes::EpisodeList;

use super::episodes::{EpisodeListInput, EpisodesList};
use super::federated::merge_everywhere;
use super::peers::{ListedPeer, PeerList, PeerListInput, PeersList};
use super::server::{ServerStatus, ServerStatusInput};
use crate::context::{Context, Site};
use crate::federation::{Federation, FederationStatus};
use crate::port::{BoardPort, SiblingBoard};
use crate::registry::Operation;
use crate::survey::{self, Survey};

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

/// What a board gave of itself for a listing.
pub(crate) struct BoardPeers {
    pub peers: Vec<ListedPeer>,
    /// The worktree's changes, as the board's own server read them.
    pub changes: Option<WorktreeChanges>,
    /// Why the board could not be read; absent when it was, or had nobody to read.
    pub reason: Option<String>,
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
    pub async fn of(ctx: &'a Context, checkout: Checkout) -> Board<'a> {
        match ctx.server.as_deref() {
            Some(port) if checkout.id == ctx.site.checkout.id => Board::Local { port, checkout },
            _ => Board::Remote(Box::new(survey::survey(&ctx.site, checkout).await)),
        }
    }

    /// `checkout`'s board for a listing: as [`Board::of`], but a sibling's board that this
    /// serving process follows, confirmed by its server within the bound, is read from
    /// memory rather than asked.
    pub async fn listed(ctx: &'a Context, checkout: Checkout) -> Board<'a> {
        let view = match ctx.server.as_deref() {
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
            None => Board::of(ctx, checkout).await,
        }
    }

    /// The board of the checkout the call reached.
    pub async fn here(ctx: &'a Context) -> Board<'a> {
        Board::of(ctx, ctx.site.checkout.clone()).await
    }

    pub fn checkout(&self) -> &Checkout {
        match self {
            Board::Local { checkout, .. } => checkout,
            Board::Remote(found) | Board::Viewed { found, .. } => &found.checkout,
        }
    }

    /// How long ago the board's server last confirmed it, for a board read from memory.
    pub fn age(&self) -> Option<Duration> {
        match self {
            Board::Viewed { view, .. } => Some(view.age),
            _ => None,
        }
    }

    /// Whether the board is in this process's memory: its worktree's changes are then read
    /// here, since no other server reports them.
    pub fn is_local(&self) -> bool {
        matches!(self, Board::Local { .. })
    }

    /// Where the board's server stands.
    pub fn standing(&self) -> ServerStanding {
        match self {
            Board::Local { port, .. } => port.own_standing(),
            Board::Remote(found) | Board::Viewed { found, .. } => found.standing.standing,
        }
    }

    /// Why the board's server stands so, for every standing but `absent` and `ready`.
    pub fn standing_reason(&self) -> Option<String> {
        match self {
            Board::Local { port, .. } => port.own_standing_reason(),
            Board::Remote(found) | Board::Viewed { found, .. } => found.standing.reason.clone(),
        }
    }

    /// The address the board's server answers on, when known.
    pub fn url(&self) -> Option<String> {
        match self {
            Board::Local { port, .. } => port.url(),
            Board::Remote(found) | Board::Viewed { found, .. } => found.url().map(str::to_string),
        }
    }

    /// The lease that names the board's server, without its token.
    pub fn lease(&self) -> Option<LeaseView> {
        match self {
            Board::Local { port, .. } => Some(port.lease_view()),
            Board::Remote(found) | Board::Viewed { found, .. } => {
                found.lease.as_ref().map(|lease| lease.redacted())
            }
        }
    }

    /// The board's peers, each marked when a bridge carries its client, and the worktree's
    /// changes as a remote server reported them (from memory, with their age, for a followed
    /// one). A remote board that does not answer has no peers; it is unread only when its
    /// standing says it should have answered.
    pub async fn peers(&self, site: &Site) -> BoardPeers {
        match self {
            Board::Local { port, .. } => {
                let bridged = port.bridged_peers();
                let peers = port
                    .board_peers(SystemTime::now())
                    .into_iter()
                    .map(|peer| ListedPeer {
                        bridged: bridged.contains(&peer.id),
                        qualified_id: String::new(),
                        peer,
                    })
                    .collect();
                BoardPeers {
                    peers,
                    changes: None,
                    reason: None,
                }
            }
            Board::Viewed { view, .. } => BoardPeers {
                peers: view
                    .peers
                    .iter()
                    .map(|(peer, bridged)| ListedPeer {
                        peer: peer.clone(),
                        bridged: *bridged,
                        qualified_id: String::new(),
                    })
                    .collect(),
                changes: view.changes.as_ref().map(|changes| WorktreeChanges {
                    read_seconds_ago: Some(view.read.as_secs()),
                    ..(**changes).clone()
                }),
                reason: None,
            },
            Board::Remote(found) => {
                let this = PeerListInput {
                    checkouts: Checkouts::This,
                };
                match ask::<PeersList>(found, site, &this, site.probe_timeout()).await {
                    Ok(answer) => BoardPeers {
                        changes: answer.boards.into_iter().next().and_then(|b| b.changes),
                        peers: answer.peers,
                        reason: None,
                    },
                    Err(Unasked::Failed(error)) => BoardPeers {
                        peers: Vec::new(),
                        changes: None,
                        reason: Some(error.to_string()),
                    },
                    Err(Unasked::NoServer(_)) => BoardPeers {
                        peers: Vec::new(),
                        changes: None,
                        reason: (!found.standing.readable).then(|| {
                            found.standing.reason.clone().unwrap_or_else(|| {
                                format!("its server is {}", found.standing.standing.as_str())
                            })
                        }),
                    },
                }
            }
        }
    }

    /// How many peers are attached to the board, when its server could be asked, and where
    /// its server stands with the federation.
    pub async fn status(&self, site: &Site) -> (Option<usize>, Option<FederationStatus>) {
        match self {
            Board::Local { port, .. } => (
                Some(port.attached_peers()),
                Some(port.federation().status()),
            ),
            Board::Remote(found) | Board::Viewed { found, .. } => {
                let this = ServerStatusInput {
                    checkouts: Checkouts::This,
                };
                match ask::<ServerStatus>(found, site, &this, site.probe_timeout()).await {
                    Ok(answer) => (
                        answer.servers.first().and_then(|server| server.peers),
                        Some(answer.federation),
                    ),
                    Err(_) => (None, None),
                }
            }
        }
    }

    /// The episodes the board's server holds in memory; `mine` is the caller's.
    pub async fn episodes(&self, ctx: &Context) -> Result<EpisodeList, Unasked> {
        match self {
            Board::Local { port, .. } => Ok(port.list_episodes(ctx.caller.as_ref())),
            Board::Remote(found) | Board::Viewed { found, .. } => {
                let site = &ctx.site;
                ask::<EpisodesList>(found, site, &EpisodeListInput {}, site.probe_timeout()).await
            }
        }
    }

    /// `listing`, this machine's boards, joined with the boards other machines publish to
    /// the federation. Only a serving process follows the federation: a remote board's
    /// server is asked for its own such listing (it gathers the siblings itself, so it gets
    /// the time of a gather and a little more), and without one the listing is answered
    /// with the reason.
    pub async fn everywhere(&self, site: &Site, listing: PeerList) -> PeerList {
        match self {
            Board::Local { port, .. } => {
                let federation = port.federation();
                if !federation.is_on() {
                    return merge_everywhere(listing, None, &[], FederationStatus::off());
                }
                merge_everywhere(
                    listing,
                    federation.machine(),
                    &federation.remote_boards(),
                    federation.status(),
                )
            }
            Board::Remote(found) | Board::Viewed { found, .. } => {
                let config = &site.config.federation;
                if config.url.is_some() {
                    let everywhere = PeerListInput {
                        checkouts: Checkouts::Everywhere,
                    };
                    let patience = site.probe_timeout() * 2 + Duration::from_secs(1);
                    if let Ok(answer) = ask::<PeersList>(found, site, &everywhere, patience).await {
                        return answer;
                    }
                }
                let status = Federation::status_without_server(config);
                merge_everywhere(listing, None, &[], status)
            }
        }
    }
}

/// Asks the server a survey found for capability `O`, through the route `O` declares.
async fn ask<O: Operation>(
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
