//! The tooling of majordomus's own development, kept out of the executable users install: the
//! reference pages generated from the capability registry (`docs`), the plugin and package
//! manifests generated from the client wiring (`plugins`) and the benchmark (`bench`). Each
//! reads the declarations of the `majordomus` library; the benchmark also spawns the
//! `majordomus` executable for the rows and scenarios that measure a separate process.
//!
//! Run through cargo: `cargo xtask docs [--check]`, `cargo xtask plugins [--check]`,
//! `cargo xtask bench …`.

pub mod bench;
pub mod docs;
pub mod plugins;
