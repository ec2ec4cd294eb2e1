/* The demo shop's chat widget ("Nora"): a launcher bubble bottom right opens a panel; each
 * message goes to the demo agent's POST /chat/stream and the reply is shown in pieces after
 * a typing indicator. The page's path picks the variant:
 *   /shop          the widget in the page
 *   /shop/iframe   the widget inside an iframe (/web/frame.html)
 *   /shop/shadow   the widget inside an open shadow root (<northwind-chat>)
 *   /shop/silent   a widget whose assistant never answers (the typing indicator stays)
 *   /shop/custom   markup without chat words (class names like a CSS-modules build), opened
 *                  by a pill that says "Ask Nora"
 */
(function () {
  "use strict";
  var GREETING = "Hi! I'm Nora, the Northwind Outfitters assistant. Ask me about an order, " +
    "a refund or our return policy.";
  var framed = window.self !== window.top;
  var variant = framed ? "framed" : (location.pathname.split("/")[2] || "inline");

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text) node.textContent = text;
    return node;
  }

  function stylesheet() {
    return el("link", { rel: "stylesheet", href: "/web/widget.css" });
  }

  function build(root, custom) {
    var launcher = custom
      ? el("div", { class: "k3v" }, "Ask Nora")
      : el("button", { class: "nw-launcher", type: "button", "aria-label": "Open chat",
                       title: "Chat with us" }, "\uD83D\uDCAC");
    var panel = el("div", custom ? { class: "nw-panel p7q" }
                               : { class: "nw-panel", role: "dialog", "aria-label": "Chat with Nora" });
    panel.hidden = true;
    var head = el("header", {}, "");
    head.appendChild(el("span", {}, "Northwind support"));
    var close = el("button", { type: "button", "aria-label": "Close chat" }, "\u00D7");
    head.appendChild(close);
    var log = el("div", custom ? { class: "z2" }
                             : { class: "nw-messages", role: "log", "aria-live": "polite" });
    var form = el("form", { class: "nw-form" });
    var attach = el("label", { class: "nw-attach", title: "Attach a file" }, "\uD83D\uDCCE");
    var files = el("input", { type: "file", multiple: "" });
    attach.appendChild(files);
    var input = custom
      ? el("div", { class: "w5", contenteditable: "true" })
      : el("textarea", { rows: "1", placeholder: "Type your message\u2026", "aria-label": "Message" });
    var send = custom ? el("span", { class: "s8" }, "\u27A4")
                      : el("button", { type: "submit", "aria-label": "Send" }, "\u27A4");
    form.appendChild(attach); form.appendChild(input); form.appendChild(send);
    panel.appendChild(head); panel.appendChild(log); panel.appendChild(form);
    root.appendChild(launcher); root.appendChild(panel);
    return { launcher: launcher, panel: panel, close: close, log: log, form: form,
             files: files, input: input, send: send, custom: custom };
  }

  function bubble(ui, who, text) {
    var cls = ui.custom ? "m1" : "nw-msg " + (who === "user" ? "nw-user" : "nw-bot");
    var node = el("div", { class: cls }, text);
    ui.log.appendChild(node);
    ui.log.scrollTop = ui.log.scrollHeight;
    return node;
  }

  function typing(ui) {
    var node = ui.custom
      ? el("div", { class: "m1 t0", "aria-busy": "true" }, "\u2022\u2022\u2022")
      : el("div", { class: "nw-msg nw-typing", "aria-label": "Nora is typing" }, "\u2022\u2022\u2022");
    ui.log.appendChild(node);
    return node;
  }

  function readFiles(list) {
    return Promise.all(Array.prototype.map.call(list, function (file) {
      return new Promise(function (resolve) {
        var reader = new FileReader();
        reader.onload = function () {
          resolve({ name: file.name, mime_type: file.type || "application/octet-stream",
                    data: String(reader.result).split(",")[1] || "" });
        };
        reader.readAsDataURL(file);
      });
    }));
  }

  function replyPieces(text) {
    var pieces = [];
    text.split("\n\n").forEach(function (line) {
      if (!line.startsWith("data:")) return;
      var data = line.slice(5).trim();
      if (data === "[DONE]") return;
      var event = JSON.parse(data);
      if (typeof event.delta === "string") pieces.push(event.delta);
    });
    return pieces;
  }

  function wire(ui) {
    var history = [];
    var pending = [];
    ui.launcher.addEventListener("click", function () {
      ui.panel.hidden = !ui.panel.hidden;
      if (!ui.panel.hidden) ui.input.focus();
    });
    ui.close.addEventListener("click", function () { ui.panel.hidden = true; });
    ui.files.addEventListener("change", function () {
      readFiles(ui.files.files).then(function (read) { pending = pending.concat(read); });
    });
    function text() { return ui.custom ? ui.input.textContent : ui.input.value; }
    function clear() { if (ui.custom) ui.input.textContent = ""; else ui.input.value = ""; }
    function submit() {
      var message = text().trim();
      if (!message) return;
      clear();
      var attached = pending; pending = [];
      var shown = attached.map(function (f) { return "\uD83D\uDCCE " + f.name + "\n"; }).join("");
      bubble(ui, "user", shown + message);
      var dots = typing(ui);
      if (variant === "silent") return;  // the assistant never answers
      var body = { message: message, history: history.slice() };
      if (attached.length) body.files = attached;
      history.push({ role: "user", content: message });
      fetch("/chat/stream", { method: "POST", headers: { "Content-Type": "application/json" },
                              body: JSON.stringify(body) })
        .then(function (r) { return r.text(); })
        .then(function (raw) {
          var pieces = replyPieces(raw);
          setTimeout(function () { stream(dots, pieces); }, 250);
        });
    }
    function stream(dots, pieces) {
      dots.remove();
      var node = bubble(ui, "agent", "");
      node.setAttribute("aria-busy", "true");  // still streaming
      var shown = "";
      (function next(i) {
        if (i >= pieces.length) {
          node.removeAttribute("aria-busy");
          history.push({ role: "assistant", content: shown });
          return;
        }
        shown += pieces[i];
        node.textContent = shown;
        ui.log.scrollTop = ui.log.scrollHeight;
        setTimeout(function () { next(i + 1); }, 20);
      })(0);
    }
    ui.form.addEventListener("submit", function (e) { e.preventDefault(); submit(); });
    ui.send.addEventListener("click", function (e) { if (ui.custom) { e.preventDefault(); submit(); } });
    ui.input.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); submit(); }
    });
    bubble(ui, "agent", GREETING);
  }

  function start() {
    if (variant === "iframe") {
      document.body.appendChild(el("iframe", { class: "nw-frame", src: "/web/frame.html",
                                               title: "Chat with Nora" }));
      return;
    }
    var root = document.body;
    if (variant === "shadow") {
      var host = el("northwind-chat", {});
      document.body.appendChild(host);
      root = host.attachShadow({ mode: "open" });
    }
    root.appendChild(stylesheet());
    wire(build(root, variant === "custom"));
  }

  start();
})();
