// Wiki: knowledge bases (#/wiki), one KB (#/wiki/<kbId>: source folder with its watcher, uploads,
// processing, search, pages, research) and one page (#/wiki/<kbId>/page/<slug>).
import { get, post, seg } from "../api.js";
import { html, useState } from "../ui.js";
import { Field, PageFrame, Panel, Table, fieldErrors, toastError, useLoad } from "../components/index.js";
import { KbView } from "./wiki/kb.js";
import { WikiPage } from "./wiki/page.js";

export default function Wiki({ args = [] }) {
  const [kbId, what, ...rest] = args;
  if (kbId && what === "page" && rest.length) return html`<${WikiPage} key=${kbId + "/" + rest.join("/")} kbId=${kbId} slug=${decodeURIComponent(rest.join("/"))} />`;
  if (kbId) return html`<${KbView} key=${kbId} kbId=${kbId} />`;
  return html`<${KbList} />`;
}

function KbList() {
  const state = useLoad(() => get("/wiki/knowledge-bases"), []);
  return html`<${PageFrame} title="Wiki" subtitle="Knowledge bases: materials and folders turned into linked pages" state=${state}>
    ${(kbs) => html`
      <${CreateKb} onCreated=${(kb) => { location.hash = `#/wiki/${seg(kb.id)}`; }} />
      <${Panel} title="Knowledge bases">
        <${Table} label="Knowledge bases" empty="No knowledge base yet: create one above." rows=${kbs}
          columns=${[
            { key: "name", label: "Name", render: (kb) => html`<a href=${`#/wiki/${seg(kb.id)}`}>${kb.name}</a>` },
            { key: "pageCount", label: "Pages" },
            { key: "rawCount", label: "Materials" },
            { key: "sourceDirectory", label: "Linked folder" },
          ]} />
      <//>`}
  <//>`;
}

function CreateKb({ onCreated }) {
  const [name, setName] = useState("");
  const [errors, setErrors] = useState({});
  const [busy, setBusy] = useState(false);
  async function submit(e) {
    e.preventDefault();
    setBusy(true);
    try {
      onCreated(await post("/wiki/knowledge-bases", { name: name.trim() }));
    } catch (err) {
      const found = fieldErrors(err, ["name"]);
      setErrors(found);
      if (found._) toastError(err);
    } finally {
      setBusy(false);
    }
  }
  return html`<${Panel} title="New knowledge base">
    <form class="inline-form" onSubmit=${submit}>
      <${Field} label="Name" error=${errors.name}>
        <input name="kb-name" value=${name} required maxlength="100" onInput=${(e) => setName(e.currentTarget.value)} />
      <//>
      <button type="submit" class="btn btn-primary" disabled=${busy || !name.trim()}>Create</button>
    </form>
  <//>`;
}
