//! majordomus: the board of the AI coding agents working on one repository.
//!
//! See `ARCHITECTURE.md` at the repository root for the parts and how a request flows.

pub mod api;
pub mod bridge;
pub mod capabilities;
pub mod cli;
pub mod clients;
pub mod commands;
pub mod context;
pub mod episodes;
pub mod federation;
pub mod hooks;
pub mod install;
pub mod openapi;
pub mod port;
pub mod registry;
pub mod render;
pub mod resources;
pub mod server;
pub mod stdio_front;
pub mod survey;
pub mod watch;
