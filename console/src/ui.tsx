import type { ComponentChildren, TargetedEvent } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { failureOf, type Failure } from "./rpc.js";

/** Field errors by the server's field name (`authUrl`, `userMapping.email`), and one for the form as a whole. */
interface FormErrors {
  fields: Record<string, string>;
  form?: string;
}

const NO_ERRORS: FormErrors = { fields: {} };

/** Each field's failure next to that field when the form has it; the rest, or a failure about no field, above the form. */
function formErrorsOf(err: unknown, fieldsShown: readonly string[]): FormErrors {
  const failure: Failure = failureOf(err);
  if (failure.fields.length === 0) return { fields: {}, form: failure.message };
  const fields: Record<string, string> = {};
  const elsewhere: string[] = [];
  for (const { field, message } of failure.fields) {
    if (!fieldsShown.includes(field)) elsewhere.push(`${field}: ${message}`);
    else fields[field] = fields[field] ? `${fields[field]}; ${message}` : message;
  }
  return { fields, form: elsewhere.join("; ") || undefined };
}

interface FieldProps {
  id: string;
  label: string;
  error?: string;
  note?: ComponentChildren;
  children: (describedBy: string | undefined) => ComponentChildren;
}

/** A label (its text is the field's name), the control, a note and the server's error for it. */
function Field({ id, label, error, note, children }: FieldProps) {
  const described = [note ? `${id}-note` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div class={error ? "field invalid" : "field"}>
      <label for={id}>{label}</label>
      {children(described)}
      {note && <p class="note" id={`${id}-note`}>{note}</p>}
      {error && <p class="field-error" id={`${id}-error`}>{error}</p>}
    </div>
  );
}

interface TextFieldProps {
  id: string;
  label: string;
  value: string;
  onValue: (value: string) => void;
  error?: string;
  note?: ComponentChildren;
  type?: "text" | "url" | "password" | "email" | "number" | "search" | "tel";
  required?: boolean;
  disabled?: boolean;
  readOnly?: boolean;
  autoComplete?: string;
  placeholder?: string;
  multiline?: boolean;
}

export function TextField(props: TextFieldProps) {
  const { id, value, onValue, type = "text", multiline } = props;
  const onInput = (e: TargetedEvent<HTMLInputElement | HTMLTextAreaElement>) => onValue(e.currentTarget.value);
  return (
    <Field id={id} label={props.label} error={props.error} note={props.note}>
      {(describedBy) =>
        multiline ? (
          <textarea id={id} name={id} rows={3} value={value} onInput={onInput} aria-describedby={describedBy}
            aria-invalid={props.error ? "true" : undefined} required={props.required} disabled={props.disabled} placeholder={props.placeholder} />
        ) : (
          <input id={id} name={id} type={type as "text"} value={value} onInput={onInput} aria-describedby={describedBy}
            aria-invalid={props.error ? "true" : undefined} required={props.required} disabled={props.disabled}
            readOnly={props.readOnly} autoComplete={props.autoComplete ?? "off"} placeholder={props.placeholder} />
        )
      }
    </Field>
  );
}

export function SelectField(props: { id: string; label: string; value: string; options: readonly string[]; onValue: (v: string) => void; error?: string; note?: ComponentChildren }) {
  return (
    <Field id={props.id} label={props.label} error={props.error} note={props.note}>
      {(describedBy) => (
        <select id={props.id} name={props.id} value={props.value} aria-describedby={describedBy}
          aria-invalid={props.error ? "true" : undefined} onChange={(e) => props.onValue(e.currentTarget.value)}>
          {props.options.map((o) => <option key={o} value={o}>{o}</option>)}
        </select>
      )}
    </Field>
  );
}

export function CheckboxField(props: { id: string; label: string; checked: boolean; onValue: (v: boolean) => void; error?: string; note?: string }) {
  return (
    <div class={props.error ? "check invalid" : "check"}>
      <input id={props.id} name={props.id} type="checkbox" checked={props.checked} aria-invalid={props.error ? "true" : undefined}
        aria-describedby={props.error ? `${props.id}-error` : undefined} onChange={(e) => props.onValue(e.currentTarget.checked)} />
      <label for={props.id}>{props.label}</label>
      {props.note && <span class="note">{props.note}</span>}
      {props.error && <p class="field-error" id={`${props.id}-error`}>{props.error}</p>}
    </div>
  );
}

