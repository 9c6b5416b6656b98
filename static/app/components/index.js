// The shared components, one import for a page: import { PageFrame, Table, … } from "../components/index.js".
export { PageFrame, Panel, ErrorBox, Empty, Loading, useLoad, usePoll, useAction, page } from "./page.js";
export { Table, Pager, when } from "./table.js";
export { Dialog, confirmDialog, formDialog } from "./dialog.js";
export { Field, Check, fieldErrors } from "./field.js";
export { toast, toastError } from "./toast.js";
export { useSession, allowed, SessionContext } from "./session.js";
export { Chart } from "./chart.js";
export { Icon } from "./icon.js";
export { Head, Badge, Toggle, Tabs, Json } from "./controls.js";
export { rows, boundNames, formValues } from "./shapes.js";
export { useSourceName, platformLabels } from "./names.js";
