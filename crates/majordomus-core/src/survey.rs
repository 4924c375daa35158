//! Reading other checkouts' servers: the lease, the probe, the standing, and asking a board.
//!
//! A sibling is only ever asked about its own checkout (`checkouts=this`), which is what keeps
//! two servers from asking each other forever; it is asked through the route the capability
//! declares ([`ask`]).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use majordomus_checkout::notice::Noticed;
use majordomus_checkout::{
    Checkout, Evidence, Lease, LeaseReading, ProbeAnswer, Standing, judge_standing, lease_age,
    lease_path, read_lease,
};
use serde::Deserialize;

use majordomus_domain::checkouts::Checkouts;

use crate::api::{CapabilityError, ErrorKind};
use crate::context::Site;
use crate::registry::{HttpMethod, Operation};

/// What `GET /` answers: enough for a reader to tell whose server this is.
#[derive(Clone, Debug, serde::Serialize, Deserialize, schemars::JsonSchema)]
pub struct Identity {
    /// Always `majordomus`.
    pub name: String,
    /// The version of the executable that serves.
    pub version: String,
    /// The checkout it serves.
    pub checkout_id: String,
    /// The repository (git common dir) it belongs to, when in git.
    pub git_id: Option<String>,
    /// False once another process took the lease over: it then serves only the sessions it has.
    pub leaseholder: bool,
}

/// One checkout as a reader found it.
pub struct Survey {
    pub checkout: Checkout,
    pub lease: Option<Lease>,
    pub standing: Standing,
}

impl Survey {
    pub fn url(&self) -> Option<&str> {
        self.lease.as_ref().and_then(|lease| lease.url.as_deref())
    }

    /// Whether a board read from this server can be asked: it answers as this checkout's.
    pub fn answers(&self) -> bool {
        use majordomus_domain::checkouts::ServerStanding::{Outdated, Ready};
        matches!(self.standing.standing, Ready | Outdated)
    }
}

/// Reads a checkout's lease, probes the server it names and decides its standing.
pub async fn survey(site: &Site, checkout: Checkout) -> Survey {
    survey_noticed(site, checkout, site.worktrees.noticed().as_ref()).await
}

/// [`survey`], by a call that began when the registry's notice stood at `noticed`.
///
/// A lease found absent is not looked for again while the registry's notice, which covers
/// every other worktree's lease, stands still: most siblings of a repository-wide call are
/// served by nobody, and each would cost an `open` that finds nothing. A call surveys every
/// sibling at the one generation it began at ([`covered_and_noticed`]), not one `read` of
/// the notice each.
pub async fn survey_noticed(site: &Site, checkout: Checkout, noticed: Option<&Noticed>) -> Survey {
    let path = lease_path(&checkout);
    let (reading, age) = if site.absent_leases.holds(&path, noticed) {
        (LeaseReading::Absent, None)
    } else {
        let found = if site.reads_inline() {
            lease_with_age(&path)
        } else {
            let reading = path.clone();
            tokio::task::spawn_blocking(move || lease_with_age(&reading))
                .await
                .unwrap_or_else(|error| {
                    (
                        LeaseReading::Corrupt(format!("it could not be read: {error}")),
                        None,
                    )
                })
        };
        if matches!(found.0, LeaseReading::Absent) {
            site.absent_leases.record(&path, noticed);
        }
        found
    };
    let (standing, lease) = judge(site, &checkout, &reading, age).await;
    Survey {
        checkout,
        lease,
        standing,
    }
}

/// The lease at `path`, and how old it is.
fn lease_with_age(path: &Path) -> (LeaseReading, Option<Duration>) {
    let reading = read_lease(path);
    let age = lease_age(path, &reading, SystemTime::now());
    (reading, age)
}

