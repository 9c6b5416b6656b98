// First-run setup and login pages.
import { post, session } from "../api.js";
import { field as labelled, h, mount } from "../dom.js";

function field(label, attrs) {
  return labelled(label, h("input", attrs));
}

function card(title, intro, form) {
  return h("main", { class: "auth-page" },
    h("div", { class: "auth-card" },
      h("div", { class: "brand big" }, h("span", { class: "brand-mark", "aria-hidden": "true", text: "◆" }), "Agent Platform"),
      h("h1", { text: title }),
      intro ? h("p", { class: "muted", text: intro }) : null,
      form));
}

function errorBox() {
  return h("p", { class: "form-error", role: "alert", hidden: true });
}

function fail(box, message) {
  box.textContent = message;
  box.hidden = false;
}

/** The browser's time zone and language: what a first run starts from (the admin may change them). */
const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
const browserLanguage = () => ((navigator.language || "").toLowerCase().startsWith("zh") ? "zh-CN" : "en-US");

/** The first-run page: create the global admin. */
export function showSetup(root, onDone) {
  const err = errorBox();
  const form = h("form", {
    class: "stack",
    onsubmit: async (e) => {
      e.preventDefault();
      const f = e.target.elements;
      if (f.password.value !== f.confirm.value) return fail(err, "The passwords do not match");
      const button = f.submit;
      button.disabled = true;
      try {
        const data = await post("/setup/init", {
          username: f.username.value.trim(), password: f.password.value,
          nickname: f.nickname.value.trim() || undefined, language: f.language.value, timezone: f.timezone.value.trim() || undefined,
          setupToken: f.setupToken.value.trim() || undefined,
        });
        session.login(data);
        onDone();
      } catch (ex) {
        fail(err, ex.message);
      } finally {
        button.disabled = false;
      }
    },
  },
  field("Admin username", { name: "username", value: "admin", required: true, autocomplete: "username", minlength: 3 }),
  field("Display name", { name: "nickname", autocomplete: "nickname" }),
  field("Password (at least 8 characters)", { name: "password", type: "password", required: true, minlength: 8, autocomplete: "new-password" }),
  field("Repeat password", { name: "confirm", type: "password", required: true, minlength: 8, autocomplete: "new-password" }),
  labelled("Language", h("select", { name: "language" },
    h("option", { value: "en-US", text: "English" }), h("option", { value: "zh-CN", text: "中文", selected: browserLanguage() === "zh-CN" }))),
  field("Time zone (schedules and dates use it)", { name: "timezone", value: browserZone(), list: "setup-zones", autocomplete: "off" }),
  h("datalist", { id: "setup-zones" }, ...(Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : []).map((z) => h("option", { value: z }))),
  field("Setup code (only from another machine: printed in the server log at first start)", { name: "setupToken", autocomplete: "off" }),
  err,
  h("button", { type: "submit", name: "submit", class: "btn btn-primary wide", text: "Create admin account" }));
  mount(root, card("Welcome", "No administrator exists yet. Create the first account to finish setup.", form));
  form.elements.password.focus();
}

/** The login page. */
export function showLogin(root, onDone) {
  const err = errorBox();
  const form = h("form", {
    class: "stack",
    onsubmit: async (e) => {
      e.preventDefault();
      const f = e.target.elements;
      f.submit.disabled = true;
      try {
        session.login(await post("/auth/login", { username: f.username.value.trim(), password: f.password.value }));
        onDone();
      } catch (ex) {
        fail(err, ex.message);
        f.password.select();
      } finally {
        f.submit.disabled = false;
      }
    },
  },
  field("Username", { name: "username", required: true, autocomplete: "username" }),
  field("Password", { name: "password", type: "password", required: true, autocomplete: "current-password" }),
  err,
  h("button", { type: "submit", name: "submit", class: "btn btn-primary wide", text: "Log in" }));
  mount(root, card("Log in", null, form));
  form.elements.username.focus();
}
