// The board, live: the listing is read from /api/v1/peers and read again after every event
// of /api/v1/events; the messages between sessions from /api/v1/messages, after every event
// and every few seconds, since a receipt moves when a hook carries a message, which changes
// no board. Everything a peer wrote is inserted with textContent, never as markup.
'use strict';

// `everywhere` is the repository alone until a federation is configured.
const LISTING = '/api/v1/peers?checkouts=everywhere';
const EVENTS = '/api/v1/events?checkouts=everywhere';
const MESSAGES = '/api/v1/messages';
const MESSAGES_EVERY_MS = 3000;

let listing = null;
let readAt = 0;
let pending = null;

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function cell(label, content, className) {
  const td = element('td', undefined, className);
  td.dataset.label = label;
  if (content instanceof Node) td.append(content); else td.textContent = String(content);
  return td;
}

function setStatus(text, kind) {
  const status = document.getElementById('status');
  status.textContent = text;
  status.className = kind || '';
}

// The same words as `majordomus peers`: `[name] intent (paths)`.
function claimText(claim) {
  const name = claim.name ? '[' + claim.name + '] ' : '';
  return name + claim.intent + ' (' + claim.scope.join(', ') + ')';
}

// A checkout's worktree, with its machine when the listing reaches other machines.
function place(checkout) {
  return (checkout.machine ? checkout.machine + ':' : '') + checkout.worktree;
}

function side(peer, checkout) {
  return checkout ? peer + ' in ' + place(checkout) : peer;
}

function peerKey(peer, checkout) {
  return (checkout ? (checkout.machine || '') + '/' + checkout.id : '') + '/' + peer;
}

function secondsAgo(peer) {
  const since = Math.floor((Date.now() - readAt) / 1000);
  return (peer.last_seen_seconds_ago + Math.max(0, since)) + 's ago';
}

function renderSummary() {
  const summary = document.getElementById('summary');
  summary.textContent = listing.count + ' attached, ' + listing.silent + ' silent, ' +
    (listing.overlaps.length + (listing.more_overlaps || 0)) + ' overlap(s)';
}

// The claims of one side of an overlap, as `majordomus peers` names them: `[name]`, the
// unnamed one as `unnamed claim`, the first few and how many more. Their intents are on
// the peers' rows.
const CLAIMS_SHOWN = 4;
function claimNames(claims) {
  const names = claims.slice(0, CLAIMS_SHOWN)
    .map((name) => (name === null ? 'unnamed claim' : '[' + name + ']'));
  if (claims.length > CLAIMS_SHOWN) names.push((claims.length - CLAIMS_SHOWN) + ' more claim(s)');
  return names.join(', ');
}

function renderOverlaps() {
  const list = document.getElementById('overlaps');
  list.replaceChildren();
  if (listing.overlaps.length === 0) {
    list.append(element('li', 'No claims meet.', 'none'));
    return;
  }
  for (const overlap of listing.overlaps) {
    const item = element('li');
    item.tabIndex = 0;
    item.append('overlap: ');
    item.append(element('span', side(overlap.peer, overlap.checkout), 'side'));
    item.append(' (' + claimNames(overlap.claims) + ') and ');
    item.append(element('span', side(overlap.with.peer, overlap.with.checkout), 'side'));
    item.append(' (' + claimNames(overlap.with.claims) + ')');
    const pairs = overlap.paths.map((pair) => pair.theirs + ' ~ ' + pair.yours);
    if (overlap.more_paths) pairs.push(overlap.more_paths + ' more');
    item.append(element('span', 'on ' + pairs.join(', '), 'paths path'));
    list.append(item);
  }
  if (listing.more_overlaps) {
    list.append(element('li', 'and ' + listing.more_overlaps +
      ' more overlap(s) between peers, not listed', 'none'));
  }
}

// Why a session waits for the person, in words.
const WAITS = {
  permission: 'asks for permission',
  question: 'waits for your answer',
  finished: 'finished its turn',
  blocked: 'is blocked by another session',
};

// The sessions that wait for the person, above everything else, each with why and since
// when, and for a blocked one the session it waits on.
function renderNeedsYou() {
  const list = document.getElementById('needs-you');
  list.replaceChildren();
  const waiting = listing.peers.filter((peer) => peer.waiting);
  if (waiting.length === 0) {
    list.append(element('li', 'Nobody waits for you.', 'none'));
    return;
  }
  for (const peer of waiting) {
    const item = element('li', undefined, 'reason-' + peer.waiting.reason);
    item.tabIndex = 0;
    item.append(element('span', side(peer.id, peer.checkout), 'side'));
    item.append(' (' + peer.client.name + ') ');
    item.append(element('span', WAITS[peer.waiting.reason] || peer.waiting.reason, 'why'));
    const holder = peer.waiting.holder;
    if (holder) {
      item.append(': ');
      item.append(element('span', holder.peer + ' (' + holder.client +
        (holder.worktree ? ' in ' + holder.worktree : '') + ')', 'holder'));
    }
    item.append(element('span', 'since ' + peer.waiting.since, 'since'));
    if (peer.waiting.message) item.append(element('span', peer.waiting.message, 'message'));
    list.append(item);
  }
}