/// Probes the server a lease names and judges the checkout's standing from what was found.
pub async fn judge(
    site: &Site,
    checkout: &Checkout,
    reading: &LeaseReading,
    age: Option<Duration>,
) -> (Standing, Option<Lease>) {
    let lease = match reading {
        LeaseReading::Document(lease, _) => Some(lease.clone()),
        _ => None,
    };
    let probe = match lease.as_ref().and_then(|lease| lease.url.as_deref()) {
        Some(url) => Some(probe(site, url, &checkout.id).await),
        None => None,
    };
    let evidence = evidence(site, reading, age, probe.as_ref(), lease.as_ref());
    (judge_standing(&evidence), lease)
}

/// The facts a standing or an election verdict is judged from.
pub fn evidence<'a>(
    site: &Site,
    reading: &'a LeaseReading,
    age: Option<Duration>,
    probe: Option<&'a ProbeAnswer>,
    lease: Option<&Lease>,
) -> Evidence<'a> {
    Evidence {
        reading,
        age,
        probe,
        owner_alive: lease.is_some_and(Lease::owner_alive),
        executable_unchanged: lease.is_some_and(|lease| lease.executable.matches_disk()),
        this_version: env!("CARGO_PKG_VERSION"),
        starting_grace: site.config.timings.starting_grace(),
    }
}

/// Asks `GET /` of a URL and says whose server answered.
pub async fn probe(site: &Site, url: &str, checkout_id: &str) -> ProbeAnswer {
    let timeout = site.probe_timeout();
    let response = site
        .http
        .get(format!("{}/", url.trim_end_matches('/')))
        .timeout(timeout)
        .send()
        .await;
    let response = match response {
        Ok(response) => response,
        Err(error) => return ProbeAnswer::NoAnswer(describe_http_error(&error, timeout)),
    };
    let identity: Identity = match response.json().await {
        Ok(identity) => identity,
        Err(error) => {
            return ProbeAnswer::NotMajordomus(format!(
                "what answers at {url} is not a majordomus server ({error})"
            ));
        }
    };
    if identity.name != "majordomus" {
        return ProbeAnswer::NotMajordomus(format!("{url} answers as `{}`", identity.name));
    }
    if identity.checkout_id != checkout_id {
        return ProbeAnswer::Foreign {
            checkout_id: identity.checkout_id,
        };
    }
    ProbeAnswer::Ours {
        version: identity.version,
        leaseholder: identity.leaseholder,
    }
}

/// Why another server could not be asked, or gave no answer. Its words become the reason a
/// board is said to be unread.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("its lease names no address yet")]
    NoAddress,
    #[error("{capability} has no HTTP route to ask")]
    NoRoute { capability: &'static str },
    #[error("the input of {capability} is not a query: {detail}")]
    NotAQuery {
        capability: &'static str,
        detail: String,
    },
    #[error("{url} did not answer within {} ms", timeout.as_millis())]
    Timeout { url: String, timeout: Duration },
    #[error("{url} refused the connection")]
    Refused { url: String },
    #[error("{url} failed: {source}")]
    Failed { url: String, source: reqwest::Error },
    /// The server refused the call, saying why in an error document.
    #[error("{message}")]
    Refusal { kind: ErrorKind, message: String },
    #[error("{url} answered {status} to {route}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
        route: String,
    },
    #[error("{url} gave an answer that could not be read: {source}")]
    Unreadable { url: String, source: reqwest::Error },
}

