//! Who a message is from and to: the calling session as a [`Party`], and an address read
//! and resolved against the repository's listing to the live sessions it reaches.

use std::sync::Arc;
use std::time::SystemTime;

use majordomus_domain::checkouts::Checkouts;
use majordomus_domain::listing::claim_paths;
use majordomus_domain::messages::{MessageError, Party};
use majordomus_domain::paths::ClaimPath;
use majordomus_domain::peers::{Peer, PeerId};
use majordomus_domain::text;

use crate::peers::{self, Detail, ListedPeer};
use majordomus_core::api::CapabilityError;
use majordomus_core::context::{Context, Site};
use majordomus_core::port::BoardPort;

/// How many digits of a checkout's id qualify a peer's id, as listings write it.
const QUALIFIER_DIGITS: usize = 8;

/// The sender of a message sent with no session: nobody can reply to it.
pub(super) const COMMAND_LINE: &str = "command-line";

/// The party a message sent without a session is from.
pub(super) fn command_line() -> Party {
    Party {
        qualified_id: COMMAND_LINE.into(),
        connected_at: None,
        label: "the command line".into(),
        checkout: String::new(),
        machine: None,
    }
}

/// Peer `peer` of the board `port` serves for `site`, as a message names it.
pub(super) fn party_here(site: &Site, port: &dyn BoardPort, peer: &PeerId) -> Option<Party> {
    let found = port.board_peer(peer, SystemTime::now())?;
    Some(party_on_board(site, port, &found))
}

/// `peer`, found on the board `port` serves for `site`, as a message names it.
pub(super) fn party_on_board(site: &Site, port: &dyn BoardPort, peer: &Peer) -> Party {
    party_of(
        peer,
        &site.checkout.id,
        &worktree_name(&site.checkout.root.to_string_lossy()),
        port.federation().machine(),
    )
}

/// The calling session, when the call came through one.
pub(super) fn me(ctx: &Context) -> Option<Party> {
    party_here(&ctx.site, ctx.port()?, ctx.caller()?)
}

/// `peer` as a message names it: qualified by its checkout's id, as its own server names it
/// wherever the message was sent from (another machine's listing qualifies it by the machine
/// instead), with the machine in a federated repository.
fn party_of(peer: &Peer, checkout: &str, worktree: &str, machine: Option<&str>) -> Party {
    let short: String = checkout.chars().take(QUALIFIER_DIGITS).collect();
    let on = machine
        .map(|machine| format!(" on {machine}"))
        .unwrap_or_default();
    Party {
        qualified_id: format!("{}@{short}", peer.id),
        connected_at: Some(peer.connected_at),
        label: format!("{}@{short} {} in {worktree}{on}", peer.id, peer.client.name),
        checkout: checkout.to_owned(),
        machine: machine.map(str::to_owned),
    }
}

/// The last component of a worktree's root, as people name worktrees.
fn worktree_name(root: &str) -> String {
    std::path::Path::new(root)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| root.to_owned())
}

/// Where a message goes.
pub(super) enum Address {
    /// One session, by its qualified id.
    Session(String),
    /// The live sessions whose claims or edits meet a repository path.
    Path(ClaimPath),
    /// The live sessions of a worktree, by its directory's name.
    Worktree(String),
}

impl Address {
    /// Reads `to`: a path is read against `site`'s checkout, where it leads on disk as a
    /// claim's path is (a symbolic link followed), and must stay inside it.
    pub(super) async fn parse(to: &str, site: &Arc<Site>) -> Result<Address, CapabilityError> {
        if let Some(path) = to.strip_prefix("path:") {
            // Nothing outside the repository can be held: nobody is there to tell.
            let mut resolved = peers::resolve_on_disk(site, &[path.to_owned()], |error| {
                CapabilityError::not_found(format!(
                    "`to` names a path that is not in the repository: {error}"
                ))
            })
            .await?;
            return Ok(Address::Path(resolved.remove(0)));
        }
        if let Some(name) = to.strip_prefix("worktree:") {
            if name.trim().is_empty() {
                return Err(CapabilityError::invalid_input(
                    "`to` is `worktree:` without a name: name the worktree's directory",
                ));
            }
            return Ok(Address::Worktree(name.to_owned()));
        }
        if to.contains('@') && !to.contains(char::is_whitespace) {
            return Ok(Address::Session(to.to_owned()));
        }
        Err(CapabilityError::invalid_input(format!(
            "`to` is {}: name a session by its qualified id (`p2@3f9a0c1e`, as `majordomus_peers` \
             lists it), `path:<repository path>` or `worktree:<name>`; there is no message to \
             everyone",
            text::quoted(to, 80)
        )))
    }
}

