// Sign in with a token: the admin token, or a scoped token (which sees what its scope allows).
import { ApiError, get, session } from "../api.js";
import { html, useEffect, useState } from "../lib.js";
import { ErrorNote, Field, useTask } from "../ui.js";

export function SignIn({ notice, onSignedIn }) {
  const [token, setToken] = useState("");
  const task = useTask();
  useEffect(() => {
    document.title = "Sign in · cipherd console";
    document.getElementById("main")?.querySelector("input")?.focus();
  }, []);

  async function signIn(event) {
    event.preventDefault();
    const entered = token.trim();
    const accepted = await task.run("sign-in", async () => {
      // Any answer but 401 means the service knows the token; a scoped token without `read`
      // gets 403 here and may still do what it was made for.
      try {
        await get("/v1/keys", { limit: 1 }, { token: entered });
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 403) throw error;
      }
      return true;
    });
    if (accepted) {
      session.start(entered);
      setToken("");
      onSignedIn();
    }
  }

  const refused = task.error?.status === 401
    ? { ...task.error, title: "The service does not know this token", message: "" }
    : task.error;
  return html`<main id="main" class="sign-in">
    <h1>cipherd console</h1>
    ${notice && html`<p class="note" role="status">${notice}</p>`}
    <form onSubmit=${signIn}>
      <${Field} label="Token" type="password" value=${token} onValue=${setToken} required
        autocomplete="off" spellcheck="false"
        hint="The admin token, or a scoped token. It is kept in this tab only, until you sign out or close it." />
      <button type="submit" class="primary" disabled=${task.busy !== null}>Sign in</button>
    </form>
    <${ErrorNote} error=${refused} />
    <p class="aside"><a href="../">About this service</a> · <a href="../docs">API reference</a></p>
  </main>`;
}
