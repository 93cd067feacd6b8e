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
    if (message === null || typeof message !== "object" || message.type !== "state") {
      return;
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
  }

  composer.addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  stop.addEventListener("click", () => vscode.postMessage({ type: "cancel" }));
  fresh.addEventListener("click", () => vscode.postMessage({ type: "newSession" }));

  vscode.postMessage({ type: "ready" });
})();
