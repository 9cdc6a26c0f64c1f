// RemoteSupport supporter console. Plain JavaScript, no outside packages, served under a strict CSP:
// no inline scripts or handlers, no style attributes, no eval, no innerHTML. Every string that comes from the server
// (names, descriptions, audit details, device names, error messages) reaches the page through textContent only, shown
// by visibleText (text.js: control, bidi and separator characters escaped visibly, SPEC §4.2).

import { setText, visibleText } from '/text.js';

const API = '/api/v1';

// Every kind the node records in its audit trail; the event stream names each event by its kind, and EventSource
// only hands named events to listeners registered for that exact name.
const EVENT_KINDS = [
  'code_created', 'code_updated', 'code_closed', 'code_expired', 'code_deleted',
  'device_online', 'device_offline', 'device_reconnecting', 'device_resumed',
  'request_sent', 'request_allowed', 'request_rejected', 'request_aborted', 'request_timed_out',
  'session_started', 'session_ended', 'voip_state', 'error',
  'feature_denied', 'features_granted', 'feature_granted', 'feature_refused', 'feature_revoked', 'feature_asked',
  'feature_ask_withdrawn',
  'message_sent', 'message_received', 'message_delivered', 'message_refused', 'messages_undelivered',
  'file_progress', 'file_received', 'file_delivered', 'file_refused',
  'token_issued', 'token_revoked',
  'account_created', 'account_changed', 'signed_in', 'signed_out', 'sign_in_failed',
  'webhook_created', 'webhook_changed', 'webhook_deleted', 'webhook_redelivered',
];

const LIVE_STATE_LABELS = {
  open: 'Open',
  online: 'Online',
  request_pending: 'Request pending',
  active: 'Active',
  closed: 'Closed',
  expired: 'Expired',
};

const TYPE_LABELS = { remote_support: 'Remote support', assist_ar: 'Assist AR' };
const CONNECTION_TYPE_LABELS = { screen_share: 'Screen share', assist_ar: 'Assist AR' };

// What a stream event means to the person watching the list (shown in a polite live region).
const EVENT_NOTES = {
  device_online: 'device came online',
  device_offline: 'device went offline',
  request_sent: 'request sent, waiting for the device',
  request_allowed: 'the device allowed the request',
  request_rejected: 'the device rejected the request',
  request_aborted: 'the request was aborted',
  request_timed_out: 'the request timed out without an answer',
  session_started: 'session started',
  session_ended: 'session ended',
  code_closed: 'code closed',
  code_expired: 'code expired',
  device_reconnecting: 'device is reconnecting',
  device_resumed: 'device reconnected',
};

const state = {
  account: null,
  csrf: null,
  sessions: new Map(),       // code -> Session
  eventSeq: 0,               // counts stream events and action answers applied
  codeSeq: new Map(),        // code -> eventSeq of the newest news about it
  listLoaded: false,
  listRequest: 0,
  events: null,              // the EventSource
  streamLost: false,
  retryDelay: 1000,
  retryTimer: null,
  audit: { code: null, nextBefore: null, ids: new Set(), request: 0 },
  // The session panel: its code, the rows it shows (by audit id), the supporter's lines by message id (for their
  // delivery), unread device lines, and pending reloads.
  // `withdrawing`: features whose ask this page withdrew, shown "withdrawing…" until the device's answer is read.
  panel: { code: null, request: 0, ids: new Set(), sent: new Map(), unread: 0, timers: {}, withdrawing: new Set() },
  connectCode: null,
  passwordLogin: null,
  // Webhooks (admins): the endpoints panel polls while it is shown (deliveries change without an audit row); the
  // delivery log of one endpoint holds its rows by id, the next older page, and a generation that a reopen or a new
  // filter moves on (answers of an older generation are dropped).
  webhooks: {
    pollTimer: null,
    request: 0,
    log: { id: null, url: '', filter: '', items: new Map(), nextBefore: null, generation: 0 },
  },
  currentPanel: 'codes-panel',
};

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- DOM helpers (text only)

/** An element with `text` as its text content; `options.attrs` may not set styles or handlers. */
function el(tag, options = {}, children = []) {
  const node = document.createElement(tag);
  if (options.className) node.className = options.className;
  if (options.text !== undefined && options.text !== null) setText(node, options.text);
  for (const [name, value] of Object.entries(options.attrs || {})) {
    if (name === 'style' || name.toLowerCase().startsWith('on')) throw new Error(`refusing attribute ${name}`);
    node.setAttribute(name, visibleText(value));
  }
  for (const [key, value] of Object.entries(options.data || {})) node.dataset[key] = String(value);
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === 'string' ? document.createTextNode(visibleText(child)) : child);
  }
  return node;
}

function button(label, action, className = 'secondary small', extra = {}) {
  return el('button', { className, text: label, attrs: { type: 'button', ...extra }, data: { action } });
}

/** A table cell; its contents sit in one box so that narrow screens can put the label beside them. */
function cell(label, children, className) {
  return el('td', { className, attrs: { 'data-label': label } }, [el('div', { className: 'cell-body' }, children)]);
}

function show(node, visible) { node.hidden = !visible; }

