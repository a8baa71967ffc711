/*
 * The Rolecall chat widget: one file, no build step, no dependencies.
 *
 *   <script src="https://gateway.example.com/widget.js" data-role="concierge" async></script>
 *
 * Optional attributes: data-site (default "default"), data-user-token (an HS256 JWT the host site
 * signs for its signed-in user), data-open="true" (show the panel at once), and the look:
 * data-accent (a CSS colour), data-position ("right" or "left"), data-launcher-text,
 * data-theme ("auto", "light" or "dark"). The gateway is the origin of the script's src. The
 * contract with the gateway is docs/widget.md.
 *
 * The page drives it with window.Rolecall: open(), close(), identify(token) (a signed user, as
 * data-user-token; null: an anonymous visitor again), on("message" | "open" | "close", fn) (the
 * answer unsubscribes). A message listener is called with each new message the panel shows
 * (not the history it loads): {role, id, author, author_name, mine, text, at}. With several
 * widgets on a page, open, close and on take a role's name as a last argument to reach one.
 * window dispatches "rolecall:ready" once the API is there.
 *
 * Layout: the open panel takes the launcher's corner, the launcher hidden under it (and out of
 * the Tab order) until the panel closes. On a
 * phone-sized screen (480 px wide or less) the panel is the whole screen and a modal dialog:
 * Tab and Shift+Tab go round inside it, Escape closes it and focus goes back to the launcher.
 *
 * Days: a separator ("Today", "Yesterday", or the local date) heads each day's first message.
 *
 * How it keeps the conversation exact:
 *   - every event has a per-conversation `seq`; an event is rendered at most once (`shown`), in
 *     seq order, whichever way it came (history, stream, the answer to a post);
 *   - the stream resumes from `cursor`, the last seq that came from history or the stream itself —
 *     never from the answer to our own post, since the stream may not have delivered the events
 *     just before it yet;
 *   - the browser's own reconnect sends Last-Event-ID; when it gives up (the stream answered an
 *     error), we check the session, renew it if it expired, and open a new stream `after=cursor`.
 *
 * Linking: "Link" in the header opens a row to get a one-time link code for this person (to give in
 * another channel) or to give one got elsewhere; the answer to the latter is a session as the
 * code's person, and the panel switches to their conversation as it does when a session renews
 * into another one.
 *
 * Welcome: while the conversation shows no message, the panel shows the role — its avatar (an
 * image, or initials), its name, its greeting and up to three suggested prompts (from the role's
 * manifest, given with the session); the greeting stays at the top once the person starts
 * talking, the suggestions go.
 *
 * "Start fresh" asks first: a row under the header says what it does, with "Yes, start over" and
 * "Cancel" (Escape cancels too).
 *
 * A send that fails on the way (the gateway unreachable, or failing: no answer or a 5xx) leaves
 * the message in the list, marked "Not sent", with Retry; a send the gateway refuses (too long,
 * too fast) leaves the text in the composer, with the reason. A message marked "Not sent" that
 * turns up from the gateway after all (it got through, its answer did not) is the real one.
 *
 * Unread: a message of someone else that arrives while the panel is closed counts on the
 * launcher's badge and in the page's title ("(2) …") until the panel opens again (and so does
 * a role's request for approval).
 *
 * Approvals: a role's `approval_requested` is a card in the conversation — its question, the
 * details, the tool call it is about (folded), one button per option and when it expires. A
 * click answers (POST /widget/v1/approvals/{id}); the card's buttons say "busy" meanwhile. The
 * `approval_resolved` that follows — from this widget, or from any other channel, over the
 * stream — replaces the buttons with the outcome ("Allowed once by you", "Rejected by Bob in
 * Slack", "Expired — no answer in time"). An answer refused (already answered elsewhere) shows
 * the gateway's words on the card; the outcome follows on the stream. A resolution that comes
 * before its card (history pages back, newest first) waits for it in `resolutions`.
 *
 * Erasure: when the person is erased (docs/privacy.md), the stream sends `erased` and ends, and
 * every call of the session answers 401 session_expired saying "this conversation was erased".
 * Either way the panel clears what it showed of the conversation (messages, unsent ones), says
 * "This conversation was erased." and starts a new session: the gateway erased the visitor (or
 * signed-in) identity with the person, so the same browser is someone new there, in a new, empty
 * conversation. The call that was refused is not made again (a message being sent stays in the
 * composer). Someone else's erasure in a group conversation turns their messages into "This
 * message was erased"; a message that comes as a tombstone (`erased: true`) shows so too.
 *
 * A page whose origin its site does not allow is told so (403 origin_not_allowed, which the
 * gateway makes readable across origins): the console says what the operator should do, the
 * visitor reads that the chat is not available here, and nothing is retried.
 *
 * Everything the page shows from the gateway is set with textContent, never parsed as HTML;
 * messages are Markdown, rendered by building elements ("Markdown, safely" below).
 */
