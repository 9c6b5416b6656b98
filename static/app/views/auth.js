// First-run setup and login pages (main.js renders them while nobody is signed in).
import { post, session } from "../api.js";
import { html, useEffect, useRef, useState } from "../ui.js";
import { Field } from "../components/index.js";

/** The browser's time zone and language: what a first run starts from (the admin may change them). */
const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
const browserLanguage = () => ((navigator.language || "").toLowerCase().startsWith("zh") ? "zh-CN" : "en-US");

function Card({ title, intro, children }) {
  return html`<main class="auth-page"><div class="auth-card">
    <div class="brand big"><span class="brand-mark" aria-hidden="true">◆</span>Agent Platform</div>
    <h1>${title}</h1>
    ${intro && html`<p class="muted">${intro}</p>`}
    ${children}
  </div></main>`;
}

/** The form's values as state, so a re-render (an error shown, the button busy) never undoes typing. */
function useForm(initial) {
  const [values, setValues] = useState(initial);
  const bind = (name) => ({ name, value: values[name], onInput: (e) => { const v = e.currentTarget.value; setValues((s) => ({ ...s, [name]: v })); } });
  return [values, bind];
}

function ErrorLine({ error }) {
  return error ? html`<p class="form-error" role="alert">${error}</p>` : null;
}

/** The first-run page: create the global admin. */
export function Setup({ onDone }) {
  const [v, bind] = useForm({
    username: "admin", nickname: "", password: "", confirm: "", language: browserLanguage(), timezone: browserZone(), setupToken: "",
  });
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const form = useRef(null);
  useEffect(() => { form.current?.elements.password.focus(); }, []);
  const zones = Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : [];

  async function submit(e) {
    e.preventDefault();
    if (v.password !== v.confirm) { setError("The passwords do not match"); return; }
    setBusy(true);
    try {
      const data = await post("/setup/init", {
        username: v.username.trim(), password: v.password,
        nickname: v.nickname.trim() || undefined, language: v.language, timezone: v.timezone.trim() || undefined,
        setupToken: v.setupToken.trim() || undefined,
      });
      session.login(data);
      onDone();
    } catch (ex) {
      setError(ex.message);
      setBusy(false);
    }
  }

  return html`<${Card} title="Welcome" intro="No administrator exists yet. Create the first account to finish setup.">
    <form class="stack" ref=${form} onSubmit=${submit}>
      <${Field} label="Admin username"><input ...${bind("username")} required autocomplete="username" minlength="3" /><//>
      <${Field} label="Display name"><input ...${bind("nickname")} autocomplete="nickname" /><//>
      <${Field} label="Password (at least 8 characters)"><input ...${bind("password")} type="password" required minlength="8" autocomplete="new-password" /><//>
      <${Field} label="Repeat password"><input ...${bind("confirm")} type="password" required minlength="8" autocomplete="new-password" /><//>
      <${Field} label="Language"><select ...${bind("language")}>
        <option value="en-US">English</option><option value="zh-CN">中文</option>
      </select><//>
      <${Field} label="Time zone (schedules and dates use it)"><input ...${bind("timezone")} list="setup-zones" autocomplete="off" /><//>
      <datalist id="setup-zones">${zones.map((z) => html`<option key=${z} value=${z} />`)}</datalist>
      <${Field} label="Setup code (only from another machine: printed in the server log at first start)"><input ...${bind("setupToken")} autocomplete="off" /><//>
      <${ErrorLine} error=${error} />
      <button type="submit" name="submit" class="btn btn-primary wide" disabled=${busy}>Create admin account</button>
    </form>
  <//>`;
}

/** The login page. */
export function Login({ onDone }) {
  const [v, bind] = useForm({ username: "", password: "" });
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const form = useRef(null);
  useEffect(() => { form.current?.elements.username.focus(); }, []);

  async function submit(e) {
    e.preventDefault();
    setBusy(true);
    try {
      session.login(await post("/auth/login", { username: v.username.trim(), password: v.password }));
      onDone();
    } catch (ex) {
      setError(ex.message);
      setBusy(false);
      form.current?.elements.password.select();
    }
  }

  return html`<${Card} title="Log in">
    <form class="stack" ref=${form} onSubmit=${submit}>
      <${Field} label="Username"><input ...${bind("username")} required autocomplete="username" /><//>
      <${Field} label="Password"><input ...${bind("password")} type="password" required autocomplete="current-password" /><//>
      <${ErrorLine} error=${error} />
      <button type="submit" name="submit" class="btn btn-primary wide" disabled=${busy}>Log in</button>
    </form>
  <//>`;
}