/// A live session of the listing, and how a message names it.
type Listed<'a> = (&'a ListedPeer, Party);

/// The live sessions `address` reaches, the caller left out, from the repository's listing:
/// on every machine when the repository is federated, since its mailbox reaches them all.
pub(super) async fn recipients(
    ctx: &Context,
    address: &Address,
) -> Result<Vec<Party>, CapabilityError> {
    let checkouts = if ctx.site.config.federation.url.is_some() {
        Checkouts::Everywhere
    } else {
        Checkouts::Repository
    };
    // A path reaches only the sessions whose claims meet it: this board's others are not
    // copied to be passed over.
    let detail = match address {
        Address::Path(path) => Detail::PeersMeeting(std::slice::from_ref(path)),
        Address::Session(_) | Address::Worktree(_) => Detail::PeersOnly,
    };
    let listing = peers::listing(ctx, checkouts, detail).await?;
    let me = me(ctx);
    // A remote session is named as this machine lists it (`p1@beta`) or as its own server
    // does (`p1@3f9a0c1e`, as its messages name it).
    let names = |listed: &ListedPeer, party: &Party, id: &str| {
        listed.qualified_id == id || party.qualified_id == id
    };
    let (mine, parties): (Vec<Listed<'_>>, Vec<Listed<'_>>) = listing
        .peers
        .iter()
        .filter(|listed| listed.peer.attached)
        .map(|listed| (listed, party(listed)))
        .partition(|(_, party)| me.as_ref().is_some_and(|me| party.is(me)));
    if let Address::Session(id) = address
        && mine.iter().any(|(listed, party)| names(listed, party, id))
    {
        return Err(CapabilityError::invalid_input(
            MessageError::ToSelf.to_string(),
        ));
    }
    let live = parties.into_iter();
    let reached: Vec<Party> = match address {
        Address::Session(id) => live
            .filter(|(listed, party)| names(listed, party, id))
            .map(|(_, party)| party)
            .collect(),
        Address::Path(path) => live
            .filter(|(listed, _)| holds(&listed.peer, path))
            .map(|(_, party)| party)
            .collect(),
        Address::Worktree(name) => live
            .filter(|(listed, _)| {
                listed
                    .peer
                    .checkout
                    .as_ref()
                    .is_some_and(|c| worktree_name(&c.worktree) == *name || c.worktree == *name)
            })
            .map(|(_, party)| party)
            .collect(),
    };
    if reached.is_empty() {
        let what = match address {
            Address::Session(id) => format!(
                "no live session is {}: `majordomus_peers` lists the sessions by `qualified_id`",
                text::quoted(id, 80)
            ),
            Address::Path(path) => format!(
                "no live session claims or edits {}",
                text::quoted(path.as_written(), 200)
            ),
            Address::Worktree(name) => {
                format!(
                    "no live session works in worktree {}",
                    text::quoted(name, 200)
                )
            }
        };
        return Err(CapabilityError::not_found(what));
    }
    Ok(reached)
}

/// A listed peer as a message names it, stamped with the checkout (and, federated, the
/// machine) its listing gives it: what the server holding it computes for it.
fn party(listed: &ListedPeer) -> Party {
    let checkout = listed.peer.checkout.as_ref();
    party_of(
        &listed.peer,
        checkout.map_or("", |c| c.id.as_str()),
        &checkout.map_or(String::new(), |c| worktree_name(&c.worktree)),
        checkout.and_then(|c| c.machine.as_deref()),
    )
}

/// Whether one of `peer`'s claims (its `edits` among them) meets `path`, compared where
/// the claim's server resolved it, as the listing compares it.
fn holds(peer: &Peer, path: &ClaimPath) -> bool {
    peer.claims.iter().any(|claim| {
        claim_paths(peer, claim)
            .iter()
            .any(|theirs| theirs.meets(path))
    })
}