function renderPeers() {
  const overlapping = new Set();
  for (const overlap of listing.overlaps) {
    overlapping.add(peerKey(overlap.peer, overlap.checkout));
    overlapping.add(peerKey(overlap.with.peer, overlap.with.checkout));
  }
  const body = document.querySelector('#peers tbody');
  body.replaceChildren();
  if (listing.peers.length === 0) {
    const row = element('tr');
    const empty = cell('', 'nobody is on the board', 'empty');
    empty.colSpan = 7;
    row.append(empty);
    body.append(row);
    return;
  }
  for (const peer of listing.peers) {
    const row = element('tr');
    if (!peer.attached) row.classList.add('left');
    if (overlapping.has(peerKey(peer.id, peer.checkout))) row.classList.add('overlapping');
    const claims = element('div');
    if (peer.claims.length === 0) {
      claims.append(element('span', '(silent)', 'silent'));
    } else {
      for (const claim of peer.claims) claims.append(element('span', claimText(claim), 'claim'));
    }
    const seen = cell('LAST SEEN', secondsAgo(peer));
    seen.dataset.seen = String(peer.last_seen_seconds_ago);
    row.append(
      cell('WORKTREE', peer.checkout ? place(peer.checkout) : '-', 'path'),
      cell('BRANCH', peer.checkout && peer.checkout.branch ? peer.checkout.branch : '-'),
      cell('PEER', peer.id, 'peer-id'),
      cell('CLIENT', peer.client.name + ' ' + peer.client.version),
      cell('ATTACHED', peer.attached ? 'yes' : 'left'),
      seen,
      cell('CLAIMS', claims),
    );
    body.append(row);
  }
}

function renderWorktrees() {
  const body = document.querySelector('#worktrees tbody');
  body.replaceChildren();
  const unread = document.getElementById('unread');
  unread.replaceChildren();
  for (const board of listing.boards) {
    const row = element('tr');
    row.append(
      cell('WORKTREE', place(board) + (board.this_checkout ? ' (this one)' : ''), 'path'),
      cell('BRANCH', board.branch || '-'),
      cell('STANDING', board.standing, 'standing-' + board.standing),
      cell('ATTACHED', board.attached),
    );
    body.append(row);
    if (board.reason) unread.append(element('li', board.worktree + ': ' + board.reason));
  }
  if (!listing.complete) {
    unread.prepend(element('li', 'INCOMPLETE: some boards could not be read:'));
  }
}

// The repository's leases held now: each holder, how long its grant lasts, who waits in turn.
function renderLeases() {
  const body = document.querySelector('#leases tbody');
  body.replaceChildren();
  const leases = listing.leases || [];
  if (leases.length === 0) {
    const row = element('tr');
    const empty = cell('', 'nobody holds a lease', 'empty');
    empty.colSpan = 4;
    row.append(empty);
    body.append(row);
    return;
  }
  for (const lease of leases) {
    const waiting = lease.queue.slice();
    if (lease.queued > lease.queue.length) {
      waiting.push((lease.queued - lease.queue.length) + ' more');
    }
    const row = element('tr');
    row.append(
      cell('LEASE', lease.name, 'lease-name'),
      cell('HOLDER', lease.holder, 'peer-id'),
      cell('FOR', lease.expires_in_secs + 's more'),
      cell('WAITING', waiting.length === 0 ? '-' : waiting.join(', ')),
    );
    body.append(row);
  }
}

// How a receipt stands, in the words of `majordomus messages`.
function receiptText(receipt) {
  let how = receipt.state;
  if (receipt.state === 'delivered' || receipt.state === 'answered') {
    how += ' through ' + (receipt.through || '?');
    if (receipt.reply) how += ', reply #' + receipt.reply;
  } else if (receipt.state === 'expired') {
    how += ': ' + (receipt.expired || 'the recipient ended');
  }
  return receipt.to.label + ': ' + how;
}

