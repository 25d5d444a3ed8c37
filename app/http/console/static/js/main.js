// The console: the sign-in page without a token, the page the URL names with one.
import { onRefused, session } from "./api.js";
import { html, render, useEffect, useState } from "./lib.js";
import { PAGES } from "./pages.js";
import { SignIn } from "./pages/signin.js";
import { go, href, useRoute } from "./router.js";

const REFUSED = "The service refused the token (expired, revoked, or the service's admin token " +
  "changed). Sign in again.";

function Shell({ route, page, onSignOut }) {
  const View = page.view;
  // A new page takes the focus to its heading, so that keyboards and screen readers start there.
  useEffect(() => {
    document.title = `${page.title} · cipherd console`;
    document.querySelector("main h1")?.focus();
  }, [page, route.rest.join("/")]);
  return html`
    <a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); document.querySelector("main h1")?.focus(); }}>Skip to content</a>
    <header class="top">
      <a class="brand" href=${href(["keys"])}>cipherd</a>
      <nav aria-label="Console">
        <ul>${PAGES.map((entry) => html`<li><a href=${href([entry.path])}
          aria-current=${entry === page ? "page" : undefined}>${entry.title}</a></li>`)}</ul>
      </nav>
      <button type="button" class="sign-out" onClick=${onSignOut}>Sign out</button>
    </header>
    <main id="main"><${View} route=${route} /></main>`;
}

function Console() {
  const route = useRoute();
  const [signedIn, setSignedIn] = useState(() => session.token() !== null);
  const [notice, setNotice] = useState(null);
  useEffect(() => onRefused(() => {
    setNotice(REFUSED);
    setSignedIn(false);
  }), []);
  if (!signedIn) {
    return html`<${SignIn} notice=${notice} onSignedIn=${() => {
      setNotice(null);
      setSignedIn(true);
    }} />`;
  }
  const page = PAGES.find((entry) => entry.path === route.page);
  if (!page) {
    go(href([PAGES[0].path]));
    return null;
  }
  function signOut() {
    session.end();
    setNotice("Signed out. The token is gone from this tab.");
    setSignedIn(false);
    go(href([PAGES[0].path]));
  }
  return html`<${Shell} route=${route} page=${page} onSignOut=${signOut} />`;
}

render(html`<${Console} />`, document.getElementById("console"));
