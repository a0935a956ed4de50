// The console's link to the master: the token, fetch with it, and the snapshot stream.
//
// The token lives in sessionStorage (this tab only) and goes out as
// "Authorization: Bearer" on every request; no cookie is ever set, so there is
// no ambient credential for another site to ride (no CSRF surface). The stream
// is read with fetch() and a stream reader because EventSource cannot send the
// Authorization header.

const KEY = "headwater.token";
const REASON = "headwater.reason";

export function token() {
  return sessionStorage.getItem(KEY);
}

export function login(value) {
  sessionStorage.setItem(KEY, value.trim());
  sessionStorage.removeItem(REASON);
}

// Forget the token and go back to the login page, saying why.
export function logout(reason) {
  sessionStorage.removeItem(KEY);
  if (reason) sessionStorage.setItem(REASON, reason);
  window.dispatchEvent(new CustomEvent("headwater:logout"));
}

export function lastReason() {
  return sessionStorage.getItem(REASON) || "";
}

// fetch `path` with the token; answers {status, ok, data}; a 401 logs out.
export async function call(path, { method = "GET", body, type } = {}) {
  const headers = { Authorization: `Bearer ${token() || ""}` };
  if (type) headers["Content-Type"] = type;
  const res = await fetch(path, { method, body, headers, cache: "no-store" });
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (res.status === 401) logout((data && data.error) || "the master refused the token");
  return { status: res.status, ok: res.ok, data };
}

// Read /api/v1/events: onSnapshot(snap) per event, onState(text) on (re)connection.
// Reconnects with backoff (0.5 s doubling to 10 s). Returns {close()}.
export function stream(topology, onSnapshot, onState) {
  let closed = false;
  let controller = null;
  let delay = 500;

  async function once() {
    controller = new AbortController();
    const query = topology ? `?topology=${encodeURIComponent(topology)}` : "";
    const res = await fetch(`/api/v1/events${query}`, {
      headers: { Authorization: `Bearer ${token() || ""}` },
      signal: controller.signal,
      cache: "no-store",
    });
    if (res.status === 401) {
      const data = await res.json().catch(() => ({}));
      logout(data.error || "the master refused the token");
      closed = true;
      return;
    }
    if (!res.ok) {
      const data = await res.json().catch(() => ({}));
      throw new Error(data.error || `HTTP ${res.status}`);
    }
    onState("live");
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event = parse(block);
        if (event.kind === "snapshot") {
          delay = 500;
          onSnapshot(JSON.parse(event.data));
        } else if (event.kind === "end") {
          logout(JSON.parse(event.data).error);
          closed = true;
          return;
        }
      }
    }
  }

  async function loop() {
    while (!closed) {
      try {
        await once();
        if (!closed) onState("reconnecting");
      } catch (err) {
        if (closed) return;
        onState(`reconnecting: ${err.message}`);
      }
      if (closed) return;
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 10000);
    }
  }

  loop();
  return {
    close() {
      closed = true;
      if (controller) controller.abort();
    },
  };
}

function parse(block) {
  let kind = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) kind = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  return { kind, data: data.join("\n") };
}
