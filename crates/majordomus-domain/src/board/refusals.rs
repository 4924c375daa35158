//! What a board refuses of an announcement: input that could never be accepted, checked
//! before any board is asked, and a peer that is not attached.

use crate::limits;
use crate::paths::{PathError, check_written};
use crate::peers::{AnnounceInput, PeerId};
use crate::text::{self, Field, TextError};

/// Why an announcement was refused; the app maps each kind to its error of the same name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnnounceError {
    /// The input is malformed or over a limit.
    #[error(transparent)]
    InvalidInput(#[from] InvalidAnnouncement),
    /// The peer is not attached to this board.
    #[error(transparent)]
    NotFound(#[from] NotAttached),
}

/// What is wrong with an announcement's input; each message names the field or the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidAnnouncement {
    /// More paths than [`limits::SCOPE_PATHS`].
    #[error(
        "a scope holds at most {} paths; this one has {paths}: claim the directories that \
         contain them, or `.` for the whole repository",
        limits::SCOPE_PATHS
    )]
    ScopeTooLong {
        /// How many paths it had.
        paths: usize,
    },
    /// The intent or the claim name.
    #[error(transparent)]
    Text(#[from] TextError),
    /// A scope path.
    #[error(transparent)]
    Path(#[from] PathError),
    /// A new named claim beyond [`limits::NAMED_CLAIMS`].
    #[error(
        "a peer holds at most {} named claims and you hold {} already: announce under one of \
         their names to replace it (an empty scope gives its ground up), or leave `claim` out \
         to update your unnamed claim",
        limits::NAMED_CLAIMS,
        limits::NAMED_CLAIMS
    )]
    TooManyNamedClaims,
}

/// The peer an announcement came from is not attached to the board.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAttached {
    /// It left; its claims may still be on the board, but it cannot add to them.
    #[error(
        "peer `{0}` has left this board and cannot announce; reconnect and announce as the new \
         peer"
    )]
    Departed(PeerId),
    /// No such peer is on the board.
    #[error(
        "no peer `{0}` is attached to this board; announce through an MCP session connected \
         to this server"
    )]
    Unknown(PeerId),
}

/// The checks of an announcement that need no board: the number of paths first, then each
/// text and path, its length before its characters. Normalising each path and the
/// named-claim limit are the board's, when it records the claim.
///
/// The app runs them before anything else, making a [`CheckedAnnouncement`], so an
/// announcement that could never be accepted is refused as bad input on every surface,
/// whether or not the caller could announce.
pub fn check_announcement(input: &AnnounceInput) -> Result<(), InvalidAnnouncement> {
    if input.scope.len() > limits::SCOPE_PATHS {
        return Err(InvalidAnnouncement::ScopeTooLong {
            paths: input.scope.len(),
        });
    }
    text::check(Field::Intent, input.intent.trim())?;
    if let Some(name) = &input.claim {
        text::check(Field::ClaimName, name.trim())?;
    }
    for path in &input.scope {
        check_written(path)?;
    }
    Ok(())
}

/// An announcement that passed [`check_announcement`]: what a board records with paths the
/// caller resolved takes nothing else, so the checks run once, at the edge that received
/// the input, and never again inside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedAnnouncement(AnnounceInput);

impl CheckedAnnouncement {
    /// `input`, once it passed [`check_announcement`].
    pub fn check(input: AnnounceInput) -> Result<Self, InvalidAnnouncement> {
        check_announcement(&input)?;
        Ok(CheckedAnnouncement(input))
    }

    pub fn input(&self) -> &AnnounceInput {
        &self.0
    }

    pub fn into_input(self) -> AnnounceInput {
        self.0
    }
}
