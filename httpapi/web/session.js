// session.js keeps the try-it page's session. With "keep state between
// runs" on, the first run opens a session (POST /v1/sessions) in the chosen
// language and environment and every run after it is a call in that session
// (POST /v1/sessions/{id}/code), so that globals, imports and /tmp carry
// over; turning the switch off, changing the language or the environment or
// leaving the page ends it (DELETE), which frees the server's capacity at
// once rather than at the idle timeout. page.js sends the requests (and pays
// for them, the open and each call alike); this file says where each run
// goes and keeps the session's line on the page. What a server sends goes in
// as text, never as markup.
"use strict";

/**
 * sandboxdSession makes the page's session keeper. $ finds an element by id;
 * languages is the language switch (language.js). A step is one request:
 * { kind: "run" | "open" | "call", url, body }, and an open carries the call
 * waiting for it in then.
 */
function sandboxdSession($, languages) {
  /** ID is the shape of a session id: "ses_" and 128 bits in hex. */
  const ID = /^ses_[0-9a-f]{32}$/;

  /** live is the open session, { id, language, environment, expires (ms since the epoch), calls, idle }, or null. */
  let live = null;
  let tick = 0;

  const on = () => $("keep").checked;
  const short = (id) => id.slice(0, 12) + "…";
  const callURL = (id) => "/v1/sessions/" + encodeURIComponent(id) + "/code";

  /** line shows the session's state (kind "", "warn" or "bad") under the Run button. */
  function line(kind, text) {
    const p = $("session");
    p.className = "session " + kind;
    p.textContent = text;
    p.hidden = !text;
  }

  function clock(ms) {
    return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  function left(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  /** span words a number of seconds: "45 s", "5 min". */
  function span(s) {
    return s < 120 ? s + " s" : Math.round(s / 60) + " min";
  }

  /** show writes the live session's line; past its expiry the session is gone and the line says so. */
  function show() {
    if (!live) return;
    const now = Date.now();
    if (now >= live.expires) {
      drop(live.id); // expires_at is in whole seconds: the server may hold it a moment longer
      end("warn", "The session " + short(live.id) + " expired at " + clock(live.expires) +
        (live.idle ? " (" + span(live.idle) + " after its last run, or at the end of its lifetime)" : "") +
        ". Its state is gone; the next run opens a new session.");
      return;
    }
    line("", "Session " + short(live.id) + " · " + languages.title(live.language) + " in " + live.environment + " · " +
      live.calls + (live.calls === 1 ? " run" : " runs") + " · expires in " + left(live.expires - now) + " (" + clock(live.expires) + ") unless you run again");
  }

  /** end forgets the live session and says why; the next run opens a new one. */
  function end(kind, text) {
    live = null;
    clearInterval(tick);
    tick = 0;
    line(kind, text);
  }

  /** target is where a run of body (the body of /v1/code) goes. */
  function target(body) {
    if (!on()) return { kind: "run", url: "/v1/code", body };
    const call = { code: body.code };
    if (body.stdin !== undefined) call.stdin = body.stdin;
    if (live) return { kind: "call", url: callURL(live.id), body: call };
    const open = { language: body.language };
    if (body.environment) open.environment = body.environment;
    return { kind: "open", url: "/v1/sessions", body: open, then: call };
  }

  /** opened keeps the session an open answered (201) and returns the call that waited for it. */
  function opened(data, step) {
    if (!data || typeof data.session_id !== "string" || !ID.test(data.session_id)) throw new Error("the server answered no session id");
    const expires = Date.parse(data.expires_at);
    live = { id: data.session_id, language: String(data.language || ""), environment: String(data.environment || ""), calls: 0,
      expires: Number.isFinite(expires) ? expires : Date.now() + 60_000, idle: Number(data.idle_timeout_s) || 0 };
    clearInterval(tick);
    tick = setInterval(show, 1000);
    show();
    return { kind: "call", url: callURL(live.id), body: step.then };
  }

  /** called updates the session from a call's answer (200), and ends it when the call ended it. */
  function called(data) {
    if (!live) return;
    if (data.session_ended) {
      end("bad", "The session " + short(live.id) + " ended in this run: " + (data.session_end_reason || "no reason given") +
        ". Its state is gone; the next run opens a new session.");
      return;
    }
    const s = data.session;
    if (s && s.session_id === live.id) {
      live.calls = Number(s.calls) || live.calls + 1;
      const expires = Date.parse(s.expires_at);
      if (Number.isFinite(expires)) live.expires = expires;
    }
    show();
  }

  /** lost forgets a session the server no longer has (404: ended or expired, its words say which). */
  function lost(why) {
    const id = live ? short(live.id) : "";
    end("bad", "The session " + id + " is gone: " + (why || "the server does not know it") +
      ". Its state is lost; the next run opens a new session.");
  }

  /** refused turns the switch off when the server has no sessions (the open was 404). */
  function refused(why) {
    $("keep").checked = false;
    $("keep").disabled = true;
    end("bad", "This server does not keep sessions: " + (why || "POST /v1/sessions was not found") + ". Each run starts afresh.");
  }

  /** drop ends session id on the server (DELETE); keepalive lets the request outlive the page. */
  function drop(id) {
    fetch("/v1/sessions/" + encodeURIComponent(id), { method: "DELETE", cache: "no-store", credentials: "omit", keepalive: true })
      .catch(() => {}); // gone already, or the server is away: it ends at its idle timeout
  }

  /** close ends the live session, saying why in words. */
  function close(words) {
    if (!live) return;
    const id = live.id;
    end("", words ? words.replace("{id}", short(id)) : "");
    drop(id);
  }

  function onSwitch() {
    if (on()) {
      line("", "On: the next run opens a session (" + languages.title(languages.language()) +
        ($("env").value ? " in " + $("env").value : "") + "); its state and /tmp stay from run to run.");
      return;
    }
    if (live) close("The session {id} is closed. Each run starts afresh.");
    else line("", "");
  }

  /** moved closes the live session when the page's language or environment is no longer its own: it holds one. */
  function moved(lang, env) {
    if (live && (lang !== live.language || (env && env !== live.environment))) {
      close("The " + languages.title(live.language) + " session {id} in " + live.environment + " is closed; the next run opens a " +
        languages.title(lang) + " session" + (env ? " in " + env : "") + ".");
    }
  }

  /** start wires the switch and the page's end. */
  function start() {
    $("keep").addEventListener("change", onSwitch);
    window.addEventListener("pagehide", () => close(""));
  }

  return { start, target, opened, called, lost, refused, moved };
}
