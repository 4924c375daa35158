//! Every bound on what a peer may put on a board, declared once.
//!
//! A board is shared by every agent of a checkout, and whatever one peer writes is stored,
//! compared with every other claim and echoed to everybody else. Each bound below is far
//! beyond what a real repository or a well-meaning agent needs, and small enough that a
//! hostile or confused peer cannot make the server slow, large or crash for the others.
//! Input over a bound is refused with a message naming it, never cut silently, so a peer
//! always knows what the board holds of it; only what a client says about itself
//! (`clientInfo`), which the client cannot correct, is cut to fit instead.
//!
//! The input types carry these same constants into their JSON schemas (`maxItems`,
//! `maxLength`), so what a client reads in a tool schema is what the board enforces.

/// Paths in one claim's scope. A claim names the directories a piece of work touches;
/// hundreds already means "the whole tree", which `.` says in one path.
pub const SCOPE_PATHS: usize = 256;

/// Bytes in one scope path, as written. Linux itself refuses paths over 4,096 bytes, and
/// a repository-relative path over 1,024 is unheard of.
pub const PATH_BYTES: usize = 1_024;

/// Components (directories and the file name) of one scope path, once normalised. Source
/// trees rarely go 20 deep; the bound also caps every walk down the path trie.
pub const PATH_COMPONENTS: usize = 64;

/// Characters in an intent: one line saying what a peer is doing, read by people and other
/// agents on one line.
pub const INTENT_CHARS: usize = 1_000;

/// Characters in a claim name, which is a short label such as `parser` or `subagent-2`.
pub const CLAIM_NAME_CHARS: usize = 64;

/// Named claims one peer may hold at a time (its unnamed claim not counted): enough for a
/// session with a crowd of subagents, few enough that every answer echoing them stays
/// short.
pub const NAMED_CLAIMS: usize = 32;

/// Characters in an episode's external id: clients use UUIDs or similar ids of under 100.
pub const EXTERNAL_ID_CHARS: usize = 256;

/// Characters kept of a client's `clientInfo.name` (`claude-code`, `gemini-cli-mcp-client`).
pub const CLIENT_NAME_CHARS: usize = 64;

/// Characters kept of a client's `clientInfo.version`.
pub const CLIENT_VERSION_CHARS: usize = 64;

/// Characters kept of a client's `clientInfo.title`, a human-readable display name.
pub const CLIENT_TITLE_CHARS: usize = 128;

/// Path pairs listed in one overlap entry; the rest are counted in `more_paths`. A handful
/// says where two claims collide; the full product of two wide claims says nothing more.
pub const OVERLAP_PATH_PAIRS: usize = 8;

/// Overlap entries one listing carries of each kind (between peers' claims, and with
/// worktrees' changes); the rest are counted. An entry is one pair of peers (or of a worktree
/// and a peer or another worktree), so a crowded repository has as many pairs as the
/// square of its peers; a few dozen already say "everyone is on everyone's ground".
pub const OVERLAPS_LISTED: usize = 32;

/// Bytes (hence at most as many characters) of the instructions a client is given in
/// `initialize`. Claude Code keeps only the first 2 KB of a server's instructions, and
/// they sit in the system prompt of every session, so they stay well under that whatever
/// the peers on the board wrote.
pub const INSTRUCTIONS_BYTES: usize = 1_500;

/// Characters kept of what a client said when its session began to wait (Claude Code's
/// "Claude needs your permission to use Bash"): one line on the board.
pub const WAIT_MESSAGE_CHARS: usize = 200;

/// Bytes in a lease's name (`test-suite`, `db:staging`, `port:3000-3099`): a label people
/// type, read on one line of the board.
pub const LEASE_NAME_BYTES: usize = 64;

/// Requests queued behind one lease's holder. Every session of a busy repository fits; a
/// queue longer than this would wait longer than any wait a call may make.
pub const LEASE_QUEUE: usize = 64;

/// Leases held or queued for in one repository at a time: the table is read on every lease
/// call and listed on the board.
pub const LEASES: usize = 256;

/// Leases one holder may hold or queue for at a time.
pub const LEASES_PER_HOLDER: usize = 32;

/// The longest a lease is granted for before it must be asked for again (a day): a lease
/// outlives a forgotten session by at most this.
pub const LEASE_TTL_SECS_MAX: u32 = 86_400;

/// How long a lease is granted for when the caller does not say.
pub const LEASE_TTL_SECS_DEFAULT: u32 = 600;

/// The longest a lease call waits inside the call for its grant: clients give a tool call a
/// few minutes at most.
pub const LEASE_WAIT_SECS_MAX: u32 = 600;

/// Leases a repository's `[leases.commands]` may declare commands for, and so the most lease
/// names one hook asks its server about.
pub const LEASES_DECLARED: usize = 32;

/// Command prefixes declared for one lease (`["cargo test", "npm test"]`).
pub const LEASE_COMMAND_PREFIXES: usize = 16;

/// Shell words in one declared command prefix.
pub const LEASE_COMMAND_WORDS: usize = 16;

/// Bytes in one declared command prefix as written.
pub const LEASE_COMMAND_BYTES: usize = 256;

/// Ports in one `port:A-B` range: each is tried in turn when a worktree needs a new one.
pub const PORT_RANGE_PORTS: u32 = 1_024;

/// The worktrees' port assignments remembered; the least recently used go first.
pub const PORT_ASSIGNMENTS: usize = 1_024;

/// Characters of one message's text: one paragraph.
pub const MESSAGE_TEXT_CHARS: usize = 1_000;

/// Sessions one message reaches at most (`path:` and `worktree:` may name several).
pub const MESSAGE_RECIPIENTS: usize = 16;

/// Messages waiting for one recipient; a new one drops the oldest waiting, and the
/// recipient is told how many were dropped.
pub const MESSAGES_QUEUED_PER_RECIPIENT: usize = 32;

/// Messages the repository keeps with their receipts; a new one drops the oldest, counted.
pub const MESSAGES_KEPT: usize = 256;

/// Messages one hook event or tool answer delivers; the rest wait for the next.
pub const MESSAGES_PER_DELIVERY: usize = 4;

/// Claims one message hands off at most.
pub const HANDOFF_CLAIMS: usize = 8;
