// The chat webview's script: draws the state the extension posts (HTML already escaped by
// the extension) and sends back prompts and button presses. No logic beyond that.
// @ts-check
(function () {
  // @ts-ignore -- provided by VS Code inside webviews.
  const vscode = acquireVsCodeApi();
  const transcript = /** @type {HTMLElement} */ (document.getElementById("transcript"));
  const status = /** @type {HTMLElement} */ (document.getElementById("status"));
  const composer = /** @type {HTMLFormElement} */ (document.getElementById("composer"));
  const input = /** @type {HTMLTextAreaElement} */ (document.getElementById("input"));
  const stop = /** @type {HTMLButtonElement} */ (document.getElementById("stop"));
  const fresh = /** @type {HTMLButtonElement} */ (document.getElementById("new"));
  const list = /** @type {HTMLUListElement} */ (document.getElementById("suggestions"));

  // Slash-command suggestions the extension computed for the input, and the highlighted one.
  /** @type {{insert: string, label: string, description: string}[]} */
  let suggestions = [];
  let highlighted = 0;

  function showSuggestions() {
    list.replaceChildren();
    suggestions.forEach((suggestion, index) => {
      const item = document.createElement("li");
      item.setAttribute("role", "option");
      item.className = index === highlighted ? "highlighted" : "";
      const label = document.createElement("span");
      label.className = "label";
      label.textContent = suggestion.label;
      const description = document.createElement("span");
      description.className = "description";
      description.textContent = suggestion.description;
      item.append(label, description);
      item.addEventListener("mousedown", (event) => {
        event.preventDefault();
        pick(index);
      });
      list.append(item);
    });
    list.hidden = suggestions.length === 0;
  }

  /** @param {number} index */
  function pick(index) {
    const suggestion = suggestions[index];
    if (suggestion === undefined) {
      return;
    }
    input.value = suggestion.insert;
    suggestions = [];
    showSuggestions();
    input.focus();
  }

  // Sections the user opened or closed by hand (by position), kept across redraws.
  /** @type {Map<number, boolean>} */
  const toggled = new Map();
  /** @type {unknown} */
  let shownSession;

  transcript.addEventListener("click", (event) => {
    const target = /** @type {HTMLElement} */ (event.target);
    const summary = target.closest("summary");
    if (summary === null || !(summary.parentElement instanceof HTMLDetailsElement)) {
      return;
    }
    const details = summary.parentElement;
    const index = Array.from(transcript.querySelectorAll("details")).indexOf(details);
    // The click fires before the section toggles.
    toggled.set(index, !details.open);
  });

  window.addEventListener("message", (event) => {
    const message = event.data;
    if (message === null || typeof message !== "object") {
      return;
    }
    if (message.type === "suggestions") {
      suggestions = Array.isArray(message.items) ? message.items : [];
      highlighted = 0;
      showSuggestions();
      return;
    }
    if (message.type !== "state") {
      return;
    }
    if (typeof message.input === "string") {
      input.value = message.input;
      input.focus();
    }
    const atBottom = transcript.scrollTop + transcript.clientHeight >= transcript.scrollHeight - 20;
    if (message.sessionId !== shownSession) {
      shownSession = message.sessionId;
      toggled.clear();
    }
    transcript.innerHTML = String(message.html);
    const sections = transcript.querySelectorAll("details");
    for (const [index, open] of toggled) {
      const section = sections[index];
      if (section !== undefined) {
        section.open = open;
      }
    }
    status.textContent = String(message.status);
    stop.disabled = !message.busy;
    if (atBottom) {
      transcript.scrollTop = transcript.scrollHeight;
    }
  });

  function send() {
    const text = input.value.trim();
    if (text === "") {
      return;
    }
    vscode.postMessage({ type: "prompt", text });
    input.value = "";
    suggestions = [];
    showSuggestions();
  }

  composer.addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  input.addEventListener("input", () => vscode.postMessage({ type: "input", text: input.value }));
  input.addEventListener("keydown", (event) => {
    if (suggestions.length > 0) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : suggestions.length - 1;
        highlighted = (highlighted + step) % suggestions.length;
        showSuggestions();
        return;
      }
      if (event.key === "Tab") {
        event.preventDefault();
        pick(highlighted);
        return;
      }
      if (event.key === "Escape") {
        suggestions = [];
        showSuggestions();
        return;
      }
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  stop.addEventListener("click", () => vscode.postMessage({ type: "cancel" }));
  fresh.addEventListener("click", () => vscode.postMessage({ type: "newSession" }));

  vscode.postMessage({ type: "ready" });
})();