/** Checkboxes for a list of values (grant types, providers), each labelled; a group error shows under the legend. */
export function CheckboxGroup(props: { id: string; legend: string; options: readonly { value: string; label: string; always?: boolean }[]; values: readonly string[]; onValues: (v: string[]) => void; error?: string }) {
  const toggle = (value: string, on: boolean) =>
    props.onValues(on ? [...props.values, value] : props.values.filter((v) => v !== value));
  return (
    <fieldset class={props.error ? "group invalid" : "group"} aria-describedby={props.error ? `${props.id}-error` : undefined}>
      <legend>{props.legend}</legend>
      {props.options.length === 0 && <p class="note">None to choose from.</p>}
      {props.options.map((o, i) => (
        <div class="check" key={o.value}>
          <input id={`${props.id}-${i}`} type="checkbox" name={props.id} value={o.value} checked={o.always || props.values.includes(o.value)}
            disabled={o.always} aria-describedby={o.always ? `${props.id}-${i}-note` : undefined} onChange={(e) => toggle(o.value, e.currentTarget.checked)} />
          <label for={`${props.id}-${i}`}>{o.label}</label>
          {o.always && <span class="note" id={`${props.id}-${i}-note`}>always on</span>}
        </div>
      ))}
      {props.error && <p class="field-error" id={`${props.id}-error`}>{props.error}</p>}
    </fieldset>
  );
}

/** The open dialogs, oldest first, each with what opened it. */
const openDialogs: { dialog: HTMLDialogElement; opener?: HTMLElement }[] = [];

/**
 * A modal dialog (the browser's <dialog>): focus moves into it, Escape
 * closes it, and focus goes back to what opened it; when that is gone (a
 * Confirm whose action opened this one, then closed), to what opened the
 * dialog that was open before it.
 */
export function Dialog(props: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  // A layout effect: it runs as the dialog is added, while focus is still on what opened it.
  useLayoutEffect(() => {
    const dialog = ref.current!;
    const active = document.activeElement;
    const opener = active instanceof HTMLElement && active !== document.body ? active : undefined;
    const before = openDialogs.at(-1)?.opener;
    openDialogs.push({ dialog, opener });
    dialog.showModal();
    return () => {
      openDialogs.splice(openDialogs.findIndex((d) => d.dialog === dialog), 1);
      if (dialog.open) dialog.close();
      [opener, before].find((element) => element?.isConnected)?.focus();
    };
  }, []);
  const titleId = `dialog-${props.title.replace(/\W+/g, "-").toLowerCase()}`;
  return (
    <dialog ref={ref} aria-labelledby={titleId} onCancel={(e) => { e.preventDefault(); props.onClose(); }}>
      <div class="dialog-head">
        <h2 id={titleId}>{props.title}</h2>
        <button type="button" class="quiet" onClick={props.onClose}>Close</button>
      </div>
      {props.children}
    </dialog>
  );
}

/** Ask before something that cannot be undone. */
export function Confirm(props: { title: string; message: string; action: string; onConfirm: () => Promise<void>; onClose: () => void }) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const confirm = async () => {
    setBusy(true);
    try {
      await props.onConfirm();
      props.onClose();
    } catch (err) {
      setError(failureOf(err).message);
      setBusy(false);
    }
  };
  return (
    <Dialog title={props.title} onClose={props.onClose}>
      <p>{props.message}</p>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="actions">
        <button type="button" class="danger" disabled={busy} onClick={confirm}>{props.action}</button>
        <button type="button" onClick={props.onClose}>Cancel</button>
      </div>
    </Dialog>
  );
}

/**
 * A form's submit: busy while `save` runs; a failure goes next to the field
 * it names (one of `fields`) or above the form. `save` may answer errors of
 * its own instead of calling the service.
 */
export function useSubmit(fields: readonly string[], save: () => Promise<FormErrors | void>) {
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);
  const submit = async (e: TargetedEvent<HTMLFormElement>) => {
    e.preventDefault();
    setBusy(true);
    let refused: FormErrors | void;
    try {
      refused = await save();
    } catch (err) {
      refused = formErrorsOf(err, fields);
    }
    // A form that stays open after it saved (a page's, not a dialog's) is ready again, unmarked.
    setErrors(refused || NO_ERRORS);
    setBusy(false);
  };
  return { errors, busy, submit };
}

