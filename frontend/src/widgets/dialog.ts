// A modal dialog (<dialog> element): the Capture Profile form and other popups use it.
//
//   const d = openDialog({ title: "Capture profile", body: form, actions: [
//     { label: "Cancel" }, { label: "Capture", primary: true, onClick: () => start() } ] });
//   d.close();
//
// An action's onClick returning false (or a promise of false) keeps the dialog open.

import { h } from "./dom";

export interface DialogAction {
  label: string;
  primary?: boolean;
  onClick?: () => boolean | undefined | Promise<boolean | undefined>;
}

export interface DialogOptions {
  title: string;
  body: Node | string;
  actions?: DialogAction[];
  onClose?: () => void;
}

export interface DialogHandle {
  el: HTMLDialogElement;
  close(): void;
  /** Enables/disables every action button (e.g. while a request runs). */
  setBusy(busy: boolean): void;
}

export function openDialog(o: DialogOptions): DialogHandle {
  const buttons: HTMLButtonElement[] = [];
  const dlg = h("dialog", { class: "tbp-dialog", "aria-label": o.title });
  const close = (): void => {
    if (dlg.open) dlg.close();
    dlg.remove();
    o.onClose?.();
  };
  for (const a of o.actions ?? [{ label: "Close" }]) {
    const b = h("button", { type: "button", class: a.primary ? "tbp-btn tbp-primary" : "tbp-btn" }, a.label);
    b.addEventListener("click", () => {
      void Promise.resolve(a.onClick ? a.onClick() : undefined).then((keep) => {
        if (keep !== false) close();
      });
    });
    buttons.push(b);
  }
  dlg.append(
    h("h2", {}, o.title),
    h("div", { class: "tbp-dialog-body" }, o.body),
    h("div", { class: "tbp-dialog-actions" }, ...buttons),
  );
  dlg.addEventListener("cancel", (e) => {
    e.preventDefault();
    close();
  });
  document.body.appendChild(dlg);
  dlg.showModal();
  return {
    el: dlg,
    close,
    setBusy: (busy: boolean) => {
      for (const b of buttons) b.disabled = busy;
    },
  };
}
