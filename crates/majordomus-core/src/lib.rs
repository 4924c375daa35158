//! The core of majordomus, below the capabilities: the words and shapes every surface shares
//! (`api`, `render`, `stdio_front`), each client's contract (`clients`), what a capability
//! needs of the serving process (`port`), the site and a call's context (`context`), the
//! declarations every surface is projected from (`registry`), the reading of other
//! checkouts' servers (`survey`) and the episode driver with its journal (`episodes`).

pub mod api;
pub mod clients;
pub mod context;
pub mod episodes;
pub mod port;
pub mod registry;
pub mod render;
pub mod stdio_front;
pub mod survey;