function formatTime(iso) {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return date.toLocaleString(undefined, {
    year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
}

function timeElement(iso) {
  const node = el('time', { text: formatTime(iso) });
  if (iso) node.dateTime = String(iso);
  return node;
}

// ---------------------------------------------------------------- API

class APIError extends Error {
  constructor(status, code, message, retryAfter) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

/** One API call: JSON in and out (or `raw`, a File sent as it is), the CSRF token on every state-changing request.
 * Throws APIError. */
async function api(method, path, body, { quietUnauthorized = false, raw = null } = {}) {
  const headers = { Accept: 'application/json' };
  const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
  if (raw) {
    headers['Content-Type'] = raw.type || 'application/octet-stream';
    init.body = raw;
  } else if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  if (method !== 'GET' && method !== 'HEAD' && state.csrf) headers['X-CSRF-Token'] = state.csrf;
  let response;
  try {
    response = await fetch(API + path, init);
  } catch (error) {
    throw new APIError(0, 'network', 'The console cannot reach the node — check your connection and try again.');
  }
  let payload = null;
  const type = response.headers.get('Content-Type') || '';
  if (response.status !== 204 && type.includes('application/json')) {
    try { payload = await response.json(); } catch (error) { payload = null; }
  }
  if (!response.ok) {
    const details = payload && payload.error ? payload.error : {};
    const message = typeof details.message === 'string' && details.message
      ? details.message
      : `The node answered ${response.status} ${response.statusText || ''}`.trim();
    const error = new APIError(response.status, details.code || 'error', message, response.headers.get('Retry-After'));
    if (response.status === 401 && !quietUnauthorized && state.account) {
      signedOut('Your sign-in has ended — sign in again.');
    }
    throw error;
  }
  return payload;
}

// ---------------------------------------------------------------- banner, notes

function showBanner(message) {
  setText($('banner-text'), message);
  show($('banner'), true);
}

function hideBanner() {
  show($('banner'), false);
  setText($('banner-text'), '');
}

function reportError(error) {
  if (error instanceof APIError && error.status === 401 && !state.account) return;  // already back at sign-in
  showBanner(error instanceof Error ? error.message : String(error));
}

function note(text) {
  setText($('live-note'), text);
  show($('live-note'), Boolean(text));
}

// ---------------------------------------------------------------- sign in / out

function showSignIn(message, { isError = true } = {}) {
  show($('loading'), false);
  show($('app'), false);
  show($('account-box'), false);
  show($('sign-in'), true);
  const error = $('sign-in-error');
  setText(error, message || '');
  error.classList.toggle('form-info', !isError);
  show(error, Boolean(message));
  $('sign-in-login').focus();
}

function signedIn(account, csrf) {
  state.account = account;
  state.csrf = csrf;
  hideBanner();
  show($('loading'), false);
  show($('sign-in'), false);
  setText($('account-display-name'), account.display_name || account.login);
  setText($('account-login'), `(${account.login})`);
  setText($('account-role'), account.role);
  show($('account-box'), true);
  const admin = account.role === 'admin';
  for (const tab of document.querySelectorAll('.admin-only')) show(tab, admin);
  show($('app'), true);
  selectPanel('codes-panel');
  loadSessions();
  openEvents();
}

function signedOut(message, options) {
  closeEvents();
  state.account = null;
  state.csrf = null;
  state.sessions.clear();
  state.codeSeq.clear();
  state.listLoaded = false;
  $('codes-body').replaceChildren();
  $('users-body').replaceChildren();
  $('tokens-body').replaceChildren();
  $('webhooks-body').replaceChildren();
  delete $('codes-panel').dataset.loaded;
  delete $('webhooks-panel').dataset.loaded;
  closeAudit();
  closeDeliveries();
  stopWebhookPoll();
  hideNewToken();
  hideWebhookSecret();
  webhookNote('');
  show($('new-code-result'), false);
  show($('stream-status'), false);
  for (const dialog of document.querySelectorAll('dialog')) if (dialog.open) dialog.close();
  hideBanner();
  showSignIn(message, options);
}

async function onSignIn(event) {
  event.preventDefault();
  const login = $('sign-in-login').value.trim();
  const password = $('sign-in-password').value;
  const error = $('sign-in-error');
  error.classList.remove('form-info');
  if (!login || !password) {
    setText(error, 'Enter your login and password.');
    show(error, true);
    (login ? $('sign-in-password') : $('sign-in-login')).focus();
    return;
  }
  const submit = $('sign-in-submit');
  submit.disabled = true;
  show(error, false);
  try {
    const answer = await api('POST', '/login', { login, password }, { quietUnauthorized: true });
    $('sign-in-password').value = '';
    signedIn(answer.account, answer.csrf_token);
  } catch (failure) {
    let text = failure.message;
    if (failure instanceof APIError && failure.status === 429 && failure.retryAfter) {
      text += ` (try again in ${failure.retryAfter} s)`;
    }
    setText(error, text);
    error.classList.remove('form-info');
    show(error, true);
    $('sign-in-password').select();
    $('sign-in-password').focus();
  } finally {
    submit.disabled = false;
  }
}

async function onSignOut() {
  try {
    await api('POST', '/logout', undefined, { quietUnauthorized: true });
  } catch (error) {
    // Signed out locally either way; the server's session ends by itself.
  }
  signedOut('You have signed out.', { isError: false });
}

// ---------------------------------------------------------------- panels

function selectPanel(id) {
  state.currentPanel = id;
  for (const tab of document.querySelectorAll('.tab')) {
    const current = tab.dataset.panel === id;
    if (current) tab.setAttribute('aria-current', 'page'); else tab.removeAttribute('aria-current');
  }
  for (const panel of ['codes-panel', 'users-panel', 'tokens-panel', 'webhooks-panel']) show($(panel), panel === id);
  if (id === 'users-panel') loadUsers();
  if (id === 'tokens-panel') loadTokens();
  if (id === 'webhooks-panel') {
    loadWebhooks();
    if (state.webhooks.log.id) loadDeliveries('refresh');
    scheduleWebhookPoll();
  } else {
    stopWebhookPoll();
  }
}

// ---------------------------------------------------------------- codes

/** Loads every code; news that arrived while the list was on its way wins over the list. */
async function loadSessions() {
  const request = ++state.listRequest;
  const seqAtStart = state.eventSeq;
  const loaded = new Map();
  try {
    let offset = 0;
    for (let page = 0; page < 20; page++) {
      const answer = await api('GET', `/sessions?offset=${offset}&limit=500`);
      for (const session of answer.sessions || []) loaded.set(session.code, session);
      offset += (answer.sessions || []).length;
      if (!answer.sessions || answer.sessions.length === 0 || offset >= (answer.total || 0)) break;
    }
  } catch (error) {
    reportError(error);
    return;
  }
  if (request !== state.listRequest || !state.account) return;
  for (const [code, seq] of state.codeSeq) {
    if (seq <= seqAtStart) continue;
    if (state.sessions.has(code)) loaded.set(code, state.sessions.get(code)); else loaded.delete(code);
  }
  state.sessions = loaded;
  state.listLoaded = true;
  renderCodes();
  $('codes-panel').dataset.loaded = 'true';
}

/** Applies an action's answer unless the stream brought newer news about the code since the action began. */
function applyAnswer(code, session, seqBefore) {
  if (!session || (state.codeSeq.get(code) || 0) > seqBefore) return;
  state.eventSeq++;
  state.codeSeq.set(code, state.eventSeq);
  state.sessions.set(code, session);
  renderCodes();
}

function sortedSessions() {
  return [...state.sessions.values()].sort((a, b) => {
    const byTime = String(b.created_at || '').localeCompare(String(a.created_at || ''));
    return byTime !== 0 ? byTime : String(a.code).localeCompare(String(b.code));
  });
}

function renderCodes() {
  const body = $('codes-body');
  const sessions = sortedSessions();
  show($('codes-empty'), state.listLoaded && sessions.length === 0);
  show($('codes-table'), sessions.length > 0);

  // Remember what had the keyboard focus, to put it back on the same action of the rebuilt row.
  const active = document.activeElement;
  const focusedRow = active && body.contains(active) ? active.closest('tr') : null;
  const focus = focusedRow ? { code: focusedRow.dataset.code, action: active.dataset.action } : null;

  const existing = new Map();
  for (const row of body.children) existing.set(row.dataset.code, row);
  const rows = sessions.map((session) => {
    const fingerprint = JSON.stringify(session);
    const old = existing.get(session.code);
    if (old && old.dataset.fingerprint === fingerprint) return old;
    const row = codeRow(session);
    row.dataset.fingerprint = fingerprint;
    return row;
  });
  let cursor = body.firstElementChild;
  for (const row of rows) {
    if (row === cursor) { cursor = cursor.nextElementSibling; continue; }
    body.insertBefore(row, cursor);
  }
  while (cursor) {
    const next = cursor.nextElementSibling;
    cursor.remove();
    cursor = next;
  }
  if (focus && (!document.activeElement || document.activeElement === document.body)) {
    const row = body.querySelector(`tr[data-code="${CSS.escape(focus.code)}"]`);
    if (row) {
      const target = (focus.action && row.querySelector(`button[data-action="${CSS.escape(focus.action)}"]`))
        || row.querySelector('button');
      if (target) target.focus();
    }
  }
}

function codeRow(session) {
  const live = session.live_state || session.state;
  const me = state.account ? state.account.login : null;
  const row = el('tr', { className: `code-row live-${live}`, data: { code: session.code, state: live } });
  if (state.audit.code === session.code) row.classList.add('highlight');

  const codeParts = [el('span', { className: 'code-value', text: session.code })];
  if (live === 'open' || live === 'online') {
    codeParts.push(el('span', { className: 'device-name muted', text: `valid until ${formatTime(session.valid_until)}` }));
  }
  row.append(cell('Code', codeParts, 'c-code'));
  row.append(cell('Type', [TYPE_LABELS[session.type] || session.type || '—'], 'c-type'));
  row.append(cell('Description', [session.description || '—'], 'c-description'));
  row.append(cell('Customer', [session.customer_name || '—'], 'c-customer'));
  const assigned = session.assigned_supporter;
  row.append(cell('Assigned to', [assigned ? (assigned === me ? `${assigned} (you)` : assigned) : 'anyone'], 'c-assigned'));

  const stateParts = [el('span', { className: `state-badge state-${live}`, text: LIVE_STATE_LABELS[live] || live })];
  if (session.device_name && live !== 'closed' && live !== 'expired' && (session.online || live !== 'open')) {
    stateParts.push(el('span', { className: 'device-name', text: session.device_name }));
  }
  if (session.reconnecting) stateParts.push(el('span', { className: 'reconnecting-note', text: 'device reconnecting…' }));
  const stateCell = cell('State', stateParts, 'c-state');
  stateCell.dataset.state = live;
  row.append(stateCell);

  const actions = el('div', { className: 'actions' });
  const label = (verb) => ({ 'aria-label': `${verb} ${session.code}` });
  if (live === 'online') actions.append(button('Connect', 'connect', 'small', label('Connect to')));
  if (live === 'request_pending') actions.append(button('Abort', 'cancel', 'danger small', label('Abort the request on')));
  if (live === 'active') {
    actions.append(button('Session', 'session', 'small', label('Open the session panel of')));
    actions.append(button('End', 'end', 'danger small', label('End the session on')));
  }
  if (live === 'open' || live === 'online') actions.append(button('Close', 'close', 'secondary small', label('Close')));
  actions.append(button('Audit', 'audit', 'secondary small', label('Audit trail of')));
  row.append(cell('Actions', [actions], 'c-actions'));
  return row;
}

async function onCodesClick(event) {
  const target = event.target.closest('button[data-action]');
  if (!target) return;
  const row = target.closest('tr');
  const code = row && row.dataset.code;
  if (!code) return;
  const action = target.dataset.action;
  if (action === 'connect') return openConnect(code);
  if (action === 'audit') return openAudit(code);
  if (action === 'session') return openSession(code);
  if (action === 'close' && !target.classList.contains('confirming')) {
    target.classList.add('confirming');
    setText(target, 'Confirm close');
    setTimeout(() => {
      if (target.isConnected && target.classList.contains('confirming')) {
        target.classList.remove('confirming');
        setText(target, 'Close');
      }
    }, 5000);
    return;
  }
  const requests = {
    cancel: ['POST', `/sessions/${encodeURIComponent(code)}/cancel`, undefined],
    end: ['POST', `/sessions/${encodeURIComponent(code)}/end`, undefined],
    close: ['PUT', `/sessions/${encodeURIComponent(code)}`, { state: 'closed' }],
  };
  const request = requests[action];
  if (!request) return;
  target.disabled = true;
  const seqBefore = state.eventSeq;
  try {
    const session = await api(...request);
    hideBanner();
    applyAnswer(code, session, seqBefore);
  } catch (error) {
    reportError(error);
  } finally {
    if (target.isConnected) target.disabled = false;
  }
}

function toggleNewCode(open) {
  const form = $('new-code-form');
  show(form, open);
  $('new-code-toggle').setAttribute('aria-expanded', String(open));
  if (open) {
    show($('new-code-result'), false);
    $('new-code-type').focus();
  }
}

async function onNewCode(event) {
  event.preventDefault();
  const body = { type: $('new-code-type').value };
  const text = (id) => $(id).value.trim();
  if (text('new-code-description')) body.description = text('new-code-description');
  if (text('new-code-customer')) body.customer_name = text('new-code-customer');
  if (text('new-code-waiting')) body.waiting_message = text('new-code-waiting');
  const minutes = text('new-code-minutes');
  if (minutes) {
    const value = Number(minutes);
    if (!Number.isInteger(value) || value < 1) {
      showBanner('Validity must be a whole number of minutes, at least 1.');
      $('new-code-minutes').focus();
      return;
    }
    body.valid_for_seconds = value * 60;
  }
  if ($('new-code-assign').checked && state.account) body.assigned_supporter = state.account.login;
  const submit = $('new-code-submit');
  submit.disabled = true;
  const seqBefore = state.eventSeq;
  try {
    const session = await api('POST', '/sessions', body);
    hideBanner();
    $('new-code-form').reset();
    toggleNewCode(false);
    setText($('new-code-value'), session.code);
    show($('new-code-result'), true);
    applyAnswer(session.code, session, seqBefore);
    const first = $('codes-body').querySelector(`tr[data-code="${CSS.escape(session.code)}"] button`);
    (first || $('new-code-toggle')).focus();
  } catch (error) {
    reportError(error);
  } finally {
    submit.disabled = false;
  }
}

// ---------------------------------------------------------------- connect dialog

function openConnect(code) {
  const session = state.sessions.get(code);
  state.connectCode = code;
  setText($('connect-code'), code);
  setText($('connect-device'), session && session.device_name ? `Device: ${session.device_name}` : '');
  const assist = session && session.type === 'assist_ar';
  $('connect-type-screen').checked = !assist;
  $('connect-type-assist').checked = Boolean(assist);
  show($('connect-error'), false);
  $('connect-dialog').showModal();
  $('connect-submit').focus();
}

async function onConnect(event) {
  event.preventDefault();
  const code = state.connectCode;
  if (!code) return;
  const form = $('connect-form');
  const type = form.querySelector('input[name="connection_type"]:checked');
  const features = [...form.querySelectorAll('input[name="feature"]:checked')].map((box) => box.value);
  const submit = $('connect-submit');
  submit.disabled = true;
  const seqBefore = state.eventSeq;
  try {
    const session = await api('POST', `/sessions/${encodeURIComponent(code)}/connect`, {
      connection_type: type ? type.value : 'screen_share',
      features,
    });
    hideBanner();
    $('connect-dialog').close();
    applyAnswer(code, session, seqBefore);
    note(`${code}: ${CONNECTION_TYPE_LABELS[type ? type.value : 'screen_share']} request sent as `
      + `${state.account.display_name || state.account.login}`);
    const row = $('codes-body').querySelector(`tr[data-code="${CSS.escape(code)}"]`);
    const next = row && row.querySelector('button[data-action="cancel"], button[data-action="end"], button');
    if (next) next.focus();
  } catch (error) {
    setText($('connect-error'), error.message);
    show($('connect-error'), true);
  } finally {
    submit.disabled = false;
  }
}

// ---------------------------------------------------------------- audit

function describeActor(actor) {
  if (!actor) return '—';
  const parts = [];
  if (actor.account) {
    parts.push(actor.display_name ? `${actor.display_name} (${actor.account})` : actor.account);
  } else if (actor.display_name) {
    parts.push(actor.display_name);
  }
  if (actor.token) parts.push(`token ${actor.token}`);
  if (!parts.length && actor.kind) parts.push(actor.kind);
  if (actor.address) parts.push(`from ${actor.address}`);
  return parts.join(', ');
}

function auditRow(event) {
  const details = el('ul', { className: 'details-list' });
  for (const [key, value] of Object.entries(event.details || {})) {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    details.append(el('li', {}, [el('span', { className: 'details-key', text: `${key}: ` }), text]));
  }
  return el('tr', { className: 'audit-row', data: { id: event.id, kind: event.kind } }, [
    cell('Time', [timeElement(event.time)], 'a-time'),
    cell('Event', [el('code', { text: event.kind })], 'a-kind'),
    cell('Actor', [describeActor(event.actor)], 'a-actor'),
    cell('Details', [details], 'a-details'),
  ]);
}

async function openAudit(code) {
  const audit = state.audit;
  audit.code = code;
  audit.ids = new Set();
  audit.nextBefore = null;
  setText($('audit-code'), code);
  $('audit-body').replaceChildren();
  show($('audit-empty'), false);
  show($('audit-more'), false);
  show($('audit-panel'), true);
  for (const row of $('codes-body').children) row.classList.toggle('highlight', row.dataset.code === code);
  $('audit-panel').focus();
  $('audit-panel').scrollIntoView({ block: 'nearest' });
  await loadAudit(false);
}

async function loadAudit(older) {
  const audit = state.audit;
  const code = audit.code;
  if (!code) return;
  const request = ++audit.request;
  let path = `/audit?code=${encodeURIComponent(code)}&limit=100`;
  if (older && audit.nextBefore !== null) path += `&before_id=${encodeURIComponent(audit.nextBefore)}`;
  try {
    const answer = await api('GET', path);
    if (request !== audit.request || audit.code !== code) return;
    const body = $('audit-body');
    for (const event of answer.events || []) {
      if (audit.ids.has(event.id)) continue;
      audit.ids.add(event.id);
      body.append(auditRow(event));
    }
    audit.nextBefore = answer.next_before_id ?? null;
    show($('audit-more'), audit.nextBefore !== null);
    show($('audit-empty'), audit.ids.size === 0);
    $('audit-panel').dataset.loaded = 'true';
  } catch (error) {
    reportError(error);
  }
}

/** A stream event about the code whose audit is shown goes on top, in id order. */
function auditLive(event) {
  const audit = state.audit;
  if (!audit.code || event.code !== audit.code || audit.ids.has(event.id)) return;
  audit.ids.add(event.id);
  const body = $('audit-body');
  const row = auditRow(event);
  const before = [...body.children].find((other) => Number(other.dataset.id) < Number(event.id));
  body.insertBefore(row, before || null);
  show($('audit-empty'), false);
}

function closeAudit() {
  state.audit.code = null;
  state.audit.request++;
  show($('audit-panel'), false);
  delete $('audit-panel').dataset.loaded;
  for (const row of $('codes-body').children) row.classList.remove('highlight');
}

// ---------------------------------------------------------------- session panel (chat, features, files, timeline)

const FEATURES = [
  ['voip', 'Voice (VoIP)'], ['chat', 'Chat'], ['file_share', 'File share'], ['remote_control', 'Remote control'],
  ['ar_pointer', 'AR pointer'], ['app_messages', 'App messages'],
];
const FEATURE_STATE_LABELS = {
  granted: 'granted', pending: 'asked, waiting for the user', withdrawing: 'withdrawing…', withdrawn: 'withdrawn',
  refused: 'refused', revoked: 'revoked by the device', none: 'not granted',
};
// States in which the supporter may ask (again) for a feature.
const ASKABLE_STATES = new Set(['none', 'refused', 'revoked', 'withdrawn']);
// The timeline's words for kinds the stream's notes (EVENT_NOTES) do not cover.
const TIMELINE_LABELS = {
  feature_asked: 'feature asked for',
  feature_ask_withdrawn: 'ask withdrawn by the supporter',
};
// A feature refusal's reason (SPEC §6) in the timeline.
const REFUSAL_REASONS = {
  aborted_by_supporter: 'the supporter withdrew the ask', rejected_by_user: 'the user said no',
  request_timed_out: 'not answered in time', feature_denied: "the device's rules deny it",
  unsupported_feature: 'the device does not support it', connection_lost: 'the link broke',
};
const CALL_LABELS = {
  started: 'in a call', ended: 'call ended', notStartedOtherCallActive: 'not started: the user is in another call',
  notStartedUnsupported: 'not started: not supported by one side',
};
const TO_DEVICE_LABELS = {
  sent: 'sent, waiting for the device', delivered: 'delivered to the device', refused: 'refused by the device',
};
const MESSAGE_KINDS = new Set([
  'message_sent', 'message_received', 'message_delivered', 'message_refused', 'messages_undelivered',
]);

const sessionPath = (code, rest = '') => `/sessions/${encodeURIComponent(code)}${rest}`;

async function openSession(code, { keepFocus = false } = {}) {
  const panel = state.panel;
  panel.code = code;
  panel.request++;
  panel.ids = new Set();
  panel.sent = new Map();
  panel.unread = 0;
  panel.withdrawing = new Set();
  setText($('session-code'), code);
  setText($('session-call'), 'no call');
  $('chat-log').replaceChildren();
  $('session-timeline').replaceChildren();
  $('session-files').replaceChildren();
  show($('chat-error'), false);
  renderUnread();
  renderSessionHead();
  show($('session-panel'), true);
  delete $('session-panel').dataset.loaded;
  if (!keepFocus) {
    $('session-panel').focus();
    $('session-panel').scrollIntoView({ block: 'nearest' });
  }
  const request = panel.request;
  await Promise.all([loadSessionMessages(request), loadSessionFeatures(request), loadSessionFiles(request),
    loadTimeline(request)]);
  if (request === panel.request) $('session-panel').dataset.loaded = 'true';
}

function closeSession() {
  state.panel.code = null;
  state.panel.request++;
  show($('session-panel'), false);
  delete $('session-panel').dataset.loaded;
}

/** The panel's head from the code's row: state, device, reconnecting. */
function renderSessionHead() {
  const code = state.panel.code;
  if (!code) return;
  const session = state.sessions.get(code) || {};
  const live = session.live_state || session.state || 'open';
  const badge = $('session-state');
  badge.className = `state-badge state-${live}`;
  setText(badge, LIVE_STATE_LABELS[live] || live);
  setText($('session-device'), session.device_name || '—');
  show($('session-reconnecting'), Boolean(session.reconnecting));
  $('chat-send').disabled = live !== 'active';
}

/** Reloads `what` once for a burst of events (a file's progress, several grants). */
function reloadSoon(what, load) {
  const panel = state.panel;
  clearTimeout(panel.timers[what]);
  panel.timers[what] = setTimeout(() => load(panel.request), 150);
}

async function loadSessionMessages(request) {
  const panel = state.panel;
  const code = panel.code;
  let after = 0;
  try {
    for (let page = 0; page < 20; page++) {
      const answer = await api('GET', sessionPath(code, `/messages?after_id=${after}&limit=500`));
      if (request !== panel.request) return;
      for (const event of answer.events || []) messageEvent(event, { live: false });
      if (answer.next_after_id === null || answer.next_after_id === undefined) break;
      after = answer.next_after_id;
    }
  } catch (error) {
    reportError(error);
  }
}

function chatText(event) {
  const content = event.content;
  const details = event.details || {};
  if (content === null) return '(no longer kept)';
  if (!content) return '';
  if (content.kind === 'chat') return content.text || '';
  if (content.kind === 'application') return `application message (${content.content_type}, ${details.size || '?'} bytes)`;
  if (content.kind === 'file') return `file: ${content.name} (${content.size} bytes)`;
  return '';
}

/** One message row of the trail into the chat: a line, or the delivery of one. */
function messageEvent(event, { live }) {
  const panel = state.panel;
  if (panel.ids.has(event.id)) return;
  panel.ids.add(event.id);
  const details = event.details || {};
  if (event.kind === 'message_sent' || event.kind === 'message_received') {
    const fromDevice = event.kind === 'message_received';
    const session = state.sessions.get(panel.code) || {};
    const actor = event.actor || {};
    const who = fromDevice ? (session.device_name || 'Device') : (actor.display_name || actor.account || describeActor(actor));
    const line = el('li', {
      className: `chat-line ${fromDevice ? 'from-device' : 'from-supporter'}`,
      data: { id: event.id, messageId: details.message_id || '', kind: details.kind || '' },
    }, [
      el('span', { className: 'chat-meta' }, [`${who} · `, timeElement(event.time)]),
      el('span', { className: 'chat-text', text: chatText(event) }),
    ]);
    if (!fromDevice) {
      line.append(el('span', { className: 'chat-status', text: 'sent' }));
      panel.sent.set(String(details.message_id), line);
    }
    $('chat-log').append(line);
    show($('chat-empty'), false);
    $('chat-log').scrollTop = $('chat-log').scrollHeight;
    if (fromDevice && live && (document.hidden || document.activeElement !== $('chat-text'))) {
      panel.unread++;
      renderUnread();
    }
  } else if (event.kind === 'message_delivered' || event.kind === 'message_refused') {
    const line = panel.sent.get(String(details.message_id));
    const status = line && line.querySelector('.chat-status');
    if (!status) return;
    const delivered = event.kind === 'message_delivered';
    status.className = `chat-status ${delivered ? 'delivered' : 'refused'}`;
    setText(status, delivered ? 'delivered ✓' : `refused (${details.reason || 'refused'})`);
    line.dataset.delivery = delivered ? 'delivered' : 'refused';
  } else if (event.kind === 'messages_undelivered') {
    for (const id of String(details.message_ids || '').split(',')) {
      const line = panel.sent.get(id);
      const status = line && line.querySelector('.chat-status');
      if (!status) continue;
      status.className = 'chat-status refused';
      setText(status, 'not delivered');
      line.dataset.delivery = 'undelivered';
    }
  }
}

function renderUnread() {
  const badge = $('chat-unread');
  setText(badge, `${state.panel.unread} unread`);
  show(badge, state.panel.unread > 0);
}

async function onChat(event) {
  event.preventDefault();
  const code = state.panel.code;
  const field = $('chat-text');
  const text = field.value;
  if (!code || !text.trim()) return;
  $('chat-send').disabled = true;
  try {
    await api('POST', sessionPath(code, '/chat'), { text });
    field.value = '';
    show($('chat-error'), false);
  } catch (error) {
    setText($('chat-error'), error.message);
    show($('chat-error'), true);
  } finally {
    renderSessionHead();
    field.focus();
  }
}

/** Features of the running (or last) session, from its report: granted, asked, refused, revoked. */
async function loadSessionFeatures(request) {
  const panel = state.panel;
  const code = panel.code;
  try {
    const [report, trail] = await Promise.all([
      api('GET', sessionPath(code, '/report')),
      api('GET', `/audit?code=${encodeURIComponent(code)}&limit=500`),
    ]);
    if (request !== panel.request) return;
    const decided = featureStates(trail.events || []);
    const sessions = (report.sessions || []).filter((entry) => entry.started_at);
    const current = sessions[sessions.length - 1] || {};
    const session = state.sessions.get(code) || {};
    const active = (session.live_state || session.state) === 'active' && current.started_at && !current.ended_at;
    const list = $('session-features');
    list.replaceChildren();
    for (const [name, label] of FEATURES) {
      // The newest word on a feature wins (the trail's order); the report's lists when the trail is too long.
      let featureState = decided.get(name) || reportState(current, name);
      // A withdrawal this page sent and the trail does not show yet.
      if (featureState === 'pending' && panel.withdrawing.has(name)) featureState = 'withdrawing';
      if (featureState !== 'pending' && featureState !== 'withdrawing') panel.withdrawing.delete(name);
      const item = el('li', { data: { feature: name, state: featureState } }, [
        el('span', { text: label }),
        el('span', { className: `feature-state ${featureState}`, text: FEATURE_STATE_LABELS[featureState] }),
      ]);
      if (active && ASKABLE_STATES.has(featureState)) {
        item.append(button('Ask', 'ask', 'secondary small', { 'aria-label': `Ask for ${label}` }));
      } else if (active && featureState === 'pending') {
        item.append(button('Withdraw', 'withdraw', 'secondary small', { 'aria-label': `Withdraw the ask for ${label}` }));
      }
      list.append(item);
    }
  } catch (error) {
    reportError(error);
  }
}

/** Each feature's state in the running session from its audit rows (newest first): the newest row that names a
 * feature decides it; rows before the session's start do not count. Empty when the start is not among `events`.
 * A withdrawn ask is "withdrawing" until the device answers it: refused `aborted_by_supporter` is "withdrawn"; a
 * grant that crossed the withdrawal stands. */
function featureStates(events) {
  const states = new Map();
  const words = {
    feature_granted: 'granted', feature_asked: 'pending', feature_ask_withdrawn: 'withdrawing',
    feature_refused: 'refused', feature_revoked: 'revoked',
  };
  let started = false;
  for (const event of events) {
    const details = event.details || {};
    if (event.kind === 'session_started') { started = true; break; }
    if (words[event.kind] && details.feature && !states.has(details.feature)) {
      const withdrawn = event.kind === 'feature_refused' && details.reason === 'aborted_by_supporter';
      states.set(details.feature, withdrawn ? 'withdrawn' : words[event.kind]);
    }
    if (event.kind === 'features_granted') {
      for (const name of String(details.features || '').split(',')) if (name && !states.has(name)) states.set(name, 'granted');
    }
  }
  return started ? states : new Map();
}

/** A feature's state from the session's report (its lists carry no order between a refusal and a revocation). */
function reportState(session, name) {
  if ((session.granted || []).includes(name)) return 'granted';
  if ((session.pending_asks || []).includes(name)) return 'pending';
  if ((session.revoked || []).includes(name)) return 'revoked';
  if ((session.refused || []).includes(name)) return 'refused';
  return 'none';
}

async function onFeaturesClick(event) {
  const target = event.target.closest('button[data-action="ask"], button[data-action="withdraw"]');
  const item = target && target.closest('li');
  const panel = state.panel;
  const code = panel.code;
  if (!item || !code) return;
  const feature = item.dataset.feature;
  const withdraw = target.dataset.action === 'withdraw';
  target.disabled = true;
  try {
    await api('POST', sessionPath(code, withdraw ? '/ask/withdraw' : '/ask'), { feature });
    hideBanner();
    if (withdraw && panel.code === code) {
      // The device's answer comes on the event stream; until then the ask is being withdrawn.
      // (The list may have been rebuilt meanwhile: the feature's item as it is now.)
      panel.withdrawing.add(feature);
      const current = $('session-features').querySelector(`li[data-feature="${CSS.escape(feature)}"]`);
      if (current && current.dataset.state === 'pending') {
        current.dataset.state = 'withdrawing';
        const shown = current.querySelector('.feature-state');
        if (shown) {
          shown.className = 'feature-state withdrawing';
          setText(shown, FEATURE_STATE_LABELS.withdrawing);
        }
        for (const stale of current.querySelectorAll('button[data-action="withdraw"]')) stale.remove();
      }
    }
  } catch (error) {
    reportError(error);
    if (target.isConnected) target.disabled = false;
  }
}

async function onSendFile(event) {
  event.preventDefault();
  const code = state.panel.code;
  const input = $('file-input');
  const file = input.files && input.files[0];
  if (!code || !file) return;
  $('file-send').disabled = true;
  try {
    await api('POST', sessionPath(code, `/files?name=${encodeURIComponent(file.name)}`), undefined, { raw: file });
    input.value = '';
    show($('file-error'), false);
  } catch (error) {
    setText($('file-error'), error.message);
    show($('file-error'), true);
  } finally {
    $('file-send').disabled = false;
  }
}

async function loadSessionFiles(request) {
  const panel = state.panel;
  const code = panel.code;
  try {
    const answer = await api('GET', sessionPath(code, '/files'));
    if (request !== panel.request) return;
    const list = $('session-files');
    list.replaceChildren();
    for (const file of answer.files || []) {
      const progress = el('progress', { attrs: { max: String(file.size || 1), value: String(file.received || 0),
        'aria-label': `${file.name}: ${file.received} of ${file.size} bytes` } });
      const toDevice = file.direction === 'to_device';
      const parts = [el('span', { className: 'file-name', text: `${toDevice ? '→ ' : ''}${file.name}` }), progress,
        el('span', { className: 'muted', text: `${file.size} bytes, ${toDevice ? TO_DEVICE_LABELS[file.state] || file.state : file.state}` })];
      if (file.download) {
        parts.push(el('a', { text: 'Download', attrs: { href: API + file.download.slice('/api/v1'.length),
          download: '', 'aria-label': `Download ${file.name}` } }));
      }
      list.append(el('li', { data: { state: file.state, direction: file.direction, fileId: file.file_id || '' } }, parts));
    }
    show($('files-empty'), list.children.length === 0);
  } catch (error) {
    reportError(error);
  }
}

function timelineItem(event) {
  const details = event.details || {};
  const words = TIMELINE_LABELS[event.kind] || EVENT_NOTES[event.kind] || event.kind.replaceAll('_', ' ');
  let extra = details.feature || details.features || details.state || details.name || details.reason || '';
  if (event.kind === 'feature_refused' && details.feature && details.reason) {
    extra = `${details.feature} (${REFUSAL_REASONS[details.reason] || details.reason})`;
  }
  return el('li', { data: { id: event.id, kind: event.kind } }, [timeElement(event.time), extra ? `${words}: ${extra}` : words]);
}

async function loadTimeline(request) {
  const panel = state.panel;
  const code = panel.code;
  try {
    const answer = await api('GET', `/audit?code=${encodeURIComponent(code)}&limit=200`);
    if (request !== panel.request) return;
    const list = $('session-timeline');
    list.replaceChildren();
    for (const event of [...(answer.events || [])].reverse()) {
      list.append(timelineItem(event));
      if (event.kind === 'voip_state') showCall(event);
    }
  } catch (error) {
    reportError(error);
  }
}

function showCall(event) {
  const callState = (event.details || {}).state || 'unknown';
  setText($('session-call'), CALL_LABELS[callState] || callState);
}

/** A stream event about the panel's code. */
function sessionLive(event) {
  renderSessionHead();
  if (MESSAGE_KINDS.has(event.kind)) messageEvent(event, { live: true });
  if (event.kind.startsWith('file_') || (event.kind === 'message_sent' && (event.details || {}).kind === 'file')) {
    reloadSoon('files', loadSessionFiles);
  }
  if (event.kind.startsWith('feature') || event.kind.startsWith('session_') || event.kind.startsWith('request_')) {
    reloadSoon('features', loadSessionFeatures);
  }
  if (event.kind === 'voip_state') showCall(event);
  const list = $('session-timeline');
  if (!list.querySelector(`li[data-id="${CSS.escape(String(event.id))}"]`)) list.append(timelineItem(event));
}

// ---------------------------------------------------------------- event stream

function closeEvents() {
  if (state.retryTimer) clearTimeout(state.retryTimer);
  state.retryTimer = null;
  if (state.events) state.events.close();
  state.events = null;
}

function openEvents() {
  closeEvents();
  const source = new EventSource(`${API}/events`);
  state.events = source;
  source.onopen = () => {
    if (state.events !== source) return;
    state.retryDelay = 1000;
    show($('stream-status'), false);
    setText($('stream-status'), 'Reconnecting…');
    if (state.streamLost) {
      state.streamLost = false;
      loadSessions();  // whatever the stream could not resume is in the list
      if (state.audit.code) loadAudit(false);
      if (state.panel.code) openSession(state.panel.code, { keepFocus: true });
    }
  };
  source.onerror = () => {
    if (state.events !== source) return;
    state.streamLost = true;
    show($('stream-status'), true);
    if (source.readyState === EventSource.CLOSED) {
      // The browser gave up (the server refused the stream): find out why, then try again with a new one.
      source.close();
      state.events = null;
      scheduleStreamRetry();
    }
  };
  const handler = (message) => onStreamEvent(message);
  for (const kind of EVENT_KINDS) source.addEventListener(kind, handler);
  source.onmessage = handler;
}

function scheduleStreamRetry() {
  if (state.retryTimer) clearTimeout(state.retryTimer);
  const delay = state.retryDelay;
  state.retryDelay = Math.min(state.retryDelay * 2, 15000);
  state.retryTimer = setTimeout(async () => {
    state.retryTimer = null;
    if (!state.account) return;
    try {
      const answer = await api('GET', '/me', undefined, { quietUnauthorized: true });
      if (answer && answer.csrf_token) state.csrf = answer.csrf_token;
      openEvents();
    } catch (error) {
      if (error instanceof APIError && error.status === 401) {
        signedOut('Your sign-in has ended — sign in again.');
      } else {
        scheduleStreamRetry();
      }
    }
  }, delay);
}

// What a row's kind says of its code right after it: a `session` read in the moment between the row's commit and
// the node applying it (decide → commit → apply) can still show the state before; the code is then read again.
const STATE_AFTER = {
  device_online: (session) => session.online === true,
  device_offline: (session) => session.online === false,
  session_started: (session) => (session.live_state || session.state) === 'active',
  request_sent: (session) => ['request_pending', 'active'].includes(session.live_state || session.state),
};

/** Reads `code` again (up to 5 times, 300 ms apart) until `settled` holds for it; newer stream news wins. */
function refreshUntil(code, settled, attempt = 0) {
  setTimeout(async () => {
    if (!state.account || attempt >= 5) return;
    const seqBefore = state.codeSeq.get(code) || 0;
    try {
      const session = await api('GET', `/sessions/${encodeURIComponent(code)}`);
      applyAnswer(code, session, seqBefore);
      if (!settled(session)) refreshUntil(code, settled, attempt + 1);
    } catch (error) {
      // a deleted or no longer visible code: the stream says so
    }
  }, 300);
}

function onStreamEvent(message) {
  let data;
  try { data = JSON.parse(message.data); } catch (error) { return; }
  if (!data || typeof data !== 'object') return;
  const kind = data.kind || message.type;
  const code = data.code;
  if (code && Object.prototype.hasOwnProperty.call(data, 'session')) {
    state.eventSeq++;
    state.codeSeq.set(code, state.eventSeq);
    if (data.session) state.sessions.set(code, data.session); else state.sessions.delete(code);
    renderCodes();
    if (data.session && STATE_AFTER[kind] && !STATE_AFTER[kind](data.session)) refreshUntil(code, STATE_AFTER[kind]);
    if (EVENT_NOTES[kind] && state.sessions.has(code)) note(`${code}: ${EVENT_NOTES[kind]}`);
  }
  if (code) auditLive(data);
  if (code && code === state.panel.code) sessionLive(data);
  if (kind && kind.startsWith('token_') && state.currentPanel === 'tokens-panel') loadTokens();
  if (kind && kind.startsWith('account_') && state.currentPanel === 'users-panel') loadUsers();
  if (kind && kind.startsWith('webhook_') && state.currentPanel === 'webhooks-panel') loadWebhooks({ quiet: true });
}

// ---------------------------------------------------------------- users (admins)

async function loadUsers() {
  if (!state.account || state.account.role !== 'admin') return;
  try {
    const answer = await api('GET', '/users');
    renderUsers(answer.users || []);
  } catch (error) {
    reportError(error);
  }
}

function renderUsers(users) {
  const body = $('users-body');
  show($('users-empty'), users.length === 0);
  show($('users-table'), users.length > 0);
  const me = state.account ? state.account.login : null;
  body.replaceChildren(...users.map((user) => {
    const actions = el('div', { className: 'actions' });
    const who = user.login;
    if (user.state === 'disabled') {
      actions.append(button('Enable', 'enable', 'secondary small', { 'aria-label': `Enable ${who}` }));
    } else {
      actions.append(button('Disable', 'disable', 'danger small', { 'aria-label': `Disable ${who}` }));
    }
    if (user.role === 'admin') {
      actions.append(button('Make supporter', 'role-supporter', 'secondary small', { 'aria-label': `Make ${who} a supporter` }));
    } else {
      actions.append(button('Make admin', 'role-admin', 'secondary small', { 'aria-label': `Make ${who} an admin` }));
    }
    actions.append(button('Set password', 'password', 'secondary small', { 'aria-label': `Set the password of ${who}` }));
    return el('tr', { data: { login: user.login } }, [
      cell('Login', [user.login, user.login === me ? el('span', { className: 'muted', text: ' (you)' }) : null], 'u-login'),
      cell('Display name', [user.display_name || '—'], 'u-name'),
      cell('Role', [user.role], 'u-role'),
      cell('State', [el('span', { className: `state-badge state-${user.state === 'active' ? 'online' : 'closed'}`, text: user.state })], 'u-state'),
      cell('Created', [timeElement(user.created_at)], 'u-created'),
      cell('Actions', [actions], 'u-actions'),
    ]);
  }));
}

async function onUsersClick(event) {
  const target = event.target.closest('button[data-action]');
  if (!target) return;
  const login = target.closest('tr').dataset.login;
  const changes = {
    enable: { state: 'active' },
    disable: { state: 'disabled' },
    'role-admin': { role: 'admin' },
    'role-supporter': { role: 'supporter' },
  };
  if (target.dataset.action === 'password') return openPassword(login);
  const change = changes[target.dataset.action];
  if (!change) return;
  target.disabled = true;
  try {
    await api('PUT', `/users/${encodeURIComponent(login)}`, change);
    hideBanner();
    await loadUsers();
  } catch (error) {
    reportError(error);
    if (target.isConnected) target.disabled = false;
  }
}

async function onNewUser(event) {
  event.preventDefault();
  const body = {
    login: $('new-user-login').value.trim(),
    display_name: $('new-user-display-name').value.trim(),
    role: $('new-user-role').value,
    password: $('new-user-password').value,
  };
  if (!body.login || !body.display_name || !body.password) {
    showBanner('A new user needs a login, a display name and a password.');
    return;
  }
  const submit = $('new-user-submit');
  submit.disabled = true;
  try {
    await api('POST', '/users', body);
    hideBanner();
    $('new-user-form').reset();
    note(`User ${body.login} added.`);
    await loadUsers();
    $('new-user-login').focus();
  } catch (error) {
    reportError(error);
  } finally {
    submit.disabled = false;
  }
}

function openPassword(login) {
  state.passwordLogin = login;
  setText($('password-login'), login);
  $('password-form').reset();
  show($('password-error'), false);
  $('password-dialog').showModal();
  $('password-value').focus();
}

async function onPassword(event) {
  event.preventDefault();
  const login = state.passwordLogin;
  const password = $('password-value').value;
  if (!password) {
    setText($('password-error'), 'Enter the new password.');
    show($('password-error'), true);
    return;
  }
  const submit = $('password-submit');
  submit.disabled = true;
  try {
    await api('PUT', `/users/${encodeURIComponent(login)}`, { password });
    $('password-form').reset();
    $('password-dialog').close();
    note(`Password of ${login} changed.`);
  } catch (error) {
    setText($('password-error'), error.message);
    show($('password-error'), true);
  } finally {
    submit.disabled = false;
  }
}

// ---------------------------------------------------------------- tokens (admins)

async function loadTokens() {
  if (!state.account || state.account.role !== 'admin') return;
  try {
    const answer = await api('GET', '/tokens');
    renderTokens(answer.tokens || []);
  } catch (error) {
    reportError(error);
  }
}

function renderTokens(tokens) {
  const body = $('tokens-body');
  show($('tokens-empty'), tokens.length === 0);
  show($('tokens-table'), tokens.length > 0);
  const sorted = [...tokens].sort((a, b) => String(b.created_at || '').localeCompare(String(a.created_at || '')));
  body.replaceChildren(...sorted.map((token) => {
    const actions = el('div', { className: 'actions' });
    if (!token.revoked_at) {
      actions.append(button('Revoke', 'revoke', 'danger small', { 'aria-label': `Revoke token ${token.id}` }));
    }
    const stateText = token.revoked_at ? `revoked ${formatTime(token.revoked_at)}` : 'active';
    return el('tr', { data: { id: token.id } }, [
      cell('Id', [el('span', { className: 'code-value', text: token.id })], 't-id'),
      cell('Scope', [token.scope], 't-scope'),
      cell('Label', [token.label || '—'], 't-label'),
      cell('Created', [timeElement(token.created_at)], 't-created'),
      cell('State', [el('span', { className: `state-badge state-${token.revoked_at ? 'closed' : 'online'}`, text: stateText })], 't-state'),
      cell('Actions', [actions], 't-actions'),
    ]);
  }));
}

async function onTokensClick(event) {
  const target = event.target.closest('button[data-action="revoke"]');
  if (!target) return;
  if (!target.classList.contains('confirming')) {
    target.classList.add('confirming');
    setText(target, 'Confirm revoke');
    setTimeout(() => {
      if (target.isConnected && target.classList.contains('confirming')) {
        target.classList.remove('confirming');
        setText(target, 'Revoke');
      }
    }, 5000);
    return;
  }
  const id = target.closest('tr').dataset.id;
  target.disabled = true;
  try {
    await api('DELETE', `/tokens/${encodeURIComponent(id)}`);
    hideBanner();
    note(`Token ${id} revoked.`);
    await loadTokens();
  } catch (error) {
    reportError(error);
    if (target.isConnected) target.disabled = false;
  }
}

async function onNewToken(event) {
  event.preventDefault();
  const body = { scope: $('new-token-scope').value };
  const label = $('new-token-label').value.trim();
  if (label) body.label = label;
  const submit = $('new-token-submit');
  submit.disabled = true;
  try {
    const answer = await api('POST', '/tokens', body);
    hideBanner();
    $('new-token-form').reset();
    setText($('new-token-scope-text'), answer.scope);
    setText($('new-token-value'), answer.token);
    show($('new-token-result'), true);
    $('new-token-copy').focus();
    await loadTokens();
  } catch (error) {
    reportError(error);
  } finally {
    submit.disabled = false;
  }
}

function hideNewToken() {
  setText($('new-token-value'), '');
  show($('new-token-result'), false);
}

/** Copies what `output` shows (a token, a secret), or selects it when the clipboard is not available. */
async function copyOutput(output, control) {
  try {
    await navigator.clipboard.writeText(output.textContent);
    setText(control, 'Copied');
  } catch (error) {
    const selection = window.getSelection();
    const range = document.createRange();
    range.selectNodeContents(output);
    selection.removeAllRanges();
    selection.addRange(range);
    setText(control, 'Selected — press Ctrl+C');
  }
  setTimeout(() => { setText(control, 'Copy'); }, 3000);
}

function onCopyToken() {
  return copyOutput($('new-token-value'), $('new-token-copy'));
}

// ---------------------------------------------------------------- webhooks (admins)

const WEBHOOK_POLL_MS = 2500;
const DELIVERY_PAGE = 50;
const DELIVERY_STATE_LABELS = { pending: 'pending', delivered: 'delivered', failed: 'failed' };

/** The kinds in `text`: separated by commas or spaces, each once, in order; `*` alone when it is among them. */
function parseKinds(text) {
  const kinds = [];
  for (const part of String(text).split(/[\s,]+/)) if (part && !kinds.includes(part)) kinds.push(part);
  return kinds.includes('*') ? ['*'] : kinds;
}

function describeKinds(kinds) {
  if (!kinds || kinds.length === 0) return '—';
  return kinds.includes('*') ? 'every kind (*)' : kinds.join(', ');
}

/** Puts `items` into `body` as rows, in order: a row whose item did not change stays as it is (and so does the
 * keyboard focus on it); a changed row is rebuilt by `build`, and the focus goes back to the same action on it. */
function syncRows(body, items, keyOf, build) {
  const active = document.activeElement;
  const focusedRow = active && body.contains(active) ? active.closest('tr') : null;
  const focus = focusedRow ? { key: focusedRow.dataset.key, action: active.dataset.action } : null;
  const existing = new Map();
  for (const row of body.children) existing.set(row.dataset.key, row);
  const rows = items.map((item) => {
    const key = String(keyOf(item));
    const fingerprint = JSON.stringify(item);
    const old = existing.get(key);
    if (old && old.dataset.fingerprint === fingerprint) return old;
    const row = build(item);
    row.dataset.key = key;
    row.dataset.fingerprint = fingerprint;
    return row;
  });
  let cursor = body.firstElementChild;
  for (const row of rows) {
    if (row === cursor) { cursor = cursor.nextElementSibling; continue; }
    body.insertBefore(row, cursor);
  }
  while (cursor) {
    const next = cursor.nextElementSibling;
    cursor.remove();
    cursor = next;
  }
  if (focus && (!document.activeElement || document.activeElement === document.body)) {
    const row = body.querySelector(`tr[data-key="${CSS.escape(focus.key)}"]`);
    if (row) {
      const target = (focus.action && row.querySelector(`button[data-action="${CSS.escape(focus.action)}"]`))
        || row.querySelector('button');
      if (target) target.focus();
    }
  }
}

function webhookNote(text) {
  setText($('webhooks-note'), text);
  show($('webhooks-note'), Boolean(text));
}

function scheduleWebhookPoll(delay = WEBHOOK_POLL_MS) {
  stopWebhookPoll();
  state.webhooks.pollTimer = setTimeout(async () => {
    state.webhooks.pollTimer = null;
    if (!state.account || state.currentPanel !== 'webhooks-panel') return;
    if (!document.hidden) {
      await Promise.all([loadWebhooks({ quiet: true }),
        state.webhooks.log.id ? loadDeliveries('refresh', { quiet: true }) : null]);
    }
    if (state.account && state.currentPanel === 'webhooks-panel') scheduleWebhookPoll();
  }, delay);
}

function stopWebhookPoll() {
  clearTimeout(state.webhooks.pollTimer);
  state.webhooks.pollTimer = null;
}

/** Loads the endpoints; `quiet` (a poll) keeps a failure out of the banner — the next poll tries again. */
async function loadWebhooks({ quiet = false } = {}) {
  if (!state.account || state.account.role !== 'admin') return;
  const request = ++state.webhooks.request;
  try {
    const answer = await api('GET', '/webhooks');
    if (request !== state.webhooks.request || !state.account) return;
    renderWebhooks(answer.webhooks || []);
    $('webhooks-panel').dataset.loaded = 'true';
  } catch (error) {
    if (!quiet) reportError(error);
  }
}

function renderWebhooks(webhooks) {
  show($('webhooks-empty'), webhooks.length === 0);
  show($('webhooks-table'), webhooks.length > 0);
  const sorted = [...webhooks].sort((a, b) => String(a.created_at || '').localeCompare(String(b.created_at || '')));
  syncRows($('webhooks-body'), sorted, (webhook) => webhook.id, webhookRow);
  const log = state.webhooks.log;
  for (const row of $('webhooks-body').children) row.classList.toggle('highlight', row.dataset.id === log.id);
  const current = log.id && webhooks.find((webhook) => webhook.id === log.id);
  if (log.id && !current) closeDeliveries();
  if (current && current.url !== log.url) {
    log.url = current.url;
    setText($('deliveries-url'), current.url);
  }
}

function webhookRow(webhook) {
  const who = webhook.description ? `${webhook.url} (${webhook.description})` : webhook.url;
  const urlParts = [el('span', { className: 'url-value', text: webhook.url })];
  if (webhook.description) urlParts.push(el('span', { className: 'device-name muted w-description', text: webhook.description }));
  const stateParts = [el('span', {
    className: `state-badge state-${webhook.enabled ? 'online' : 'closed'}`,
    text: webhook.enabled ? 'enabled' : 'disabled',
  })];
  if (webhook.previous_secret_until && new Date(webhook.previous_secret_until) > new Date()) {
    stateParts.push(el('span', { className: 'device-name muted' },
      ['previous secret signs too until ', timeElement(webhook.previous_secret_until)]));
  }
  const actions = el('div', { className: 'actions' });
  actions.append(button('Deliveries', 'deliveries', 'small', { 'aria-label': `Delivery log of ${who}` }));
  if (webhook.enabled) {
    actions.append(button('Disable', 'disable', 'secondary small', { 'aria-label': `Disable ${who}` }));
  } else {
    actions.append(button('Enable', 'enable', 'secondary small', { 'aria-label': `Enable ${who}` }));
  }
  actions.append(button('Retry now', 'retry', 'secondary small', {
    'aria-label': `Retry the pending deliveries of ${who} now`,
    title: 'Send the pending deliveries now instead of waiting out their back-off (the receiver is back)',
  }));
  actions.append(button('Rotate secret', 'rotate', 'secondary small', { 'aria-label': `Rotate the secret of ${who}` }));
  actions.append(button('Delete', 'delete', 'danger small', { 'aria-label': `Delete ${who}` }));
  const count = (value, kind) => el('span', { className: Number(value) > 0 ? `count-${kind}` : 'muted', text: String(value ?? 0) });
  return el('tr', { data: { id: webhook.id, enabled: String(Boolean(webhook.enabled)) } }, [
    cell('URL', urlParts, 'w-url'),
    cell('Event kinds', [describeKinds(webhook.event_kinds)], 'w-kinds'),
    cell('State', stateParts, 'w-state'),
    cell('Pending', [count(webhook.pending, 'pending')], 'w-pending'),
    cell('Failed', [count(webhook.failed, 'failed')], 'w-failed'),
    cell('Created', [timeElement(webhook.created_at)], 'w-created'),
    cell('Actions', [actions], 'w-actions'),
  ]);
}

async function onWebhooksClick(event) {
  const target = event.target.closest('button[data-action]');
  if (!target) return;
  const row = target.closest('tr');
  const id = row && row.dataset.id;
  if (!id) return;
  const action = target.dataset.action;
  const url = row.querySelector('.url-value') ? row.querySelector('.url-value').textContent : id;
  const path = `/webhooks/${encodeURIComponent(id)}`;
  if (action === 'deliveries') return openDeliveries(id, url);
  if (action === 'delete' && !target.classList.contains('confirming')) {
    target.classList.add('confirming');
    setText(target, 'Confirm delete');
    setTimeout(() => {
      if (target.isConnected && target.classList.contains('confirming')) {
        target.classList.remove('confirming');
        setText(target, 'Delete');
      }
    }, 5000);
    return;
  }
  target.disabled = true;
  try {
    if (action === 'enable' || action === 'disable') {
      await api('PATCH', path, { enabled: action === 'enable' });
      webhookNote(`${url}: ${action === 'enable' ? 'enabled' : 'disabled'}.`);
    } else if (action === 'retry') {
      // The receiver is back: its pending deliveries go now rather than after their back-off (up to an hour).
      const answer = await api('POST', `${path}/retry`);
      webhookNote(`${url}: ${Number(answer && answer.retried) || 0} pending deliveries are due now.`);
      if (state.webhooks.log.id === id) loadDeliveries('refresh', { quiet: true });
    } else if (action === 'rotate') {
      const answer = await api('POST', `${path}/secret`);
      showWebhookSecret(answer, true);
      webhookNote(`${url}: secret rotated.`);
    } else if (action === 'delete') {
      await api('DELETE', path);
      if (state.webhooks.log.id === id) closeDeliveries();
      webhookNote(`${url}: deleted, with its delivery log.`);
      $('webhooks-title').focus();
    } else {
      return;
    }
    hideBanner();
    await loadWebhooks();
  } catch (error) {
    reportError(error);
  } finally {
    if (target.isConnected) target.disabled = false;
  }
}

/** The new endpoint's (or the new) secret, shown this once. */
function showWebhookSecret(webhook, rotated) {
  setText($('webhook-secret-what'), rotated ? 'New signing secret of' : 'Signing secret of the new endpoint');
  setText($('webhook-secret-url'), webhook.url);
  setText($('webhook-secret-value'), webhook.secret || '');
  setText($('webhook-secret-hint'), rotated && webhook.previous_secret_until
    ? `The previous secret signs each delivery too until ${formatTime(webhook.previous_secret_until)}: `
      + 'give the receiver the new one before then.'
    : 'The receiver checks the RemoteSupport-Signature header of each delivery with it.');
  show($('webhook-secret-result'), true);
  $('webhook-secret-copy').focus();
}

function hideWebhookSecret() {
  setText($('webhook-secret-value'), '');
  show($('webhook-secret-result'), false);
}

async function onNewWebhook(event) {
  event.preventDefault();
  const url = $('new-webhook-url').value.trim();
  const kinds = parseKinds($('new-webhook-kinds').value);
  if (!url) {
    showBanner('A webhook endpoint needs a URL (https://…).');
    $('new-webhook-url').focus();
    return;
  }
  if (kinds.length === 0) {
    showBanner('Name at least one event kind, or * for every kind.');
    $('new-webhook-kinds').focus();
    return;
  }
  const body = { url, event_kinds: kinds, enabled: $('new-webhook-enabled').checked };
  const description = $('new-webhook-description').value.trim();
  if (description) body.description = description;
  const submit = $('new-webhook-submit');
  submit.disabled = true;
  try {
    const answer = await api('POST', '/webhooks', body);
    hideBanner();
    $('new-webhook-form').reset();
    kindsToBoxes();
    webhookNote(`${answer.url}: added${answer.enabled ? '' : ' (disabled)'}.`);
    showWebhookSecret(answer, false);
    await loadWebhooks();
  } catch (error) {
    reportError(error);
  } finally {
    submit.disabled = false;
  }
}

/** The kind picker: a checkbox per kind, kept in step with the text field (kinds it does not list stay typed). */
function buildKindBoxes() {
  const boxes = $('new-webhook-kind-boxes');
  for (const kind of ['*', ...EVENT_KINDS]) {
    const id = `new-webhook-kind-${kind === '*' ? 'all' : kind}`;
    const box = el('input', { attrs: { type: 'checkbox', id, value: kind, name: 'kind' } });
    const label = el('label', { attrs: { for: id } }, [el('code', { text: kind })]);
    if (kind === '*') label.append(' every kind');
    boxes.append(el('span', { className: 'checkbox-row' }, [box, label]));
  }
  kindsToBoxes();
}

function kindsToBoxes() {
  const kinds = new Set(parseKinds($('new-webhook-kinds').value));
  for (const box of $('new-webhook-kind-boxes').querySelectorAll('input[type="checkbox"]')) box.checked = kinds.has(box.value);
}

function boxesToKinds(event) {
  const changed = event.target;
  const boxes = [...$('new-webhook-kind-boxes').querySelectorAll('input[type="checkbox"]')];
  if (changed.checked) {
    for (const box of boxes) if ((changed.value === '*') !== (box.value === '*')) box.checked = false;
  }
  const listed = new Set(boxes.map((box) => box.value));
  const typed = String($('new-webhook-kinds').value).split(/[\s,]+/).filter((kind) => kind && !listed.has(kind));
  const field = $('new-webhook-kinds');
  field.value = [...boxes.filter((box) => box.checked).map((box) => box.value), ...typed].join(', ');
}

// -- the delivery log of one endpoint

function openDeliveries(id, url) {
  const log = state.webhooks.log;
  log.id = id;
  log.url = url;
  log.generation++;
  log.items = new Map();
  log.nextBefore = null;
  setText($('deliveries-url'), url);
  $('deliveries-body').replaceChildren();
  show($('deliveries-table'), false);
  show($('deliveries-empty'), false);
  show($('deliveries-more'), false);
  $('deliveries-panel').dataset.endpoint = id;
  delete $('deliveries-panel').dataset.loaded;
  show($('deliveries-panel'), true);
  for (const row of $('webhooks-body').children) row.classList.toggle('highlight', row.dataset.id === id);
  $('deliveries-panel').focus();
  $('deliveries-panel').scrollIntoView({ block: 'nearest' });
  return loadDeliveries('reset');
}

function closeDeliveries() {
  const log = state.webhooks.log;
  log.id = null;
  log.generation++;
  log.items = new Map();
  show($('deliveries-panel'), false);
  delete $('deliveries-panel').dataset.loaded;
  delete $('deliveries-panel').dataset.endpoint;
  for (const row of $('webhooks-body').children) row.classList.remove('highlight');
}

/** Loads the log: `reset` its newest page afresh, `refresh` the newest page into what is shown (rows that no longer
 * match the filter leave), `older` the page before the oldest shown. */
async function loadDeliveries(mode, { quiet = false } = {}) {
  const log = state.webhooks.log;
  const id = log.id;
  if (!id || (mode === 'older' && log.nextBefore === null)) return;
  const generation = log.generation;
  const params = new URLSearchParams({ limit: String(DELIVERY_PAGE) });
  if (log.filter) params.set('state', log.filter);
  if (mode === 'older') params.set('before_id', String(log.nextBefore));
  const more = $('deliveries-more');
  if (mode === 'older') more.disabled = true;
  try {
    const answer = await api('GET', `/webhooks/${encodeURIComponent(id)}/deliveries?${params}`);
    if (generation !== log.generation || log.id !== id) return;
    const deliveries = answer.deliveries || [];
    const next = answer.next_before_id ?? null;
    const returned = new Set(deliveries.map((delivery) => delivery.id));
    if (mode === 'reset') {
      log.items = new Map();
      log.nextBefore = next;
    } else if (mode === 'older') {
      log.nextBefore = next;
    } else if (next !== null && !deliveries.some((delivery) => log.items.has(delivery.id))) {
      // Nothing shown yet, or more arrived since the last look than a page holds: start again from this page.
      log.items = new Map();
      log.nextBefore = next;
    } else {
      // The answer holds every matching delivery from its oldest row up (all of them when there is no next page):
      // the shown rows in that range it lacks no longer match; the older rows shown below it stay.
      const floor = next === null ? -Infinity : Math.min(...deliveries.map((delivery) => delivery.id));
      for (const known of [...log.items.keys()]) if (known >= floor && !returned.has(known)) log.items.delete(known);
      if (next === null) log.nextBefore = null;
    }
    for (const delivery of deliveries) log.items.set(delivery.id, delivery);
    renderDeliveries();
    $('deliveries-panel').dataset.loaded = 'true';
  } catch (error) {
    if (!quiet) reportError(error);
  } finally {
    more.disabled = false;
  }
}

function renderDeliveries() {
  const log = state.webhooks.log;
  const deliveries = [...log.items.values()].sort((a, b) => b.id - a.id);
  show($('deliveries-empty'), deliveries.length === 0);
  show($('deliveries-table'), deliveries.length > 0);
  show($('deliveries-more'), log.nextBefore !== null);
  syncRows($('deliveries-body'), deliveries, (delivery) => delivery.id, deliveryRow);
}

function deliveryRow(delivery) {
  const idParts = [el('span', { className: 'code-value', text: String(delivery.id) })];
  if (delivery.redelivery_of !== null && delivery.redelivery_of !== undefined) {
    idParts.push(el('span', { className: 'device-name muted', text: `again of ${delivery.redelivery_of}` }));
  }
  const stateParts = [el('span', {
    className: `state-badge state-${delivery.state}`, text: DELIVERY_STATE_LABELS[delivery.state] || delivery.state,
  })];
  if (delivery.finished_at) stateParts.push(el('span', { className: 'device-name muted' }, [timeElement(delivery.finished_at)]));
  const hasStatus = delivery.last_status !== null && delivery.last_status !== undefined;
  const actions = el('div', { className: 'actions' }, [
    button('Redeliver', 'redeliver', 'secondary small', { 'aria-label': `Redeliver event ${delivery.event_id} (delivery ${delivery.id})` }),
  ]);
  return el('tr', { className: 'delivery-row', data: { id: delivery.id, state: delivery.state } }, [
    cell('Delivery', idParts, 'd-id'),
    cell('Event', [el('span', { className: 'code-value', text: String(delivery.event_id) })], 'd-event'),
    cell('Kind', [el('code', { text: delivery.event_kind })], 'd-kind'),
    cell('Code', [delivery.code ? el('span', { className: 'code-value', text: delivery.code }) : '—'], 'd-code'),
    cell('State', stateParts, 'd-state'),
    cell('Attempts', [String(delivery.attempts ?? 0)], 'd-attempts'),
    cell('Last status', [hasStatus ? String(delivery.last_status) : '—'], 'd-status'),
    cell('Last error', [delivery.last_error || '—'], 'd-error'),
    cell('Next attempt', [delivery.state === 'pending' ? timeElement(delivery.next_attempt_at) : '—'], 'd-next'),
    cell('Actions', [actions], 'd-actions'),
  ]);
}

async function onDeliveriesClick(event) {
  const target = event.target.closest('button[data-action="redeliver"]');
  if (!target) return;
  const log = state.webhooks.log;
  const endpoint = log.id;
  const deliveryId = target.closest('tr').dataset.id;
  if (!endpoint || !deliveryId) return;
  target.disabled = true;
  try {
    const made = await api('POST',
      `/webhooks/${encodeURIComponent(endpoint)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`);
    hideBanner();
    webhookNote(`Delivery ${deliveryId} queued again as delivery ${made.id}.`);
    if (made && log.id === endpoint && (!log.filter || log.filter === made.state)) {
      log.items.set(made.id, made);
      renderDeliveries();
    }
  } catch (error) {
    reportError(error);
  } finally {
    if (target.isConnected) target.disabled = false;
  }
}

// ---------------------------------------------------------------- start

function wire() {
  // A polite live region for what happens on the codes (the stream's news).
  const liveNote = el('p', { className: 'card notice live-note', attrs: { id: 'live-note', role: 'status', 'aria-live': 'polite' } });
  liveNote.hidden = true;
  $('codes-panel').insertBefore(liveNote, $('codes-empty'));

  $('sign-in-form').addEventListener('submit', onSignIn);
  $('sign-out').addEventListener('click', onSignOut);
  $('banner-dismiss').addEventListener('click', hideBanner);
  for (const tab of document.querySelectorAll('.tab')) tab.addEventListener('click', () => selectPanel(tab.dataset.panel));

  $('new-code-toggle').addEventListener('click', () => toggleNewCode($('new-code-form').hidden));
  $('new-code-cancel').addEventListener('click', () => { toggleNewCode(false); $('new-code-toggle').focus(); });
  $('new-code-form').addEventListener('submit', onNewCode);
  $('codes-body').addEventListener('click', onCodesClick);

  $('connect-form').addEventListener('submit', onConnect);
  $('connect-cancel').addEventListener('click', () => $('connect-dialog').close());
  $('connect-dialog').addEventListener('close', () => { state.connectCode = null; });

  $('audit-close').addEventListener('click', () => { closeAudit(); $('codes-title').focus(); });
  $('audit-more').addEventListener('click', () => loadAudit(true));
  $('session-close').addEventListener('click', () => { closeSession(); $('codes-title').focus(); });
  $('chat-form').addEventListener('submit', onChat);
  $('chat-text').addEventListener('focus', () => { state.panel.unread = 0; renderUnread(); });
  $('session-features').addEventListener('click', onFeaturesClick);
  $('file-form').addEventListener('submit', onSendFile);

  $('new-user-form').addEventListener('submit', onNewUser);
  $('users-body').addEventListener('click', onUsersClick);
  $('password-form').addEventListener('submit', onPassword);
  $('password-cancel').addEventListener('click', () => $('password-dialog').close());

  $('new-token-form').addEventListener('submit', onNewToken);
  $('tokens-body').addEventListener('click', onTokensClick);
  $('new-token-copy').addEventListener('click', onCopyToken);
  $('new-token-hide').addEventListener('click', hideNewToken);

  buildKindBoxes();
  $('new-webhook-form').addEventListener('submit', onNewWebhook);
  $('new-webhook-kinds').addEventListener('input', kindsToBoxes);
  $('new-webhook-kind-boxes').addEventListener('change', boxesToKinds);
  $('webhooks-body').addEventListener('click', onWebhooksClick);
  $('webhook-secret-copy').addEventListener('click', () => copyOutput($('webhook-secret-value'), $('webhook-secret-copy')));
  $('webhook-secret-hide').addEventListener('click', () => { hideWebhookSecret(); $('new-webhook-url').focus(); });
  $('deliveries-body').addEventListener('click', onDeliveriesClick);
  $('deliveries-close').addEventListener('click', () => { closeDeliveries(); $('webhooks-title').focus(); });
  $('deliveries-refresh').addEventListener('click', () => loadDeliveries('refresh'));
  $('deliveries-more').addEventListener('click', () => loadDeliveries('older'));
  $('deliveries-state').addEventListener('change', () => {
    state.webhooks.log.filter = $('deliveries-state').value;
    loadDeliveries('reset');
  });
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && state.currentPanel === 'webhooks-panel' && state.account) scheduleWebhookPoll(0);
  });
  $('webhooks-title').tabIndex = -1;
  $('codes-title').tabIndex = -1;
}

async function start() {
  wire();
  try {
    const answer = await api('GET', '/me', undefined, { quietUnauthorized: true });
    signedIn(answer.account, answer.csrf_token);
  } catch (error) {
    if (error instanceof APIError && error.status === 401) {
      showSignIn('');
    } else {
      showSignIn('');
      showBanner(error.message);
    }
  }
}

start();