/** A form in a dialog: submit runs `save`; its errors go next to the fields or above them. */
export function FormActions(props: { busy: boolean; submit: string; onCancel?: () => void; error?: string }) {
  return (
    <>
      {props.error && <p class="error" role="alert">{props.error}</p>}
      <div class="actions">
        <button type="submit" class="primary" disabled={props.busy}>{props.submit}</button>
        {props.onCancel && <button type="button" onClick={props.onCancel}>Cancel</button>}
      </div>
    </>
  );
}

/** A value shown once (a client secret), selectable for copying. */
export function ShownOnce(props: { title: string; label: string; value: string; onClose: () => void }) {
  const [copied, setCopied] = useState<string>();
  const copy = () =>
    navigator.clipboard.writeText(props.value).then(
      () => setCopied("Copied."),
      () => setCopied("The browser did not allow copying: select the text and copy it."),
    );
  return (
    <Dialog title={props.title} onClose={props.onClose}>
      <p>Copy it now: the service keeps only a hash and will never show it again.</p>
      <TextField id="shown-once" label={props.label} value={props.value} onValue={() => {}} readOnly />
      <p class="note" role="status">{copied}</p>
      <div class="actions">
        <button type="button" onClick={copy}>Copy</button>
        <button type="button" class="primary" onClick={props.onClose}>Done</button>
      </div>
    </Dialog>
  );
}

/**
 * A pager's button: aria-disabled rather than disabled, so the button that
 * was just used keeps keyboard focus when it reaches the first or last page.
 */
export function PagerButton(props: { enabled: boolean; onClick: () => void; children: ComponentChildren }) {
  return (
    <button type="button" aria-disabled={props.enabled ? undefined : "true"} onClick={() => props.enabled && props.onClick()}>
      {props.children}
    </button>
  );
}

export function PageHeading(props: { title: string; children?: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  // Moving to a page moves focus to its heading, so keyboard and screen reader users start there.
  useLayoutEffect(() => ref.current?.focus(), [props.title]);
  return (
    <div class="page-head">
      <h1 ref={ref} tabIndex={-1}>{props.title}</h1>
      {props.children}
    </div>
  );
}

/**
 * A list's table; `actions` adds a last column for each row's buttons. On a
 * narrow screen each row reads as a card, each cell under its column's name
 * (console.css), so nothing scrolls sideways. The rows come from the pages:
 * each cell is given its column's name here, and the table roles, which
 * browsers drop from a table no longer laid out as one.
 */
export function Table(props: { columns: readonly string[]; actions?: boolean; children: ComponentChildren }) {
  const ref = useRef<HTMLTableSectionElement>(null);
  useLayoutEffect(() => {
    for (const row of ref.current!.rows) {
      row.setAttribute("role", "row");
      [...row.cells].forEach((cell, i) => {
        cell.setAttribute("role", "cell");
        const column = props.columns[i];
        if (column) cell.dataset.label = column;
      });
    }
  });
  return (
    <div class="table-wrap">
      <table role="table">
        <thead role="rowgroup">
          <tr role="row">
            {props.columns.map((column) => <th scope="col" role="columnheader" key={column}>{column}</th>)}
            {props.actions && <th scope="col" role="columnheader"><span class="visually-hidden">Actions</span></th>}
          </tr>
        </thead>
        <tbody role="rowgroup" ref={ref}>{props.children}</tbody>
      </table>
    </div>
  );
}

/** Errors of a list or an action outside a form. */
export function Notice(props: { error?: string }) {
  return props.error ? <p class="error" role="alert">{props.error}</p> : null;
}

export function formatTime(epochSeconds: bigint | number): string {
  const n = Number(epochSeconds);
  return n ? new Date(n * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC") : "—";
}

/**
 * Run a load and keep its result, error and a way to run it again. A reload
 * keeps showing the old result until the new one comes; a result loaded for
 * other `deps` (another search, another page) is never shown, so no old rows
 * stand under a new heading.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []) {
  const [loaded, setLoaded] = useState<{ deps: unknown[]; data: T }>();
  const [error, setError] = useState<string>();
  const [version, setVersion] = useState(0);
  useEffect(() => {
    let live = true;
    load().then(
      (data) => live && (setLoaded({ deps, data }), setError(undefined)),
      (err) => live && setError(failureOf(err).message),
    );
    return () => {
      live = false;
    };
  }, [version, ...deps]);
  const current = loaded && loaded.deps.length === deps.length && loaded.deps.every((d, i) => Object.is(d, deps[i]));
  return { data: current ? loaded.data : undefined, error, reload: () => setVersion((v) => v + 1) };
}
