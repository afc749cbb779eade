"""What the login page says when a login is refused for a while (429: the account waits or is locked).

Gradio's login form shows "Incorrect credentials" for a 400 and nothing at all for any other answer, so a throttled
login looked like nothing happening, or like the last typo. The front door (``guard``) adds this script to the
anonymous page: it watches the form's ``POST /login`` and shows the server's reason and when to try again (the
seconds the server gave, and the clock time that makes here), hiding the stale "Incorrect credentials" meanwhile.
The reason is set as text, never as HTML (it quotes the name typed in).
"""

from __future__ import annotations

NOTE_ID = "bw-login-refused"

SCRIPT = b"""<script>
(() => {
  const show = (text) => {
    let note = document.getElementById("%(note)s");
    document.querySelectorAll(".creds").forEach((stale) => { stale.style.display = text ? "none" : ""; });
    if (!text) { if (note) note.remove(); return; }
    if (!note) {
      note = document.createElement("p");
      note.id = "%(note)s";
      note.setAttribute("role", "alert");
      note.style.cssText = "color: var(--error-text-color, #b91c1c); font-weight: 600; margin: 8px 0;";
      const heading = document.querySelector(".wrap h2");
      if (heading) heading.after(note); else document.body.prepend(note);
    }
    note.textContent = text;
  };
  const original = window.fetch.bind(window);
  window.fetch = async (input, init) => {
    const response = await original(input, init);
    try {
      const url = new URL(typeof input === "string" ? input : (input && input.url) || "", location.href);
      const method = ((init && init.method) || (input && input.method) || "GET").toUpperCase();
      if (method !== "POST" || !/\\/login\\/?$/.test(url.pathname)) return response;
      if (response.status !== 429) { show(""); return response; }
      let detail = "";
      try { detail = (await response.clone().json()).detail; } catch (error) { detail = ""; }
      const after = parseInt(response.headers.get("retry-after") || "", 10);
      let text = typeof detail === "string" && detail ? detail : "Login refused for now.";
      if (after > 0) {
        const at = new Date(Date.now() + after * 1000).toLocaleTimeString();
        text += ` (try again after ${at})`;
      }
      show(text);
    } catch (error) { /* the page keeps working as Gradio made it */ }
    return response;
  };
})();
</script>""" % {b"note": NOTE_ID.encode()}


def with_login_script(page: bytes) -> bytes:
    return with_script(page, SCRIPT)


def with_script(page: bytes, script: bytes) -> bytes:
    """The page with ``script`` in its head, where it runs before Gradio's own (deferred) modules (or, without a
    head, before the body's end)."""
    for end in (b"</head>", b"</body>"):
        at = page.find(end)
        if at >= 0:
            return page[:at] + script + page[at:]
    return page + script