/// Asks a server for capability `O` with `input`, through the route `O` declares, with the
/// lease's own token, within `timeout`. A `GET` carries the input's fields as query
/// parameters and a `POST` as a JSON body, as the router reads them: the request is built
/// from the callee's declaration, so no route is written twice.
pub async fn ask<O: Operation>(
    site: &Site,
    lease: &Lease,
    input: &O::Input,
    timeout: Duration,
) -> Result<O::Output, AskError> {
    let url = lease.url.as_deref().ok_or(AskError::NoAddress)?;
    let Some((method, path)) = O::DECLARATION.exposure.http else {
        return Err(AskError::NoRoute {
            capability: O::DECLARATION.id,
        });
    };
    let base = url.trim_end_matches('/');
    let (request, route) = match method {
        HttpMethod::Get => {
            let query =
                serde_urlencoded::to_string(input).map_err(|error| AskError::NotAQuery {
                    capability: O::DECLARATION.id,
                    detail: error.to_string(),
                })?;
            let route = if query.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{query}")
            };
            (site.http.get(format!("{base}{route}")), route)
        }
        HttpMethod::Post => (
            site.http.post(format!("{base}{path}")).json(input),
            path.to_string(),
        ),
    };
    let response = request
        .bearer_auth(&lease.token)
        .timeout(timeout)
        .send()
        .await
        .map_err(|source| {
            let url = url.to_string();
            if source.is_timeout() {
                AskError::Timeout { url, timeout }
            } else if source.is_connect() {
                AskError::Refused { url }
            } else {
                AskError::Failed { url, source }
            }
        })?;
    let status = response.status();
    if !status.is_success() {
        if let Some(refusal) = refusal(status, response).await {
            return Err(refusal);
        }
        return Err(AskError::Status {
            url: url.to_string(),
            status,
            route,
        });
    }
    response
        .json()
        .await
        .map_err(|source| AskError::Unreadable {
            url: url.to_string(),
            source,
        })
}

/// The refusal an error answer carries (`{"error": {"kind", "message"}}`, as every surface
/// refuses); `None` for any other body.
async fn refusal(status: reqwest::StatusCode, response: reqwest::Response) -> Option<AskError> {
    #[derive(Deserialize)]
    struct Body {
        error: Refused,
    }
    #[derive(Deserialize)]
    struct Refused {
        message: String,
    }
    let kind = ErrorKind::ALL
        .into_iter()
        .find(|kind| kind.http_status() == status.as_u16())?;
    let body: Body = response.json().await.ok()?;
    Some(AskError::Refusal {
        kind,
        message: body.error.message,
    })
}

/// A failed probe in words, without the address: the caller names the server.
fn describe_http_error(error: &reqwest::Error, timeout: Duration) -> String {
    if error.is_timeout() {
        format!("did not answer within {} ms", timeout.as_millis())
    } else if error.is_connect() {
        "refused the connection".to_string()
    } else {
        format!("failed: {error}")
    }
}

/// The checkouts an answer covers: this one alone, or every checkout of the repository, this
/// one first and then the others in git's order. This checkout's branch is read afresh when
/// `HEAD` changed, since a long-running server's checkout may have switched branches; listing
/// the worktrees may spawn git, so it runs on a blocking thread unless the registry's notice
/// vouches for the kept list, or the registry is small and unchanged (see
/// [`Site::reads_inline`]).
pub async fn covered_checkouts(
    site: &Arc<Site>,
    checkouts: Checkouts,
) -> Result<Vec<Checkout>, CapabilityError> {
    Ok(covered_and_noticed(site, checkouts).await?.0)
}

