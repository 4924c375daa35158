//! majordomus: the board of the AI coding agents working on one repository.
//!
//! This crate is the executable and what runs over a server: the stdio bridge, the live
//! board, the hook command, wiring clients, the fixed commands and the command line. The
//! capabilities, the server and what they stand on are crates of their own; see
//! `ARCHITECTURE.md` at the repository root for the parts and how a request flows.

pub mod bridge;
pub mod cli;
pub mod commands;
pub mod hooks;
pub mod install;
pub mod watch;
