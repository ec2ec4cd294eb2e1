/* sparring's chat-widget finder and reader, evaluated in each frame of the page by
 * sparring.targets.browser_page. Called as frame.evaluate(script, args) or, on one element,
 * as locator.evaluate(script, args). Elements it picks get a `data-sparring-ROLE` attribute
 * (role: input, send, messages, upload, launcher), so Playwright can act on them by selector
 * (its CSS selectors pierce open shadow roots). Open shadow roots are searched everywhere.
 */
(first, second) => {
  const args = second === undefined ? first : second;
  const element = second === undefined ? null : first;
  const CHATTY = /chat|message|ask|question|reply|conversation|assistant|support|help|talk|type|write/i;
  const NOT_CHAT = /search|e-?mail|newsletter|coupon|promo|zip|postal|password|login|user ?name|phone|quantity|qty/i;
  const LAUNCH = /chat|support|help|message|assistant|launcher|bubble|widget|talk|conversation|contact/i;
  const CLOSE = /close|dismiss|minimi[sz]e|hide/i;
  const SEND = /send|submit|envoyer|enviar|senden/i;
  const LOG = /^(messages|msgs|message(list|log)|conversation|transcript|thread|chatlog|log|history)$/i;
  const tokens = (text) => (text || "").split(/[\s_-]+/).filter(Boolean);
  const TYPING = /typing|indicator|loading|thinking|spinner|dots|ellipsis|pending|busy/i;
  const USER = /^(user|me|mine|self|own|outgoing|outbound|sent|customer|visitor|human|question)$/i;
  const AGENT = /^(bot|agent|assistant|incoming|inbound|received|ai|answer|response)$/i;
  const INPUTS = "textarea, input:not([type]), input[type=text], [contenteditable=''], " +
    "[contenteditable=true], [role=textbox]";
  const CLICKABLE = "button, [role=button], a, [onclick], [aria-haspopup], summary";

  function* walk(root) {
    for (const node of root.querySelectorAll("*")) {
      yield node;
      if (node.shadowRoot) yield* walk(node.shadowRoot);
    }
  }
  const deepAll = (root, selector) => [...walk(root)].filter((e) => e.matches(selector));
  const parentOf = (e) => e.parentElement || (e.getRootNode() && e.getRootNode().host) || null;
  const ancestors = (e, depth) => {
    const out = [];
    for (let node = parentOf(e); node && out.length < depth; node = parentOf(node)) out.push(node);
    return out;
  };
  const visible = (e) => {
    const box = e.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) return false;
    return e.checkVisibility ? e.checkVisibility({ visibilityProperty: true }) : true;
  };
  const words = (e) => ["id", "class", "aria-label", "title", "placeholder", "name", "role",
    "data-testid", "alt"].map((a) => e.getAttribute(a) || "").join(" ");
  const ownText = (e) => (e.innerText || e.textContent || "").trim();
  const describe = (e) => {
    let text = "<" + e.tagName.toLowerCase();
    for (const a of ["id", "class", "role", "aria-label", "placeholder", "type"]) {
      const v = e.getAttribute(a);
      if (v) text += " " + a + '="' + v.slice(0, 60) + '"';
    }
    text += ">";
    const inner = ownText(e).replace(/\s+/g, " ").slice(0, 40);
    if (inner && e.children.length < 3) text += " " + JSON.stringify(inner);
    if (e.getRootNode() !== document) text += " (in a shadow root)";
    return text;
  };
  const mark = (e, role) => {
    for (const old of deepAll(document, "[data-sparring-" + role + "]")) {
      old.removeAttribute("data-sparring-" + role);
    }
    e.setAttribute("data-sparring-" + role, "");
    return describe(e);
  };
  const marked = (role) => deepAll(document, "[data-sparring-" + role + "]")[0] || null;

  function inputScore(e) {
    const type = (e.getAttribute("type") || "").toLowerCase();
    if (["search", "email", "password", "number"].includes(type) || NOT_CHAT.test(words(e))) {
      return -10;
    }
    if (e.disabled || e.readOnly) return -10;
    let score = e.tagName === "TEXTAREA" ? 1 : 0;
    if (CHATTY.test(words(e))) score += 3;
    if (ancestors(e, 8).some((a) => CHATTY.test(words(a)) || /widget|panel/i.test(words(a)))) {
      score += 2;
    }
    return score;
  }

  function findInput() {
    const ranked = deepAll(document, INPUTS).filter(visible)
      .map((e) => [inputScore(e), e]).filter(([s]) => s >= 0).sort((a, b) => b[0] - a[0]);
    return ranked.length ? mark(ranked[0][1], "input") : null;
  }

  function hintParts(hint) {
    const quoted = [...(hint || "").matchAll(/["'\u201c\u2018]([^"'\u201d\u2019]{2,40})["'\u201d\u2019]/g)]
      .map((m) => m[1].toLowerCase());
    const stop = /^(click|tap|press|open|the|a|an|on|at|in|of|to|and|then|button|icon|corner|bottom|top|left|right|page|chat)$/i;
    const hintWords = (hint || "").toLowerCase().split(/[^\p{L}\p{N}]+/u)
      .filter((w) => w.length > 1 && !stop.test(w));
    return { quoted, hintWords, lower: (hint || "").toLowerCase() };
  }

  function launcherScore(e, hint) {
    const label = (words(e) + " " + ownText(e).slice(0, 80)).toLowerCase();
    if (CLOSE.test(label)) return -1;
    let score = LAUNCH.test(label) ? 3 : 0;
    for (const phrase of hint.quoted) if (label.includes(phrase)) score += 10;
    for (const w of hint.hintWords) if (label.includes(w)) score += 2;
    if (score < 3) return -1;
    const box = e.getBoundingClientRect();
    const x = (box.left + box.width / 2) / window.innerWidth;
    const y = (box.top + box.height / 2) / window.innerHeight;
    const wantsLeft = hint.lower.includes("left");
    const wantsTop = hint.lower.includes("top");
    score += (wantsLeft ? 1 - x : x) + (wantsTop ? 1 - y : y);
    if (ancestors(e, 6).concat([e]).some((a) => getComputedStyle(a).position === "fixed")) score += 1;
    return score;
  }

  function launchers(hintText) {
    const hint = hintParts(hintText);
    const pool = new Set(deepAll(document, CLICKABLE).filter((e) =>
      e.tagName !== "A" || /^(#|javascript:|$)/.test(e.getAttribute("href") || "")));
    if (hint.quoted.length || hint.hintWords.length) {
      for (const e of walk(document)) if (e.children.length === 0 && ownText(e)) pool.add(e);
    }
    const ranked = [...pool].filter(visible).map((e) => [launcherScore(e, hint), e])
      .filter(([s]) => s > 0).sort((a, b) => b[0] - a[0]).slice(0, 5);
    return ranked.map(([score, e], i) => {
      e.setAttribute("data-sparring-launcher", String(i));
      return { index: i, score: score, description: describe(e) };
    });
  }

  function widgetOf(input, depth) {
    return [input, ...ancestors(input, depth)];
  }

  function findSend() {
    const input = marked("input");
    if (!input) return null;
    const form = input.closest("form");
    for (const scope of widgetOf(input, 4).slice(1)) {
      const buttons = deepAll(scope, "button, [role=button], input[type=submit]").filter(visible)
        .filter((b) => !CLOSE.test(words(b) + " " + ownText(b)));
      const named = buttons.find((b) => SEND.test(words(b) + " " + ownText(b)));
      const submit = buttons.find((b) => b.type === "submit" && (!form || b.form === form));
      if (named || submit) return mark(named || submit, "send");
    }
    return null;
  }

  function findMessages() {
    const input = marked("input");
    if (!input) return null;
    for (const scope of widgetOf(input, 8).slice(1)) {
      const logs = deepAll(scope, "*").filter((e) => !e.contains(input) && visible(e));
      const best = logs.find((e) => e.getAttribute("role") === "log") ||
        logs.find((e) => e.hasAttribute("aria-live") && e.children.length) ||
        logs.filter((e) => tokens(e.id + " " + (e.getAttribute("class") || "")).some((t) => LOG.test(t)))
          .filter((e) => e.children.length).sort((a, b) => b.children.length - a.children.length)[0];
      if (best) return mark(best, "messages");
    }
    let node = input;
    for (const up of ancestors(input, 6)) {  // no names to go by: the wordiest block before it
      const before = [...up.children].filter((c) => !c.contains(node) && visible(c) &&
        (c.compareDocumentPosition(node) & Node.DOCUMENT_POSITION_FOLLOWING) &&
        c.children.length && ownText(c).length >= 20);
      if (before.length) {
        return mark(before.sort((a, b) => ownText(b).length - ownText(a).length)[0], "messages");
      }
      node = up;
    }
    return null;
  }

  function findUpload() {
    const input = marked("input");
    if (!input) return null;
    for (const scope of widgetOf(input, 6).slice(1)) {
      const found = deepAll(scope, "input[type=file]")[0];
      if (found) return mark(found, "upload");
    }
    return null;
  }

  const classTokens = (e) => [e, ...e.querySelectorAll("*")].slice(0, 6)
    .flatMap((x) => ((x.getAttribute("class") || "") + " " + (x.getAttribute("data-role") || "") +
      " " + (x.getAttribute("data-author") || "")).split(/[\s_-]+/));
  const side = (e) => {
    const tokens = classTokens(e);
    if (tokens.some((t) => USER.test(t))) return "user";
    if (tokens.some((t) => AGENT.test(t))) return "agent";
    return "";
  };
  const typingLike = (e) => {
    const text = ownText(e);
    if (/^[\s.\u2026\u2022\u00b7\u25cf\u2219]*$/.test(text)) return true;
    const tagged = [e, ...e.querySelectorAll("*")].some((x) =>
      TYPING.test(words(x)) || x.getAttribute("aria-busy") === "true");
    return tagged && text.length < 60;
  };

  function read() {
    const box0 = marked("messages");
    if (!box0) return { items: [], busy: false, missing: true };
    let box = box0;
    while (box.children.length === 1 && box.firstElementChild.children.length > 1) {
      box = box.firstElementChild;
    }
    const items = [...box.children].filter((e) => visible(e) && e.tagName !== "STYLE" &&
      e.tagName !== "SCRIPT").map((e) => ({ text: ownText(e), typing: typingLike(e), side: side(e) }));
    const panel = parentOf(box0) || box0;
    const busy = deepAll(panel, "*").some((e) => visible(e) && (e.getAttribute("aria-busy") === "true" ||
      (!box0.contains(e) && TYPING.test(words(e)) && ownText(e).length < 60)));
    return { items, busy, missing: false };
  }

  switch (args.op) {
    case "input": return findInput();
    case "launchers": return launchers(args.hint);
    case "send": return findSend();
    case "messages": return findMessages();
    case "upload": return findUpload();
    case "read": return read();
    case "mark": return mark(element, args.role);
    case "visible": { const e = marked(args.role); return !!e && visible(e); }
    default: throw new Error("unknown op " + args.op);
  }
}
