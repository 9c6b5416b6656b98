// Who is looking: the shell provides the user and their role in the current workspace; pages trim
// buttons with `can("admin")` so no control is offered that would always answer 403.
import { createContext, useContext } from "../ui.js";

export const RANK = { viewer: 1, member: 2, admin: 3, owner: 4 };

/** {user, isGlobalAdmin, role (effective workspace role), workspace (id), workspaces, can(levelOrRole), flags, flag(key)} */
export const SessionContext = createContext({
  user: null, isGlobalAdmin: false, role: null, workspace: "1", workspaces: [], can: () => false, flags: {}, flag: () => true,
});

export function useSession() {
  return useContext(SessionContext);
}

/** Whether a caller with `role` (and global admin or not) reaches an access level: "login" | "global" | a workspace role. */
export function allowed(need, role, isGlobalAdmin) {
  if (!need || need === "login") return true;
  if (need === "global") return !!isGlobalAdmin;
  if (isGlobalAdmin) return true;
  return (RANK[role] || 0) >= (RANK[need] || 99);
}