// The newest messages of the repository's mailbox, the newest first, each with a receipt per
// recipient and the claims it hands over; the older ones counted (`majordomus messages` lists
// them all).
const MESSAGES_SHOWN = 50;
function renderMessages(list) {
  const body = document.querySelector('#messages tbody');
  body.replaceChildren();
  const messages = list.messages.slice(-MESSAGES_SHOWN).reverse();
  const older = list.messages.length - messages.length;
  if (messages.length === 0) {
    const row = element('tr');
    const empty = cell('', 'no messages', 'empty');
    empty.colSpan = 5;
    row.append(empty);
    body.append(row);
  }
  for (const message of messages) {
    const receipts = element('div');
    for (const receipt of message.receipts) {
      receipts.append(element('span', receiptText(receipt), 'receipt receipt-' + receipt.state));
    }
    if (message.handoff) {
      const names = message.handoff.claims.map((claim) => '[' + claim.name + ']');
      receipts.append(element('span', 'handoff of ' + names.join(', ') + ': ' +
        message.handoff.state, 'receipt handoff-' + message.handoff.state));
    }
    const text = message.reply_to ? 're #' + message.reply_to + ': ' + message.text : message.text;
    const row = element('tr');
    row.dataset.id = String(message.id);
    row.append(
      cell('#', message.id),
      cell('FROM', message.from.label, 'peer-id'),
      cell('TO', message.addressed, 'path'),
      cell('TEXT', text, 'message-text'),
      cell('RECEIPTS', receipts),
    );
    body.append(row);
  }
  const notes = [];
  if (older > 0) notes.push(older + ' older message(s) not shown: `majordomus messages` lists them');
  if (list.dropped) notes.push(list.dropped + ' older message(s) are no longer kept');
  document.getElementById('messages-dropped').textContent = notes.join('; ');
}

async function readMessages() {
  const response = await fetch(MESSAGES, { credentials: 'same-origin', cache: 'no-store' });
  if (!response.ok) {
    throw new Error('the messages could not be read (' + response.status + ')');
  }
  renderMessages(await response.json());
}

function render() {
  renderNeedsYou();
  renderSummary();
  renderOverlaps();
  renderPeers();
  renderLeases();
  renderWorktrees();
}

function tickLastSeen() {
  if (!listing) return;
  const cells = document.querySelectorAll('#peers td[data-seen]');
  const since = Math.max(0, Math.floor((Date.now() - readAt) / 1000));
  for (const seen of cells) seen.textContent = (Number(seen.dataset.seen) + since) + 's ago';
}

async function read() {
  const response = await fetch(LISTING, { credentials: 'same-origin', cache: 'no-store' });
  if (!response.ok) {
    throw new Error('the board could not be read (' + response.status + ')');
  }
  listing = await response.json();
  readAt = Date.now();
  render();
}

function readSoon() {
  if (pending) return;
  pending = setTimeout(() => {
    pending = null;
    read().catch((error) => setStatus(error.message, 'down'));
    readMessages().catch((error) => setStatus(error.message, 'down'));
  }, 100);
}

function describe(event) {
  const where = event.checkout && !event.checkout.this_checkout
    ? ' in ' + event.checkout.worktree : '';
  switch (event.kind) {
    case 'attached': return event.peer + where + ' attached (' + event.client.name + ')';
    case 'left': return event.peer + where + ' left';
    case 'removed': return event.peer + where + ' is gone: ' + event.reason;
    case 'announced': return event.peer + where + ' announced: ' + event.claim.intent;
    case 'released': return event.peer + where + ' released ' + event.paths.join(', ');
    case 'overlap_began': return 'overlap began: ' + event.peer + ' and ' + event.with + where;
    case 'overlap_ended': return 'overlap ended: ' + event.peer + ' and ' + event.with + where;
    case 'waiting': return event.peer + where + ' waits for you: ' + event.waiting.reason;
    case 'waiting_over': return event.peer + where + ' moved on';
    case 'sibling_reached': return 'following' + where;
    case 'sibling_lost': return 'lost' + where + ': ' + event.reason;
    case 'lease': return 'lease ' + event.name + (event.holder ? ' held by ' + event.holder
      : ' let go') + (event.queued ? ', ' + event.queued + ' waiting' : '');
    default: return event.kind + where;
  }
}

function follow() {
  const source = new EventSource(EVENTS);
  source.onopen = () => setStatus('live', 'live');
  source.onerror = () => setStatus('reconnecting…', 'down');
  source.onmessage = (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch (error) {
      return;
    }
    setStatus('live', 'live');
    if (event.kind !== 'ready') {
      document.getElementById('last-change').textContent =
        'last change ' + new Date().toLocaleTimeString() + ': ' + describe(event);
    }
    readSoon();
  };
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('refresh').addEventListener('click', () => readSoon());
  follow();
  read().catch((error) => setStatus(error.message, 'down'));
  readMessages().catch((error) => setStatus(error.message, 'down'));
  setInterval(tickLastSeen, 1000);
  setInterval(() => {
    if (!document.hidden) readMessages().catch((error) => setStatus(error.message, 'down'));
  }, MESSAGES_EVERY_MS);
});