/// [`covered_checkouts`], with where the registry's notice stood when they were found: the
/// generation the call's surveys of them trust ([`survey_noticed`]).
pub async fn covered_and_noticed(
    site: &Arc<Site>,
    checkouts: Checkouts,
) -> Result<(Vec<Checkout>, Option<Noticed>), CapabilityError> {
    let this = &site.checkout;
    let mut here = this.clone();
    let stamps = site.worktrees.stamps();
    let noticed = stamps.noticed.clone();
    here.branch = site.branch.current(this, &stamps);
    if checkouts == Checkouts::This || this.common_dir.is_none() {
        return Ok((vec![here], noticed));
    }
    // A registry the notice vouches for is read from memory whatever its size; one too large
    // to stat inline is stamped on the blocking thread, and once found unchanged there the
    // notice vouches for it from then on.
    let inline = site.reads_inline();
    let kept = site.worktrees.kept_checkouts(this, &stamps, inline);
    let worktrees = match kept {
        Some(checkouts) => checkouts,
        None => {
            let listing = site.clone();
            tokio::task::spawn_blocking(move || {
                let (worktrees, repository) = (&listing.worktrees, &listing.checkout);
                let kept = (!inline)
                    .then(|| worktrees.kept_checkouts(repository, &stamps, true))
                    .flatten();
                kept.map_or_else(
                    || {
                        worktrees
                            .checkouts(repository)
                            .map_err(|error| error.to_string())
                    },
                    Ok,
                )
            })
            .await
            .unwrap_or_else(|error| Err(error.to_string()))
            .map_err(|error| {
                CapabilityError::internal(format!("could not list the worktrees: {error}"))
            })?
        }
    };
    let others = worktrees
        .into_iter()
        .filter(|checkout| checkout.id != this.id);
    Ok((std::iter::once(here).chain(others).collect(), noticed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing::{add_worktree, site_in_repository};
    use majordomus_checkout::config::Config;
    use majordomus_checkout::notice::ChangeNotice;
    use majordomus_checkout::{Lease, try_create};
    use majordomus_domain::checkouts::ServerStanding;

    #[tokio::test]
    async fn a_registry_too_large_to_stat_inline_is_vouched_for_by_the_notice() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        let site = Arc::new(site_in_repository(&repo, Config::default()));
        for n in 0..=crate::context::INLINE_READ_WORKTREES {
            add_worktree(&site, &dir.path().join(format!("wt{n}")));
        }
        site.worktrees.watch_registry(&site.checkout).unwrap();
        assert!(!site.reads_inline(), "more worktrees than are read inline");
        let covered = || async {
            let (checkouts, _) = covered_and_noticed(&site, Checkouts::Repository)
                .await
                .unwrap();
            checkouts.len()
        };
        let vouched = || {
            let stamps = site.worktrees.stamps();
            site.worktrees
                .kept_checkouts(&site.checkout, &stamps, false)
                .is_some()
        };

        let all = crate::context::INLINE_READ_WORKTREES + 2;
        assert_eq!(covered().await, all);
        assert_eq!(covered().await, all);
        assert_eq!(
            vouched(),
            ChangeNotice::WATCHES,
            "once found unchanged, the list is kept while the notice stands still"
        );
        add_worktree(&site, &dir.path().join("one-more"));
        assert!(!vouched(), "a new worktree moves the notice on");
        assert_eq!(covered().await, all + 1);
    }

    #[tokio::test]
    async fn a_sibling_lease_found_absent_is_seen_as_soon_as_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        let site = site_in_repository(&repo, Config::default());
        add_worktree(&site, &dir.path().join("sibling"));
        site.worktrees.watch_registry(&site.checkout).unwrap();
        let sibling = site
            .worktrees
            .checkouts(&site.checkout)
            .unwrap()
            .into_iter()
            .find(|checkout| checkout.id != site.checkout.id)
            .expect("the sibling is listed");
        let path = lease_path(&sibling);
        let standing = || {
            let sibling = sibling.clone();
            let site = &site;
            async move { survey(site, sibling).await.standing.standing }
        };

        assert_eq!(standing().await, ServerStanding::Absent);
        if ChangeNotice::WATCHES {
            assert!(
                site.absent_leases
                    .holds(&path, site.worktrees.noticed().as_ref()),
                "the absence is kept while the notice stands still"
            );
        }
        // The lease's directory appears with the lease: the first lease of a worktree.
        let lease = Lease::new_for_this_process(&sibling.root, "1.2.3");
        let held = try_create(&path, &lease).expect("the lease is created");
        assert_ne!(standing().await, ServerStanding::Absent);

        // Gone again, and back: in the directory that appeared, which is watched now.
        drop(held);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(standing().await, ServerStanding::Absent);
        // Written as any process may write it, with nothing else in the worktree changed.
        std::fs::write(&path, serde_json::to_vec(&lease).unwrap()).unwrap();
        assert_ne!(standing().await, ServerStanding::Absent);
    }
}