(() => {
  "use strict";

  const HISTORY_PAGE = 30;
  const RECONNECT_FIRST_MS = 1000;
  const RECONNECT_MAX_MS = 15000;
  const NEAR_EDGE_PX = 48;
  const CHANNEL_NAMES = { api: "API", slack: "Slack", email: "email" };
  const NOT_ALLOWED_HERE = "This chat is not available on this site.";
  const NOT_SENT = "Your message was not sent. Retry it when the chat is back.";
  const ERASED = "This conversation was erased.";

  // document.currentScript is only set while this file first runs, so read it now.
  const script = document.currentScript || findOwnScript();
  if (!script || script.hasAttribute("data-rolecall-mounted")) return;
  script.setAttribute("data-rolecall-mounted", "");

  const config = readConfig(script);
  if (!config.role) {
    console.error("rolecall widget: the script tag needs a data-role attribute");
    return;
  }

  function findOwnScript() {
    const tags = document.querySelectorAll('script[src*="widget.js"][data-role]');
    return Array.from(tags).find((tag) => !tag.hasAttribute("data-rolecall-mounted")) || null;
  }

  function readConfig(tag) {
    const data = tag.dataset;
    return {
      gateway: new URL(tag.src, document.baseURI).origin,
      role: (data.role || "").trim(),
      site: (data.site || "default").trim(),
      userToken: (data.userToken || "").trim() || null,
      open: data.open === "true",
      accent: validColour((data.accent || "").trim()),
      position: data.position === "left" ? "left" : "right",
      launcherText: (data.launcherText || "").trim().slice(0, 60) || null,
      theme: ["light", "dark"].includes(data.theme) ? data.theme : "auto",
    };
  }

  function validColour(value) {
    if (!value) return null;
    if (window.CSS && CSS.supports("color", value)) return value;
    console.error(`rolecall widget: data-accent=${JSON.stringify(value)} is not a CSS colour`);
    return null;
  }

  /** White or near-black, whichever reads better on `colour` (its relative luminance). */
  function textOn(colour) {
    const probe = document.createElement("canvas").getContext("2d");
    if (!probe) return "#fff";
    probe.fillStyle = colour;
    probe.fillRect(0, 0, 1, 1);
    const [r, g, b] = Array.from(probe.getImageData(0, 0, 1, 1).data.slice(0, 3), (value) => {
      const c = value / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    const luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b;
    return (luminance + 0.05) / 0.0616 > 1.05 / (luminance + 0.05) ? "#1c1d22" : "#fff";
  }

  // --- talking to the gateway --------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message, retryAfter) {
      super(message);
      this.status = status; // 0: the gateway could not be reached
      this.code = code;
      this.retryAfter = retryAfter; // seconds, for 429
    }
  }

  async function request(method, path, { body, token } = {}) {
    const headers = {};
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (token) headers.Authorization = `Bearer ${token}`;
    let response;
    try {
      response = await fetch(config.gateway + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "omit", // who the person is travels in tokens, never in cookies
      });
    } catch {
      throw new ApiError(0, "unreachable", "The chat cannot be reached right now.");
    }
    const data = await response.json().catch(() => null);
    if (response.ok) return data;
    const error = (data && data.error) || {};
    throw new ApiError(
      response.status,
      error.code || `http_${response.status}`,
      error.message || `The chat answered ${response.status}.`,
      retryAfterSeconds(response)
    );
  }

  function retryAfterSeconds(response) {
    // Readable across origins only when the gateway exposes the header (CORS).
    const seconds = Number.parseInt(response.headers.get("Retry-After") || "", 10);
    return Number.isFinite(seconds) && seconds >= 0 ? seconds : null;
  }

  /** A call with the session token; an expired session is renewed once and the call retried. */
  async function authorized(method, path, body) {
    try {
      return await request(method, path, { body, token: state.session.session_token });
    } catch (error) {
      if (error.code !== "session_expired") throw error;
      if (wasErased(error)) {
        await conversationErased(); // what was asked belonged to the erased conversation
        throw error;
      }
      await openSession();
      return request(method, path, { body, token: state.session.session_token });
    }
  }

  /** The gateway ended the session because the person was erased (docs/widget.md). */
  function wasErased(error) {
    return (
      error.code === "session_expired" &&
      /^this conversation was erased/i.test(String(error.message || ""))
    );
  }

  // --- who the person is -------------------------------------------------------------------------

  const visitorKey = `rolecall:${config.gateway}:${config.site}:visitor`;

  // localStorage throws when storage is disabled; the widget then works for this page view only.
  const storage = {
    get(key) {
      try {
        return window.localStorage.getItem(key);
      } catch {
        return null;
      }
    },
    set(key, value) {
      try {
        window.localStorage.setItem(key, value);
      } catch {
        /* storage unavailable */
      }
    },
    remove(key) {
      try {
        window.localStorage.removeItem(key);
      } catch {
        /* storage unavailable */
      }
    },
  };

  async function openSession() {
    const body = { role: config.role, site: config.site };
    if (config.userToken) body.user_token = config.userToken;
    const visitor = storage.get(visitorKey);
    if (visitor) body.visitor_token = visitor;
    let session;
    try {
      session = await request("POST", "/widget/v1/sessions", { body });
    } catch (error) {
      if (error.code !== "invalid_visitor_token" || !visitor) throw error;
      // A visitor token this gateway no longer accepts: carry on as a new visitor.
      storage.remove(visitorKey);
      delete body.visitor_token;
      session = await request("POST", "/widget/v1/sessions", { body });
    }
    if (session.visitor_token) storage.set(visitorKey, session.visitor_token);
    // Signed in: the visitor identity now belongs to the person, and is not to be offered again.
    else if (visitor) storage.remove(visitorKey);
    // Linked into another person since the last session: theirs is the conversation now.
    if (adoptSession(session)) switchConversation().catch(showError);
  }

  /** Use this session from now on; true when its conversation is not the one shown. */
  function adoptSession(session) {
    const previous = state.session;
    state.session = session;
    showRole(session.role);
    showWelcome(session.role || {});
    return Boolean(previous && previous.conversation !== session.conversation);
  }

  // --- state -------------------------------------------------------------------------------------

  /** What the panel knows of the conversation it shows. */
  function freshView() {
    return {
      shown: new Set(), // seqs already handled: nothing is rendered twice
      messages: new Map(), // message id → its list item, for retractions
      retracted: new Set(), // ids of retracted messages not loaded yet
      approvals: new Map(), // approval id → its card
      resolutions: new Map(), // approval id → its resolution, when it came before its card
      cursor: 0, // the stream resumes after this seq
      // Where paging back continues: before `oldest` in `conversation` (null: the session's).
      paging: { conversation: null, rank: 0, oldest: null },
      more: false, // older events exist there, in the mode we page in
      predecessor: null, // the conversation before the one paged, once that one is all shown
      archiveBefore: 0, // events before this seq are from before the last "start fresh"
      freshSeq: null, // the seq of the latest "start fresh" marker (shown, though archived)
      earlier: false, // archived events exist that are not shown
      showingArchive: false, // the person asked for "show earlier"
      loaded: false, // the newest page is in: whether the conversation is empty is known
      welcomed: false, // the welcome was shown on an empty conversation, and stays at the top
    };
  }

  const state = {
    session: null,
    started: false,
    working: false, // a turn runs: the gateway's stream said so
    roleName: null, // the role's display name, once known
    starting: null, // the promise of the first connection
    ...freshView(),
    loadingOlder: false,
    sending: false,
    sendNext: false, // Enter was pressed again while a message was on its way
    stream: null,
    reconnectDelay: RECONNECT_FIRST_MS,
    reconnectTimer: null,
    linking: false, // a link request is on its way
    unsent: new Map(), // list item → text of messages that did not get through
    unread: 0, // messages of others that came while the panel was closed
    pageTitle: null, // the host page's title, while the unread count is shown in front of it
    titleShown: null, // the title as we set it
    refusalLogged: false, // the console was told this page's origin is not allowed
    erasing: null, // the promise of starting over after an erasure
  };

  // --- the panel ---------------------------------------------------------------------------------

  function el(tag, attributes = {}, text) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
      if (value === false || value === null || value === undefined) continue;
      node.setAttribute(name, value === true ? "" : String(value));
    }
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A custom element, so that host-page rules on div and friends cannot reach it; inline
  // !important so that host-page rules on every element cannot hide it.
  const host = document.createElement("rolecall-widget");
  host.style.setProperty("display", "contents", "important");
  host.setAttribute("data-role", config.role);
  host.setAttribute("data-position", config.position);
  host.setAttribute("data-theme", config.theme);
  if (config.accent) {
    host.style.setProperty("--rolecall-accent", config.accent);
    host.style.setProperty("--rolecall-on-accent", textOn(config.accent));
  }
  const root = host.attachShadow({ mode: "open" });

  const ui = buildPanel();
  root.append(el("style", {}, styles()), ui.launcher, ui.panel);

  function buildPanel() {
    const launcher = el("button", {
      class: "launcher",
      type: "button",
      "aria-expanded": "false",
      "aria-controls": "rolecall-panel",
    });
    const launcherText = el("span", { class: "launcher-text" });
    const badge = el("span", { class: "badge", "aria-hidden": "true", hidden: true });
    launcher.append(launcherText, badge);
    const panel = el("section", { class: "panel", id: "rolecall-panel", hidden: true });
    const avatar = el("span", { class: "avatar", "aria-hidden": "true", hidden: true });
    const title = el("h2", { class: "title", id: "rolecall-title" });
    // "Link another channel" contains the visible "Link" (the name speech input users say).
    const linkToggle = el(
      "button",
      {
        class: "link-toggle",
        type: "button",
        "aria-expanded": "false",
        "aria-controls": "rolecall-link",
        "aria-label": "Link another channel",
      },
      "Link"
    );
    const fresh = el(
      "button",
      {
        class: "fresh",
        type: "button",
        "aria-expanded": "false",
        "aria-controls": "rolecall-fresh",
      },
      "Start fresh"
    );
    const close = el("button", { class: "close", type: "button", "aria-label": "Close chat" }, "×");
    const header = el("header", { class: "header" });
    header.append(avatar, title, linkToggle, fresh, close);
    const linking = buildLinking();

    const log = el("div", {
      class: "log",
      role: "log",
      "aria-live": "polite",
      "aria-labelledby": "rolecall-title",
      tabindex: "0",
    });
    const earlier = el("button", { class: "earlier", type: "button", hidden: true });
    earlier.textContent = "Show earlier";
    const list = el("ol", { class: "messages" });
    const unsent = el("ol", { class: "messages unsent-list" });
    const erased = el("p", { class: "erased-notice", hidden: true }, ERASED);
    const welcome = el("div", { class: "welcome", hidden: true });
    const welcomeAvatar = el("span", { class: "avatar large", "aria-hidden": "true" });
    const welcomeName = el("p", { class: "welcome-name" });
    const greeting = el("div", { class: "greeting text" });
    const suggestions = el("ul", { class: "suggestions", "aria-label": "Suggested messages" });
    welcome.append(welcomeAvatar, welcomeName, greeting, suggestions);
    log.append(earlier, erased, welcome, list, unsent);

    const working = el("p", { class: "working", "aria-hidden": "true", hidden: true });
    const error = el("p", { class: "error", id: "rolecall-error", hidden: true });
    const status = el("p", { class: "visually-hidden", role: "status", "aria-live": "polite" });

    const composer = el("form", { class: "composer" });
    const label = el("label", { class: "visually-hidden", for: "rolecall-text" });
    const text = el("textarea", {
      id: "rolecall-text",
      rows: "2",
      placeholder: "Write a message…",
      autocomplete: "off",
      "aria-describedby": "rolecall-hint",
    });
    const hint = el(
      "span",
      { class: "visually-hidden", id: "rolecall-hint" },
      "Enter sends, Shift+Enter starts a new line."
    );
    const send = el("button", { class: "send", type: "submit" }, "Send");
    composer.append(label, text, hint, send);

    const confirm = buildConfirmFresh();
    panel.append(header, linking.row, confirm.freshRow, log, working, error, status, composer);
    return {
      ...linking,
      ...confirm,
      launcher,
      launcherText,
      badge,
      panel,
      avatar,
      title,
      linkToggle,
      fresh,
      close,
      log,
      earlier,
      list,
      unsent,
      erased,
      welcome,
      welcomeAvatar,
      welcomeName,
      greeting,
      suggestions,
      working,
      error,
      status,
      label,
      text,
      send,
      composer,
    };
  }

  /** The row "Start fresh" reveals: what it does, and the choice. */
  function buildConfirmFresh() {
    const freshRow = el("div", {
      class: "confirm",
      id: "rolecall-fresh",
      role: "group",
      "aria-labelledby": "rolecall-fresh-question",
      "aria-describedby": "rolecall-fresh-detail",
      hidden: true,
    });
    const question = el(
      "p",
      { class: "link-title", id: "rolecall-fresh-question" },
      "Start a fresh conversation?"
    );
    const detail = el(
      "p",
      { class: "link-text", id: "rolecall-fresh-detail" },
      "What was said so far moves behind “Show earlier”; what the role remembers stays."
    );
    const yes = "Yes, start over";
    const freshYes = el("button", { class: "link-button primary", type: "button" }, yes);
    const freshNo = el("button", { class: "link-button", type: "button" }, "Cancel");
    const choice = el("div", { class: "link-row" });
    choice.append(freshYes, freshNo);
    freshRow.append(question, detail, choice);
    return { freshRow, freshYes, freshNo };
  }

  /** The row "Link" reveals: get a code to give elsewhere, or give one got elsewhere. */
  function buildLinking() {
    const row = el("div", {
      class: "linking",
      id: "rolecall-link",
      role: "region",
      "aria-label": "Link another channel",
      hidden: true,
    });

    const give = el("div", { class: "link-part", role: "group", "aria-labelledby": "rolecall-give" });
    const giveText = el(
      "p",
      { class: "link-text", id: "rolecall-give" },
      "Continue this conversation in another channel with a one-time code."
    );
    const getCode = el("button", { class: "link-button", type: "button" }, "Get a link code");
    const codeBox = el("div", { class: "link-result", hidden: true });
    const codeLine = el("div", { class: "link-code-line" });
    const code = el("strong", { class: "link-code" });
    const copy = el("button", { class: "link-button", type: "button", hidden: true }, "Copy code");
    const codeText = el("p", {});
    codeText.append("Your code: ", code);
    codeLine.append(codeText, copy);
    const copied = el("p", { class: "link-text link-copied", hidden: true });
    const expiry = el("p", { class: "link-text link-expiry" });
    const howTo = el("p", { class: "link-text link-how" });
    codeBox.append(codeLine, copied, expiry, howTo);
    give.append(giveText, getCode, codeBox);

    const take = el("form", {
      class: "link-part",
      "aria-labelledby": "rolecall-take",
      novalidate: true,
    });
    const takeTitle = el("p", { class: "link-title", id: "rolecall-take" }, "I have a code");
    const codeLabel = el("label", { for: "rolecall-link-code" }, "Link code");
    const codeInput = el("input", {
      id: "rolecall-link-code",
      type: "text",
      placeholder: "ABCD-EFGH",
      autocomplete: "off",
      autocapitalize: "characters",
      spellcheck: "false",
      maxlength: "32",
      "aria-describedby": "rolecall-take-hint",
    });
    const redeem = el("button", { class: "link-button primary", type: "submit" }, "Use code");
    const takeRow = el("div", { class: "link-row" });
    takeRow.append(codeInput, redeem);
    const takeHint = el(
      "p",
      { class: "link-text link-hint", id: "rolecall-take-hint" },
      "Give a code from another channel, and this chat continues that conversation."
    );
    take.append(takeTitle, codeLabel, takeRow, takeHint);

    row.append(give, take);
    return {
      row,
      getCode,
      codeBox,
      code,
      expiry,
      howTo,
      copy,
      copied,
      take,
      codeInput,
      redeem,
    };
  }

  function showRole(role) {
    const name = (role && role.display_name) || config.role;
    ui.title.textContent = name;
    ui.panel.setAttribute("aria-label", `Chat with ${name}`);
    ui.label.textContent = `Message ${name}`;
    state.roleName = name;
    showWorkingText();
    // aria-expanded says whether it is open
    ui.launcherText.textContent = config.launcherText || `Chat with ${name}`;
    showUnread();
  }

  /** The role's look, from a new session: avatars, and the welcome's name, greeting and prompts. */
  function showWelcome(role) {
    const name = role.display_name || config.role;
    showAvatar(ui.avatar, role);
    showAvatar(ui.welcomeAvatar, role);
    ui.avatar.hidden = false;
    ui.welcomeName.textContent = name;
    ui.greeting.replaceChildren();
    if (role.greeting) renderMarkdown(String(role.greeting), ui.greeting);
    ui.greeting.hidden = !role.greeting;
    const prompts = Array.isArray(role.suggestions) ? role.suggestions.slice(0, 3) : [];
    ui.suggestions.replaceChildren(
      ...prompts.map((prompt) => {
        const button = el("button", { class: "suggestion", type: "button" }, String(prompt));
        button.addEventListener("click", () => sendSuggestion(String(prompt)));
        const item = el("li");
        item.append(button);
        return item;
      })
    );
    updateWelcome();
  }

  /** An image when the role has one (initials again if it fails to load), else initials. */
  function showAvatar(node, role) {
    const initials = String(role.initials || (role.display_name || config.role).slice(0, 1));
    const src = role.avatar_url ? safeHref(String(role.avatar_url)) : null;
    node.textContent = initials;
    if (!src || !/^https?:/.test(src)) return;
    const image = el("img", { src, alt: "", referrerpolicy: "no-referrer" });
    image.addEventListener("error", () => {
      node.textContent = initials;
    });
    node.replaceChildren(image);
  }

  /**
   * The welcome shows once the newest page found no message, and then stays at the top while the
   * person talks; its suggestions only while no message shows. Hidden while the archive shows.
   */
  function updateWelcome() {
    if (!state.session || !state.loaded) {
      ui.welcome.hidden = true;
      return;
    }
    const items = Array.from(ui.list.children);
    const empty = !items.some(
      (item) =>
        !item.hidden && (item.classList.contains("message") || item.classList.contains("approval"))
    );
    if (empty) state.welcomed = true;
    ui.welcome.hidden = !state.welcomed || state.showingArchive;
    ui.suggestions.hidden = !empty || !ui.suggestions.childElementCount;
  }

  /** A suggested prompt is sent as if typed; what the composer held comes back after it. */
  async function sendSuggestion(prompt) {
    const typed = ui.text.value;
    ui.text.value = prompt;
    await send();
    if (!ui.text.value && typed.trim() && typed !== prompt) ui.text.value = typed;
    ui.text.focus();
  }

  // --- unread, while the panel is closed -------------------------------------------------------

  function countUnread(event) {
    const asks = event.kind === "message" || event.kind === "approval_requested";
    if (isOpen() || !asks || event.mine || event.retracted || event.erased) return;
    state.unread += 1;
    showUnread();
  }

  function showUnread() {
    const count = state.unread;
    const name = ui.title.textContent || config.role;
    ui.badge.textContent = count > 99 ? "99+" : String(count);
    ui.badge.hidden = count === 0;
    if (count) {
      const unread = `${count} new message${count === 1 ? "" : "s"}`;
      const label = config.launcherText || `Chat with ${name}`;
      ui.launcher.setAttribute("aria-label", `${label}, ${unread}`);
    } else {
      ui.launcher.removeAttribute("aria-label");
    }
    // The count goes in front of the page's title; a title the page set meanwhile is kept.
    const ours = state.titleShown !== null && document.title === state.titleShown;
    const base = ours ? state.pageTitle : document.title;
    if (count) {
      state.pageTitle = base;
      state.titleShown = `(${ui.badge.textContent}) ${base}`;
      document.title = state.titleShown;
    } else {
      if (ours) document.title = state.pageTitle;
      state.pageTitle = null;
      state.titleShown = null;
    }
  }

  function isOpen() {
    return !ui.panel.hidden;
  }

  function isLinkingOpen() {
    return !ui.row.hidden;
  }

  function isConfirmingFresh() {
    return !ui.freshRow.hidden;
  }

  /** Show or hide the "Start fresh" question; focus goes to its answer, or back to the button. */
  function setConfirmingFresh(open, { focus = false } = {}) {
    if (open) setLinkingOpen(false);
    ui.freshRow.hidden = !open;
    ui.fresh.setAttribute("aria-expanded", String(open));
    if (open && focus) ui.freshYes.focus();
    else if (!open && focus) ui.fresh.focus();
  }

  /** Show or hide the link row; focus moves into it when it opens, back to "Link" when asked. */
  function setLinkingOpen(open, { focus = false } = {}) {
    if (open) setConfirmingFresh(false);
    ui.row.hidden = !open;
    ui.linkToggle.setAttribute("aria-expanded", String(open));
    if (open && focus) ui.getCode.focus();
    else if (!open && focus) ui.linkToggle.focus();
  }

  function setOpen(open, { focus = false } = {}) {
    const was = isOpen();
    // Focus was in the panel: it goes back to the launcher, or it would be lost with the panel.
    const inside = ui.panel.contains(root.activeElement);
    ui.panel.hidden = !open;
    ui.launcher.setAttribute("aria-expanded", String(open));
    // Under the open panel, out of the Tab order (and still what says whether the panel is open).
    if (open) ui.launcher.setAttribute("tabindex", "-1");
    else ui.launcher.removeAttribute("tabindex");
    if (open) state.unread = 0; // seen now
    showRole(state.session && state.session.role);
    if (open) {
      start(); // the widget costs the gateway nothing until it is first opened
      // A modal dialog takes focus when it opens, however it was opened.
      if (focus || (isPhone() && !was)) ui.text.focus();
      scrollToEnd();
    } else if (focus || inside) {
      ui.launcher.focus();
    }
    if (open !== was) emit(open ? "open" : "close", {});
  }

  // --- a phone: the panel is a modal dialog --------------------------------------------------------

  const phone = window.matchMedia("(max-width: 480px)");

  function isPhone() {
    return phone.matches;
  }

  /** A region beside the page, or (on a phone, where it covers the page) a modal dialog. */
  function showLayout() {
    if (isPhone()) {
      ui.panel.setAttribute("role", "dialog");
      ui.panel.setAttribute("aria-modal", "true");
    } else {
      ui.panel.setAttribute("role", "region");
      ui.panel.removeAttribute("aria-modal");
    }
  }

  /** What Tab reaches in the panel now, in order. */
  function focusable() {
    const candidates = ui.panel.querySelectorAll(
      "button, textarea, input, a[href], [tabindex]:not([tabindex='-1'])"
    );
    return Array.from(candidates).filter(
      (node) => !node.disabled && node.getClientRects().length > 0
    );
  }

  /** Tab from the last stop goes to the first, Shift+Tab from the first to the last. */
  function trapTab(event) {
    if (event.key !== "Tab" || !isPhone() || !isOpen()) return;
    const stops = focusable();
    if (!stops.length) return;
    const first = stops[0];
    const last = stops[stops.length - 1];
    const active = root.activeElement;
    if (!ui.panel.contains(active)) {
      event.preventDefault();
      (event.shiftKey ? last : first).focus();
    } else if (event.shiftKey && active === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && active === last) {
      event.preventDefault();
      first.focus();
    }
  }

  /** Focus that reaches the page behind an open dialog (a click, a script) comes back. */
  function keepFocusInside(event) {
    if (!isPhone() || !isOpen() || event.target === host) return;
    ui.text.focus();
  }

  // --- Markdown, safely --------------------------------------------------------------------------

  /*
   * Messages (and the role's greeting) are Markdown, of which a small part is rendered:
   * paragraphs, **bold**, *italics*, ~~strikethrough~~, `code`, fenced code blocks, lists (`-`,
   * `*`, `+` or `1.`, nested by indenting), `>` quotes, `#` headings (shown as bold lines),
   * [links](https://…) and bare https:// addresses. Everything else is shown as written.
   *
   * Safety: the nodes are made with createElement from the fixed set below and filled with text
   * nodes — nothing is ever parsed as HTML, so raw HTML in a message is text. A link is made only
   * to an absolute http(s) or mailto URL (anything else, `javascript:` included, is shown as the
   * text it was written as), and opens in a new tab with rel="noopener noreferrer". An image
   * (`![alt](url)`) is a link to the image, never loaded.
   */
  const MARKDOWN_MAX = 20000; // longer texts are shown as written
  const MAX_DEPTH = 4; // nesting of quotes, lists and emphasis rendered; deeper is text
  const FENCE = /^ {0,3}(`{3,}|~{3,})[^`]*$/;
  const BULLET = /^( *)([-*+])( +|$)(.*)$/;
  const ORDERED = /^( *)(\d{1,9})([.)])( +|$)(.*)$/;
  const HEADING = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
  const QUOTE = /^ {0,3}> ?(.*)$/;
  const BARE_URL = /^https?:\/\/[^\s<>"'`]+/i;
  const ESCAPABLE = "\\`*_{}[]()#+-.!~>|<";
  const SAFE_PROTOCOLS = ["http:", "https:", "mailto:"];

  /** Render `text` into `target` (a message's text box, a list item, a quote). */
  function renderMarkdown(text, target) {
    if (text.length > MARKDOWN_MAX) {
      target.textContent = text;
      return;
    }
    renderBlocks(text.replace(/\r\n?/g, "\n").split("\n"), target, 0);
  }

  /** Blocks into `target`; one paragraph alone is rendered inline (a plain message stays text). */
  function renderBlocks(lines, target, depth) {
    const blocks = document.createDocumentFragment();
    if (depth > MAX_DEPTH) blocks.append(el("p", {}, lines.join("\n")));
    else parseBlocks(lines, blocks, depth);
    const only = blocks.childNodes.length === 1 ? blocks.firstChild : null;
    if (only && only.nodeName === "P" && !only.className) target.append(...only.childNodes);
    else target.append(blocks);
  }

  function parseBlocks(lines, parent, depth) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) {
        i += 1;
        continue;
      }
      const fence = FENCE.exec(line);
      if (fence) {
        const [char, length] = [fence[1][0] === "`" ? "`" : "~", fence[1].length];
        const closing = new RegExp(`^ {0,3}${char}{${length},} *$`);
        const body = [];
        for (i += 1; i < lines.length && !closing.test(lines[i]); i += 1) body.push(lines[i]);
        i += 1; // the closing fence (or the end of the text)
        const pre = el("pre");
        pre.append(el("code", {}, body.join("\n")));
        parent.append(pre);
        continue;
      }
      const heading = HEADING.exec(line);
      if (heading) {
        const p = el("p", { class: "heading" });
        const strong = el("strong");
        renderInline(heading[1], strong, depth);
        p.append(strong);
        parent.append(p);
        i += 1;
        continue;
      }
      if (QUOTE.test(line)) {
        const quoted = [];
        for (; i < lines.length && QUOTE.test(lines[i]); i += 1) {
          quoted.push(QUOTE.exec(lines[i])[1]);
        }
        const quote = el("blockquote");
        renderBlocks(quoted, quote, depth + 1);
        parent.append(quote);
        continue;
      }
      if (listMarker(line)) {
        i = parseList(lines, i, parent, depth);
        continue;
      }
      const paragraph = [line];
      for (i += 1; i < lines.length && lines[i].trim() && !interrupts(lines[i]); i += 1) {
        paragraph.push(lines[i]);
      }
      const p = el("p");
      renderInline(paragraph.join("\n"), p, depth);
      parent.append(p);
    }
  }

  /** A line that ends the paragraph before it: another kind of block begins. */
  function interrupts(line) {
    if (FENCE.test(line) || HEADING.test(line) || QUOTE.test(line)) return true;
    const marker = listMarker(line);
    return Boolean(marker && marker.text.trim() && (!marker.ordered || marker.start === 1));
  }

  function listMarker(line) {
    const bullet = BULLET.exec(line);
    if (bullet) {
      const [, indent, , gap, text] = bullet;
      const offset = indent.length + 1 + gap.length;
      return { ordered: false, indent: indent.length, offset, text };
    }
    const ordered = ORDERED.exec(line);
    if (ordered) {
      const [, indent, number, , gap, text] = ordered;
      const offset = indent.length + number.length + 1 + gap.length;
      return { ordered: true, start: Number(number), indent: indent.length, offset, text };
    }
    return null;
  }

  function indentOf(line) {
    return line.length - line.trimStart().length;
  }

  /** A list from line `i`: its items, each with the lines indented under it. The next line. */
  function parseList(lines, i, parent, depth) {
    const first = listMarker(lines[i]);
    const list = el(first.ordered ? "ol" : "ul");
    if (first.ordered && first.start !== 1) list.setAttribute("start", String(first.start));
    while (i < lines.length) {
      const marker = listMarker(lines[i]);
      if (!marker || marker.ordered !== first.ordered || marker.indent > first.indent + 1) break;
      const content = [marker.text];
      const inside = marker.indent + 2; // lines indented this far belong to the item
      for (i += 1; i < lines.length; i += 1) {
        const next = lines[i];
        if (!next.trim()) {
          let after = i;
          while (after < lines.length && !lines[after].trim()) after += 1;
          if (after === lines.length || indentOf(lines[after]) < inside) break;
          content.push("");
        } else if (indentOf(next) >= inside) {
          content.push(next.slice(Math.min(indentOf(next), marker.offset)));
        } else if (content[content.length - 1] !== "" && !interrupts(next) && !listMarker(next)) {
          content.push(next); // a paragraph's lazy continuation
        } else {
          break;
        }
      }
      const item = el("li");
      renderBlocks(content, item, depth + 1);
      list.append(item);
      let after = i; // blank lines between items of one list
      while (after < lines.length && !lines[after].trim()) after += 1;
      const next = after < lines.length ? listMarker(lines[after]) : null;
      if (!next || next.ordered !== first.ordered || next.indent > first.indent + 1) break;
      i = after;
    }
    parent.append(list);
    return i;
  }

  function runLength(text, i, char) {
    let end = i;
    while (text[end] === char) end += 1;
    return end - i;
  }

  /** The code span opening at `i` (a run of backticks closed by a run as long), or null. */
  function codeSpan(text, i) {
    const run = runLength(text, i, "`");
    for (let j = text.indexOf("`", i + run); j !== -1; j = text.indexOf("`", j)) {
      const close = runLength(text, j, "`");
      if (close === run) {
        let code = text.slice(i + run, j);
        if (/^ .*[^ ].* $/s.test(code)) code = code.slice(1, -1);
        return { code, end: j + run };
      }
      j += close;
    }
    return null;
  }

  /** Where the next `char` outside code spans and escapes is, from `i`; -1 when there is none. */
  function findDelimiter(text, char, i) {
    for (let j = i; j < text.length; j += 1) {
      if (text[j] === "\\") j += 1;
      else if (text[j] === char) return j;
      else if (text[j] === "`") {
        const span = codeSpan(text, j);
        j = span ? span.end - 1 : j + runLength(text, j, "`") - 1;
      }
    }
    return -1;
  }

  const isWordChar = (char) => Boolean(char) && /[\p{L}\p{N}_]/u.test(char);

  /** `*em*`, `**strong**`, `***both***`, `_em_`, `__strong__`, `~~del~~` opening at `i`. */
  function emphasis(text, i) {
    const char = text[i];
    const run = runLength(text, i, char);
    if (char === "~" ? run !== 2 : run > 3) return null;
    const open = i + run;
    if (open >= text.length || /\s/.test(text[open])) return null;
    if (char === "_" && isWordChar(text[i - 1])) return null; // snake_case is no emphasis
    for (let j = findDelimiter(text, char, open); j !== -1; j = findDelimiter(text, char, j)) {
      const close = runLength(text, j, char);
      const fits = close === run && j > open && !/\s/.test(text[j - 1]);
      if (fits && !(char === "_" && isWordChar(text[j + run]))) {
        const tag = char === "~" ? "del" : run === 1 ? "em" : "strong";
        return { tag, both: run === 3, inner: text.slice(open, j), end: j + run };
      }
      j += close;
    }
    return null;
  }

  /** `[label](destination)` with `text[i]` its `[`, or null. */
  function parseLink(text, i) {
    let nesting = 0;
    let j = i;
    for (; j < text.length; j += 1) {
      if (text[j] === "\\") j += 1;
      else if (text[j] === "[") nesting += 1;
      else if (text[j] === "]" && --nesting === 0) break;
    }
    if (j >= text.length || text[j + 1] !== "(") return null;
    let parens = 0;
    let k = j + 2;
    for (; k < text.length; k += 1) {
      const char = text[k];
      if (char === "\n") return null;
      if (char === "\\") k += 1;
      else if (char === "(") parens += 1;
      else if (char === ")" && parens-- === 0) break;
    }
    if (k >= text.length) return null;
    let destination = text.slice(j + 2, k).trim();
    const titled = /^(\S+)\s+("[^"]*"|'[^']*')$/.exec(destination);
    if (titled) destination = titled[1];
    if (destination.startsWith("<") && destination.endsWith(">")) {
      destination = destination.slice(1, -1);
    }
    return { label: text.slice(i + 1, j), destination, end: k + 1 };
  }

  /** The URL a link may go to, normalised; null unless absolute http(s) or mailto. */
  function safeHref(destination) {
    if (!/^(https?:\/\/|mailto:)/i.test(destination)) return null;
    let url;
    try {
      url = new URL(destination);
    } catch {
      return null;
    }
    return SAFE_PROTOCOLS.includes(url.protocol) ? url.href : null;
  }

  function link(href) {
    return el("a", { href, target: "_blank", rel: "noopener noreferrer" });
  }

  /** A bare address at `i`, without the punctuation that ends the sentence around it. */
  function bareUrl(text, i) {
    if (isWordChar(text[i - 1]) || text[i - 1] === "/") return null;
    const found = BARE_URL.exec(text.slice(i, i + 2000));
    if (!found) return null;
    let url = found[0].replace(/[.,:;!?*_~]+$/, "");
    const count = (char) => url.split(char).length - 1;
    while (url.endsWith(")") && count(")") > count("(")) {
      url = url.slice(0, -1).replace(/[.,:;!?*_~]+$/, ""); // "(see https://…)" keeps its ")"
    }
    const href = safeHref(url);
    return href ? { url, href } : null;
  }

  /** Inline Markdown of `text` into `parent`, as text nodes and the few elements above. */
  function renderInline(text, parent, depth, inLink = false) {
    let plain = "";
    const flush = () => {
      if (plain) parent.append(document.createTextNode(plain));
      plain = "";
    };
    let i = 0;
    while (i < text.length) {
      const char = text[i];
      if (char === "\\" && i + 1 < text.length && ESCAPABLE.includes(text[i + 1])) {
        plain += text[i + 1];
        i += 2;
        continue;
      }
      if (char === "`") {
        const span = codeSpan(text, i);
        if (span) {
          flush();
          parent.append(el("code", {}, span.code));
          i = span.end;
        } else {
          const run = runLength(text, i, "`");
          plain += text.slice(i, i + run);
          i += run;
        }
        continue;
      }
      const image = char === "!" && text[i + 1] === "[";
      if (!inLink && (char === "[" || image)) {
        const found = parseLink(text, image ? i + 1 : i);
        const href = found && safeHref(found.destination);
        if (found) {
          if (href) {
            flush();
            const anchor = link(href);
            if (image) {
              anchor.className = "image-link";
              anchor.textContent = found.label.trim() || href;
            } else {
              renderInline(found.label, anchor, depth + 1, true);
              if (!anchor.textContent.trim()) anchor.textContent = href;
            }
            parent.append(anchor);
          } else {
            plain += text.slice(i, found.end); // not a link we make: shown as written
          }
          i = found.end;
          continue;
        }
      }
      if (!inLink && (char === "h" || char === "H")) {
        const bare = bareUrl(text, i);
        if (bare) {
          flush();
          parent.append(Object.assign(link(bare.href), { textContent: bare.url }));
          i += bare.url.length;
          continue;
        }
      }
      if (char === "*" || char === "_" || char === "~") {
        const span = depth < MAX_DEPTH ? emphasis(text, i) : null;
        if (span) {
          flush();
          let node = el(span.tag);
          parent.append(node);
          if (span.both) node = node.appendChild(el("em"));
          renderInline(span.inner, node, depth + 1, inLink);
          i = span.end;
        } else {
          const run = runLength(text, i, char);
          plain += text.slice(i, i + run);
          i += run;
        }
        continue;
      }
      plain += char;
      i += 1;
    }
    flush();
  }

  // --- rendering events --------------------------------------------------------------------------

  function channelTag(event) {
    const person = typeof event.author === "string" && event.author.startsWith("person:");
    if (!person || !event.channel || event.channel === "web") return null;
    return `via ${CHANNEL_NAMES[event.channel] || event.channel}`;
  }

  function formatTime(at) {
    const date = new Date(at);
    if (Number.isNaN(date.getTime())) return "";
    return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }

  function renderMessage(event) {
    const item = el("li", {
      class: `message ${event.mine ? "mine" : "theirs"}`,
      "data-seq": event.seq,
      "data-id": event.id,
      "data-author": event.author,
      "data-at": event.at,
    });
    const meta = el("p", { class: "meta" });
    const author = event.mine ? "You" : event.author_name || event.author;
    meta.append(el("span", { class: "author" }, author));
    const via = channelTag(event);
    if (via) meta.append(el("span", { class: "via" }, via));
    meta.append(el("time", { datetime: event.at }, formatTime(event.at)));
    const text = el("div", { class: "text" });
    renderMarkdown(String(event.text || ""), text);
    item.append(meta, text);
    if (event.erased) markErased(item);
    else if (event.retracted || state.retracted.has(event.id)) markRetracted(item);
    return item;
  }

  function renderNotice(event) {
    const text = event.fresh ? "Started fresh" : event.text || "";
    const fresh = Boolean(event.fresh);
    const attributes = { class: "notice", "data-seq": event.seq, "data-fresh": fresh };
    return el("li", { ...attributes, "data-at": event.at }, text);
  }

  // --- approvals ---------------------------------------------------------------------------------

  /** What choosing an option of each kind did, as the outcome says it. */
  const DONE = {
    allow_once: "Allowed once",
    allow_always: "Always allowed",
    reject_once: "Rejected",
    reject_always: "Always rejected",
  };
  /** Labels that say no more than their kind does (the outcome then leaves them out). */
  const PLAIN_LABELS = {
    allow_once: ["allow once", "allow", "approve", "yes"],
    allow_always: ["allow always", "always allow"],
    reject_once: ["reject once", "reject", "deny", "no"],
    reject_always: ["reject always", "always reject"],
  };
  const ANSWERED_WHERE = { slack: "in Slack", api: "through the API", email: "by email" };

  /** "Allowed once by Alice", "Rejected by Bob in Slack", "Expired — no answer in time". */
  function outcomeText(resolution) {
    if (resolution.outcome === "expired") return "Expired — no answer in time";
    if (resolution.outcome === "cancelled") return "Cancelled";
    const option = resolution.option || {};
    const label = String(option.label || option.id || "");
    const done = DONE[option.kind];
    let what = `Answered “${label}”`;
    if (done) {
      const plain = PLAIN_LABELS[option.kind].includes(label.trim().toLowerCase());
      what = plain ? done : `${done} (“${label}”)`;
    }
    const who = resolution.mine ? "you" : resolution.by_name || resolution.by || "someone";
    const channel = resolution.channel;
    const where =
      channel && channel !== "web" ? ` ${ANSWERED_WHERE[channel] || `in ${channel}`}` : "";
    return `${what} by ${who}${where}`;
  }

  /** How the outcome looks: allowed, rejected, answered (a plain choice), expired, cancelled. */
  function outcomeLook(resolution) {
    const kind = (resolution.option && resolution.option.kind) || "";
    if (resolution.outcome !== "answered") return resolution.outcome;
    if (kind.startsWith("allow")) return "allowed";
    if (kind.startsWith("reject")) return "rejected";
    return "answered";
  }

  /** "at 14:05" today, else "Friday, 4 December at 14:05". */
  function formatWhen(at) {
    const date = new Date(at);
    if (Number.isNaN(date.getTime())) return "";
    const time = formatTime(at);
    return localDay(date) === localDay(new Date()) ? `at ${time}` : `${dayLabel(date)} at ${time}`;
  }

  /**
   * The card of an approval request: who asks, the question and its details, the tool call it
   * is about (folded), a button per option and the expiry. Only the session's conversation's
   * cards are answered here (`rank` 0), and only by a person the request lets answer.
   */
  function renderApproval(event, rank) {
    const title = String(event.title || "");
    const asker = event.author_name || event.author || "";
    const item = el("li", {
      class: "approval",
      "data-seq": event.seq,
      "data-id": event.id,
      "data-author": event.author,
      "data-at": event.at,
      "data-state": "pending",
    });
    const box = el("div", {
      class: "approval-card",
      role: "group",
      "aria-label": `Approval request from ${asker}: ${title}`,
    });
    const meta = el("p", { class: "meta" });
    meta.append(
      el("span", { class: "author" }, asker),
      el("span", { class: "approval-tag" }, "asks for approval"),
      el("time", { datetime: event.at }, formatTime(event.at))
    );
    box.append(meta, el("p", { class: "approval-title" }, title));
    if (event.description) {
      const description = el("div", { class: "text approval-description" });
      renderMarkdown(String(event.description), description);
      box.append(description);
    }
    if (event.tool && event.tool.name) box.append(renderToolCall(event.tool));

    const actions = el("div", { class: "approval-actions" });
    const card = {
      id: event.id,
      title,
      item,
      actions,
      buttons: [],
      sending: false,
      closed: false, // refused for good (answered elsewhere, not ours to answer)
      resolved: false,
    };
    if (rank === 0 && event.can_answer !== false) {
      for (const option of Array.isArray(event.options) ? event.options : []) {
        const button = el(
          "button",
          {
            class: "approval-option",
            type: "button",
            "data-option": option.id,
            "data-kind": option.kind,
          },
          String(option.label || option.id)
        );
        button.addEventListener("click", () => answerApproval(card, option));
        card.buttons.push(button);
        actions.append(button);
      }
    } else {
      actions.append(el("p", { class: "approval-waiting" }, waitingFor(event, rank)));
    }
    card.expiry = el("p", { class: "approval-expiry" });
    card.expiry.append(
      "Expires ",
      el("time", { datetime: event.expires_at }, formatWhen(event.expires_at))
    );
    card.note = el("p", { class: "approval-note", hidden: true });
    box.append(actions, card.expiry, card.note);
    item.append(box);
    state.approvals.set(event.id, card);
    showWorkingText();
    const resolution = event.resolution || state.resolutions.get(event.id);
    state.resolutions.delete(event.id);
    if (resolution) showOutcome(card, resolution);
    return item;
  }

  /** The tool call a request is about: its name and its arguments, folded under "Details". */
  function renderToolCall(tool) {
    const details = el("details", { class: "approval-details" });
    const summary = el("summary", {}, "Details");
    const name = el("p", {});
    name.append("Tool: ", el("code", {}, String(tool.name)));
    let text;
    try {
      text = JSON.stringify(tool.arguments === undefined ? {} : tool.arguments, null, 2);
    } catch {
      text = String(tool.arguments);
    }
    const args = el("pre", { "aria-label": "Arguments" });
    args.append(el("code", {}, text));
    details.append(summary, name, args);
    return details;
  }

  function waitingFor(event, rank) {
    if (rank !== 0) return "Asked in an earlier conversation.";
    const names = (Array.isArray(event.approvers) ? event.approvers : []).map(
      (approver) => approver.name || approver.address
    );
    if (!names.length) return "Waiting for an answer.";
    return `Waiting for an answer from ${names.join(", ")}.`;
  }

  /** A resolution: its card shows the outcome (or it waits for a card not loaded yet). */
  function resolveApproval(resolution) {
    const card = state.approvals.get(resolution.target);
    if (card) showOutcome(card, resolution);
    else state.resolutions.set(resolution.target, resolution);
  }

  /** The outcome replaces the buttons; focus on one of them moves to it. */
  function showOutcome(card, resolution) {
    if (card.resolved) return;
    card.resolved = true;
    showWorkingText();
    const hadFocus = card.item.contains(root.activeElement);
    const outcome = el("p", {
      class: "approval-outcome",
      "data-outcome": outcomeLook(resolution),
      tabindex: "-1",
    });
    const mark = { allowed: "✓", rejected: "✕" }[outcomeLook(resolution)];
    if (mark) outcome.append(el("span", { class: "approval-mark", "aria-hidden": "true" }, mark));
    outcome.append(outcomeText(resolution));
    card.item.dataset.state = resolution.outcome;
    card.item.removeAttribute("aria-busy");
    card.actions.replaceChildren(outcome);
    card.buttons = [];
    card.expiry.hidden = true;
    if (hadFocus) outcome.focus();
  }

  /**
   * Answer with `option`. The buttons are disabled while the answer is on its way; the
   * resolution it makes comes back at once (and again on the stream, handled once). A refusal
   * is shown on the card; one that stands (answered elsewhere already, not this person's to
   * answer) leaves the buttons disabled, and the outcome follows on the stream.
   */
  async function answerApproval(card, option) {
    if (card.sending || card.closed || card.resolved) return;
    card.sending = true;
    setAnswering(card, true);
    card.note.hidden = true;
    let closed = false;
    try {
      await state.starting;
      if (!state.session) return; // starting failed, and said why
      const path = `/widget/v1/approvals/${encodeURIComponent(card.id)}`;
      const answer = await authorized("POST", path, { option: option.id });
      clearError();
      if (answer && answer.event) addEvent(answer.event);
    } catch (error) {
      closed = [403, 404, 409].includes(error.status);
      card.closed = closed;
      card.note.textContent = describe(error);
      card.note.hidden = false;
      setStatus(`${card.title}: ${card.note.textContent}`);
    } finally {
      card.sending = false;
      if (!card.resolved) setAnswering(card, closed);
    }
  }

  function setAnswering(card, disabled) {
    for (const button of card.buttons) {
      if (disabled) button.setAttribute("aria-disabled", "true");
      else button.removeAttribute("aria-disabled");
    }
    if (card.sending) card.item.setAttribute("aria-busy", "true");
    else card.item.removeAttribute("aria-busy");
  }

  // --- days --------------------------------------------------------------------------------------

  /** The local calendar day of `date`, as YYYY-MM-DD. */
  function localDay(date) {
    const pad = (number) => String(number).padStart(2, "0");
    return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
  }

  function dayLabel(date, now = new Date()) {
    const midnight = (day) => new Date(day.getFullYear(), day.getMonth(), day.getDate());
    const days = Math.round((midnight(now) - midnight(date)) / 86400000);
    if (days === 0) return "Today";
    if (days === 1) return "Yesterday";
    const options = { weekday: "long", day: "numeric", month: "long" };
    if (date.getFullYear() !== now.getFullYear()) options.year = "numeric";
    return date.toLocaleDateString(undefined, options);
  }

  /**
   * A separator right before each shown item that starts a day. Separators that still stand are
   * kept as they are (the log is a live region: what is re-inserted is read out again).
   */
  function showDays() {
    const standing = new Set();
    let previous = null;
    for (const item of Array.from(ui.list.children)) {
      if (item.classList.contains("day") || item.hidden || !item.dataset.at) continue;
      const date = new Date(item.dataset.at);
      if (Number.isNaN(date.getTime())) continue;
      const day = localDay(date);
      if (day !== previous) {
        let separator = item.previousElementSibling;
        if (!separator || separator.dataset.day !== day) {
          separator = el("li", { class: "day", "data-day": day });
          separator.append(el("time", { datetime: day }));
          ui.list.insertBefore(separator, item);
        }
        const label = dayLabel(date);
        if (separator.firstChild.textContent !== label) separator.firstChild.textContent = label;
        standing.add(separator);
      }
      previous = day;
    }
    for (const separator of ui.list.querySelectorAll(":scope > li.day")) {
      if (!standing.has(separator)) separator.remove();
    }
  }

  function markRetracted(item) {
    if (item.dataset.retracted === "true") return;
    item.dataset.retracted = "true";
    item.querySelector(".text").textContent = "This message was retracted";
  }

  function markErased(item) {
    if (item.dataset.erased === "true") return;
    item.dataset.erased = "true";
    item.querySelector(".text").textContent = "This message was erased";
  }

  /** Someone else in the conversation was erased: what they said shows as erased. */
  function eraseMessagesOf(participant) {
    for (const item of state.messages.values()) {
      if (item.dataset.author === participant) markErased(item);
    }
  }

  /**
   * This person was erased: forget everything shown of the conversation, say so, and start
   * again as someone new (a new session: the gateway has no identity of this browser any more).
   */
  function conversationErased() {
    if (state.erasing) return state.erasing;
    closeStream();
    clearTimeout(state.reconnectTimer);
    setWorking(false);
    ui.list.replaceChildren();
    for (const item of Array.from(state.unsent.keys())) dropUnsent(item);
    Object.assign(state, freshView());
    state.session = null;
    state.unread = 0;
    showUnread();
    ui.earlier.hidden = true;
    updateWelcome();
    clearError();
    ui.erased.hidden = false;
    setStatus(ERASED);
    state.started = false;
    state.erasing = start().finally(() => {
      state.erasing = null;
    });
    return state.erasing;
  }

  function retract(messageId) {
    const item = state.messages.get(messageId);
    if (item) markRetracted(item);
    else state.retracted.add(messageId); // its message is older than what is loaded
  }

  /*
   * Where an event goes: by `rank`, then `seq`. Rank 0 is the session's conversation; -1 the
   * conversation before it (a predecessor kept when two people were linked into one), -2 the one
   * before that, and so on. A seq is only unique within its conversation.
   */
  function comesAfter(item, rank, seq) {
    const itemRank = Number(item.dataset.rank);
    return itemRank > rank || (itemRank === rank && Number(item.dataset.seq) > seq);
  }

  /** Keep the list in order whatever order events come in. */
  function insertInOrder(item, rank, seq) {
    const last = ui.list.lastElementChild;
    if (last && comesAfter(last, rank, seq)) {
      const next = Array.from(ui.list.children).find((child) => comesAfter(child, rank, seq));
      ui.list.insertBefore(item, next);
    } else {
      ui.list.append(item);
    }
  }

  /**
   * Render one event unless it was handled already (the same seq can come from several paths);
   * whether it is new here.
   */
  function addEvent(event, rank = 0) {
    if (!event || typeof event.seq !== "number") return false;
    const key = `${rank}:${event.seq}`;
    if (state.shown.has(key)) {
      if (event.kind === "message" && event.retracted) retract(event.id);
      return false;
    }
    state.shown.add(key);
    const paging = state.paging;
    if (rank === paging.rank && (paging.oldest === null || event.seq < paging.oldest)) {
      paging.oldest = event.seq;
    }
    if (event.kind === "retraction") {
      retract(event.target);
      return true;
    }
    if (event.kind === "approval_resolved") {
      resolveApproval(event);
      return true;
    }
    if (event.kind === "erased") {
      if (event.mine && rank === 0) {
        conversationErased();
        return false;
      }
      eraseMessagesOf(event.participant);
      return true;
    }
    let item = null;
    if (event.kind === "message") {
      item = renderMessage(event);
      state.messages.set(event.id, item);
      if (event.mine && rank === 0) arrived(event);
      if (rank === 0) ui.erased.hidden = true; // the new conversation has begun
    } else if (event.kind === "system") {
      item = renderNotice(event);
    } else if (event.kind === "approval_requested") {
      item = renderApproval(event, rank);
    }
    if (!item) return false; // other kinds (membership changes) are not shown in the widget
    item.dataset.rank = rank;
    insertInOrder(item, rank, event.seq);
    if (event.kind === "system" && event.fresh && rank === 0) archiveBefore(event);
    else item.hidden = isArchived(rank, event.seq);
    showDays();
    updateWelcome();
    return true;
  }

  function isArchived(rank, seq) {
    if (state.showingArchive) return false;
    if (rank < 0) return true; // an earlier conversation is all archive
    return seq < state.archiveBefore && seq !== state.freshSeq;
  }

  /** A "start fresh" marker: what came before it goes behind "Show earlier". */
  function archiveBefore(marker) {
    if (marker.seq < (state.freshSeq || 0)) return; // an old marker, paged in from the archive
    state.freshSeq = marker.seq;
    const boundary = Math.max(marker.archive_before || marker.seq, marker.seq);
    hideBefore(boundary);
  }

  function hideBefore(boundary) {
    if (boundary <= state.archiveBefore) return;
    state.archiveBefore = boundary;
    state.showingArchive = false;
    state.more = false; // the new session has nothing older; the rest is the archive
    let hid = false;
    for (const item of ui.list.children) {
      item.hidden = isArchived(Number(item.dataset.rank), Number(item.dataset.seq));
      hid = hid || item.hidden;
    }
    state.earlier = state.earlier || hid;
    ui.earlier.hidden = !state.earlier;
    showDays();
    updateWelcome();
  }

  // --- scrolling ---------------------------------------------------------------------------------

  function nearEnd() {
    const log = ui.log;
    return log.scrollHeight - log.scrollTop - log.clientHeight < NEAR_EDGE_PX;
  }

  function scrollToEnd() {
    ui.log.scrollTop = ui.log.scrollHeight;
  }

  /** Prepend older events without the messages being read jumping away. */
  function keepingPosition(change) {
    const fromEnd = ui.log.scrollHeight - ui.log.scrollTop;
    change();
    ui.log.scrollTop = ui.log.scrollHeight - fromEnd;
  }

  function onScroll() {
    if (ui.log.scrollTop < NEAR_EDGE_PX && canPageBack()) loadOlder();
  }

  // --- history -----------------------------------------------------------------------------------

  function historyPath(params) {
    return `/widget/v1/history?${new URLSearchParams(params)}`;
  }

  /** The newest page: what the conversation holds now, and where the stream starts. */
  async function loadLatest() {
    const page = await authorized("GET", historyPath({ limit: HISTORY_PAGE }));
    state.archiveBefore = Math.max(state.archiveBefore, page.archive_before || 0);
    for (const event of page.events) addEvent(event);
    state.more = Boolean(page.more);
    state.predecessor = page.predecessor || null;
    state.earlier = Boolean(page.earlier);
    ui.earlier.hidden = !state.earlier;
    const newest = page.events.reduce((max, event) => Math.max(max, event.seq), 0);
    state.cursor = Math.max(state.cursor, newest, state.session.last_seq || 0);
    state.loaded = true;
    updateWelcome();
    scrollToEnd();
    await fillView();
  }

  /** Older events to page in: of this conversation, or (archive only) of the one before it. */
  function canPageBack() {
    return state.more || (state.showingArchive && state.predecessor !== null);
  }

  /** Page back until the list can scroll (a short page would never get a scroll event). */
  async function fillView() {
    for (let pages = 0; pages < 5 && canPageBack(); pages += 1) {
      if (ui.log.scrollHeight > ui.log.clientHeight) return;
      await loadOlder();
    }
  }

  async function loadOlder() {
    if (state.loadingOlder) return;
    state.loadingOlder = true;
    try {
      if (!state.more && state.showingArchive && state.predecessor) {
        // This conversation is all shown: go on into the one before it.
        const rank = state.paging.rank - 1;
        state.paging = { conversation: state.predecessor, rank, oldest: null };
        state.predecessor = null;
      }
      const paging = state.paging;
      const { conversation, rank, oldest } = paging;
      const params = { limit: HISTORY_PAGE };
      if (oldest !== null) params.before = oldest;
      if (state.showingArchive) params.archived = "true";
      if (conversation) params.conversation = conversation;
      const page = await authorized("GET", historyPath(params));
      if (paging !== state.paging) return; // the panel switched conversation meanwhile
      keepingPosition(() => page.events.forEach((event) => addEvent(event, rank)));
      state.more = Boolean(page.more);
      state.predecessor = page.predecessor || null;
    } catch (error) {
      showError(error);
    } finally {
      state.loadingOlder = false;
    }
  }

  async function showEarlier() {
    state.showingArchive = true;
    state.earlier = false;
    // Ask again from where paging stopped, archive included: the archive comes before any
    // earlier conversation.
    state.more = true;
    ui.earlier.hidden = true;
    updateWelcome();
    ui.log.focus(); // the button that had focus is gone
    let revealed = false;
    keepingPosition(() => {
      for (const item of ui.list.children) {
        revealed = revealed || item.hidden;
        item.hidden = false;
      }
      showDays();
    });
    const known = state.shown.size;
    await loadOlder();
    // Nothing archived here (the view was full, so fillView would not page on): show the
    // conversation before this one at once, rather than only once the person scrolls up.
    for (let pages = 0; pages < 5 && !revealed && state.shown.size === known; pages += 1) {
      if (!canPageBack()) break;
      await loadOlder();
    }
    await fillView();
    setStatus("Earlier messages shown");
  }

  /** Forget what is shown, and show the session's conversation from its newest page. */
  async function switchConversation() {
    closeStream();
    clearTimeout(state.reconnectTimer);
    ui.list.replaceChildren();
    Object.assign(state, freshView());
    await loadLatest();
    openStream();
  }

  // --- the live stream ---------------------------------------------------------------------------

  function openStream() {
    closeStream();
    const params = new URLSearchParams({
      token: state.session.session_token,
      after: String(state.cursor),
    });
    const source = new EventSource(`${config.gateway}/widget/v1/stream?${params}`);
    state.stream = source;
    source.addEventListener("open", () => {
      state.reconnectDelay = RECONNECT_FIRST_MS;
      clearError("connection");
    });
    source.addEventListener("timeline", (message) => {
      const event = parseData(message);
      if (!event) return;
      const follow = nearEnd();
      state.cursor = Math.max(state.cursor, event.seq);
      if (addEvent(event)) {
        countUnread(event);
        told(event);
      }
      if (follow) scrollToEnd();
    });
    source.addEventListener("working", (message) => {
      const data = parseData(message);
      if (data) setWorking(Boolean(data.working));
    });
    source.addEventListener("error", () => {
      if (source !== state.stream) return;
      setWorking(false);
      showError({ code: "connection", message: "Connection lost — reconnecting…" });
      // CONNECTING: the browser retries by itself, with Last-Event-ID. CLOSED: it gave up.
      if (source.readyState === EventSource.CLOSED) scheduleReconnect();
    });
  }

  function parseData(message) {
    try {
      return JSON.parse(message.data);
    } catch {
      return null;
    }
  }

  function closeStream() {
    if (state.stream) state.stream.close();
    state.stream = null;
  }

  function scheduleReconnect() {
    closeStream();
    clearTimeout(state.reconnectTimer);
    const delay = state.reconnectDelay;
    state.reconnectDelay = Math.min(delay * 2, RECONNECT_MAX_MS);
    state.reconnectTimer = setTimeout(reconnect, delay);
  }

  async function reconnect() {
    try {
      // The stream cannot say why it failed; a small request can (and renews an expired session).
      await authorized("GET", historyPath({ limit: 1 }));
      openStream();
    } catch (error) {
      if (error.status === 0 || error.status >= 500) {
        scheduleReconnect();
      } else {
        showError(error); // e.g. the user token expired: only the host page can fix that
      }
    }
  }

  function setWorking(working) {
    state.working = working;
    ui.working.hidden = !working;
    showWorkingText();
    if (!working) setStatus("");
  }

  /**
   * While a turn runs: the role is working — or, while one of its questions waits for an answer,
   * waiting for that answer (the turn is paused on the question).
   */
  function showWorkingText() {
    const name = state.roleName || config.role;
    const waiting = Array.from(state.approvals.values()).some((card) => !card.resolved);
    ui.working.textContent = waiting ? `${name} is waiting for an answer…` : `${name} is working…`;
    if (state.working) setStatus(ui.working.textContent);
  }

  // --- errors and status -------------------------------------------------------------------------

  function describe(error) {
    if (error.code === "rate_limited" || error.status === 429) {
      return error.retryAfter !== null && error.retryAfter !== undefined
        ? `Slow down — try again in ${error.retryAfter} s.`
        : "Slow down — try again in a moment.";
    }
    if (error.status === 413) return "That message is too long — 4,000 characters at most.";
    if (error.code === "origin_not_allowed") return NOT_ALLOWED_HERE;
    return error.message || "Something went wrong.";
  }

  function showError(error, text = describe(error)) {
    if (wasErased(error)) return; // the panel says so already, in its own words
    if (error.code === "origin_not_allowed" && !state.refusalLogged) {
      state.refusalLogged = true; // the operator's part, said once; the visitor reads `text`
      console.error(
        "rolecall widget: this site is not allowed to use this chat (operator: add it to " +
          `ROLECALL_SITES). The gateway said: ${error.message}`
      );
    }
    ui.error.textContent = text;
    ui.error.dataset.code = error.code || "";
    ui.error.hidden = false;
    setStatus(text);
  }

  /** Clear the error shown, or only one of this code. */
  function clearError(code) {
    if (code && ui.error.dataset.code !== code) return;
    ui.error.textContent = "";
    ui.error.hidden = true;
    markCodeInvalid(false);
  }

  function setStatus(text) {
    ui.status.textContent = text;
  }

  // --- what the person does ----------------------------------------------------------------------

  /**
   * Send what the composer holds. The text leaves the composer only once the gateway has it, so
   * nothing typed is lost to an error. Enter pressed while a message is on its way sends the
   * composer's new text right after it (and nothing when it is the same text, sent already).
   */
  async function send() {
    const text = ui.text.value;
    if (!text.trim()) return;
    if (state.sending) {
      state.sendNext = true;
      return;
    }
    state.sending = true;
    state.sendNext = false;
    ui.send.setAttribute("aria-disabled", "true");
    let sent = false;
    try {
      await state.starting; // typed before the session was ready: send once it is
      if (!state.session) return; // starting failed, and said why
      const answer = await authorized("POST", "/widget/v1/messages", { text });
      sent = true;
      const value = ui.text.value; // keep whatever was typed while it was on its way
      ui.text.value = value.startsWith(text) ? value.slice(text.length).trimStart() : value;
      clearError();
      if (addEvent(answer.event)) told(answer.event);
      scrollToEnd();
    } catch (error) {
      if (!failedOnTheWay(error)) {
        showError(error); // refused: the text stays in the composer, with the reason
      } else {
        const value = ui.text.value; // it waits in the list instead, with Retry
        ui.text.value = value.startsWith(text) ? value.slice(text.length).trimStart() : value;
        addUnsent(text);
        showError(error, NOT_SENT);
      }
    } finally {
      state.sending = false;
      ui.send.removeAttribute("aria-disabled");
    }
    if (sent && state.sendNext) send();
  }

  /** The gateway was not reached, or failed: the message may be sent again as it is. */
  function failedOnTheWay(error) {
    return error.status === 0 || error.status >= 500;
  }

  /** A message that did not get through, marked, with Retry. */
  function addUnsent(text) {
    const item = el("li", { class: "message mine unsent", "data-unsent": "true" });
    const meta = el("p", { class: "meta" });
    meta.append(el("span", { class: "author" }, "You"));
    const body = el("div", { class: "text" });
    renderMarkdown(text, body);
    const note = el("span", { class: "unsent-note" }, "Not sent.");
    const retry = el("button", { class: "retry", type: "button" }, "Retry");
    const line = el("p", { class: "unsent-line" });
    line.append(note, " ", retry);
    item.append(meta, body, line);
    state.unsent.set(item, text);
    retry.addEventListener("click", () => retrySend(item, note, retry));
    ui.unsent.append(item);
    scrollToEnd();
  }

  async function retrySend(item, note, retry) {
    const text = state.unsent.get(item);
    if (text === undefined || retry.getAttribute("aria-disabled") === "true") return;
    retry.setAttribute("aria-disabled", "true");
    note.textContent = "Sending…";
    try {
      if (!state.session) await start(); // the first connection failed too: try it again
      if (!state.session) throw new ApiError(0, "unreachable", "The chat cannot be reached.");
      const answer = await authorized("POST", "/widget/v1/messages", { text });
      dropUnsent(item);
      clearError();
      if (addEvent(answer.event)) told(answer.event);
      scrollToEnd();
      setStatus("Sent");
    } catch (error) {
      note.textContent = "Not sent.";
      showError(error, failedOnTheWay(error) ? NOT_SENT : describe(error));
    } finally {
      retry.removeAttribute("aria-disabled");
    }
  }

  function dropUnsent(item) {
    state.unsent.delete(item);
    item.remove();
  }

  /** The person's message came from the gateway: a "Not sent" copy of it got through after all. */
  function arrived(event) {
    for (const [item, text] of state.unsent) {
      if (text === event.text) {
        dropUnsent(item);
        return;
      }
    }
  }

  async function startFresh() {
    if (!state.session) return;
    try {
      const answer = await authorized("POST", "/widget/v1/fresh");
      clearError();
      // The marker follows on the stream; hide what it archives at once.
      if (answer && answer.archive_before) hideBefore(answer.archive_before);
      setStatus("Started fresh");
    } catch (error) {
      showError(error);
    }
  }

  // --- linking another channel -------------------------------------------------------------------

  const LINK_ERRORS = {
    link_code_unknown: "That code is not known. Check it, or get a new one.",
    link_code_expired: "That code has expired. Get a new one, and give it here.",
    link_code_used: "That code was used already. Get a new one, and give it here.",
    invalid_link_code: "That is not a link code: it has 8 letters and digits, like ABCD-EFGH.",
  };

  function describeLinkError(error) {
    if (error.status === 429) {
      return error.retryAfter !== null && error.retryAfter !== undefined
        ? `Too many tries — try again in ${error.retryAfter} s.`
        : "Too many tries — try again in a moment.";
    }
    if (LINK_ERRORS[error.code]) return LINK_ERRORS[error.code];
    if (error.status === 409) return `This chat cannot be linked: ${error.message}`;
    return describe(error);
  }

  /** The code box refused (or not): it then points at the error that says why. */
  function markCodeInvalid(invalid) {
    if (invalid) {
      ui.codeInput.setAttribute("aria-invalid", "true");
      ui.codeInput.setAttribute("aria-describedby", "rolecall-error rolecall-take-hint");
    } else {
      ui.codeInput.removeAttribute("aria-invalid");
      ui.codeInput.setAttribute("aria-describedby", "rolecall-take-hint");
    }
  }

  /** One link request at a time, once the session is there (when it is not, starting said why). */
  async function linkRequest(button, call) {
    if (state.linking) return;
    state.linking = true;
    button.setAttribute("aria-disabled", "true");
    try {
      await state.starting;
      if (state.session) await call();
    } finally {
      state.linking = false;
      button.removeAttribute("aria-disabled");
    }
  }

  /** A code for this person, to give in another channel. */
  function getLinkCode() {
    return linkRequest(ui.getCode, async () => {
      let answer;
      try {
        answer = await authorized("POST", "/widget/v1/link-codes");
      } catch (error) {
        showError(error);
        return;
      }
      clearError();
      showLinkCode(answer);
    });
  }

  function showLinkCode(answer) {
    const code = String(answer.code || "");
    ui.code.textContent = code;
    const until = formatTime(answer.expires_at);
    const minutes = Math.round((new Date(answer.expires_at).getTime() - Date.now()) / 60000);
    let expiry = "It works once";
    if (minutes > 0) expiry += `, for ${minutes} minute${minutes === 1 ? "" : "s"}`;
    if (until) expiry += ` (until ${until})`;
    ui.expiry.textContent = `${expiry}.`;
    ui.howTo.replaceChildren(
      "Give it in another channel: in Slack, send ",
      el("code", {}, `link ${code}`),
      " in the DM with the bot; in another browser, choose Link in this chat, then give it " +
        "under “I have a code”."
    );
    const clipboard = navigator.clipboard;
    ui.copy.hidden = !(clipboard && typeof clipboard.writeText === "function");
    ui.copied.hidden = true;
    ui.codeBox.hidden = false;
    setStatus(`Your link code is ${code}. ${ui.expiry.textContent}`);
  }

  async function copyLinkCode() {
    const code = ui.code.textContent;
    let text;
    try {
      await navigator.clipboard.writeText(code);
      text = "Copied.";
    } catch {
      text = "Could not copy: select the code and copy it yourself.";
    }
    if (ui.code.textContent !== code) return; // a new code came meanwhile
    ui.copied.textContent = text;
    ui.copied.hidden = false;
    setStatus(text);
  }

  /**
   * Give a code got elsewhere: this browser's identity joins the code's person, and the answer is
   * a session as them. The typed code stays in its box until the gateway took it.
   */
  function redeemLinkCode() {
    const code = ui.codeInput.value.trim();
    if (!code) {
      showError({ code: "link" }, "Type the link code you were given, like ABCD-EFGH.");
      markCodeInvalid(true);
      ui.codeInput.focus();
      return Promise.resolve();
    }
    return linkRequest(ui.redeem, async () => {
      let session;
      try {
        session = await authorized("POST", "/widget/v1/link", { code });
      } catch (error) {
        showError(error, describeLinkError(error));
        markCodeInvalid(true);
        ui.codeInput.focus();
        return;
      }
      // The visitor token (if any) is kept: its identity is the code's person's now, so a reload
      // continues as them.
      adoptSession(session);
      clearError();
      ui.codeInput.value = "";
      ui.codeBox.hidden = true; // a code got before is the old person's
      setLinkingOpen(false);
      ui.text.focus();
      try {
        await switchConversation();
      } catch (error) {
        showError(error);
        return;
      }
      const who = (session.person && session.person.display_name) || "the other channel";
      setStatus(`Linked: this chat continues the conversation of ${who}.`);
    });
  }

  // --- the page's API: window.Rolecall ------------------------------------------------------------

  const EVENTS = ["message", "open", "close"];

  /** The API every widget on the page shares: the first one to run makes it. */
  function sharedApi() {
    const existing = window.Rolecall;
    if (existing && existing.widgets instanceof Map) return existing;
    const widgets = new Map(); // role → this page's widget for it
    const listeners = new Set(); // {name, fn, role}
    const pick = (role) =>
      role === undefined ? Array.from(widgets.values()) : [widgets.get(role)].filter(Boolean);
    const api = {
      widgets,
      listeners,
      open: (role) => pick(role).forEach((widget) => widget.open()),
      close: (role) => pick(role).forEach((widget) => widget.close()),
      identify: (token, role) =>
        Promise.all(pick(role).map((widget) => widget.identify(token))).then(() => undefined),
      on(name, fn, role) {
        if (!EVENTS.includes(name)) {
          throw new TypeError(`Rolecall.on: no event ${JSON.stringify(name)}; ${EVENTS.join(", ")}`);
        }
        if (typeof fn !== "function") throw new TypeError("Rolecall.on: the listener is a function");
        const listener = { name, fn, role };
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    Object.defineProperties(api, {
      widgets: { enumerable: false },
      listeners: { enumerable: false },
    });
    window.Rolecall = Object.freeze(api);
    return window.Rolecall;
  }

  const api = sharedApi();

  /** Call the page's listeners of `name`; one that throws does not stop the others. */
  function emit(name, detail) {
    for (const listener of Array.from(api.listeners)) {
      if (listener.name !== name || (listener.role && listener.role !== config.role)) continue;
      try {
        listener.fn({ role: config.role, ...detail });
      } catch (error) {
        console.error(`rolecall widget: a "${name}" listener failed`, error);
      }
    }
  }

  /** A new message shown: the page's message listeners hear of it. */
  function told(event) {
    if (event.kind !== "message" || event.erased) return;
    const { id, author, author_name: authorName, mine, text, at } = event;
    emit("message", { id, author, author_name: authorName, mine, text, at });
  }

  /**
   * A signed user from now on (the host page's token, as data-user-token takes), or with null an
   * anonymous visitor again; the panel shows their conversation. Before the panel first opens it
   * only changes who the widget starts as. Rejects when the gateway refuses the token (the panel
   * says why, and stays as it was).
   */
  async function identify(token) {
    if (token !== null && token !== undefined && typeof token !== "string") {
      throw new TypeError("Rolecall.identify: the token is a string (or null)");
    }
    config.userToken = (token || "").trim() || null;
    if (!state.started) return;
    await state.starting;
    if (!state.session) return; // starting failed; the next start uses this token
    try {
      await openSession();
    } catch (error) {
      showError(error);
      throw error;
    }
    clearError();
  }

  function publish() {
    api.widgets.set(config.role, {
      open: () => setOpen(true),
      close: () => setOpen(false),
      identify,
    });
  }

  /** Session, newest history, stream: once, when the panel first opens. */
  function start() {
    if (!state.started) {
      state.started = true;
      state.starting = connect();
    }
    return state.starting;
  }

  async function connect() {
    try {
      await openSession();
      await loadLatest();
      openStream();
    } catch (error) {
      showError(error);
      // Unreachable or failing gateway: try again later. A refusal (4xx) stands until reload.
      if (error.status === 0 || error.status >= 500) {
        state.started = false;
        clearTimeout(state.reconnectTimer);
        state.reconnectTimer = setTimeout(() => {
          if (isOpen()) start();
        }, state.reconnectDelay);
        state.reconnectDelay = Math.min(state.reconnectDelay * 2, RECONNECT_MAX_MS);
      }
    }
  }

  function wire() {
    ui.panel.addEventListener("keydown", trapTab);
    document.addEventListener("focusin", keepFocusInside);
    phone.addEventListener("change", showLayout);
    ui.launcher.addEventListener("click", () => setOpen(!isOpen(), { focus: true }));
    ui.close.addEventListener("click", () => setOpen(false, { focus: true }));
    ui.panel.addEventListener("keydown", (event) => {
      if (event.key !== "Escape") return;
      // Escape in the link row (or on its toggle) closes the row first, and focus goes back;
      // so does Escape in the "Start fresh" question (or on its button).
      const active = root.activeElement;
      const inLinking = ui.row.contains(active) || active === ui.linkToggle;
      const inFresh = ui.freshRow.contains(active) || active === ui.fresh;
      if (isLinkingOpen() && inLinking) setLinkingOpen(false, { focus: true });
      else if (isConfirmingFresh() && inFresh) setConfirmingFresh(false, { focus: true });
      else setOpen(false, { focus: true });
    });
    ui.linkToggle.addEventListener("click", () => {
      setLinkingOpen(!isLinkingOpen(), { focus: true });
    });
    ui.getCode.addEventListener("click", getLinkCode);
    ui.copy.addEventListener("click", copyLinkCode);
    ui.take.addEventListener("submit", (event) => {
      event.preventDefault();
      redeemLinkCode();
    });
    ui.fresh.addEventListener("click", () => {
      setConfirmingFresh(!isConfirmingFresh(), { focus: true });
    });
    ui.freshYes.addEventListener("click", () => {
      setConfirmingFresh(false);
      ui.text.focus();
      startFresh();
    });
    ui.freshNo.addEventListener("click", () => setConfirmingFresh(false, { focus: true }));
    ui.earlier.addEventListener("click", showEarlier);
    ui.log.addEventListener("scroll", onScroll, { passive: true });
    ui.composer.addEventListener("submit", (event) => {
      event.preventDefault();
      send();
    });
    ui.text.addEventListener("keydown", (event) => {
      // Enter sends; Shift+Enter is a new line; Enter that ends an IME composition is neither.
      if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
      event.preventDefault();
      send();
    });
  }

  function mount() {
    document.body.append(host);
    wire();
    showLayout();
    showRole(null);
    publish();
    setOpen(config.open);
    window.dispatchEvent(new CustomEvent("rolecall:ready", { detail: { role: config.role } }));
  }

  // The styles live in the shadow root: the host page's CSS cannot reach in, nor this out.
  function styles() {
    return `
:host { all: initial; }
[hidden] { display: none !important; }
* { box-sizing: border-box; }
.visually-hidden {
  position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; border: 0;
  overflow: hidden; clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap;
}
button, textarea, input { font: inherit; color: inherit; }
:focus-visible { outline: 3px solid #f5b400; outline-offset: 2px; }

.launcher, .panel {
  --accent: var(--rolecall-accent, #2845b8);
  --on-accent: var(--rolecall-on-accent, #fff);
  --accent-strong: color-mix(in srgb, var(--accent) 78%, #000);
  --accent-ink: color-mix(in srgb, var(--accent) 82%, #000);
  --accent-soft: color-mix(in srgb, var(--accent) 12%, #fff);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: #1c1d22; z-index: 2147483000;
}
.launcher {
  position: fixed; right: 20px; bottom: 20px; padding: 12px 18px;
  border: 0; border-radius: 999px; background: var(--accent); color: var(--on-accent);
  font-weight: 600; cursor: pointer; box-shadow: 0 4px 14px rgba(20, 30, 80, .3);
}
.launcher:hover { background: var(--accent-strong); }
:host([data-position="left"]) .launcher, :host([data-position="left"]) .panel {
  right: auto; left: 20px;
}
/* The open panel takes the launcher's corner, over it; Close chat (and Escape) closes it. */
.panel { z-index: 2147483001; }
.launcher { display: inline-flex; align-items: center; gap: 8px; }
.badge {
  min-width: 22px; height: 22px; padding: 0 6px; border-radius: 999px;
  background: #c5221f; color: #fff; font-size: 12px; line-height: 22px; text-align: center;
}
.avatar {
  flex: none; display: inline-flex; align-items: center; justify-content: center;
  width: 28px; height: 28px; border-radius: 50%; overflow: hidden;
  background: rgba(255, 255, 255, .22); color: var(--on-accent); font-size: 12px;
  font-weight: 700;
}
.avatar img { width: 100%; height: 100%; object-fit: cover; }
.avatar.large {
  width: 56px; height: 56px; font-size: 20px; background: var(--accent); color: var(--on-accent);
}
.panel {
  position: fixed; right: 20px; bottom: 20px; display: flex; flex-direction: column;
  width: 380px; max-width: calc(100vw - 40px); height: min(640px, calc(100vh - 40px));
  background: #fff; border: 1px solid #d6d8e0; border-radius: 14px; overflow: hidden;
  box-shadow: 0 10px 40px rgba(20, 30, 80, .25);
}

.header {
  display: flex; align-items: center; gap: 8px; padding: 10px 12px;
  background: var(--accent); color: var(--on-accent);
}
.title {
  flex: 1; margin: 0; font-size: 16px; font-weight: 600;
  overflow: hidden; text-overflow: ellipsis; white-space: nowrap;
}
.header button {
  padding: 4px 10px; border: 1px solid rgba(255, 255, 255, .6); border-radius: 8px;
  border-color: color-mix(in srgb, var(--on-accent) 60%, transparent);
  background: transparent; color: var(--on-accent); cursor: pointer;
}
.header button:hover { background: rgba(255, 255, 255, .15); }
.header .close { padding: 2px 10px 4px; font-size: 20px; line-height: 1; }
.header .link-toggle[aria-expanded="true"], .header .fresh[aria-expanded="true"] {
  background: var(--on-accent); color: var(--accent);
}

.linking {
  display: flex; flex-direction: column; gap: 12px; max-height: 55%; overflow-y: auto;
  padding: 10px 12px; font-size: 14px; background: #fff; border-bottom: 1px solid #d6d8e0;
}
.link-part { margin: 0; min-width: 0; }
.link-part + .link-part { padding-top: 10px; border-top: 1px solid #e1e3ea; }
.link-title { margin: 0 0 2px; font-weight: 600; }
.link-text { margin: 0 0 6px; color: #51545f; }
.link-text code { padding: 0 4px; border-radius: 4px; background: #eceef4; color: #1c1d22; }
.link-code-line {
  display: flex; flex-wrap: wrap; align-items: center; gap: 4px 12px; margin: 8px 0 4px;
}
.link-code-line p { margin: 0; }
.link-hint { margin: 4px 0 0; }
.link-code {
  font: 600 20px/1.2 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  letter-spacing: .06em; user-select: all;
}
.link-part label { display: block; margin: 0 0 2px; }
.link-row { display: flex; gap: 8px; }
.link-row input {
  flex: 1; min-width: 0; min-height: 40px; padding: 6px 10px;
  border: 1px solid #a9adbb; border-radius: 10px; background: #fff;
  font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
}
.link-row input[aria-invalid="true"] { border-color: #b3261e; }
.link-button {
  min-height: 40px; padding: 0 14px; border: 1px solid var(--accent); border-radius: 10px;
  background: #fff; color: var(--accent-ink); font-weight: 600; cursor: pointer;
}
.link-button.primary { background: var(--accent); color: var(--on-accent); }
.link-button[aria-disabled="true"] { opacity: .6; }
.link-copied { margin: 0 0 4px; }
.confirm {
  display: flex; flex-direction: column; gap: 2px; padding: 10px 12px; font-size: 14px;
  background: #fff; border-bottom: 1px solid #d6d8e0;
}
.confirm .link-row { margin-top: 4px; }

.log {
  flex: 1; overflow-y: auto; overscroll-behavior: contain; padding: 12px; background: #f7f8fb;
}
.earlier {
  display: block; margin: 0 auto 10px; padding: 6px 14px; cursor: pointer;
  border: 1px solid var(--accent); border-radius: 999px; background: #fff;
  color: var(--accent-ink);
}
.welcome {
  display: flex; flex-direction: column; align-items: center; gap: 8px; margin: 4px 0 14px;
}
.welcome-name { margin: 0; font-weight: 600; }
.greeting {
  max-width: 90%; padding: 8px 12px; border: 1px solid #e1e3ea; border-radius: 12px;
  background: #fff;
}
.suggestions {
  display: flex; flex-wrap: wrap; justify-content: center; gap: 6px;
  margin: 0; padding: 0; list-style: none;
}
.suggestion {
  padding: 6px 12px; border: 1px solid var(--accent); border-radius: 999px; cursor: pointer;
  background: #fff; color: var(--accent-ink); text-align: left;
}
.suggestion:hover { background: var(--accent-soft); }
.messages {
  display: flex; flex-direction: column; gap: 8px; margin: 0; padding: 0; list-style: none;
}
.message {
  max-width: 85%; padding: 8px 12px;
  border: 1px solid #e1e3ea; border-radius: 12px; background: #fff;
}
.message.mine {
  align-self: flex-end; background: var(--accent-soft);
  border-color: color-mix(in srgb, var(--accent) 25%, #fff);
}
.message.theirs { align-self: flex-start; }
.meta {
  display: flex; flex-wrap: wrap; align-items: baseline; gap: 6px; margin: 0 0 2px;
  font-size: 12px; color: #51545f;
}
.author { font-weight: 600; color: #2b2d35; }
.via { padding: 0 6px; border-radius: 6px; background: #fff3c4; color: #5a4300; }
.text { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.text p, .text ul, .text ol, .text pre, .text blockquote { margin: 0 0 6px; }
.text > :last-child { margin-bottom: 0; }
.text ul, .text ol { padding-left: 1.4em; }
.text li > p, .text li > ul, .text li > ol { margin: 0; }
.text code, .text pre {
  font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: .9em;
}
.text code { padding: 0 4px; border-radius: 4px; background: rgba(40, 45, 70, .08); }
.text pre {
  padding: 8px 10px; border-radius: 8px; background: rgba(40, 45, 70, .08);
  white-space: pre; overflow-x: auto; overflow-wrap: normal;
}
.text pre code { padding: 0; background: none; }
.text blockquote { padding-left: 10px; border-left: 3px solid #a9adbb; color: #51545f; }
.text a { color: var(--accent-strong); text-decoration: underline; }
.message[data-retracted="true"] .text, .message[data-erased="true"] .text {
  font-style: italic; color: #62656f;
}
.erased-notice {
  width: fit-content; margin: 0 auto 8px; padding: 4px 12px; border-radius: 999px;
  font-size: 13px; color: #51545f; background: #eceef4; text-align: center;
}
.unsent-list:empty { display: none; }
.unsent-list { margin-top: 8px; }
.message.unsent { border-style: dashed; border-color: #b3261e; }
.unsent-line { margin: 4px 0 0; font-size: 13px; color: #8a1111; }
.retry {
  padding: 0 8px; border: 1px solid #8a1111; border-radius: 6px; background: transparent;
  color: #8a1111; cursor: pointer;
}
.retry[aria-disabled="true"] { opacity: .6; }
.day {
  align-self: center; margin: 4px 0 0; font-size: 12px; font-weight: 600; color: #51545f;
}
.notice {
  align-self: center; padding: 2px 10px; border-radius: 999px;
  font-size: 12px; color: #51545f; background: #eceef4;
}
.approval {
  padding: 10px 12px; border: 1px solid #e1e3ea; border-left: 4px solid #a9adbb;
  border-radius: 12px; background: #fff;
}
.approval[data-state="pending"] { border-left-color: var(--accent); }
.approval-card { display: flex; flex-direction: column; gap: 6px; }
.approval-card .meta { margin: 0; }
.approval-tag { color: #51545f; }
.approval-title { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
.approval-details { font-size: 13px; }
.approval-details summary {
  width: fit-content; cursor: pointer; color: var(--accent-ink); font-weight: 600;
}
.approval-details p { margin: 6px 0 4px; }
.approval-details code, .approval-details pre {
  font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12px;
}
.approval-details pre {
  margin: 0; padding: 8px 10px; max-height: 200px; overflow: auto; border-radius: 8px;
  background: rgba(40, 45, 70, .08); white-space: pre;
}
.approval-actions { display: flex; flex-wrap: wrap; gap: 6px; }
.approval-option {
  min-height: 36px; padding: 0 14px; border: 1px solid var(--accent); border-radius: 10px;
  background: #fff; color: var(--accent-ink); font-weight: 600; cursor: pointer;
}
.approval-option:hover { background: var(--accent-soft); }
.approval-option[data-kind^="allow"] { background: var(--accent); color: var(--on-accent); }
.approval-option[data-kind^="allow"]:hover { background: var(--accent-strong); }
.approval-option[data-kind^="reject"] { border-color: #b3261e; color: #8a1111; }
.approval-option[aria-disabled="true"] { opacity: .55; cursor: default; }
.approval-waiting, .approval-expiry { margin: 0; font-size: 12px; color: #51545f; }
.approval-note { margin: 0; font-size: 13px; color: #8a1111; }
.approval-outcome { margin: 0; font-weight: 600; color: #51545f; }
.approval-outcome[data-outcome="allowed"] { color: #0b6b3a; }
.approval-outcome[data-outcome="rejected"] { color: #8a1111; }
.approval-outcome[data-outcome="answered"] { color: #2b2d35; }
.approval-mark { margin-right: 6px; }

.working { margin: 0; padding: 4px 14px; font-size: 13px; color: #51545f; background: #f7f8fb; }
.error {
  margin: 0; padding: 8px 14px; font-size: 14px;
  color: #8a1111; background: #fdecec; border-top: 1px solid #f3c4c4;
}
.composer {
  display: flex; gap: 8px; padding: 10px; border-top: 1px solid #e1e3ea; background: #fff;
}
.composer textarea {
  flex: 1; min-height: 44px; max-height: 140px; resize: vertical; padding: 8px 10px;
  border: 1px solid #a9adbb; border-radius: 10px; background: #fff;
}
.composer textarea:focus { border-color: var(--accent); }
.send {
  align-self: flex-end; min-height: 44px; padding: 0 16px; border: 0; border-radius: 10px;
  background: var(--accent); color: var(--on-accent); font-weight: 600; cursor: pointer;
}
.send[aria-disabled="true"] { opacity: .6; }

/* A phone: the open panel is the whole screen (a modal dialog). */
@media (max-width: 480px) {
  .panel, :host([data-position="left"]) .panel {
    inset: 0; width: 100%; max-width: none; height: 100%; border: 0; border-radius: 0;
  }
  .launcher[aria-expanded="true"] { display: none; }
}
${darkRules(':host([data-theme="dark"])')}
@media (prefers-color-scheme: dark) {
${darkRules(':host([data-theme="auto"])')}
}
`;
  }

  /** The dark scheme's rules, each selector under `scope` (the host's data-theme). */
  function darkRules(scope) {
    const rules = `
  .panel { background: #1c1d22; color: #eceef4; border-color: #3a3d48; }
  .log, .working { background: #23252c; color: #c9ccd6; }
  .message, .composer, .composer textarea {
    background: #2b2d35; border-color: #3a3d48; color: #eceef4;
  }
  .message.mine { background: #2c3a73; border-color: #3d4c8c; }
  .meta, .message[data-retracted="true"] .text, .message[data-erased="true"] .text {
    color: #b4b7c2;
  }
  .erased-notice { background: #2b2d35; color: #c9ccd6; }
  .author { color: #eceef4; }
  .notice { background: #2b2d35; color: #c9ccd6; }
  .day { color: #b4b7c2; }
  .greeting { background: #2b2d35; border-color: #3a3d48; color: #eceef4; }
  .suggestion { background: #23252c; color: #aebfff; border-color: #aebfff; }
  .suggestion:hover { background: #2b2d35; }
  .text code, .text pre { background: rgba(255, 255, 255, .08); }
  .text blockquote { color: #b4b7c2; border-color: #5a5e6b; }
  .text a { color: #aebfff; }
  .earlier { background: #23252c; color: #aebfff; border-color: #aebfff; }
  .linking, .confirm, .link-row input, .link-button {
    background: #2b2d35; border-color: #3a3d48;
  }
  .unsent-line, .retry { color: #ffb4ab; border-color: #ffb4ab; }
  .link-text { color: #b4b7c2; }
  .link-text code { background: #23252c; color: #eceef4; }
  .link-button { color: #aebfff; border-color: #aebfff; }
  .link-button.primary {
    background: var(--accent); color: var(--on-accent); border-color: var(--accent);
  }
  .approval {
    background: #2b2d35; border-color: #3a3d48; border-left-color: #5a5e6b; color: #eceef4;
  }
  .approval[data-state="pending"] { border-left-color: #aebfff; }
  .approval-tag, .approval-waiting, .approval-expiry { color: #b4b7c2; }
  .approval-details summary { color: #aebfff; }
  .approval-details pre { background: rgba(255, 255, 255, .08); }
  .approval-option { background: #23252c; color: #aebfff; border-color: #aebfff; }
  .approval-option:hover { background: #2f3240; }
  .approval-option[data-kind^="allow"] {
    background: var(--accent); color: var(--on-accent); border-color: var(--accent);
  }
  .approval-option[data-kind^="reject"] { color: #ffb4ab; border-color: #ffb4ab; }
  .approval-note { color: #ffb4ab; }
  .approval-outcome { color: #c9ccd6; }
  .approval-outcome[data-outcome="allowed"] { color: #7fd8a6; }
  .approval-outcome[data-outcome="rejected"] { color: #ffb4ab; }
  .approval-outcome[data-outcome="answered"] { color: #eceef4; }
`;
    return rules.replace(/^( *)([^{}\n]+?)\s*\{/gm, (_, indent, selectors) => {
      const scoped = selectors.split(",").map((selector) => `${scope} ${selector.trim()}`);
      return `${indent}${scoped.join(", ")} {`;
    });
  }

  if (document.body) mount();
  else document.addEventListener("DOMContentLoaded", mount, { once: true });
})();
